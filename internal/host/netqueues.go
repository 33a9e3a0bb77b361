package host

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// Queue kinds of /sys/class/net/IF/queues.
const (
	RXQueue = "rx"
	TXQueue = "tx"
)

// Queues lists an interface's queue numbers of one kind (RXQueue or TXQueue), ascending.
func (h *Host) Queues(ifname, kind string) ([]int, error) {
	if err := checkIfname(ifname); err != nil {
		return nil, err
	}
	dirs, err := h.Glob(fmt.Sprintf("/sys/class/net/%s/queues/%s-*", ifname, kind))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(path.Base(d), kind+"-"))
		if err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func queueMaskPath(ifname, kind string, q int) (string, error) {
	if err := checkIfname(ifname); err != nil {
		return "", err
	}
	switch kind {
	case RXQueue:
		return fmt.Sprintf("/sys/class/net/%s/queues/rx-%d/rps_cpus", ifname, q), nil
	case TXQueue:
		return fmt.Sprintf("/sys/class/net/%s/queues/tx-%d/xps_cpus", ifname, q), nil
	}
	return "", fmt.Errorf("queue kind %q: use %q (RPS) or %q (XPS)", kind, RXQueue, TXQueue)
}

// QueueCPUs reads the RPS mask of an RX queue or the XPS mask of a TX queue.
func (h *Host) QueueCPUs(ifname, kind string, q int) (cpuset.Set, error) {
	p, err := queueMaskPath(ifname, kind, q)
	if err != nil {
		return cpuset.Set{}, err
	}
	return h.readMask(p)
}

// SetQueueCPUs writes the RPS mask of an RX queue or the XPS mask of a TX queue (an empty set
// turns RPS/XPS off for that queue).
func (h *Host) SetQueueCPUs(ifname, kind string, q int, cpus cpuset.Set) error {
	p, err := queueMaskPath(ifname, kind, q)
	if err != nil {
		return err
	}
	return h.WriteFile(p, cpus.Mask())
}

// PCIAddress returns the PCI address behind a network interface ("0000:3b:00.0"), or "" for a
// virtual interface.
func (h *Host) PCIAddress(ifname string) (string, error) {
	if err := checkIfname(ifname); err != nil {
		return "", err
	}
	target, err := os.Readlink(h.Path("/sys/class/net/" + ifname + "/device"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s device: %w", ifname, err)
	}
	if !strings.Contains(target, "pci") && !h.Exists("/sys/bus/pci/devices/"+filepath.Base(target)) {
		return "", nil
	}
	return filepath.Base(target), nil
}

func sriovPath(pci, file string) (string, error) {
	if pci == "" || strings.ContainsAny(pci, "/ ") || strings.Contains(pci, "..") {
		return "", fmt.Errorf("PCI address %q is malformed (write e.g. \"0000:3b:00.0\")", pci)
	}
	return "/sys/bus/pci/devices/" + pci + "/" + file, nil
}

// SRIOVTotalVFs reads how many VFs a PCI function supports; ErrUnsupported without SR-IOV.
func (h *Host) SRIOVTotalVFs(pci string) (int, error) {
	return h.sriovInt(pci, "sriov_totalvfs")
}

// SRIOVNumVFs reads how many VFs are enabled on a PCI function.
func (h *Host) SRIOVNumVFs(pci string) (int, error) {
	return h.sriovInt(pci, "sriov_numvfs")
}

func (h *Host) sriovInt(pci, file string) (int, error) {
	p, err := sriovPath(pci, file)
	if err != nil {
		return 0, err
	}
	v, err := h.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s %s: %w (no SR-IOV capability)", pci, file, ErrUnsupported)
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", pci, file, err)
	}
	return n, nil
}

// SetSRIOVNumVFs enables n VFs. The kernel refuses to change a non-zero count to another
// non-zero count, so the count goes through 0 first when needed.
func (h *Host) SetSRIOVNumVFs(pci string, n int) error {
	if n < 0 {
		return fmt.Errorf("%s sriov_numvfs: negative count %d", pci, n)
	}
	cur, err := h.SRIOVNumVFs(pci)
	if err != nil {
		return err
	}
	if cur == n {
		return nil
	}
	p, _ := sriovPath(pci, "sriov_numvfs")
	if cur != 0 && n != 0 {
		if err := h.WriteFile(p, "0"); err != nil {
			return fmt.Errorf("%s: reset VFs to 0 before setting %d: %w", pci, n, err)
		}
	}
	return h.WriteFile(p, strconv.Itoa(n))
}

func checkIfname(ifname string) error {
	if ifname == "" || len(ifname) > 15 || strings.ContainsAny(ifname, "/ \t\n") || ifname == "." || ifname == ".." {
		return fmt.Errorf("interface name %q is not a valid Linux interface name (1-15 characters, no '/' or blanks)", ifname)
	}
	return nil
}
