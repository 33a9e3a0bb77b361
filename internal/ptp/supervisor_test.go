package ptp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// recorder collects what a Supervisor reports, safe for concurrent use.
type recorder struct {
	logs   tsutil.LogLines
	mu     sync.Mutex
	lines  []string
	starts []time.Time
	pids   []int
}

func (r *recorder) logger() logr.Logger { return r.logs.Logger(1) }

func (r *recorder) onLine(l string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
}

func (r *recorder) onStart(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, time.Now())
	r.pids = append(r.pids, pid)
}

func (r *recorder) snapshot() (lines, logs []string, starts []time.Time, pids []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines), r.logs.Lines(), slices.Clone(r.starts), slices.Clone(r.pids)
}

// runSupervisor starts s.Run in the background; the returned stop cancels it and waits for Run.
func runSupervisor(t *testing.T, s *Supervisor) (stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run() = %v, want nil after cancel", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run() did not return 30s after cancel")
			}
			took = time.Since(start)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestSupervisorForwardsOutputAndBacksOff(t *testing.T) {
	sh := "/bin/sh"
	rec := &recorder{}
	s := NewSupervisor(Command{Name: "flaky", Path: sh, Args: []string{"-c", "echo out-line; echo err-line >&2; printf partial; exit 3"}},
		SupervisorOptions{
			Logger: rec.logger(), OnLine: rec.onLine, OnStart: rec.onStart,
			LineVerbosity: func(l string) int {
				if strings.HasPrefix(l, "err") {
					return 1
				}
				return 0
			},
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond, ResetBackoffAfter: time.Hour,
		})
	stop := runSupervisor(t, s)
	tsutil.PollTrue(t, 20*time.Second, "five starts", func() bool { return s.Restarts() >= 4 })
	stop()

	lines, logs, starts, _ := rec.snapshot()
	for _, want := range []string{"out-line", "err-line", "partial"} {
		if !slices.Contains(lines, want) {
			t.Errorf("output lines %q lack %q", lines, want)
		}
	}
	joined := strings.Join(logs, "\n")
	for _, want := range []string{`"process"="flaky"`, `"line"="out-line"`, `"stream"="stderr"`, "exit status 3", "process exited, restarting"} {
		if !strings.Contains(joined, want) {
			t.Errorf("log lacks %s:\n%s", want, joined)
		}
	}
	// Waits between starts double from 20 ms and stop at the 80 ms cap.
	wantMin := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond}
	for i, w := range wantMin {
		if gap := starts[i+1].Sub(starts[i]); gap < w {
			t.Errorf("gap before restart %d = %s, want at least the %s backoff", i+1, gap, w)
		}
	}
	if got := s.Restarts(); got < 4 {
		t.Errorf("Restarts() = %d, want >= 4", got)
	}
	var waits []string
	for _, l := range logs {
		if i := strings.Index(l, `"restartIn"="`); i >= 0 {
			waits = append(waits, strings.SplitN(l[i+len(`"restartIn"="`):], `"`, 2)[0])
		}
	}
	if want := []string{"20ms", "40ms", "80ms", "80ms"}; len(waits) < 4 || !slices.Equal(waits[:4], want) {
		t.Errorf("logged restart waits = %q, want them to start with %q", waits, want)
	}
}

func TestSupervisorResetsBackoffAfterALongRun(t *testing.T) {
	rec := &recorder{}
	s := NewSupervisor(Command{Name: "steady", Path: "/bin/sleep", Args: []string{"0.1"}},
		SupervisorOptions{Logger: rec.logger(), MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Second, ResetBackoffAfter: 50 * time.Millisecond})
	stop := runSupervisor(t, s)
	tsutil.PollTrue(t, 20*time.Second, "three restarts", func() bool { return s.Restarts() >= 3 })
	stop()
	_, logs, _, _ := rec.snapshot()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "process exited, restarting") {
			n++
			if !strings.Contains(l, `"restartIn"="10ms"`) {
				t.Errorf("a run longer than ResetBackoffAfter must restart after MinBackoff: %s", l)
			}
		}
	}
	if n < 3 {
		t.Errorf("saw %d restarts in the log, want >= 3", n)
	}
}

// TestSupervisorChildDiesWithAgent kills a process that supervises "sleep 60" with SIGKILL (no
// chance to clean up) and checks that the sleep dies with it.
func TestSupervisorChildDiesWithAgent(t *testing.T) {
	if os.Getenv("TSPTP_SUPERVISOR_HELPER") == "1" {
		s := NewSupervisor(Command{Name: "orphan", Path: "/bin/sleep", Args: []string{"60"}},
			SupervisorOptions{Logger: logr.Discard(), OnStart: func(pid int) { fmt.Printf("child=%d\n", pid) }})
		_ = s.Run(context.Background())
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestSupervisorChildDiesWithAgent$", "-test.count=1")
	helper.Env = append(os.Environ(), "TSPTP_SUPERVISOR_HELPER=1")
	tsutil.ChildDiesWithParent(t, helper)
}

func TestSupervisorRestartsKilledProcess(t *testing.T) {
	rec := &recorder{}
	s := NewSupervisor(Command{Name: "sleeper", Path: "/bin/sleep", Args: []string{"60"}},
		SupervisorOptions{Logger: rec.logger(), OnStart: rec.onStart, MinBackoff: 10 * time.Millisecond})
	stop := runSupervisor(t, s)
	tsutil.PollTrue(t, 10*time.Second, "first start", func() bool { return s.PID() != 0 })
	first := s.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatalf("killing pid %d: %v", first, err)
	}
	tsutil.PollTrue(t, 10*time.Second, "a restart with a new pid", func() bool { p := s.PID(); return p != 0 && p != first })
	if got := s.Restarts(); got != 1 {
		t.Errorf("Restarts() = %d, want 1", got)
	}
	second := s.PID()
	stop()
	if s.PID() != 0 {
		t.Errorf("PID() = %d after stop, want 0", s.PID())
	}
	for _, pid := range []int{first, second} {
		if !tsutil.ProcessGone(pid) {
			t.Errorf("pid %d still runs after stop", pid)
		}
	}
	_, logs, _, _ := rec.snapshot()
	if !strings.Contains(strings.Join(logs, "\n"), "signal: killed") {
		t.Errorf("log does not report the kill:\n%s", strings.Join(logs, "\n"))
	}
}

func TestSupervisorStopEscalatesToSIGKILL(t *testing.T) {
	rec := &recorder{}
	// The shell and its background child ignore SIGTERM; the child's pid is printed for the check.
	s := NewSupervisor(Command{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", `trap "" TERM; sleep 60 & echo child=$!; wait`}},
		SupervisorOptions{Logger: rec.logger(), OnLine: rec.onLine, StopTimeout: 300 * time.Millisecond})
	stop := runSupervisor(t, s)
	var child int
	tsutil.PollTrue(t, 10*time.Second, "the child's pid", func() bool {
		lines, _, _, _ := rec.snapshot()
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "child="); ok {
				child, _ = strconv.Atoi(v)
			}
		}
		return child != 0
	})
	shell := s.PID()
	took := stop()
	if took < 300*time.Millisecond {
		t.Errorf("stop took %s, want at least the 300ms SIGTERM grace", took)
	}
	_, logs, _, _ := rec.snapshot()
	if !strings.Contains(strings.Join(logs, "\n"), "process ignored SIGTERM, killing it") {
		t.Errorf("log does not report the SIGKILL escalation:\n%s", strings.Join(logs, "\n"))
	}
	if !tsutil.ProcessGone(shell) {
		t.Errorf("shell pid %d still runs after stop", shell)
	}
	tsutil.PollTrue(t, 5*time.Second, "the grandchild to die with its process group", func() bool { return tsutil.ProcessGone(child) })
}

func TestSupervisorStopsPromptlyOnSIGTERM(t *testing.T) {
	s := NewSupervisor(Command{Name: "sleeper", Path: "/bin/sleep", Args: []string{"60"}},
		SupervisorOptions{Logger: logr.Discard(), StopTimeout: 10 * time.Second})
	stop := runSupervisor(t, s)
	tsutil.PollTrue(t, 10*time.Second, "start", func() bool { return s.PID() != 0 })
	pid := s.PID()
	if took := stop(); took > 5*time.Second {
		t.Errorf("stop took %s; sleep exits on SIGTERM, so no SIGKILL wait was expected", took)
	}
	if !tsutil.ProcessGone(pid) {
		t.Errorf("pid %d still runs after stop", pid)
	}
	if s.Restarts() != 0 {
		t.Errorf("Restarts() = %d after a clean stop, want 0", s.Restarts())
	}
}

func TestSupervisorRetriesMissingBinary(t *testing.T) {
	rec := &recorder{}
	s := NewSupervisor(Command{Name: "ghost", Path: "/nonexistent/tsptp-ghost"},
		SupervisorOptions{Logger: rec.logger(), MinBackoff: 10 * time.Millisecond})
	stop := runSupervisor(t, s)
	tsutil.PollTrue(t, 10*time.Second, "two retries", func() bool { return s.Restarts() >= 2 })
	stop()
	_, logs, _, _ := rec.snapshot()
	if !strings.Contains(strings.Join(logs, "\n"), "starting ghost") {
		t.Errorf("log does not say the start failed:\n%s", strings.Join(logs, "\n"))
	}
}
