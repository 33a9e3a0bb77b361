package bench

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickstack/tickstack/internal/testutil"
)

// spin starts a shell loop pinned to cpu and returns it; the test kills it at the end.
func spin(t *testing.T, taskset string, cpu int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(taskset, "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// The sampler on this host: a spinner alone on a CPU hardly waits; a second spinner on the same
// CPU for about 50 ms makes the first wait for its CPU for a good part of that, and the sampler
// sees that wait in that window and not before it.
func TestSamplerSeesRunQueueWait(t *testing.T) {
	taskset := testutil.RequireTool(t, "taskset")
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpu = c // the last CPU this test may use
		}
	}
	a := spin(t, taskset, cpu)
	s := startProcSampler("/proc", a.Process.Pid, []int{cpu}, false)
	time.Sleep(200 * time.Millisecond)
	quietFrom, quietTo := monoNow()-int64(150*time.Millisecond), monoNow()

	from := monoNow()
	b := spin(t, taskset, cpu)
	time.Sleep(50 * time.Millisecond)
	_ = b.Process.Kill()
	_ = b.Wait()
	to := monoNow()
	time.Sleep(50 * time.Millisecond)
	tr := s.Stop()

	if tr.Err != "" || len(tr.Sched) < 200 {
		t.Fatalf("%d samples in 300 ms (%s)", len(tr.Sched), tr.Err)
	}
	if len(tr.Steal) < 10 || len(tr.CPUs) != 1 || tr.CPUs[0] != cpu {
		t.Errorf("steal: %d samples of CPUs %v, want about 30 of CPU %d", len(tr.Steal), tr.CPUs, cpu)
	}
	d := tr.deltas([]StallWindow{{Start: quietFrom, End: quietTo}, {Start: from, End: to}})
	quiet, busy := d[0].RunQueueWaitNs, d[1].RunQueueWaitNs
	window := to - from
	t.Logf("CPU %d: %s of run-queue wait in a quiet 150 ms, %s in the %s with a second spinner", cpu,
		time.Duration(quiet), time.Duration(busy), time.Duration(window))
	// The scheduler shares the CPU about evenly: the first spinner waits about half the window.
	if busy < window/4 || busy > window+int64(3*time.Millisecond) {
		t.Errorf("run-queue wait %s in a %s window with two spinners on one CPU, want about half of it", time.Duration(busy), time.Duration(window))
	}
	if quiet*int64(window) >= busy*int64(150*time.Millisecond)/2 {
		t.Errorf("the quiet window's wait (%s in 150 ms) is not well below the contended one's (%s in %s)", time.Duration(quiet), time.Duration(busy), time.Duration(window))
	}
}
