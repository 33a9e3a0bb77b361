package bench

// StackComparison sets the kernel and bypass stacks side by side for one table row, like paper 000's
// kernel vs OpenOnload exhibits.
// +kubebuilder:object:generate=true
type StackComparison struct {
	Suite       SuiteName `json:"suite"`
	Protocol    Protocol  `json:"protocol"`
	MessageSize int32     `json:"messageSize,omitempty"`
	// TargetMps is the rateSweep rate; SteadyMps/BurstMps name a mixedBurst pattern.
	TargetMps      int64 `json:"targetMps,omitempty"`
	SteadyMps      int64 `json:"steadyMps,omitempty"`
	BurstMps       int64 `json:"burstMps,omitempty"`
	KernelMedianNs int64 `json:"kernelMedianNs"`
	BypassMedianNs int64 `json:"bypassMedianNs"`
	KernelP99Ns    int64 `json:"kernelP99Ns"`
	BypassP99Ns    int64 `json:"bypassP99Ns"`
	// MedianSpeedup is kernel median / bypass median as a decimal string ("2.315"); above 1 the
	// bypass stack is faster.
	MedianSpeedup string `json:"medianSpeedup,omitempty"`
	// P99Speedup is the same for the 99th percentile.
	P99Speedup string `json:"p99Speedup,omitempty"`
}

// CompareStacks pairs every row measured on both stacks (pingPong by protocol and size, rateSweep
// by protocol, size and rate, mixedBurst by pattern). It returns nil unless both stacks have rows.
func CompareStacks(r *Results) []StackComparison {
	k, b := r.Stack(StackKernel), r.Stack(StackBypass)
	if k == nil || b == nil {
		return nil
	}
	var out []StackComparison
	mk := func(base StackComparison, ks, bs LatencyStats) StackComparison {
		base.KernelMedianNs, base.BypassMedianNs = ks.MedianNs, bs.MedianNs
		base.KernelP99Ns, base.BypassP99Ns = ks.P99Ns, bs.P99Ns
		base.MedianSpeedup = Ratio(ks.MedianNs, bs.MedianNs)
		base.P99Speedup = Ratio(ks.P99Ns, bs.P99Ns)
		return base
	}
	if k.PingPong != nil && b.PingPong != nil {
		for _, kr := range k.PingPong.Rows {
			for _, br := range b.PingPong.Rows {
				if kr.Protocol == br.Protocol && kr.MessageSize == br.MessageSize && kr.Samples > 0 && br.Samples > 0 {
					out = append(out, mk(StackComparison{Suite: SuitePingPong, Protocol: kr.Protocol, MessageSize: kr.MessageSize}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	if k.RateSweep != nil && b.RateSweep != nil {
		for _, kr := range k.RateSweep.Rows {
			for _, br := range b.RateSweep.Rows {
				if kr.Protocol == br.Protocol && kr.MessageSize == br.MessageSize && kr.TargetMps == br.TargetMps && kr.Samples > 0 && br.Samples > 0 {
					out = append(out, mk(StackComparison{Suite: SuiteRateSweep, Protocol: kr.Protocol, MessageSize: kr.MessageSize, TargetMps: kr.TargetMps}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	if k.MixedBurst != nil && b.MixedBurst != nil {
		for _, kr := range k.MixedBurst.Rows {
			for _, br := range b.MixedBurst.Rows {
				if kr.SteadyMps == br.SteadyMps && kr.BurstMps == br.BurstMps && kr.Samples > 0 && br.Samples > 0 {
					out = append(out, mk(StackComparison{Suite: SuiteMixedBurst, Protocol: k.MixedBurst.Protocol, SteadyMps: kr.SteadyMps, BurstMps: kr.BurstMps}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	return out
}
