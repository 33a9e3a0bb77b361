package host

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// IrqbalanceBannedVar is the irqbalance environment variable listing CPUs irqbalance must not
// place IRQs on (irqbalance >= 1.8 reads the list form).
const IrqbalanceBannedVar = "IRQBALANCE_BANNED_CPULIST"

func (h *Host) irqbalancePath() string {
	if h.IrqbalanceConfig != "" {
		return h.IrqbalanceConfig
	}
	return DefaultIrqbalanceConfig
}

// IrqbalanceBannedCPUs returns the value of IRQBALANCE_BANNED_CPULIST in the irqbalance
// environment file and whether it is set at all (a missing file counts as unset). The value is
// returned as written, unquoted.
func (h *Host) IrqbalanceBannedCPUs() (string, bool, error) {
	b, err := os.ReadFile(h.Path(h.irqbalancePath()))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("irqbalance config: %w", err)
	}
	val, found := "", false
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := envAssignment(line); ok && k == IrqbalanceBannedVar {
			val, found = v, true
		}
	}
	return val, found, nil
}

// SetIrqbalanceBannedCPUs sets IRQBALANCE_BANNED_CPULIST (replacing every existing assignment,
// or appending one) with an atomic file replacement. irqbalance reads it when it starts: the
// caller restarts irqbalance if it runs.
func (h *Host) SetIrqbalanceBannedCPUs(cpus cpuset.Set) error {
	return h.editIrqbalance(IrqbalanceBannedVar + "=" + cpus.String())
}

// UnsetIrqbalanceBannedCPUs removes every IRQBALANCE_BANNED_CPULIST assignment; a file left
// empty is removed.
func (h *Host) UnsetIrqbalanceBannedCPUs() error { return h.editIrqbalance("") }

func (h *Host) editIrqbalance(newLine string) error {
	p := h.Path(h.irqbalancePath())
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("irqbalance config: %w", err)
	}
	if errors.Is(err, os.ErrNotExist) && newLine == "" {
		return nil
	}
	var out []string
	placed := false
	text := strings.TrimSuffix(string(b), "\n")
	if text != "" {
		for _, line := range strings.Split(text, "\n") {
			if k, _, ok := envAssignment(line); ok && k == IrqbalanceBannedVar {
				if newLine != "" && !placed {
					out = append(out, newLine)
					placed = true
				}
				continue
			}
			out = append(out, line)
		}
	}
	if newLine != "" && !placed {
		out = append(out, newLine)
	}
	if len(out) == 0 {
		return RemoveFileDurable(p)
	}
	if err := WriteFileAtomic(p, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("irqbalance config: %w", err)
	}
	return nil
}

// envAssignment parses a shell-style "KEY=value" line, ignoring comments and quotes.
func envAssignment(line string) (string, string, bool) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", "", false
	}
	line = strings.TrimPrefix(line, "export ")
	k, v, ok := strings.Cut(line, "=")
	if !ok {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return strings.TrimSpace(k), v, true
}
