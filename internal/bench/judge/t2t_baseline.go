package judge

import (
	"fmt"
	"math"
	"sort"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Tuned vs untuned (paper 004: "20-30% improvements between out of the box and final runs"): a
// benchmark's suites.tickToTrade.baseline names another LatencyBenchmark whose tickToTrade results
// are the untuned figures. When a node is judged, CompareTickToTradeBaseline compares its rows with
// the baseline's, stack by stack and rate by rate.

// CompareTickToTradeBaseline compares one node's tickToTrade results (cur, measured on node) with
// the baseline ref names. baseline is that LatencyBenchmark as read when the node is judged (nil:
// it does not exist). It is pure. The baseline node is ref.Node, else node when the baseline
// measured it, else the baseline's only measured node. Each of cur's accounted rows is compared
// with the baseline's accounted row of the same rate on the same stack, else on the kernel stack
// (the untuned host's plain stack). The comparison's Message says why there is nothing to compare.
func CompareTickToTradeBaseline(ref tsv1.TickToTradeBaseline, node string, baseline *tsv1.LatencyBenchmark, cur *tsv1.BenchmarkResults) *tsv1.TickToTradeComparison {
	out := &tsv1.TickToTradeComparison{Benchmark: ref.Benchmark}
	if baseline == nil {
		out.Message = fmt.Sprintf("baseline benchmark %s does not exist in this namespace", ref.Benchmark)
		return out
	}
	out.Run = baseline.Status.Run
	var measured []tsv1.BenchmarkNodeStatus
	for _, n := range baseline.Status.Nodes {
		if n.Results != nil {
			measured = append(measured, n)
		}
	}
	want := ref.Node
	var base *tsv1.BenchmarkNodeStatus
	for i := range measured {
		if (want != "" && measured[i].Node == want) || (want == "" && measured[i].Node == node) {
			base = &measured[i]
		}
	}
	if base == nil && want == "" && len(measured) == 1 {
		base = &measured[0]
	}
	if base == nil {
		switch {
		case want != "":
			out.Message = fmt.Sprintf("baseline benchmark %s (run %d) has no results for node %s", ref.Benchmark, baseline.Status.Run, want)
		case len(measured) == 0:
			out.Message = fmt.Sprintf("baseline benchmark %s (run %d) has no results yet", ref.Benchmark, baseline.Status.Run)
		default:
			out.Message = fmt.Sprintf("baseline benchmark %s (run %d) measured %d nodes, none of them %s: name one in suites.tickToTrade.baseline.node", ref.Benchmark, baseline.Status.Run, len(measured), node)
		}
		return out
	}
	out.Node = base.Node
	out.Rows = CompareTickToTrade(base.Results, cur)
	if len(out.Rows) == 0 {
		out.Message = fmt.Sprintf("baseline benchmark %s (run %d, node %s) has no accounted tickToTrade row at the rates measured here", ref.Benchmark, baseline.Status.Run, base.Node)
	}
	return out
}

// CompareTickToTrade pairs every accounted tickToTrade row of cur with the accounted baseline row
// of the same rate, on the same stack, else on the baseline's kernel stack, and computes the gains.
// Rows come out by stack (as cur has them) and rate.
func CompareTickToTrade(baseline, cur *tsv1.BenchmarkResults) []tsv1.TickToTradeGain {
	if baseline == nil || cur == nil {
		return nil
	}
	rowsOf := func(r *tsv1.BenchmarkResults, st tsv1.Stack) map[int64]tsv1.TickToTradeRow {
		out := map[int64]tsv1.TickToTradeRow{}
		if s := r.Stack(st); s != nil && s.TickToTrade != nil {
			for _, row := range s.TickToTrade.Rows {
				if len(row.Unaccounted) == 0 && row.TickToTrade.Samples > 0 {
					out[row.RateMps] = row
				}
			}
		}
		return out
	}
	var gains []tsv1.TickToTradeGain
	for _, s := range cur.Stacks {
		mine := rowsOf(cur, s.Stack)
		same, kernel := rowsOf(baseline, s.Stack), rowsOf(baseline, tsv1.StackKernel)
		rates := make([]int64, 0, len(mine))
		for rate := range mine {
			rates = append(rates, rate)
		}
		sort.Slice(rates, func(i, j int) bool { return rates[i] < rates[j] })
		for _, rate := range rates {
			b, bstack := same[rate], s.Stack
			if _, ok := same[rate]; !ok {
				if b, ok = kernel[rate]; !ok {
					continue
				}
				bstack = tsv1.StackKernel
			}
			t := mine[rate].TickToTrade
			bt := b.TickToTrade
			gains = append(gains, tsv1.TickToTradeGain{
				Stack: s.Stack, RateMps: rate, BaselineStack: bstack,
				BaselineMeanNs: bt.MeanNs, MeanNs: t.MeanNs, MeanGainPercent: FormatGainPercent(T2TGainPercent(float64(bt.MeanNs), float64(t.MeanNs))),
				BaselineMedianNs: bt.MedianNs, MedianNs: t.MedianNs, MedianGainPercent: FormatGainPercent(T2TGainPercent(float64(bt.MedianNs), float64(t.MedianNs))),
				BaselineP99Ns: bt.P99Ns, P99Ns: t.P99Ns, P99GainPercent: FormatGainPercent(T2TGainPercent(float64(bt.P99Ns), float64(t.P99Ns))),
			})
		}
	}
	return gains
}

// T2TGainPercent is how much lower the tuned mean is than the untuned one, in percent of the
// untuned (paper 004's "tuning was worth 20-30 %"); negative when tuning made it slower.
func T2TGainPercent(untuned, tuned float64) float64 {
	if untuned == 0 {
		return 0
	}
	return math.Round((untuned-tuned)/untuned*1000) / 10
}
