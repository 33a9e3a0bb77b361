package bench

import "golang.org/x/sys/unix"

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
