package bench

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The files testdata/t2t/{kernel,bypass}-*.json are the rig's JSON lines from the dataplane harness
// (tests/t2t.sh, T2T_KEEP) at 5,000 ticks/s for 2 s, kernel and bypass, on the shared 2-vCPU
// machine with a local cluster running.
func readT2T(t *testing.T, stack string) T2TRun {
	t.Helper()
	r, err := ParseT2TRun(stack, []byte(readTestdata(t, "t2t/"+stack+"-pub.json")),
		[]byte(readTestdata(t, "t2t/"+stack+"-strategy.json")), []byte(readTestdata(t, "t2t/"+stack+"-exchange.json")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseT2TRun(t *testing.T) {
	k := readT2T(t, "kernel")
	if k.Publisher.Sent != 10000 || k.Strategy.Ticks.Received != 10000 || k.Strategy.Orders.Buy != 100 || k.Exchange.Orders != 200 {
		t.Fatalf("parsed %+v", k)
	}
	tt := k.Strategy.Latency.TickToTrade
	if tt.Count != 100 || tt.Min != 142338 || tt.Median != 222961 || tt.P95 != 299836 || tt.P999 != 422944 || tt.Mean != 224999 {
		t.Fatalf("tick-to-trade %+v", tt)
	}
	if !(tt.Min <= tt.Median && tt.Median <= tt.P95 && tt.P95 <= tt.P99 && tt.P99 <= tt.P999 && tt.P999 <= tt.Max) {
		t.Fatalf("percentiles out of order: %+v", tt)
	}
	if _, err := ParseT2TRun("kernel", []byte(`{"sent":1,"surprise":2}`), nil, nil); err == nil ||
		!strings.Contains(err.Error(), "t2t-pub") || !strings.Contains(err.Error(), "surprise") {
		t.Fatalf("unknown field: err = %v", err)
	}
}

func TestT2TUnaccounted(t *testing.T) {
	for _, st := range []string{"kernel", "bypass"} {
		if u := readT2T(t, st).Unaccounted(); len(u) != 0 {
			t.Fatalf("%s: %v", st, u)
		}
	}
	cases := []struct {
		name   string
		mutate func(*T2TRun)
		want   string
	}{
		{"short tail", func(r *T2TRun) { r.Strategy.Ticks.Received--; r.Strategy.Ticks.Lost = 1 }, "1 lost"},
		{"no end marker", func(r *T2TRun) { r.Strategy.Ticks.EndMarker = false }, "no end marker"},
		{"unfilled", func(r *T2TRun) { r.Strategy.Orders.Sell--; r.Strategy.Orders.Unfilled = 1 }, "1 without a fill"},
		{"rule", func(r *T2TRun) { r.Publisher.Sent += 100 }, "the rule asks for 101"},
		{"exchange", func(r *T2TRun) { r.Exchange.Orders-- }, "exchange: 199 orders"},
		{"fix", func(r *T2TRun) { r.Exchange.FixSeqErrors = 2 }, "exchange 2 sequence errors"},
	}
	for _, c := range cases {
		r := readT2T(t, "kernel")
		c.mutate(&r)
		u := strings.Join(r.Unaccounted(), "; ")
		if !strings.Contains(u, c.want) {
			t.Errorf("%s: got %q, want %q in it", c.name, u, c.want)
		}
	}
}

func TestWriteT2TTable(t *testing.T) {
	k, b := readT2T(t, "kernel"), readT2T(t, "bypass")
	k2 := k
	k2.Publisher.Rate = 100000
	var out strings.Builder
	if err := WriteT2TTable(&out, []T2TRun{k, b, k2}); err != nil {
		t.Fatal(err)
	}
	want := `tick-to-trade, kernel stack (us; columns: market data msg/s)
           100000       5000
BUY       224.999    224.999
SELL       47.955     47.955
SD B       48.811     48.811
SD S       18.343     18.343

tick-to-trade, bypass stack (us; columns: market data msg/s)
             5000
BUY       227.464
SELL      135.419
SD B      216.240
SD S       62.531

`
	if out.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestT2TGainPercent(t *testing.T) {
	for _, c := range []struct{ untuned, tuned, want float64 }{
		{100, 75, 25}, {7.056, 4.677, 33.7}, {50, 60, -20}, {0, 5, 0},
	} {
		if got := T2TGainPercent(c.untuned, c.tuned); got != c.want {
			t.Errorf("T2TGainPercent(%v, %v) = %v, want %v", c.untuned, c.tuned, got, c.want)
		}
	}
}

func TestT2TRow(t *testing.T) {
	k := readT2T(t, "kernel")
	row := k.Row()
	want := tsv1.TickToTradeRow{RateMps: 5000, TicksSent: 10000, TicksReceived: 10000, Orders: 200, ExchangeOrders: 200,
		AchievedMps: int64(math.Round(10000 / k.Publisher.Seconds))}
	if row.RateMps != want.RateMps || row.TicksSent != want.TicksSent || row.TicksReceived != want.TicksReceived || row.Orders != want.Orders ||
		row.ExchangeOrders != want.ExchangeOrders || row.AchievedMps != want.AchievedMps || row.TicksLost != 0 || row.OrdersUnfilled != 0 || len(row.Unaccounted) != 0 {
		t.Errorf("row counts %+v, want %+v", row, want)
	}
	tt := row.TickToTrade
	if tt.Samples != 100 || tt.MinNs != 142338 || tt.MedianNs != 222961 || tt.P95Ns != 299836 || tt.P99Ns != 392434 || tt.P999Ns != 422944 ||
		tt.MaxNs != 422944 || tt.MeanNs != 224999 || tt.StdDevNs != 48811 {
		t.Errorf("tick-to-trade %+v", tt)
	}
	if row.OrderToFill.Samples != 200 || row.InApplication.Samples != 100 || row.Sell.Samples != 100 || row.Sell.MeanNs != 47955 {
		t.Errorf("in-app %+v, order->fill %+v, sell %+v", row.InApplication, row.OrderToFill, row.Sell)
	}
	k.Strategy.Orders.Unfilled, k.Strategy.Orders.Sell = 1, 99
	if u := k.Row().Unaccounted; len(u) == 0 || !strings.Contains(strings.Join(u, "; "), "1 without a fill") {
		t.Errorf("an unfilled order is not in the row's unaccounted list: %v", u)
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

// The directories testdata/t2t/stats-tcp and stats-tcp-off hold the strategy's exit counters
// (TICKSTACK_STATS_FILE) from runs of the suite's bypass stack over a veth pair at 1000 msg/s: with
// TICKSTACK_TCP=1 (feed port 11116; the FIX connection's socket also counts rx_accel, in bytes)
// and without it (feed port 11112).
func TestT2TPathsFromStats(t *testing.T) {
	for _, c := range []struct {
		dir        string
		port       int
		md, orders tsv1.Stack
		wantErr    string
	}{
		{dir: "stats-tcp", port: 11116, md: tsv1.StackBypass, orders: tsv1.StackBypass},
		{dir: "stats-tcp-off", port: 11112, md: tsv1.StackBypass, orders: tsv1.StackKernel},
		// another socket's datagrams are not the feed's
		{dir: "stats-tcp-off", port: 11113, md: tsv1.StackKernel, orders: tsv1.StackKernel},
		{dir: "no-such-dir", port: 11112, wantErr: "the strategy's statistics: no statistics dump was written"},
	} {
		md, orders, err := T2TPathsFromStats(filepath.Join("testdata", "t2t", c.dir), c.port)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.dir, err, c.wantErr)
			}
			continue
		}
		if err != nil || md != c.md || orders != c.orders {
			t.Errorf("%s port %d: market data %q, orders %q, err %v; want %s, %s", c.dir, c.port, md, orders, err, c.md, c.orders)
		}
	}
}
