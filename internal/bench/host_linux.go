package bench

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr starts a benchmark child (a sockperf server or client, the conformance peer) in its own
// process group, so that stopping it stops what it started, and has the kernel kill it when the
// runner dies first (Pdeathsig): a reflector killed by its Job's deadline or by a test must leave
// no server behind holding its port and the fds it inherited (a leaked conformance peer held a
// test's cluster lock on 2026-11-29).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// sockCloexec is SOCK_CLOEXEC for a socket's type.
const sockCloexec = unix.SOCK_CLOEXEC

// affinityOf returns the CPUs process pid (0: this one) may run on, in ascending order; nil when it
// cannot be read.
func affinityOf(pid int) []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
