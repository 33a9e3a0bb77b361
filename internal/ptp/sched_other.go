//go:build !linux

package ptp

import (
	"fmt"
	"runtime"
	"syscall"
)

// schedule: SCHED_FIFO and CPU affinity are Linux's, where the agent runs; elsewhere the package
// builds (the CLI reads PTP results through it) but supervises nothing.
func schedule(pid, priority int, cpus []int) error {
	if priority > 0 || len(cpus) > 0 {
		return fmt.Errorf("SCHED_FIFO and CPU pinning of pid %d need Linux, not %s", pid, runtime.GOOS)
	}
	return nil
}

// procAttr starts the child in its own process group (no parent-death signal outside Linux).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
