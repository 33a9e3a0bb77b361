package judge

import tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

// CompareStacks pairs every row measured on both stacks (pingPong by protocol and size, rateSweep
// by protocol, size and rate, mixedBurst by pattern, tickToTrade's tick-to-trade by rate). It
// returns nil unless both stacks have rows.
func CompareStacks(r *tsv1.BenchmarkResults) []tsv1.StackComparison {
	k, b := r.Stack(tsv1.StackKernel), r.Stack(tsv1.StackBypass)
	if k == nil || b == nil {
		return nil
	}
	var out []tsv1.StackComparison
	mk := func(base tsv1.StackComparison, ks, bs tsv1.LatencyStats) tsv1.StackComparison {
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
					out = append(out, mk(tsv1.StackComparison{Suite: tsv1.SuitePingPong, Protocol: kr.Protocol, MessageSize: kr.MessageSize}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	if k.RateSweep != nil && b.RateSweep != nil {
		for _, kr := range k.RateSweep.Rows {
			for _, br := range b.RateSweep.Rows {
				if kr.Protocol == br.Protocol && kr.MessageSize == br.MessageSize && kr.TargetMps == br.TargetMps && kr.Samples > 0 && br.Samples > 0 {
					out = append(out, mk(tsv1.StackComparison{Suite: tsv1.SuiteRateSweep, Protocol: kr.Protocol, MessageSize: kr.MessageSize, TargetMps: kr.TargetMps}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	if k.MixedBurst != nil && b.MixedBurst != nil {
		for _, kr := range k.MixedBurst.Rows {
			for _, br := range b.MixedBurst.Rows {
				if kr.SteadyMps == br.SteadyMps && kr.BurstMps == br.BurstMps && kr.Samples > 0 && br.Samples > 0 {
					out = append(out, mk(tsv1.StackComparison{Suite: tsv1.SuiteMixedBurst, Protocol: k.MixedBurst.Protocol, SteadyMps: kr.SteadyMps, BurstMps: kr.BurstMps}, kr.LatencyStats, br.LatencyStats))
				}
			}
		}
	}
	if k.TickToTrade != nil && b.TickToTrade != nil {
		for _, kr := range k.TickToTrade.Rows {
			for _, br := range b.TickToTrade.Rows {
				if kr.RateMps == br.RateMps && kr.TickToTrade.Samples > 0 && br.TickToTrade.Samples > 0 {
					out = append(out, mk(tsv1.StackComparison{Suite: tsv1.SuiteTickToTrade, Protocol: tsv1.ProtocolUDPMulticast, TargetMps: kr.RateMps}, kr.TickToTrade, br.TickToTrade))
				}
			}
		}
	}
	return out
}
