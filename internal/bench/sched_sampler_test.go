package bench

import (
	"os"
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

// The sampler on this host: a second spinner on the same CPU for about 100 ms makes the first wait
// for its CPU for a good part of that, and the sampler's series agrees with the counter read
// directly at the window's ends: at least the direct growth, at most that plus what the widened
// window's margins can hold. (Other load on the host only adds wait, so the checks hold on a busy
// CI machine.)
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
	f, err := os.Open("/proc/" + strconv.Itoa(a.Process.Pid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	direct := func() (mono, wait int64) {
		_, wait, err := readSchedstat(f, make([]byte, 256))
		if err != nil {
			t.Fatal(err)
		}
		return monoNow(), wait
	}
	s := startProcSampler("/proc", a.Process.Pid, []int{cpu}, false)
	time.Sleep(100 * time.Millisecond)

	from, w0 := direct()
	b := spin(t, taskset, cpu)
	time.Sleep(100 * time.Millisecond)
	_ = b.Process.Kill()
	_ = b.Wait()
	to, w1 := direct()
	time.Sleep(50 * time.Millisecond)
	tr := s.Stop()

	if tr.Err != "" || len(tr.Sched) < 15 {
		t.Fatalf("%d samples in 250 ms at %s (%s)", len(tr.Sched), SchedSampleInterval, tr.Err)
	}
	if len(tr.Steal) < 10 || len(tr.CPUs) != 1 || tr.CPUs[0] != cpu {
		t.Errorf("steal: %d samples of CPUs %v, want about 25 of CPU %d", len(tr.Steal), tr.CPUs, cpu)
	}
	got := tr.deltas([]StallWindow{{Start: from, End: to}})[0]
	window, want := to-from, w1-w0
	t.Logf("CPU %d: %s of run-queue wait in the %s with a second spinner (read directly), the sampler %s",
		cpu, time.Duration(want), time.Duration(window), time.Duration(got.RunQueueWaitNs))
	// The scheduler shares the CPU about evenly: the first spinner waits about half the window.
	if want < window/4 {
		t.Errorf("run-queue wait %s in a %s window with two spinners on one CPU, want about half of it", time.Duration(want), time.Duration(window))
	}
	// The window is widened by one sample interval on each side, and a sample may come late.
	if !got.Sampled || got.RunQueueWaitNs < want || got.RunQueueWaitNs > want+4*int64(SchedSampleInterval) {
		t.Errorf("the sampler saw %s of run-queue wait (sampled %v) where the counter grew %s; want that plus at most %s of margins",
			time.Duration(got.RunQueueWaitNs), got.Sampled, time.Duration(want), 4*SchedSampleInterval)
	}
}
