package bench

import (
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// a trace sampled every millisecond from 0 to 100 ms whose run-queue wait grows by waitPerMs in
// [waitFrom, waitTo) and whose only CPU's steal grows by 10 ms at stealAt.
func craftedTrace(waitFrom, waitTo, waitPerMs, stealAt int64) *schedTrace {
	tr := &schedTrace{CPUs: []int{3}}
	var wait, steal int64
	for t := int64(0); t <= 100*ms; t += ms {
		if t > waitFrom && t <= waitTo {
			wait += waitPerMs
		}
		tr.Sched = append(tr.Sched, schedSample{MonoNs: t, WaitNs: wait})
		if t%(10*ms) == 0 {
			if stealAt >= 0 && t >= stealAt && steal == 0 {
				steal = 10 * ms
			}
			tr.Steal = append(tr.Steal, stealSample{MonoNs: t, StealNs: []int64{steal}})
		}
	}
	return tr
}

func TestCounterGrowth(t *testing.T) {
	ts := []int64{0, 10, 20, 30, 40}
	for _, c := range []struct {
		name              string
		rate              int64 // the counter grows by rate/2 per unit of time
		start, end, margn int64
		want              int64
		ok                bool
	}{
		{"inside, on samples", 1, 10, 30, 0, 10, true},
		{"between samples widens to the enclosing ones", 1, 12, 28, 0, 10, true},
		{"margin widens by one sample", 1, 20, 20, 10, 10, true},
		{"before the first sample", 1, -30, -20, 5, 0, false},
		{"after the last sample", 1, 50, 60, 5, 0, false},
		{"overlapping the end is cut there", 1, 30, 90, 0, 5, true},
		// waiting all the time: 40 between the enclosing samples 0 and 40 (a late sampler), but
		// the widened window 8..32 is 24 long
		{"no more than the widened window's length", 2, 12, 28, 4, 24, true},
	} {
		v := func(i int) int64 { return ts[i] * c.rate / 2 }
		got, ok := counterGrowth(ts, v, c.start, c.end, c.margn)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := counterGrowth(nil, func(int) int64 { return 0 }, 0, 10, 0); ok {
		t.Error("no samples counted as sampled")
	}
}

func TestTraceDeltas(t *testing.T) {
	// waiting all of 40..60 ms (1 ms per ms), steal of 10 ms booked at 80 ms
	tr := craftedTrace(40*ms, 60*ms, ms, 80*ms)
	got := tr.deltas([]StallWindow{{Start: 40 * ms, End: 60 * ms}, {Start: 5 * ms, End: 15 * ms}, {Start: 75 * ms, End: 78 * ms}, {Start: 500 * ms, End: 510 * ms}})
	// 40..60 ms plus one sample of margin each side: the whole 20 ms of waiting
	if got[0].RunQueueWaitNs != 20*ms || !got[0].Sampled || got[0].StealNs != 0 {
		t.Errorf("waiting window: %+v", got[0])
	}
	if got[1].RunQueueWaitNs != 0 || !got[1].Sampled {
		t.Errorf("quiet window: %+v", got[1])
	}
	// the steal counter moved between the samples at 70 and 80 ms, within a 10 ms margin
	if got[2].StealNs != 10*ms || got[2].RunQueueWaitNs != 0 {
		t.Errorf("steal window: %+v", got[2])
	}
	if got[3].Sampled {
		t.Errorf("window after the samples: %+v", got[3])
	}
	var none *schedTrace
	if d := none.deltas([]StallWindow{{0, 1}}); len(d) != 1 || d[0].Sampled {
		t.Errorf("nil trace: %+v", d)
	}
}

func TestStallCauseOf(t *testing.T) {
	for _, c := range []struct {
		dur, client, refl, steal int64
		want                     tsv1.StallCause
		sleeping                 bool
	}{
		{10 * ms, 6 * ms, 0, 0, tsv1.StallPreempted, false},
		{10 * ms, 0, 5 * ms, 0, tsv1.StallPreempted, false},
		{10 * ms, 4 * ms, 4 * ms, 0, tsv1.StallUnexplained, false}, // spinning: each side under half
		{10 * ms, 4 * ms, 4 * ms, 0, tsv1.StallPreempted, true},    // sleeping: the waits add up
		{10 * ms, 2 * ms, 2 * ms, 0, tsv1.StallUnexplained, true},
		{10 * ms, 0, 0, 10 * ms, tsv1.StallSteal, false},
		{10 * ms, 6 * ms, 0, 10 * ms, tsv1.StallSteal, false}, // both cover half: the larger
		{10 * ms, 9 * ms, 0, 6 * ms, tsv1.StallPreempted, false},
		{10 * ms, 1 * ms, 0, 0, tsv1.StallUnexplained, false},
		{0, 0, 0, 0, tsv1.StallUnexplained, true},
	} {
		if got := StallCauseOf(c.dur, c.client, c.refl, c.steal, c.sleeping); got != c.want {
			t.Errorf("stall %d ns, waits %d/%d, steal %d, sleeping %v: %s, want %s", c.dur, c.client, c.refl, c.steal, c.sleeping, got, c.want)
		}
	}
}

func TestAttributeStalls(t *testing.T) {
	stalls := []tsv1.Stall{{DurationNs: 8 * ms}, {DurationNs: 8 * ms}, {DurationNs: 8 * ms}}
	client := []SchedDelta{{RunQueueWaitNs: 1 * ms, Sampled: true}, {RunQueueWaitNs: 7 * ms, Sampled: true}, {}}
	refl := []SchedDelta{{RunQueueWaitNs: 6 * ms, Sampled: true}, {StealNs: 10 * ms, Sampled: true}}
	AttributeStalls(stalls, client, refl, false)
	if s := stalls[0]; s.ClientRunQueueWaitNs != ms || s.ReflectorRunQueueWaitNs != 6*ms || s.Cause != tsv1.StallPreempted {
		t.Errorf("reflector preempted: %+v", s)
	}
	if s := stalls[1]; s.StealNs != 10*ms || s.Cause != tsv1.StallSteal {
		t.Errorf("steal: %+v", s)
	}
	if s := stalls[2]; s.Cause != "" {
		t.Errorf("unsampled stall got a cause: %+v", s)
	}
	// the client's samples alone attribute
	one := []tsv1.Stall{{DurationNs: 4 * ms}}
	AttributeStalls(one, []SchedDelta{{Sampled: true}}, nil, false)
	if one[0].Cause != tsv1.StallUnexplained {
		t.Errorf("client only: %+v", one[0])
	}
}

func TestStallWindowsAndSummary(t *testing.T) {
	rep := &tsv1.StallReport{Count: 12, Stalls: []tsv1.Stall{
		{OffsetNs: 100 * ms, DurationNs: 5 * ms, Cause: tsv1.StallPreempted},
		{OffsetNs: 300 * ms, DurationNs: 2 * ms, Cause: tsv1.StallUnexplained},
		{OffsetNs: 400 * ms, DurationNs: 2 * ms, Cause: tsv1.StallPreempted},
	}}
	w := StallWindows(rep, 7*ms, func(logNs int64) int64 { return logNs + 1000*ms })
	if w[0] != (StallWindow{Start: 1107 * ms, End: 1112 * ms}) || w[2].Start != 1407*ms {
		t.Errorf("windows %+v", w)
	}
	if got := judge.StallSummary(rep); got != "12 stalls (3 listed: 2 preempted, 1 unexplained)" {
		t.Errorf("summary %q", got)
	}
	if got := judge.StallSummary(&tsv1.StallReport{Count: 1, Stalls: []tsv1.Stall{{}}}); got != "1 stall" {
		t.Errorf("unattributed summary %q", got)
	}
}

func TestParseSteal(t *testing.T) {
	text := []byte("cpu  10 0 5 100 0 0 0 7 0 0\ncpu0 5 0 2 50 0 0 0 3 0 0\ncpu1 5 0 3 50 0 0 0 4 0 0\nintr 1 2 3\n")
	got, err := parseSteal(text, []int{1, 0})
	if err != nil || got[0] != 40*ms || got[1] != 30*ms {
		t.Errorf("steal %v %v", got, err)
	}
	if _, err := parseSteal(text, []int{2}); err == nil || !strings.Contains(err.Error(), "no line") {
		t.Errorf("missing CPU: %v", err)
	}
}

// sockperf's conversion back to its counter, then the runner's two readings: a counter at 2.5
// ticks per ns whose base reading was at CLOCK_MONOTONIC 1 s.
func TestSockperfClockToMono(t *testing.T) {
	c := &sockperfClock{Base: 1_000_000, TicksPerMsec: 2_500_000,
		First: clockPair{tsc: 1_000_000 + 250_000_000, mono: 1_100_000_000},
		Last:  clockPair{tsc: 1_000_000 + 25_250_000_000, mono: 11_100_000_000}}
	for _, c2 := range []struct{ log, want int64 }{{0, 1_000_000_000}, {100 * ms, 1_100_000_000}, {5_000_000_123, 6_000_000_123}} {
		if got := c.ToMono(c2.log); got < c2.want-1 || got > c2.want+1 {
			t.Errorf("log %d: mono %d, want %d", c2.log, got, c2.want)
		}
	}
	// sockperf calibrated 1% fast: the runner's readings, not sockperf's rate, set the result
	c.TicksPerMsec = 2_525_000
	if got := c.ToMono(5 * 1000 * ms); got < 6_050_000_000-1000 || got > 6_050_000_000+1000 {
		t.Errorf("mis-calibrated sockperf: mono %d, want 6.05 s", got)
	}
}

// A spinning process's time off its CPU without waiting for it is its vCPU stolen: the trace's
// clock, time on the CPU and run-queue wait give it to the nanosecond, and a spinning side's
// stall is attributed to steal by it where /proc/stat's 10 ms steal steps show nothing; a
// sleeping side's time off the CPU is its sleep and counts for nothing.
func TestOffCPUIsStealForSpinners(t *testing.T) {
	tr := &schedTrace{CPUs: []int{1}}
	var exec, wait int64
	for now := int64(0); now <= 100*ms; now += 10 * ms {
		tr.Sched = append(tr.Sched, schedSample{MonoNs: now, ExecNs: exec, WaitNs: wait})
		tr.Steal = append(tr.Steal, stealSample{MonoNs: now, StealNs: []int64{0}})
		// the next 10 ms: on the CPU all of it, except 0.5 ms waiting and, from 40 to 50 ms, 6 ms
		// off the CPU
		step, off := 10*ms-ms/2, int64(0)
		if now == 40*ms {
			off = 6 * ms
		}
		exec += step - off
		wait += ms / 2
	}
	d := tr.deltas([]StallWindow{{Start: 42 * ms, End: 47 * ms}, {Start: 72 * ms, End: 77 * ms}})
	if d[0].OffCPUNs != 6*ms || d[0].StealNs != 0 || !d[0].Sampled {
		t.Errorf("window with 6 ms off the CPU: %+v", d[0])
	}
	if d[1].OffCPUNs != 0 {
		t.Errorf("window without: %+v", d[1])
	}
	for _, sleeping := range []bool{false, true} {
		st := []tsv1.Stall{{DurationNs: 5 * ms}}
		AttributeStalls(st, d[:1], nil, sleeping)
		want, steal := tsv1.StallSteal, 6*ms
		if sleeping {
			want, steal = tsv1.StallUnexplained, 0
		}
		if st[0].Cause != want || st[0].StealNs != steal {
			t.Errorf("sleeping %v: %+v, want %s with steal %d", sleeping, st[0], want, steal)
		}
	}
}
