package judge

import (
	"fmt"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Evaluate judges results against thresholds. It is a pure function. A suite that ended in an
// error, an unavailable stack, or a threshold that matches no measured row makes the verdict
// Inconclusive unless some check failed; the thresholds must be valid (see Thresholds.Validate):
// an invalid rule is reported as a failed check. A ptp suite that got answers is always checked
// for every sample in SLAVE state (check ptp/slave): an offset is only meaningful while the clock
// follows its master. Every tickToTrade row likewise gets its check
// (tickToTrade/<stack>/<rate>msgps/accounted): Failed unless every tick and order was accounted for.
func Evaluate(r *tsv1.BenchmarkResults, t tsv1.Thresholds) tsv1.Verdict {
	var checks []tsv1.VerdictCheck
	add := func(name string, res tsv1.VerdictResult, format string, a ...any) {
		checks = append(checks, tsv1.VerdictCheck{Name: name, Result: res, Message: fmt.Sprintf(format, a...)})
	}
	// Suites that did not complete.
	for _, s := range r.Stacks {
		if s.Unavailable != "" {
			add("stack/"+string(s.Stack), tsv1.VerdictInconclusive, "stack %s unavailable: %s", s.Stack, s.Unavailable)
		}
		for _, e := range []struct {
			n   tsv1.SuiteName
			err string
		}{
			{tsv1.SuitePingPong, errOf(s.PingPong != nil, func() string { return s.PingPong.Error })},
			{tsv1.SuiteRateSweep, errOf(s.RateSweep != nil, func() string { return s.RateSweep.Error })},
			{tsv1.SuiteMicroburst, errOf(s.Microburst != nil, func() string { return MicroburstError(s.Microburst) })},
			{tsv1.SuiteMixedBurst, errOf(s.MixedBurst != nil, func() string { return s.MixedBurst.Error })},
			{tsv1.SuiteTickToTrade, errOf(s.TickToTrade != nil, func() string { return s.TickToTrade.Error })},
		} {
			if e.err != "" {
				add(fmt.Sprintf("suite/%s/%s", e.n, s.Stack), tsv1.VerdictInconclusive, "%s on %s did not complete: %s", e.n, s.Stack, e.err)
			}
		}
	}
	if r.Jitter != nil && r.Jitter.Error != "" {
		add("suite/jitter", tsv1.VerdictInconclusive, "jitter did not complete: %s", r.Jitter.Error)
	}
	if r.PTP != nil {
		evalPTPSlave(r.PTP, add)
	}
	if q := r.Qualify; q != nil {
		evalQualify(q, add)
	}

	for i, l := range t.Latency {
		evalLatency(r, i, l, add)
	}
	if t.MaxDropped != nil {
		evalDrops(r, *t.MaxDropped, add)
	}
	if t.MinSustainedMps != nil {
		min := *t.MinSustainedMps
		seen := false
		for _, s := range r.Stacks {
			if s.RateSweep == nil {
				continue
			}
			for _, m := range s.RateSweep.MaxSustained {
				seen = true
				name := fmt.Sprintf("rateSweep/%s/%s/%dB/sustained", s.Stack, m.Protocol, m.MessageSize)
				switch {
				case m.Mps >= min:
					add(name, tsv1.VerdictPassed, "%d B on %s sustained %s msg/s >= %d", m.MessageSize, s.Stack, FormatSearched(m.Mps, m.LimitReached), min)
				case m.LimitReached:
					// a lower bound below the threshold says nothing either way
					add(name, tsv1.VerdictInconclusive, "%d B on %s sustained every rate of the sweep, up to %d msg/s, which is below %d: add higher rates to suites.rateSweep.ratesMps", m.MessageSize, s.Stack, m.Mps, min)
				default:
					add(name, tsv1.VerdictFailed, "%d B on %s sustained only %d msg/s without drops, need %d", m.MessageSize, s.Stack, m.Mps, min)
				}
			}
		}
		if !seen {
			add("rateSweep/sustained", tsv1.VerdictInconclusive, "minSustainedMps is set but no rateSweep result was measured")
		}
	}
	if t.MinMicroburstPackets != nil {
		evalMicroburst(r, *t.MinMicroburstPackets, add)
	}
	if t.MinBypassSpeedup != "" {
		evalSpeedup(r, t.MinBypassSpeedup, add)
	}
	for _, s := range r.Stacks {
		if s.TickToTrade != nil {
			evalTickAccounting(s.Stack, s.TickToTrade, add)
		}
	}

	v := tsv1.Verdict{Result: tsv1.VerdictPassed}
	var failed, inconclusive, passed []tsv1.VerdictCheck
	for _, c := range checks {
		switch c.Result {
		case tsv1.VerdictFailed:
			failed = append(failed, c)
		case tsv1.VerdictInconclusive:
			inconclusive = append(inconclusive, c)
		default:
			passed = append(passed, c)
		}
	}
	switch {
	case len(failed) > 0:
		v.Result = tsv1.VerdictFailed
	case len(inconclusive) > 0:
		v.Result = tsv1.VerdictInconclusive
	}
	v.Reasons = append(append(append(v.Reasons, failed...), inconclusive...), passed...)
	return v
}

func errOf(present bool, f func() string) string {
	if !present {
		return ""
	}
	return f()
}

type latencyRow struct {
	stack tsv1.Stack
	label string
	stats tsv1.LatencyStats
}

func evalLatency(r *tsv1.BenchmarkResults, i int, l tsv1.LatencyLimit, add func(string, tsv1.VerdictResult, string, ...any)) {
	name := fmt.Sprintf("%s/%s", l.Suite, l.Statistic)
	if l.Stack != "" && l.Suite != tsv1.SuiteJitter {
		name = fmt.Sprintf("%s/%s/%s", l.Suite, l.Stack, l.Statistic)
	}
	if l.Protocol != "" {
		name += "/" + string(l.Protocol)
	}
	if l.MessageSize != 0 {
		name += fmt.Sprintf("/%dB", l.MessageSize)
	}
	if l.RateMps != 0 {
		name += fmt.Sprintf("/%dmsgps", l.RateMps)
	}
	max, err := time.ParseDuration(l.Max)
	if _, ok := l.Statistic.Of(tsv1.LatencyStats{}); !ok || err != nil || max <= 0 {
		add(name, tsv1.VerdictFailed, "thresholds.latency[%d] is invalid (statistic %q, max %q): fix the benchmark's thresholds", i, l.Statistic, l.Max)
		return
	}
	var rows []latencyRow
	match := func(p tsv1.Protocol, size int32) bool {
		return (l.Protocol == "" || l.Protocol == p) && (l.MessageSize == 0 || l.MessageSize == size)
	}
	rateMatch := func(rate int64) bool { return l.RateMps == 0 || l.RateMps == rate }
	for _, s := range r.Stacks {
		if l.Suite == tsv1.SuiteJitter || (l.Stack != "" && l.Stack != s.Stack) {
			continue
		}
		switch l.Suite {
		case tsv1.SuitePingPong:
			if s.PingPong != nil {
				for _, row := range s.PingPong.Rows {
					if match(row.Protocol, row.MessageSize) && row.Samples > 0 {
						rows = append(rows, latencyRow{s.Stack, fmt.Sprintf("%s %d B", row.Protocol, row.MessageSize), row.LatencyStats})
					}
				}
			}
		case tsv1.SuiteRateSweep:
			if s.RateSweep != nil {
				for _, row := range s.RateSweep.Rows {
					if match(row.Protocol, row.MessageSize) && rateMatch(row.TargetMps) && row.Samples > 0 && row.Sustained {
						rows = append(rows, latencyRow{s.Stack, fmt.Sprintf("%s %d B at %d msg/s", row.Protocol, row.MessageSize, row.TargetMps), row.LatencyStats})
					}
				}
			}
		case tsv1.SuiteTickToTrade:
			// A row with ticks or orders unaccounted for fails its own check and is not judged on
			// its latency.
			if s.TickToTrade != nil {
				for _, row := range s.TickToTrade.Rows {
					if rateMatch(row.RateMps) && row.TickToTrade.Samples > 0 && len(row.Unaccounted) == 0 {
						rows = append(rows, latencyRow{s.Stack, fmt.Sprintf("tick-to-trade at %d msg/s", row.RateMps), row.TickToTrade})
					}
				}
			}
		case tsv1.SuiteMixedBurst:
			if s.MixedBurst != nil && (l.Protocol == "" || l.Protocol == s.MixedBurst.Protocol) {
				for _, row := range s.MixedBurst.Rows {
					st := row.LatencyStats
					label := fmt.Sprintf("%d+%d msg/s", row.SteadyMps, row.BurstMps)
					switch {
					case l.MessageSize == 0:
					case l.MessageSize == s.MixedBurst.SmallSize && row.Small != nil:
						st, label = *row.Small, label+fmt.Sprintf(" %d B", s.MixedBurst.SmallSize)
					case l.MessageSize == s.MixedBurst.LargeSize && row.Large != nil:
						st, label = *row.Large, label+fmt.Sprintf(" %d B", s.MixedBurst.LargeSize)
					default:
						continue
					}
					if st.Samples > 0 {
						rows = append(rows, latencyRow{s.Stack, label, st})
					}
				}
			}
		}
	}
	if l.Suite == tsv1.SuitePTP && r.PTP != nil && r.PTP.Offset.Samples > 0 {
		rows = append(rows, latencyRow{"", fmt.Sprintf("|offset from master| over %d SLAVE samples", r.PTP.Offset.Samples), r.PTP.Offset})
	}
	if l.Suite == tsv1.SuiteJitter && r.Jitter != nil {
		for _, row := range r.Jitter.Rows {
			if (l.Tool == "" || l.Tool == row.Tool) && row.Samples > 0 {
				rows = append(rows, latencyRow{"", fmt.Sprintf("%s cpu %d", row.Tool, row.CPU), row.LatencyStats})
			}
		}
	}
	if len(rows) == 0 {
		if l.Suite == tsv1.SuitePTP {
			add(name, tsv1.VerdictInconclusive, "thresholds.latency[%d] bounds the ptp offset but no offset was measured in SLAVE state", i)
			return
		}
		add(name, tsv1.VerdictInconclusive, "no measured %s row matches thresholds.latency[%d]", l.Suite, i)
		return
	}
	worst := rows[0]
	worstV, _ := l.Statistic.Of(worst.stats)
	for _, row := range rows[1:] {
		if v, _ := l.Statistic.Of(row.stats); v > worstV {
			worst, worstV = row, v
		}
	}
	where := worst.label
	if worst.stack != "" {
		where += " on " + string(worst.stack)
	}
	if worstV > max.Nanoseconds() {
		add(name, tsv1.VerdictFailed, "%s %s us at %s exceeds %s (%d rows checked)", l.Statistic, FormatNanosAsMicros(worstV), where, l.Max, len(rows))
		return
	}
	add(name, tsv1.VerdictPassed, "worst %s %s us at %s is within %s (%d rows checked)", l.Statistic, FormatNanosAsMicros(worstV), where, l.Max, len(rows))
}

// evalMicroburst checks every microburst row, each receive buffer size of each stack, against
// minMicroburstPackets: a lower bound (limitReached) below it, or a search cut short, is
// Inconclusive, never Failed.
func evalMicroburst(r *tsv1.BenchmarkResults, min int64, add func(string, tsv1.VerdictResult, string, ...any)) {
	seen := false
	for _, s := range r.Stacks {
		m := s.Microburst
		if m == nil {
			continue
		}
		for _, row := range m.Rows {
			if row.Error != "" && len(row.Trials) == 0 {
				continue
			}
			seen = true
			name := fmt.Sprintf("microburst/%s", s.Stack)
			if row.ReceiveBufferBytes != 0 {
				name += fmt.Sprintf("/rcvbuf%d", row.ReceiveBufferBytes)
			}
			at := ReceiveBufferLabel(row.ReceiveBufferBytes)
			switch {
			case row.MaxBurstPackets >= min:
				add(name, tsv1.VerdictPassed, "absorbed %s back-to-back %d B messages (%s us at %d Mb/s) at %s >= %d", FormatSearched(row.MaxBurstPackets, row.LimitReached), m.MessageSize, FormatNanosAsMicros(row.BurstTimeNs), m.LinkSpeedMbps, at, min)
			case row.LimitReached:
				add(name, tsv1.VerdictInconclusive, "absorbed every burst tried at %s, up to the search's bound of %d messages, which is below %d: raise suites.microburst.maxBurstPackets", at, row.MaxBurstPackets, min)
			case row.Error != "":
				add(name, tsv1.VerdictInconclusive, "absorbed %d at %s before the search failed, need %d: %s", row.MaxBurstPackets, at, min, row.Error)
			default:
				add(name, tsv1.VerdictFailed, "largest burst absorbed without a drop at %s is %d messages of %d B, need %d", at, row.MaxBurstPackets, m.MessageSize, min)
			}
		}
	}
	if !seen {
		add("microburst", tsv1.VerdictInconclusive, "minMicroburstPackets is set but no microburst result was measured")
	}
}

// evalTickAccounting checks every tickToTrade row: Failed unless every tick the publisher sent
// was received in sequence and every order was filled, as the exchange and both FIX ends agree.
func evalTickAccounting(stack tsv1.Stack, t *tsv1.TickToTradeResult, add func(string, tsv1.VerdictResult, string, ...any)) {
	for _, row := range t.Rows {
		name := fmt.Sprintf("tickToTrade/%s/%dmsgps/accounted", stack, row.RateMps)
		if len(row.Unaccounted) > 0 {
			add(name, tsv1.VerdictFailed, "at %d msg/s on %s not every tick and order is accounted for: %s", row.RateMps, stack, strings.Join(row.Unaccounted, "; "))
			continue
		}
		add(name, tsv1.VerdictPassed, "at %d msg/s on %s every tick is accounted for: %d sent and received in sequence, %d orders filled", row.RateMps, stack, row.TicksSent, row.Orders)
	}
}

// evalPTPSlave checks that every read of ptp4l found its port in SLAVE state with an offset. A
// suite with no answered read is left to its error (suite/ptp, Inconclusive).
func evalPTPSlave(p *tsv1.PTPResult, add func(string, tsv1.VerdictResult, string, ...any)) {
	if p.Error != "" {
		add("suite/ptp", tsv1.VerdictInconclusive, "ptp did not complete: %s", p.Error)
	}
	if p.Samples == p.FailedReads {
		return
	}
	var states []string
	for _, s := range p.PortStates {
		states = append(states, fmt.Sprintf("%s %d", s.State, s.Samples))
	}
	seen := strings.Join(states, ", ")
	if p.NotSlaveSamples == 0 && p.FailedReads == 0 {
		add("ptp/slave", tsv1.VerdictPassed, "all %d samples of %s in SLAVE state", p.Samples, p.Socket)
		return
	}
	msg := fmt.Sprintf("%d of %d samples of %s not in SLAVE state (%s)", p.NotSlaveSamples+p.FailedReads, p.Samples, p.Socket, seen)
	if p.FailedReads > 0 {
		msg += fmt.Sprintf("; %d reads unanswered, last: %s", p.FailedReads, p.LastFailure)
	}
	add("ptp/slave", tsv1.VerdictFailed, "%s: the clock did not follow its master for the whole run", msg)
}

func evalDrops(r *tsv1.BenchmarkResults, max int64, add func(string, tsv1.VerdictResult, string, ...any)) {
	seen := false
	for _, s := range r.Stacks {
		var worst int64 = -1
		var where string
		if s.PingPong != nil {
			for _, row := range s.PingPong.Rows {
				seen = true
				if row.Dropped > worst {
					worst, where = row.Dropped, fmt.Sprintf("pingPong %s %d B", row.Protocol, row.MessageSize)
				}
			}
		}
		if s.MixedBurst != nil {
			for _, row := range s.MixedBurst.Rows {
				seen = true
				if row.Dropped > worst {
					worst, where = row.Dropped, fmt.Sprintf("mixedBurst %d+%d msg/s", row.SteadyMps, row.BurstMps)
				}
			}
		}
		if worst < 0 {
			continue
		}
		name := fmt.Sprintf("drops/%s", s.Stack)
		if worst > max {
			add(name, tsv1.VerdictFailed, "%d messages dropped in %s on %s, at most %d allowed", worst, where, s.Stack, max)
		} else {
			add(name, tsv1.VerdictPassed, "at most %d messages dropped per row on %s (limit %d)", worst, s.Stack, max)
		}
	}
	if !seen {
		add("drops", tsv1.VerdictInconclusive, "maxDropped is set but no pingPong or mixedBurst row was measured")
	}
}

func evalSpeedup(r *tsv1.BenchmarkResults, minStr string, add func(string, tsv1.VerdictResult, string, ...any)) {
	min, err := ParseRatio(minStr)
	if err != nil {
		add("bypassSpeedup", tsv1.VerdictFailed, "thresholds.minBypassSpeedup: %v", err)
		return
	}
	var rows []tsv1.StackComparison
	for _, c := range CompareStacks(r) {
		if c.Suite == tsv1.SuitePingPong {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		add("bypassSpeedup", tsv1.VerdictInconclusive, "minBypassSpeedup is set but no pingPong row was measured on both kernel and bypass")
		return
	}
	worst := rows[0]
	worstV, _ := ParseRatio(worst.MedianSpeedup)
	for _, c := range rows[1:] {
		if v, _ := ParseRatio(c.MedianSpeedup); v < worstV {
			worst, worstV = c, v
		}
	}
	if worstV < min {
		add("bypassSpeedup", tsv1.VerdictFailed, "bypass median is only %sx faster than kernel at %s %d B, need %s", worst.MedianSpeedup, worst.Protocol, worst.MessageSize, minStr)
		return
	}
	add("bypassSpeedup", tsv1.VerdictPassed, "bypass median is at least %sx faster than kernel (%s %d B), need %s", worst.MedianSpeedup, worst.Protocol, worst.MessageSize, minStr)
}

// FormatSearched prints a search's result: "at least N" when the search stopped at its bound (the
// real limit is higher), else N.
func FormatSearched(n int64, bound bool) string {
	if bound {
		return fmt.Sprintf("at least %d", n)
	}
	return fmt.Sprint(n)
}

// evalQualify turns the qualify suite's verdict into a check: Unsupported fails the node,
// Degraded passes with its reasons said, a report without a verdict is inconclusive.
func evalQualify(q *tsv1.QualifyReport, add func(string, tsv1.VerdictResult, string, ...any)) {
	var reasons []string
	for _, r := range q.Reasons {
		reasons = append(reasons, r.Check+": "+r.Message)
	}
	switch q.Verdict {
	case tsv1.QualifyUnsupported:
		add("qualify/"+q.Interface, tsv1.VerdictFailed, "interface %s is unsupported: %s", q.Interface, strings.Join(reasons, "; "))
	case tsv1.QualifyDegraded:
		add("qualify/"+q.Interface, tsv1.VerdictPassed, "interface %s is degraded: %s", q.Interface, strings.Join(reasons, "; "))
	case tsv1.QualifySupported:
		add("qualify/"+q.Interface, tsv1.VerdictPassed, "interface %s is supported (driver %s)", q.Interface, q.Driver)
	default:
		add("qualify/"+q.Interface, tsv1.VerdictInconclusive, "interface %s: the qualification gave no verdict: %s", q.Interface, q.Error)
	}
}
