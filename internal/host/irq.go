package host

import (
	"fmt"
	"os"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// IRQ describes one interrupt line as /proc/irq shows it.
type IRQ struct {
	// Number is the IRQ number.
	Number int
	// Actions are the handler names registered on it (the sub-directories of /proc/irq/N, e.g.
	// "virtio0-input.0", "eth0-TxRx-3").
	Actions []string
	// Affinity is the requested affinity (smp_affinity_list).
	Affinity cpuset.Set
	// Effective is where the IRQ really fires (effective_affinity_list), when the kernel shows it.
	Effective cpuset.Set
	// Movable is false for IRQs whose affinity cannot be changed from user space (no
	// smp_affinity file, or the timer IRQ 0). A write can still be refused (managed IRQs answer
	// EIO); IsNotMovable recognises that error.
	Movable bool
}

// IRQs lists the IRQs of /proc/irq in ascending order.
func (h *Host) IRQs() ([]IRQ, error) {
	dirs, err := h.globNumbered("/proc/irq/[0-9]*", "")
	if err != nil {
		return nil, err
	}
	var out []IRQ
	for _, nd := range dirs {
		d, n := nd.path, nd.n
		irq := IRQ{Number: n}
		if aff, err := h.IRQAffinity(n); err == nil {
			irq.Affinity = aff
			irq.Movable = n != 0
		}
		if v, err := h.ReadFile(d + "/effective_affinity_list"); err == nil {
			irq.Effective, _ = cpuset.Parse(v)
		}
		entries, err := os.ReadDir(h.Path(d))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				irq.Actions = append(irq.Actions, e.Name())
			}
		}
		out = append(out, irq)
	}
	return out, nil
}

// IRQAffinity reads /proc/irq/N/smp_affinity_list.
func (h *Host) IRQAffinity(n int) (cpuset.Set, error) {
	v, err := h.ReadFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", n))
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("irq %d affinity: %w", n, err)
	}
	s, err := cpuset.Parse(v)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("irq %d affinity: %w", n, err)
	}
	return s, nil
}

// SetIRQAffinity writes /proc/irq/N/smp_affinity_list. A managed or per-CPU IRQ refuses the write
// (or has a read-only file) with an error IsNotMovable recognises.
func (h *Host) SetIRQAffinity(n int, cpus cpuset.Set) error {
	if cpus.IsEmpty() {
		return fmt.Errorf("irq %d affinity: refusing an empty CPU set", n)
	}
	p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", n)
	// A managed IRQ's file is read-only: refused here, the same for a privileged writer (which
	// would get EIO from the write) and an unprivileged one (EACCES at open).
	if fi, err := os.Stat(h.Path(p)); err == nil && fi.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("irq %d affinity: %s: %w", n, p, errIRQReadOnly)
	}
	if err := h.WriteFile(p, cpus.String()); err != nil {
		return fmt.Errorf("irq %d affinity: %w", n, err)
	}
	return nil
}

// DefaultIRQAffinity reads /proc/irq/default_smp_affinity, the affinity new IRQs start with.
func (h *Host) DefaultIRQAffinity() (cpuset.Set, error) {
	return h.readMask("/proc/irq/default_smp_affinity")
}

// SetDefaultIRQAffinity writes /proc/irq/default_smp_affinity.
func (h *Host) SetDefaultIRQAffinity(cpus cpuset.Set) error {
	return h.writeNonEmptyMask("/proc/irq/default_smp_affinity", "default irq affinity", cpus)
}
