package bench

import (
	"math"
	"path/filepath"
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
