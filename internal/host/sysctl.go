package host

import (
	"fmt"
	"strings"
)

// SysctlPath maps a sysctl key ("net.core.busy_poll") to its procfs path
// ("/proc/sys/net/core/busy_poll"). A key may also be given with slashes ("net/core/busy_poll").
func SysctlPath(key string) (string, error) {
	if key == "" || strings.Contains(key, "..") || strings.HasPrefix(key, "/") || strings.HasPrefix(key, ".") {
		return "", fmt.Errorf("sysctl key %q is malformed (write e.g. \"vm.stat_interval\")", key)
	}
	if strings.Contains(key, "/") {
		return "/proc/sys/" + key, nil
	}
	return "/proc/sys/" + strings.ReplaceAll(key, ".", "/"), nil
}

// Sysctl reads a sysctl. Values made of several fields (net.ipv4.ip_local_port_range,
// kernel.sched_domain...) come back with single blanks between fields.
func (h *Host) Sysctl(key string) (string, error) {
	p, err := SysctlPath(key)
	if err != nil {
		return "", err
	}
	v, err := h.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", key, err)
	}
	return NormalizeSysctl(v), nil
}

// SetSysctl writes a sysctl.
func (h *Host) SetSysctl(key, value string) error {
	p, err := SysctlPath(key)
	if err != nil {
		return err
	}
	if err := h.WriteFile(p, value); err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}
	return nil
}

// NormalizeSysctl collapses the blanks between a sysctl value's fields.
func NormalizeSysctl(v string) string { return strings.Join(strings.Fields(v), " ") }
