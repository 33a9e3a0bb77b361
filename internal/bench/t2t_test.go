package bench

import (
	"strings"
	"testing"
)

// The files under testdata/t2t are the rig's JSON lines from the dataplane harness (tests/t2t.sh,
// T2T_KEEP) at 5,000 ticks/s for 2 s, kernel and bypass. The bypass run's largest tick-to-trade is
// the strategy's 7 s receive timeout: a lost wakeup of the bypass, kept as found.
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
	if tt.Count != 100 || tt.Min != 43035 || tt.Median != 72734 || tt.P999 != 244154 || tt.Mean != 85038 {
		t.Fatalf("tick-to-trade %+v", tt)
	}
	if !(tt.Min <= tt.Median && tt.Median <= tt.P99 && tt.P99 <= tt.P999 && tt.P999 <= tt.Max) {
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
BUY        85.038     85.038
SELL       38.482     38.482
SD B       38.461     38.461
SD S       28.429     28.429

tick-to-trade, bypass stack (us; columns: market data msg/s)
             5000
BUY     70129.252
SELL       75.556
SD B   700649.875
SD S       15.651

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
