package bench

import (
	"fmt"
	"strings"
	"time"
)

// Statistic names one field of LatencyStats.
// +kubebuilder:validation:Enum=min;median;mean;p95;p99;p999;max;stdDev
type Statistic string

// Statistics a LatencyLimit can bound.
const (
	StatMin    Statistic = "min"
	StatMedian Statistic = "median"
	StatMean   Statistic = "mean"
	StatP95    Statistic = "p95"
	StatP99    Statistic = "p99"
	StatP999   Statistic = "p999"
	StatMax    Statistic = "max"
	StatStdDev Statistic = "stdDev"
)

// Of returns the statistic's value in s, and false for an unknown statistic.
func (st Statistic) Of(s LatencyStats) (int64, bool) {
	switch st {
	case StatMin:
		return s.MinNs, true
	case StatMedian:
		return s.MedianNs, true
	case StatMean:
		return s.MeanNs, true
	case StatP95:
		return s.P95Ns, true
	case StatP99:
		return s.P99Ns, true
	case StatP999:
		return s.P999Ns, true
	case StatMax:
		return s.MaxNs, true
	case StatStdDev:
		return s.StdDevNs, true
	}
	return 0, false
}

// LatencyLimit bounds one statistic over the rows of a suite that match its selectors.
// +kubebuilder:object:generate=true
type LatencyLimit struct {
	// Suite is pingPong, rateSweep, mixedBurst, jitter or ptp (the |offset| of ptp4l from its
	// master; the selectors below do not apply to it).
	Suite SuiteName `json:"suite"`
	// Stack narrows to one stack; empty means every stack (ignored for jitter).
	// +optional
	Stack Stack `json:"stack,omitempty"`
	// Protocol narrows to one protocol; empty means every protocol.
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
	// MessageSize narrows to one size; 0 means every size.
	// +optional
	MessageSize int32 `json:"messageSize,omitempty"`
	// Tool narrows jitter rows to one tool; empty means both.
	// +optional
	Tool JitterTool `json:"tool,omitempty"`
	// Statistic is the bounded statistic.
	Statistic Statistic `json:"statistic"`
	// Max is the largest allowed value, a duration such as "25us" or "1.5ms".
	Max string `json:"max"`
}

// Thresholds are what a node must meet to pass. Unset fields are not checked.
// +kubebuilder:object:generate=true
type Thresholds struct {
	// +listType=atomic
	Latency []LatencyLimit `json:"latency,omitempty"`
	// MaxDropped bounds the messages lost in any pingPong or mixedBurst row.
	// +optional
	MaxDropped *int64 `json:"maxDropped,omitempty"`
	// MinSustainedMps is the rate every rateSweep message size must sustain without a drop.
	// +optional
	MinSustainedMps *int64 `json:"minSustainedMps,omitempty"`
	// MinMicroburstPackets is the burst the node must absorb without a drop.
	// +optional
	MinMicroburstPackets *int64 `json:"minMicroburstPackets,omitempty"`
	// MinBypassSpeedup is the kernel/bypass median ratio every compared pingPong row must reach,
	// a decimal string such as "1.5".
	// +optional
	MinBypassSpeedup string `json:"minBypassSpeedup,omitempty"`
}

// Validate reports the first malformed threshold, naming its field and the fix.
func (t Thresholds) Validate() error {
	var errs []string
	for i, l := range t.Latency {
		f := fmt.Sprintf("thresholds.latency[%d]", i)
		switch l.Suite {
		case SuitePingPong, SuiteRateSweep, SuiteMixedBurst, SuiteJitter:
		case SuitePTP:
			for _, sel := range []struct {
				name string
				set  bool
			}{{"stack", l.Stack != ""}, {"protocol", l.Protocol != ""}, {"messageSize", l.MessageSize != 0}, {"tool", l.Tool != ""}} {
				if sel.set {
					errs = append(errs, fmt.Sprintf("%s.%s: does not apply to suite ptp (one offset distribution per node): remove it", f, sel.name))
				}
			}
		default:
			errs = append(errs, fmt.Sprintf("%s.suite: %q has no latency rows: use pingPong, rateSweep, mixedBurst, jitter or ptp", f, l.Suite))
		}
		if _, ok := l.Statistic.Of(LatencyStats{}); !ok {
			errs = append(errs, fmt.Sprintf("%s.statistic: %q is unknown: use min, median, mean, p95, p99, p999, max or stdDev", f, l.Statistic))
		}
		if d, err := time.ParseDuration(l.Max); err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s.max: %q is not a positive duration: write it like \"25us\" or \"1.5ms\"", f, l.Max))
		}
		if l.Stack != "" && l.Stack != StackKernel && l.Stack != StackBypass {
			errs = append(errs, fmt.Sprintf("%s.stack: %q: use kernel, bypass or leave it empty", f, l.Stack))
		}
	}
	if t.MaxDropped != nil && *t.MaxDropped < 0 {
		errs = append(errs, "thresholds.maxDropped: negative: use 0 or more")
	}
	if t.MinSustainedMps != nil && *t.MinSustainedMps < 0 {
		errs = append(errs, "thresholds.minSustainedMps: negative: use 0 or more")
	}
	if t.MinMicroburstPackets != nil && *t.MinMicroburstPackets < 0 {
		errs = append(errs, "thresholds.minMicroburstPackets: negative: use 0 or more")
	}
	if t.MinBypassSpeedup != "" {
		if _, err := ParseRatio(t.MinBypassSpeedup); err != nil {
			errs = append(errs, fmt.Sprintf("thresholds.minBypassSpeedup: %v", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid thresholds: %s", strings.Join(errs, "; "))
	}
	return nil
}

// VerdictResult is the outcome of a check or of the whole evaluation.
// +kubebuilder:validation:Enum=Passed;Failed;Inconclusive
type VerdictResult string

const (
	// VerdictPassed: every check passed.
	VerdictPassed VerdictResult = "Passed"
	// VerdictFailed: at least one check failed.
	VerdictFailed VerdictResult = "Failed"
	// VerdictInconclusive: nothing failed, but something a threshold needs was not measured.
	VerdictInconclusive VerdictResult = "Inconclusive"
)

// Check is one evaluated rule.
// +kubebuilder:object:generate=true
type Check struct {
	// Name identifies the rule, e.g. "pingPong/kernel/udp/p99" or "suite/rateSweep/kernel".
	Name   string        `json:"name"`
	Result VerdictResult `json:"result"`
	// Message says what was measured against what.
	Message string `json:"message"`
}

// Verdict is the evaluation of Results against Thresholds.
// +kubebuilder:object:generate=true
type Verdict struct {
	Result VerdictResult `json:"result"`
	// Reasons lists every check, failed ones first.
	// +listType=atomic
	Reasons []Check `json:"reasons,omitempty"`
}

// Evaluate judges results against thresholds. It is a pure function. A suite that ended in an
// error, an unavailable stack, or a threshold that matches no measured row makes the verdict
// Inconclusive unless some check failed; the thresholds must be valid (see Thresholds.Validate):
// an invalid rule is reported as a failed check. A ptp suite that got answers is always checked
// for every sample in SLAVE state (check ptp/slave): an offset is only meaningful while the clock
// follows its master.
func Evaluate(r *Results, t Thresholds) Verdict {
	var checks []Check
	add := func(name string, res VerdictResult, format string, a ...any) {
		checks = append(checks, Check{Name: name, Result: res, Message: fmt.Sprintf(format, a...)})
	}
	// Suites that did not complete.
	for _, s := range r.Stacks {
		if s.Unavailable != "" {
			add("stack/"+string(s.Stack), VerdictInconclusive, "stack %s unavailable: %s", s.Stack, s.Unavailable)
		}
		for _, e := range []struct {
			n   SuiteName
			err string
		}{
			{SuitePingPong, errOf(s.PingPong != nil, func() string { return s.PingPong.Error })},
			{SuiteRateSweep, errOf(s.RateSweep != nil, func() string { return s.RateSweep.Error })},
			{SuiteMicroburst, errOf(s.Microburst != nil, func() string { return s.Microburst.Error })},
			{SuiteMixedBurst, errOf(s.MixedBurst != nil, func() string { return s.MixedBurst.Error })},
		} {
			if e.err != "" {
				add(fmt.Sprintf("suite/%s/%s", e.n, s.Stack), VerdictInconclusive, "%s on %s did not complete: %s", e.n, s.Stack, e.err)
			}
		}
	}
	if r.Jitter != nil && r.Jitter.Error != "" {
		add("suite/jitter", VerdictInconclusive, "jitter did not complete: %s", r.Jitter.Error)
	}
	if r.PTP != nil {
		evalPTPSlave(r.PTP, add)
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
				if m.Mps >= min {
					add(name, VerdictPassed, "%d B on %s sustained %d msg/s >= %d", m.MessageSize, s.Stack, m.Mps, min)
				} else {
					add(name, VerdictFailed, "%d B on %s sustained only %d msg/s without drops, need %d", m.MessageSize, s.Stack, m.Mps, min)
				}
			}
		}
		if !seen {
			add("rateSweep/sustained", VerdictInconclusive, "minSustainedMps is set but no rateSweep result was measured")
		}
	}
	if t.MinMicroburstPackets != nil {
		min := *t.MinMicroburstPackets
		seen := false
		for _, s := range r.Stacks {
			m := s.Microburst
			if m == nil || (m.Error != "" && len(m.Trials) == 0) {
				continue
			}
			seen = true
			name := fmt.Sprintf("microburst/%s", s.Stack)
			switch {
			case m.MaxBurstPackets >= min:
				add(name, VerdictPassed, "absorbed %d back-to-back %d B messages (%s us at %d Mb/s) >= %d", m.MaxBurstPackets, m.MessageSize, FormatNanosAsMicros(m.BurstTimeNs), m.LinkSpeedMbps, min)
			case m.Error != "":
				add(name, VerdictInconclusive, "absorbed %d before the suite failed, need %d: %s", m.MaxBurstPackets, min, m.Error)
			default:
				add(name, VerdictFailed, "largest burst absorbed without a drop is %d messages of %d B, need %d", m.MaxBurstPackets, m.MessageSize, min)
			}
		}
		if !seen {
			add("microburst", VerdictInconclusive, "minMicroburstPackets is set but no microburst result was measured")
		}
	}
	if t.MinBypassSpeedup != "" {
		evalSpeedup(r, t.MinBypassSpeedup, add)
	}

	v := Verdict{Result: VerdictPassed}
	var failed, inconclusive, passed []Check
	for _, c := range checks {
		switch c.Result {
		case VerdictFailed:
			failed = append(failed, c)
		case VerdictInconclusive:
			inconclusive = append(inconclusive, c)
		default:
			passed = append(passed, c)
		}
	}
	switch {
	case len(failed) > 0:
		v.Result = VerdictFailed
	case len(inconclusive) > 0:
		v.Result = VerdictInconclusive
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
	stack Stack
	label string
	stats LatencyStats
}

func evalLatency(r *Results, i int, l LatencyLimit, add func(string, VerdictResult, string, ...any)) {
	name := fmt.Sprintf("%s/%s", l.Suite, l.Statistic)
	if l.Stack != "" && l.Suite != SuiteJitter {
		name = fmt.Sprintf("%s/%s/%s", l.Suite, l.Stack, l.Statistic)
	}
	if l.Protocol != "" {
		name += "/" + string(l.Protocol)
	}
	if l.MessageSize != 0 {
		name += fmt.Sprintf("/%dB", l.MessageSize)
	}
	max, err := time.ParseDuration(l.Max)
	if _, ok := l.Statistic.Of(LatencyStats{}); !ok || err != nil || max <= 0 {
		add(name, VerdictFailed, "thresholds.latency[%d] is invalid (statistic %q, max %q): fix the benchmark's thresholds", i, l.Statistic, l.Max)
		return
	}
	var rows []latencyRow
	match := func(p Protocol, size int32) bool {
		return (l.Protocol == "" || l.Protocol == p) && (l.MessageSize == 0 || l.MessageSize == size)
	}
	for _, s := range r.Stacks {
		if l.Suite == SuiteJitter || (l.Stack != "" && l.Stack != s.Stack) {
			continue
		}
		switch l.Suite {
		case SuitePingPong:
			if s.PingPong != nil {
				for _, row := range s.PingPong.Rows {
					if match(row.Protocol, row.MessageSize) && row.Samples > 0 {
						rows = append(rows, latencyRow{s.Stack, fmt.Sprintf("%s %d B", row.Protocol, row.MessageSize), row.LatencyStats})
					}
				}
			}
		case SuiteRateSweep:
			if s.RateSweep != nil {
				for _, row := range s.RateSweep.Rows {
					if match(row.Protocol, row.MessageSize) && row.Samples > 0 && row.Sustained {
						rows = append(rows, latencyRow{s.Stack, fmt.Sprintf("%s %d B at %d msg/s", row.Protocol, row.MessageSize, row.TargetMps), row.LatencyStats})
					}
				}
			}
		case SuiteMixedBurst:
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
	if l.Suite == SuitePTP && r.PTP != nil && r.PTP.Offset.Samples > 0 {
		rows = append(rows, latencyRow{"", fmt.Sprintf("|offset from master| over %d SLAVE samples", r.PTP.Offset.Samples), r.PTP.Offset})
	}
	if l.Suite == SuiteJitter && r.Jitter != nil {
		for _, row := range r.Jitter.Rows {
			if (l.Tool == "" || l.Tool == row.Tool) && row.Samples > 0 {
				rows = append(rows, latencyRow{"", fmt.Sprintf("%s cpu %d", row.Tool, row.CPU), row.LatencyStats})
			}
		}
	}
	if len(rows) == 0 {
		if l.Suite == SuitePTP {
			add(name, VerdictInconclusive, "thresholds.latency[%d] bounds the ptp offset but no offset was measured in SLAVE state", i)
			return
		}
		add(name, VerdictInconclusive, "no measured %s row matches thresholds.latency[%d]", l.Suite, i)
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
		add(name, VerdictFailed, "%s %s us at %s exceeds %s (%d rows checked)", l.Statistic, FormatNanosAsMicros(worstV), where, l.Max, len(rows))
		return
	}
	add(name, VerdictPassed, "worst %s %s us at %s is within %s (%d rows checked)", l.Statistic, FormatNanosAsMicros(worstV), where, l.Max, len(rows))
}

// evalPTPSlave checks that every read of ptp4l found its port in SLAVE state with an offset. A
// suite with no answered read is left to its error (suite/ptp, Inconclusive).
func evalPTPSlave(p *PTPResult, add func(string, VerdictResult, string, ...any)) {
	if p.Error != "" {
		add("suite/ptp", VerdictInconclusive, "ptp did not complete: %s", p.Error)
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
		add("ptp/slave", VerdictPassed, "all %d samples of %s in SLAVE state", p.Samples, p.Socket)
		return
	}
	msg := fmt.Sprintf("%d of %d samples of %s not in SLAVE state (%s)", p.NotSlaveSamples+p.FailedReads, p.Samples, p.Socket, seen)
	if p.FailedReads > 0 {
		msg += fmt.Sprintf("; %d reads unanswered, last: %s", p.FailedReads, p.LastFailure)
	}
	add("ptp/slave", VerdictFailed, "%s: the clock did not follow its master for the whole run", msg)
}

func evalDrops(r *Results, max int64, add func(string, VerdictResult, string, ...any)) {
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
			add(name, VerdictFailed, "%d messages dropped in %s on %s, at most %d allowed", worst, where, s.Stack, max)
		} else {
			add(name, VerdictPassed, "at most %d messages dropped per row on %s (limit %d)", worst, s.Stack, max)
		}
	}
	if !seen {
		add("drops", VerdictInconclusive, "maxDropped is set but no pingPong or mixedBurst row was measured")
	}
}

func evalSpeedup(r *Results, minStr string, add func(string, VerdictResult, string, ...any)) {
	min, err := ParseRatio(minStr)
	if err != nil {
		add("bypassSpeedup", VerdictFailed, "thresholds.minBypassSpeedup: %v", err)
		return
	}
	var rows []StackComparison
	for _, c := range CompareStacks(r) {
		if c.Suite == SuitePingPong {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		add("bypassSpeedup", VerdictInconclusive, "minBypassSpeedup is set but no pingPong row was measured on both kernel and bypass")
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
		add("bypassSpeedup", VerdictFailed, "bypass median is only %sx faster than kernel at %s %d B, need %s", worst.MedianSpeedup, worst.Protocol, worst.MessageSize, minStr)
		return
	}
	add("bypassSpeedup", VerdictPassed, "bypass median is at least %sx faster than kernel (%s %d B), need %s", worst.MedianSpeedup, worst.Protocol, worst.MessageSize, minStr)
}
