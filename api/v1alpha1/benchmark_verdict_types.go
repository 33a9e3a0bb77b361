package v1alpha1

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
	// Suite is pingPong, rateSweep, mixedBurst, jitter, ptp (the |offset| of ptp4l from its
	// master; the selectors below do not apply to it) or tickToTrade (the tick-to-trade
	// distribution of each rate; stack and rateMps narrow it).
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
	// RateMps narrows rateSweep and tickToTrade rows to one rate; 0 means every rate.
	// +optional
	RateMps int64 `json:"rateMps,omitempty"`
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

// VerdictCheck is one evaluated rule.
// +kubebuilder:object:generate=true
type VerdictCheck struct {
	// Name identifies the rule, e.g. "pingPong/kernel/udp/p99" or "suite/rateSweep/kernel".
	Name   string        `json:"name"`
	Result VerdictResult `json:"result"`
	// Message says what was measured against what.
	Message string `json:"message"`
}

// Verdict is the evaluation of BenchmarkResults against Thresholds.
// +kubebuilder:object:generate=true
type Verdict struct {
	Result VerdictResult `json:"result"`
	// Reasons lists every check, failed ones first.
	// +listType=atomic
	Reasons []VerdictCheck `json:"reasons,omitempty"`
}
