package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// What the sampler reads while a sockperf process runs (docs/benchmark-methods.md "Stalls"):
// the process's run-queue wait every SchedSampleInterval and the steal time of its CPUs every
// StealSampleInterval, each with the CLOCK_MONOTONIC time it was read at.
//
// The sampler runs in the runner's and the reflector's pods, so on the CPUs being measured: each
// sample wakes it there and preempts the spinning sockperf for a few microseconds. At 1 ms that
// was 1,000 interruptions a second and moved the demo's bypass p99 from 2.7 to 19 us; at 10 ms
// (the steal column's resolution anyway) it is one sample in about 1,500 round trips, below the
// p99.9. A stall is placed to within one interval on each side (stall_cause.go).
const (
	SchedSampleInterval = 10 * time.Millisecond
	// StealSampleInterval matches the resolution of /proc/stat's steal column (USER_HZ ticks).
	StealSampleInterval = 10 * time.Millisecond
	// userHZ is the unit of /proc/stat's columns, fixed at 100 for user space on Linux.
	userHZ = 100
	// maxSchedSamples bounds a run's samples (about 3 hours at 10 ms); sampling stops there.
	maxSchedSamples = 1 << 20
)

// schedSample is one reading of a process's cumulative time on its CPU and run-queue wait.
type schedSample struct{ MonoNs, ExecNs, WaitNs int64 }

// stealSample is one reading of the cumulative steal time of each of the sampled CPUs.
type stealSample struct {
	MonoNs  int64
	StealNs []int64
}

// schedTrace is what the sampler read during one process's run.
type schedTrace struct {
	// CPUs are the CPUs whose steal was read.
	CPUs  []int
	Sched []schedSample
	Steal []stealSample
	// Clock places the process's full log on CLOCK_MONOTONIC (runner side only; nil: unknown).
	Clock *sockperfClock
	// ClockErr says why Clock is nil.
	ClockErr string
	// Err says why sampling stopped before the process ended or never started.
	Err string
}

// procSampler samples one process in a goroutine until Stop.
type procSampler struct {
	proc      string
	pid       int
	cpus      []int
	wantClock bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
	tr   schedTrace
}

// startProcSampler starts sampling process pid (procfs at proc). cpus are the CPUs the process
// is pinned to; nil reads its affinity. wantClock also finds the process's sockperf clock.
func startProcSampler(proc string, pid int, cpus []int, wantClock bool) *procSampler {
	s := &procSampler{proc: proc, pid: pid, cpus: cpus, wantClock: wantClock, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// Stop ends sampling and returns what was read; later calls return the same trace.
func (s *procSampler) Stop() *schedTrace {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return &s.tr
}

func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

func (s *procSampler) run() {
	defer close(s.done)
	f, err := os.Open(filepath.Join(s.proc, strconv.Itoa(s.pid), "schedstat"))
	if err != nil {
		s.tr.Err = fmt.Sprintf("reading the run-queue wait of process %d: %v", s.pid, err)
		return
	}
	defer f.Close()
	st, err := os.Open(filepath.Join(s.proc, "stat"))
	if err != nil {
		s.tr.Err = fmt.Sprintf("reading steal time: %v", err)
	} else {
		defer st.Close()
	}
	clock := clockFinder{proc: s.proc, pid: s.pid}
	if !s.wantClock {
		clock.done = true
	}
	buf := make([]byte, 256)
	statBuf := make([]byte, 64*1024)
	tick := time.NewTicker(SchedSampleInterval)
	defer tick.Stop()
	var lastSteal int64
	for {
		now := monoNow()
		if len(s.tr.Sched) < maxSchedSamples {
			exec, wait, err := readSchedstat(f, buf)
			if err != nil {
				// the process ended (ESRCH) or the file went away
				if len(s.tr.Sched) == 0 {
					s.tr.Err = fmt.Sprintf("reading the run-queue wait of process %d: %v", s.pid, err)
				}
				break
			}
			s.tr.Sched = append(s.tr.Sched, schedSample{MonoNs: now, ExecNs: exec, WaitNs: wait})
			if st != nil && now-lastSteal >= int64(StealSampleInterval) {
				if s.tr.CPUs == nil {
					s.tr.CPUs = s.cpus
					if s.tr.CPUs == nil {
						s.tr.CPUs = affinityOf(s.pid)
					}
				}
				if steal, err := readSteal(st, statBuf, s.tr.CPUs); err == nil {
					s.tr.Steal = append(s.tr.Steal, stealSample{MonoNs: now, StealNs: steal})
					lastSteal = now
				} else if s.tr.Err == "" {
					s.tr.Err = err.Error()
				}
			}
		} else if s.tr.Err == "" {
			s.tr.Err = fmt.Sprintf("sampling stopped after %d samples", maxSchedSamples)
		}
		clock.try()
		select {
		case <-s.stop:
			clock.finish(&s.tr)
			return
		case <-tick.C:
		}
	}
	// The process is gone: wait for Stop, which comes once the runner has reaped it.
	<-s.stop
	clock.finish(&s.tr)
}

// readSchedstat reads the first two fields of /proc/<pid>/schedstat: nanoseconds the task ran on
// a CPU (with paravirtualised steal accounting, steal is not counted as running) and nanoseconds
// it spent on a run queue waiting for its CPU.
func readSchedstat(f *os.File, buf []byte) (exec, wait int64, err error) {
	n, err := f.ReadAt(buf, 0)
	if n == 0 {
		if err == nil {
			err = fmt.Errorf("empty schedstat")
		}
		return 0, 0, err
	}
	fields := bytes.Fields(buf[:n])
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("schedstat %q has no run-queue wait field", buf[:n])
	}
	if exec, err = strconv.ParseInt(string(fields[0]), 10, 64); err != nil {
		return 0, 0, err
	}
	wait, err = strconv.ParseInt(string(fields[1]), 10, 64)
	return exec, wait, err
}

// readSteal reads the steal column (the eighth number) of the cpuN lines of /proc/stat for cpus,
// in nanoseconds (the file counts USER_HZ ticks).
func readSteal(f *os.File, buf []byte, cpus []int) ([]int64, error) {
	n, err := f.ReadAt(buf, 0)
	if n == 0 {
		return nil, fmt.Errorf("reading steal time from /proc/stat: %v", err)
	}
	return parseSteal(buf[:n], cpus)
}

// parseSteal picks the steal column of the cpuN lines of /proc/stat's text for cpus, in
// nanoseconds.
func parseSteal(text []byte, cpus []int) ([]int64, error) {
	want := make(map[string]int, len(cpus))
	for i, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = i
	}
	out := make([]int64, len(cpus))
	found := 0
	for line := range bytes.SplitSeq(text, []byte{'\n'}) {
		if !bytes.HasPrefix(line, []byte("cpu")) {
			if found > 0 {
				break // the cpu lines come first
			}
			continue
		}
		f := bytes.Fields(line)
		i, ok := want[string(f[0])]
		if !ok {
			continue
		}
		if len(f) < 9 {
			return nil, fmt.Errorf("/proc/stat line %q has no steal column", line)
		}
		ticks, err := strconv.ParseInt(string(f[8]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/stat line %q: steal %q is not a number", line, f[8])
		}
		out[i] = ticks * (int64(time.Second) / userHZ)
		found++
	}
	if found != len(cpus) {
		return nil, fmt.Errorf("/proc/stat has no line for some of CPUs %v", cpus)
	}
	return out, nil
}
