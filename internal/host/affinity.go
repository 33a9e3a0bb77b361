package host

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// ThreadAffinity is the CPU affinity of the calling thread, as this process started with it
// (every thread of a Go program shares it until something changes it).
func ThreadAffinity() (cpuset.Set, error) {
	var m unix.CPUSet
	if err := unix.SchedGetaffinity(0, &m); err != nil {
		return cpuset.Set{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(m)*64; c++ {
		if m.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpuset.New(cpus...), nil
}

// ConfineProcess sets the CPU affinity of every thread of this process to cpus. A thread made
// later inherits the affinity of the thread that made it, so once every thread is confined the
// process stays so; the walk is repeated until a pass finds no thread it had not seen (one
// started during the walk may have copied the old affinity). Threads that exit meanwhile are
// skipped. The kernel intersects the mask with the container's cpuset; an empty intersection
// is an error (EINVAL) and leaves the threads already set as they are.
func ConfineProcess(cpus cpuset.Set) error {
	if cpus.IsEmpty() {
		return fmt.Errorf("confining the process: empty CPU set")
	}
	var m unix.CPUSet
	for _, c := range cpus.CPUs() {
		m.Set(c)
	}
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		found := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			found = true
			if err := unix.SchedSetaffinity(tid, &m); err != nil && err != unix.ESRCH {
				return fmt.Errorf("sched_setaffinity(%d, %s): %w", tid, cpus, err)
			}
			done[tid] = true
		}
		if !found {
			return nil
		}
	}
	return nil
}
