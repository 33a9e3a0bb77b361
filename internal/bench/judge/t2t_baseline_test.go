package judge

import (
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestT2TGainPercent(t *testing.T) {
	for _, c := range []struct{ untuned, tuned, want float64 }{
		{100, 75, 25}, {7.056, 4.677, 33.7}, {50, 60, -20}, {0, 5, 0},
	} {
		if got := T2TGainPercent(c.untuned, c.tuned); got != c.want {
			t.Errorf("T2TGainPercent(%v, %v) = %v, want %v", c.untuned, c.tuned, got, c.want)
		}
	}
}

// baselineOf is a LatencyBenchmark whose nodes measured tickToTrade on the kernel stack at 500 and
// 10000 msg/s with the given mean tick-to-trade.
func baselineOf(run int64, means map[string]int64) *tsv1.LatencyBenchmark {
	b := &tsv1.LatencyBenchmark{}
	b.Name, b.Status.Run = "untuned", run
	for node, m := range means {
		r := sampleResults()
		r.Stacks = []tsv1.StackResults{{Stack: tsv1.StackKernel, TickToTrade: &tsv1.TickToTradeResult{Mix: tsv1.TickMixSteady, OrderEvery: 100,
			Rows: []tsv1.TickToTradeRow{t2tRow(500, tsv1.LatencyStats{MinNs: m / 2, MedianNs: m, MeanNs: m, P99Ns: 2 * m}), t2tRow(10000, tsv1.LatencyStats{MedianNs: m, MeanNs: m, P99Ns: 2 * m})}}}}
		b.Status.Nodes = append(b.Status.Nodes, tsv1.BenchmarkNodeStatus{Node: node, Results: r})
	}
	b.Status.Nodes = append(b.Status.Nodes, tsv1.BenchmarkNodeStatus{Node: "still-running"})
	return b
}

func TestCompareTickToTradeBaseline(t *testing.T) {
	// this run: kernel 75 us and bypass 50 us mean at 500 msg/s; bypass at 10000 msg/s has a lost tick
	cur := sampleResults()
	cur.Stacks[0].TickToTrade = &tsv1.TickToTradeResult{Rows: []tsv1.TickToTradeRow{t2tRow(500, tsv1.LatencyStats{MedianNs: 60000, MeanNs: 75000, P99Ns: 150000})}}
	lost := t2tRow(10000, tsv1.LatencyStats{MeanNs: 10000})
	lost.Unaccounted = []string{"ticks: 1 lost, 0 out of sequence"}
	cur.Stacks[1].TickToTrade = &tsv1.TickToTradeResult{Rows: []tsv1.TickToTradeRow{t2tRow(500, tsv1.LatencyStats{MedianNs: 50000, MeanNs: 50000, P99Ns: 300000}), lost}}
	ref := tsv1.TickToTradeBaseline{Benchmark: "untuned"}

	got := CompareTickToTradeBaseline(ref, "node-a", baselineOf(3, map[string]int64{"node-a": 100000, "node-b": 200000}), cur)
	want := &tsv1.TickToTradeComparison{Benchmark: "untuned", Run: 3, Node: "node-a", Rows: []tsv1.TickToTradeGain{
		{Stack: tsv1.StackKernel, RateMps: 500, BaselineStack: tsv1.StackKernel, BaselineMeanNs: 100000, MeanNs: 75000, MeanGainPercent: "25.0",
			BaselineMedianNs: 100000, MedianNs: 60000, MedianGainPercent: "40.0", BaselineP99Ns: 200000, P99Ns: 150000, P99GainPercent: "25.0"},
		// the baseline has no bypass stack: the untuned host's kernel is the baseline
		{Stack: tsv1.StackBypass, RateMps: 500, BaselineStack: tsv1.StackKernel, BaselineMeanNs: 100000, MeanNs: 50000, MeanGainPercent: "50.0",
			BaselineMedianNs: 100000, MedianNs: 50000, MedianGainPercent: "50.0", BaselineP99Ns: 200000, P99Ns: 300000, P99GainPercent: "-50.0"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("comparison\n%+v\nwant\n%+v", got, want)
	}

	for _, c := range []struct {
		name     string
		ref      tsv1.TickToTradeBaseline
		node     string
		baseline *tsv1.LatencyBenchmark
		wantNode string
		msg      string
	}{
		{"the baseline's only node", ref, "tuned-node", baselineOf(1, map[string]int64{"untuned-node": 100000}), "untuned-node", ""},
		{"a node named", tsv1.TickToTradeBaseline{Benchmark: "untuned", Node: "node-b"}, "node-a", baselineOf(1, map[string]int64{"node-a": 1, "node-b": 2}), "node-b", ""},
		{"no baseline", ref, "node-a", nil, "", "baseline benchmark untuned does not exist in this namespace"},
		{"a node named that it did not measure", tsv1.TickToTradeBaseline{Benchmark: "untuned", Node: "node-c"}, "node-a", baselineOf(2, map[string]int64{"node-a": 1}), "", "baseline benchmark untuned (run 2) has no results for node node-c"},
		{"several nodes, none of them this one", ref, "node-z", baselineOf(2, map[string]int64{"node-a": 1, "node-b": 2}), "", "measured 2 nodes, none of them node-z: name one in suites.tickToTrade.baseline.node"},
		{"nothing measured yet", ref, "node-a", baselineOf(4, nil), "", "baseline benchmark untuned (run 4) has no results yet"},
	} {
		got := CompareTickToTradeBaseline(c.ref, c.node, c.baseline, cur)
		if got.Node != c.wantNode || !strings.Contains(got.Message, c.msg) || (c.msg != "") != (len(got.Rows) == 0) {
			t.Errorf("%s: node %q, message %q, %d rows; want node %q, message with %q", c.name, got.Node, got.Message, len(got.Rows), c.wantNode, c.msg)
		}
	}
	// a baseline measured at other rates compares nothing, and says so
	other := baselineOf(5, map[string]int64{"node-a": 1})
	other.Status.Nodes[0].Results.Stacks[0].TickToTrade.Rows = other.Status.Nodes[0].Results.Stacks[0].TickToTrade.Rows[1:]
	cur.Stacks[1].TickToTrade.Rows = cur.Stacks[1].TickToTrade.Rows[:1]
	cur.Stacks[1].TickToTrade.Rows[0].RateMps = 777
	cur.Stacks[0].TickToTrade.Rows[0].RateMps = 777
	if got := CompareTickToTradeBaseline(ref, "node-a", other, cur); len(got.Rows) != 0 || !strings.Contains(got.Message, "no accounted tickToTrade row at the rates measured here") {
		t.Errorf("different rates: %+v", got)
	}
}
