package host

import (
	"fmt"
	"strconv"
	"strings"
)

// THP files: enabled and defrag of /sys/kernel/mm/transparent_hugepage.
const (
	THPEnabled = "enabled"
	THPDefrag  = "defrag"
)

func thpPath(file string) (string, error) {
	if file != THPEnabled && file != THPDefrag {
		return "", fmt.Errorf("transparent hugepage file %q: use %q or %q", file, THPEnabled, THPDefrag)
	}
	return "/sys/kernel/mm/transparent_hugepage/" + file, nil
}

// THP returns the selected mode of a transparent-hugepage file ("always [madvise] never" reads
// as "madvise") and the modes it offers.
func (h *Host) THP(file string) (string, []string, error) {
	p, err := thpPath(file)
	if err != nil {
		return "", nil, err
	}
	v, err := h.ReadFile(p)
	if err != nil {
		return "", nil, err
	}
	sel, modes := ParseBracketChoice(v)
	return sel, modes, nil
}

// SetTHP selects a transparent-hugepage mode.
func (h *Host) SetTHP(file, mode string) error {
	p, err := thpPath(file)
	if err != nil {
		return err
	}
	return h.WriteFile(p, mode)
}

// ParseBracketChoice reads the kernel's "a [b] c" choice format: the bracketed selection and all
// options.
func ParseBracketChoice(v string) (string, []string) {
	var sel string
	var modes []string
	fields := strings.Fields(v)
	for _, f := range fields {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			f = f[1 : len(f)-1]
			sel = f
		}
		modes = append(modes, f)
	}
	if sel == "" && len(fields) == 1 {
		// A plain file holding one word (a host-root tree) reads as that selection.
		sel = fields[0]
	}
	return sel, modes
}

// AnyNode, as a NUMA node number, means the kernel's choice: the system-wide hugepage pool,
// which the kernel spreads over the nodes.
const AnyNode = -1

func hugepagesPath(node, sizeKB int) string {
	if node == AnyNode {
		return fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", sizeKB)
	}
	return fmt.Sprintf("/sys/devices/system/node/node%d/hugepages/hugepages-%dkB/nr_hugepages", node, sizeKB)
}

// Hugepages reads how many hugepages of sizeKB are allocated on a NUMA node (AnyNode: in the
// system-wide pool).
func (h *Host) Hugepages(node, sizeKB int) (int, error) {
	v, err := h.ReadFile(hugepagesPath(node, sizeKB))
	if err != nil {
		return 0, fmt.Errorf("node%d hugepages-%dkB: %w", node, sizeKB, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("node%d hugepages-%dkB: %w", node, sizeKB, err)
	}
	return n, nil
}

// SetHugepages asks the kernel for count hugepages of sizeKB on a NUMA node. The kernel may
// allocate fewer when memory is fragmented: read back with Hugepages.
func (h *Host) SetHugepages(node, sizeKB, count int) error {
	if count < 0 {
		return fmt.Errorf("node%d hugepages-%dkB: negative count %d", node, sizeKB, count)
	}
	return h.WriteFile(hugepagesPath(node, sizeKB), strconv.Itoa(count))
}
