package report

import (
	"fmt"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// StallCount is a row's stalls column: the number of stalls, with "few" when the row timed far
// fewer messages than its neighbours; "-" for a row without a stall report (an older runner).
func StallCount(s *tsv1.StallReport) string {
	if s == nil {
		return "-"
	}
	out := strconv.Itoa(int(s.Count))
	if s.FewSamples {
		out += " few"
	}
	return out
}

// MaxCheckCell is the bypass pingPong's regression check: the row's maximum against the bound
// derived from the same run (judge.MaxCheck).
func MaxCheckCell(st tsv1.LatencyStats) string {
	if st.Samples == 0 {
		return "-"
	}
	bound, ok := judge.MaxCheck(st)
	if ok {
		return "ok (<= " + shortDuration(bound) + ")"
	}
	return "OVER (> " + shortDuration(bound) + ")"
}

// StallNotes are the sentences that explain one row's stall report, each starting with the row's
// label: its stalls with their times, a sample count far below its neighbours', and on the bypass
// stack what the stack's counters on both sides say. None for an undisturbed row.
func StallNotes(stack tsv1.Stack, label string, samples int64, s *tsv1.StallReport) []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Count > 0 {
		var listed []string
		for _, st := range s.Stalls {
			what := "slowest message " + shortDuration(st.LatencyNs)
			if st.LatencyNs <= s.LatencyThresholdNs {
				what = "no slow message: a pause between sends"
			}
			listed = append(listed, fmt.Sprintf("at %s s for %s (%s)%s", seconds(st.OffsetNs), shortDuration(st.DurationNs), what, stallCause(stack, s, st)))
		}
		which := ""
		if int(s.Count) > len(s.Stalls) {
			which = fmt.Sprintf("; the %d longest", len(s.Stalls))
		}
		gap := ""
		if s.GapThresholdNs > 0 {
			gap = " or a pause between sends over " + shortDuration(s.GapThresholdNs)
		}
		n := fmt.Sprintf("%d stalls", s.Count)
		if s.Count == 1 {
			n = "1 stall"
		}
		out = append(out, fmt.Sprintf("%s: %s, %s in total (a message slower than %s%s)%s: %s", label, n,
			shortDuration(s.TotalNs), shortDuration(s.LatencyThresholdNs), gap, which, strings.Join(listed, ", ")))
		if causes := judge.StallSummary(s); strings.Contains(causes, "(") {
			out = append(out, fmt.Sprintf("%s: causes of the stalls: %s", label, strings.TrimSuffix(causes[strings.Index(causes, "(")+1:], ")")))
		}
		if s.AttributionMissing != "" {
			out = append(out, fmt.Sprintf("%s: run-queue wait and steal missing: %s", label, s.AttributionMissing))
		}
	}
	if s.FewSamples {
		out = append(out, fmt.Sprintf("%s: %d samples, under a quarter of the %d the suite's other rows timed (their median) in the same time", label, samples, s.NeighbourSamples))
	}
	if stack != tsv1.StackBypass {
		return out
	}
	counters := func(cs []tsv1.StackCounter) string {
		if len(cs) == 0 {
			return "nothing unusual"
		}
		var parts []string
		for _, c := range cs {
			parts = append(parts, fmt.Sprintf("%s=%d", c.Name, c.Value))
		}
		return strings.Join(parts, " ")
	}
	if len(s.Counters) > 0 || len(s.ReflectorCounters) > 0 || (len(out) > 0 && s.CountersMissing == "") {
		out = append(out, fmt.Sprintf("%s: the bypass stack counted, runner: %s; reflector: %s", label, counters(s.Counters), counters(s.ReflectorCounters)))
	}
	if s.CountersMissing != "" {
		out = append(out, fmt.Sprintf("%s: bypass stack counters missing: %s", label, s.CountersMissing))
	}
	return out
}

// stallCause is one attributed stall's cause with the numbers behind it, " [preempted: ...]";
// "" for a stall without a cause (an older runner, or nothing sampled).
func stallCause(stack tsv1.Stack, s *tsv1.StallReport, st tsv1.Stall) string {
	if st.Cause == "" {
		return ""
	}
	more := ""
	if st.Cause == tsv1.StallUnexplained && stack == tsv1.StackBypass && (len(s.Counters) > 0 || len(s.ReflectorCounters) > 0) {
		more = "; see the bypass stack's counters"
	}
	d := func(ns int64) string {
		if ns == 0 {
			return "0"
		}
		return shortDuration(ns)
	}
	return fmt.Sprintf(" [%s: run-queue wait client %s, reflector %s; steal %s%s]", st.Cause,
		d(st.ClientRunQueueWaitNs), d(st.ReflectorRunQueueWaitNs), d(st.StealNs), more)
}

// PingPongStallNotes are StallNotes for every row of a pingPong table.
func PingPongStallNotes(stack tsv1.Stack, rows []tsv1.PingPongRow) []string {
	return rowStallNotes(stack, rows, func(r tsv1.PingPongRow) (string, int64, *tsv1.StallReport) {
		return fmt.Sprintf("%s %d B", r.Protocol, r.MessageSize), r.Samples, r.Stalls
	})
}

// RateStallNotes are StallNotes for every row of a rateSweep table.
func RateStallNotes(stack tsv1.Stack, rows []tsv1.RateRow) []string {
	return rowStallNotes(stack, rows, func(r tsv1.RateRow) (string, int64, *tsv1.StallReport) {
		return fmt.Sprintf("%s %d B at %d msg/s", r.Protocol, r.MessageSize, r.TargetMps), r.Samples, r.Stalls
	})
}

// MixedStallNotes are StallNotes for every row of a mixedBurst table.
func MixedStallNotes(stack tsv1.Stack, rows []tsv1.MixedBurstRow) []string {
	return rowStallNotes(stack, rows, func(r tsv1.MixedBurstRow) (string, int64, *tsv1.StallReport) {
		return fmt.Sprintf("%d+%d msg/s", r.SteadyMps, r.BurstMps), r.Samples, r.Stalls
	})
}

// rowStallNotes are StallNotes for every row of a table, each row's label, sample count and
// stall report given by row.
func rowStallNotes[R any](stack tsv1.Stack, rows []R, row func(R) (string, int64, *tsv1.StallReport)) []string {
	var out []string
	for _, r := range rows {
		label, samples, stalls := row(r)
		out = append(out, StallNotes(stack, label, samples, stalls)...)
	}
	return out
}

// shortDuration renders nanoseconds with about three significant digits: "235 ms", "18.7 ms",
// "980 us", "1.25 s".
func shortDuration(ns int64) string {
	v, unit := float64(ns), "ns"
	switch {
	case ns >= 1000000000:
		v, unit = v/1e9, "s"
	case ns >= 1000000:
		v, unit = v/1e6, "ms"
	case ns >= 1000:
		v, unit = v/1e3, "us"
	}
	decimals := 2
	switch {
	case v >= 100:
		decimals = 0
	case v >= 10:
		decimals = 1
	}
	return strconv.FormatFloat(v, 'f', decimals, 64) + " " + unit
}

// seconds renders nanoseconds as seconds with three decimals.
func seconds(ns int64) string {
	return fmt.Sprintf("%d.%03d", ns/1000000000, ns%1000000000/1000000)
}
