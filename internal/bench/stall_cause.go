package bench

import (
	"sort"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// CauseShare is how much of a stall run-queue wait or steal must cover for the stall to be
// attributed to it: half (docs/benchmark-methods.md "Stalls").
const CauseShare = 0.5

// StallWindow is one stall's time on CLOCK_MONOTONIC, in nanoseconds.
type StallWindow struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// SchedDelta is what one side's sampler saw within one stall window.
type SchedDelta struct {
	// RunQueueWaitNs is the growth of the process's run-queue wait.
	RunQueueWaitNs int64 `json:"runQueueWaitNs"`
	// StealNs is the largest growth of steal time among the process's CPUs.
	StealNs int64 `json:"stealNs"`
	// OffCPUNs is the time the process was neither running nor waiting for its CPU: asleep, or
	// its vCPU taken by the hypervisor (the kernel does not count steal as running). For a
	// process that never sleeps (spinning) it is steal, measured in nanoseconds where
	// /proc/stat's steal column moves in 10 ms steps.
	OffCPUNs int64 `json:"offCPUNs,omitempty"`
	// Sampled is false when the samples do not cover the window.
	Sampled bool `json:"sampled"`
}

// counterGrowth is how much a cumulative counter of time sampled at times ts (ascending) grew
// over [start-margin, end+margin]: the value at the first sample at or after the window's end
// (the last sample if none is) minus the value at the last sample at or before its start (the
// first if none is), at most the widened window's length (a late sampler's samples enclose more
// than the window, and no more time than the window's can have passed in it). ok is false when no
// sample lies within or around the window.
func counterGrowth(ts []int64, value func(i int) int64, start, end, margin int64) (int64, bool) {
	i, j, ok := bracket(ts, start-margin, end+margin)
	if !ok {
		return 0, false
	}
	return min(value(j)-value(i), end-start+2*margin), true
}

// bracket returns the last sample at or before lo (the first if none is) and the first at or
// after hi (the last if none is); ok is false when no sample lies within or around [lo, hi].
func bracket(ts []int64, lo, hi int64) (i, j int, ok bool) {
	if len(ts) == 0 || hi < ts[0] || lo > ts[len(ts)-1] {
		return 0, 0, false
	}
	i = max(sort.Search(len(ts), func(k int) bool { return ts[k] > lo })-1, 0)
	j = min(sort.Search(len(ts), func(k int) bool { return ts[k] >= hi }), len(ts)-1)
	return i, j, j > i
}

// deltas computes, for each window, the run-queue wait and steal growth in a trace, with a
// margin of one sample interval on each side (SchedSampleInterval for the wait,
// StealSampleInterval for steal, whose counter moves in 10 ms units).
func (tr *schedTrace) deltas(windows []StallWindow) []SchedDelta {
	out := make([]SchedDelta, len(windows))
	if tr == nil {
		return out
	}
	sched := make([]int64, len(tr.Sched))
	for i, s := range tr.Sched {
		sched[i] = s.MonoNs
	}
	steal := make([]int64, len(tr.Steal))
	for i, s := range tr.Steal {
		steal[i] = s.MonoNs
	}
	for w, win := range windows {
		d := &out[w]
		d.RunQueueWaitNs, d.Sampled = counterGrowth(sched, func(i int) int64 { return tr.Sched[i].WaitNs }, win.Start, win.End, int64(SchedSampleInterval))
		if i, j, ok := bracket(sched, win.Start-int64(SchedSampleInterval), win.End+int64(SchedSampleInterval)); ok {
			a, b := tr.Sched[i], tr.Sched[j]
			off := (b.MonoNs - a.MonoNs) - (b.ExecNs - a.ExecNs) - (b.WaitNs - a.WaitNs)
			d.OffCPUNs = min(max(off, 0), win.End-win.Start+2*int64(SchedSampleInterval))
		}
		for c := range tr.CPUs {
			g, ok := counterGrowth(steal, func(i int) int64 {
				if c < len(tr.Steal[i].StealNs) {
					return tr.Steal[i].StealNs[c]
				}
				return 0
			}, win.Start, win.End, int64(StealSampleInterval))
			if ok {
				d.StealNs = max(d.StealNs, g)
			}
		}
	}
	return out
}

// StallCauseOf attributes a stall of durationNs: preempted when the run-queue wait of the two
// sides covers at least CauseShare of it, steal when steal does (the larger of the two when both
// do), else unexplained. With blocking sockets (sleeping: the kernel stack's sockperf) a process
// is runnable only while the message is with it, so the two sides' waits are on the message's
// path one after the other and add up; with spinning ones (the bypass stack) both are runnable
// all the time, their waits may overlap, and only the longer one counts.
func StallCauseOf(durationNs, clientWaitNs, reflectorWaitNs, stealNs int64, sleeping bool) tsv1.StallCause {
	wait := max(clientWaitNs, reflectorWaitNs)
	if sleeping {
		wait = clientWaitNs + reflectorWaitNs
	}
	covers := func(v int64) bool { return v > 0 && float64(v) >= CauseShare*float64(durationNs) }
	switch {
	case covers(wait) && wait >= stealNs:
		return tsv1.StallPreempted
	case covers(stealNs):
		return tsv1.StallSteal
	case covers(wait):
		return tsv1.StallPreempted
	}
	return tsv1.StallUnexplained
}

// AttributeStalls fills each listed stall's run-queue waits, steal and cause from the client's
// and the reflector's deltas for the same windows (nil: that side was not sampled); sleeping says
// the two sides block in their receives (StallCauseOf). Sides that spin count their time off the
// CPU as steal too. A stall neither side sampled keeps an empty cause.
func AttributeStalls(stalls []tsv1.Stall, client, reflector []SchedDelta, sleeping bool) {
	for i := range stalls {
		s := &stalls[i]
		var c, r SchedDelta
		if i < len(client) {
			c = client[i]
		}
		if i < len(reflector) {
			r = reflector[i]
		}
		if !c.Sampled && !r.Sampled {
			continue
		}
		s.ClientRunQueueWaitNs, s.ReflectorRunQueueWaitNs = c.RunQueueWaitNs, r.RunQueueWaitNs
		s.StealNs = max(c.StealNs, r.StealNs)
		if !sleeping {
			// a spinning process off its CPU without waiting for it had its vCPU taken
			s.StealNs = max(s.StealNs, c.OffCPUNs, r.OffCPUNs)
		}
		s.Cause = StallCauseOf(s.DurationNs, s.ClientRunQueueWaitNs, s.ReflectorRunQueueWaitNs, s.StealNs, sleeping)
	}
}

// StallWindows places a report's listed stalls on CLOCK_MONOTONIC, given the CLOCK_MONOTONIC
// time of a full-log time (the run's first send is at offset 0).
func StallWindows(rep *tsv1.StallReport, firstSendLogNs int64, toMono func(logNs int64) int64) []StallWindow {
	out := make([]StallWindow, len(rep.Stalls))
	for i, s := range rep.Stalls {
		out[i] = StallWindow{Start: toMono(firstSendLogNs + s.OffsetNs), End: toMono(firstSendLogNs + s.OffsetNs + s.DurationNs)}
	}
	return out
}

// attribute fills the run-queue wait, steal and cause of a row's listed stalls from the
// client's samples (run.sched) and the reflector's (asked for with "sched"), and says in
// rep.AttributionMissing what is missing. On the kernel stack both sockperfs block in their
// receives (sleeping); on the bypass stack they spin.
func (r *Runner) attribute(rep *tsv1.StallReport, stack tsv1.Stack, run clientOutcome, refl *ReflectorCounters) {
	sleeping := stack != tsv1.StackBypass
	if len(rep.Stalls) == 0 {
		return
	}
	var missing []string
	defer func() { rep.AttributionMissing = strings.Join(missing, "; ") }()
	tr := run.sched
	switch {
	case tr == nil:
		missing = append(missing, "runner: its sockperf was not sampled")
		return
	case tr.Clock == nil:
		missing = append(missing, "runner: "+tr.ClockErr)
		return
	}
	first := int64(0)
	for _, row := range run.rows {
		if row.TxNs > 0 && (first == 0 || row.TxNs < first) {
			first = row.TxNs
		}
	}
	windows := StallWindows(rep, first, tr.Clock.ToMono)
	client := tr.deltas(windows)
	if tr.Err != "" {
		missing = append(missing, "runner: "+tr.Err)
	}
	var reflector []SchedDelta
	switch {
	case r.Reflector == nil || refl == nil:
		missing = append(missing, "reflector: no server counters to ask with")
	case refl.SchedMissing != "":
		missing = append(missing, "reflector: "+refl.SchedMissing)
	case r.Reflector.Hello.BootID != "" && r.Reflector.Hello.BootID != bootID(r.proc()):
		missing = append(missing, "reflector: it runs on another host, whose CLOCK_MONOTONIC is not the runner's")
	default:
		var err error
		if reflector, err = r.Reflector.Sched(refl.serverID, windows); err != nil {
			missing = append(missing, "reflector: "+err.Error())
		}
	}
	AttributeStalls(rep.Stalls, client, reflector, sleeping)
}
