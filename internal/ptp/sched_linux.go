//go:build linux

package ptp

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// schedule gives pid (and the program it execs: both are inherited) SCHED_FIFO at priority, when
// above 0, and pins it to cpus, when set. Setting them right after the start leaves ptp4l and
// phc2sys a few hundred microseconds of ordinary scheduling while they read their configuration,
// before they open a socket.
// The agent runs on Linux nodes only; sched_other.go lets the package (which the CLI imports for
// its PTP parsing) build elsewhere.
func schedule(pid, priority int, cpus []int) error {
	if len(cpus) > 0 {
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return fmt.Errorf("pinning pid %d to CPUs %v: %w", pid, cpus, err)
		}
	}
	if priority > 0 {
		attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(priority)}
		if err := unix.SchedSetAttr(pid, attr, 0); err != nil {
			return fmt.Errorf("setting SCHED_FIFO priority %d on pid %d (the agent needs CAP_SYS_NICE): %w", priority, pid, err)
		}
	}
	return nil
}

// procAttr starts the child in its own process group, killed when the thread that forked it exits.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
