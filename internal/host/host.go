// Package host is the agent's access to the machine it tunes: procfs and sysfs files under a
// configurable host root (the DaemonSet mounts the host's /proc, /sys, /etc and /boot below it),
// sysctls, IRQ affinity, irqbalance, cpuidle, cpufreq and turbo, transparent hugepages, the
// workqueue cpumask, RPS/XPS masks, runtime hugepages, NIC channels, rings and coalescing
// (ethtool netlink), SR-IOV VF counts, and discovery of the node's facts.
//
// Every accessor is a method of Host, whose fields say where the host is; nothing is global.
// Values are returned in one canonical spelling (CPU sets in list form, THP modes without
// brackets, multi-value sysctls with single blanks) so that callers can compare them as strings.
package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultIrqbalanceConfig is where Debian and Ubuntu keep irqbalance's environment file.
const DefaultIrqbalanceConfig = "/etc/default/irqbalance"

// Host reaches the kernel interfaces of one machine.
type Host struct {
	// Root is the directory the host's / is visible at ("/" when the agent runs on the host,
	// "/host" in a container that mounts it there, a temporary tree in tests). Every procfs,
	// sysfs and configuration path is resolved below it.
	Root string
	// IrqbalanceConfig is the irqbalance environment file, relative to Root; empty means
	// DefaultIrqbalanceConfig.
	IrqbalanceConfig string
	// NIC reads and writes NIC channels, rings and coalescing; nil means NICs cannot be tuned
	// (every NIC call then fails with ErrUnsupported).
	NIC NIC
	// Systemctl is the command line of the host's systemctl (the agent's --systemctl-command, run
	// in the host's mount namespace); empty means units cannot be read or changed.
	Systemctl []string
}

// ErrUnsupported reports that this host has no such knob (no cpufreq in a VM, a driver without
// ethtool ring support, no SR-IOV capability, ...). Callers test it with errors.Is.
var ErrUnsupported = errors.New("not supported on this host")

// Path returns the absolute path of a host path such as "/proc/sys/vm/swappiness".
func (h *Host) Path(p string) string {
	root := h.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p)
}

// ReadFile returns the content of a host file with surrounding blanks trimmed.
func (h *Host) ReadFile(p string) (string, error) {
	b, err := os.ReadFile(h.Path(p))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// WriteFile writes v to an existing kernel file (procfs or sysfs) in one write call, as the
// kernel expects. It never creates the file.
func (h *Host) WriteFile(p, v string) error {
	f, err := os.OpenFile(h.Path(p), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, werr := f.Write([]byte(v))
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", v, p, werr)
	}
	if cerr != nil {
		return fmt.Errorf("write %q to %s: %w", v, p, cerr)
	}
	return nil
}

// Exists reports whether a host path exists.
func (h *Host) Exists(p string) bool {
	_, err := os.Stat(h.Path(p))
	return err == nil
}

// Glob returns the host paths (not prefixed with Root) matching a pattern such as
// "/proc/irq/[0-9]*".
func (h *Host) Glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(h.Path(pattern))
	if err != nil {
		return nil, fmt.Errorf("glob %s: %w", pattern, err)
	}
	root := filepath.Clean(h.Path("/"))
	out := make([]string, 0, len(m))
	for _, p := range m {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("glob %s: %w", pattern, err)
		}
		out = append(out, "/"+rel)
	}
	return out, nil
}

// IsNotMovable reports whether an error from writing /proc/irq/N/smp_affinity* means the kernel
// refuses to change this IRQ's affinity: managed and per-CPU IRQs answer EIO or EPERM (depending
// on the kernel version; root is required anyway), some interrupt chips EINVAL; and the kernel
// makes such an IRQ's smp_affinity files read-only (0444), which SetIRQAffinity reports before any
// write (a writer without CAP_DAC_OVERRIDE, as the NRI plugin's container, would get EACCES).
func IsNotMovable(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, errIRQReadOnly)
}

// errIRQReadOnly: /proc/irq/N/smp_affinity_list has no write bit, as the kernel creates it for an
// IRQ whose affinity user space may not set (kernel/irq/proc.c, irq_can_set_affinity_usr).
var errIRQReadOnly = errors.New("the kernel made it read-only: user space may not move this IRQ")

// WriteFileAtomic replaces path with data so that a crash at any moment leaves either the old or
// the new content, never a mix: it writes a temporary file in the same directory, fsyncs it,
// renames it over path and fsyncs the directory. The directory is created if missing.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// A crash between creating and renaming a temporary file leaves it behind: remove those.
	pattern := "." + filepath.Base(path) + ".tmp-*"
	if stale, err := filepath.Glob(filepath.Join(dir, pattern)); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	// FAT (an EFI system partition holding BLS entries) has no modes: EPERM there is harmless.
	if err := tmp.Chmod(perm); err != nil && !errors.Is(err, os.ErrPermission) {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", name, path, err)
	}
	return SyncDir(dir)
}

// RemoveFileDurable removes path (absent is fine) and fsyncs its directory so the removal
// survives a crash.
func RemoveFileDurable(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory so that renames and removals in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
