package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"golang.org/x/net/html"

	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/testutil"
)

// testdata/results_t2t_veth.json is a document the runner wrote on this machine over a veth pair
// (cmd/tickstack-bench's TestRunnerTickToTradeOverVeth): tickToTrade at 1000 and 5000 msg/s on the
// kernel and the bypass stack.
func loadT2TResults(t *testing.T) *tsv1.BenchmarkResults {
	t.Helper()
	r := loadTestdata(t, "results_t2t_veth.json")
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		if s := r.Stack(st); s == nil || s.TickToTrade == nil || len(s.TickToTrade.Rows) != 2 {
			t.Fatalf("fixture: %s stack lacks its two tickToTrade rows", st)
		}
	}
	return r
}

// untunedOf is a baseline derived from r: every tick-to-trade of the kernel stack 1.25 times
// slower, so each kernel row gains 20 %.
func untunedOf(r *tsv1.BenchmarkResults) *tsv1.BenchmarkResults {
	u := r.DeepCopy()
	u.Stacks = []tsv1.StackResults{*u.Stack(tsv1.StackKernel)}
	for i := range u.Stacks[0].TickToTrade.Rows {
		s := &u.Stacks[0].TickToTrade.Rows[i].TickToTrade
		for _, v := range []*int64{&s.MinNs, &s.MedianNs, &s.MeanNs, &s.P95Ns, &s.P99Ns, &s.P999Ns, &s.MaxNs} {
			*v = *v * 5 / 4
		}
	}
	return u
}

func t2tInput(t *testing.T) (NodeResults, *tsv1.BenchmarkResults) {
	res := loadT2TResults(t)
	// one row with a tick unaccounted for, shown hollow and not compared
	lost := &res.Stack(tsv1.StackBypass).TickToTrade.Rows[1]
	lost.Unaccounted = []string{"ticks: 1 lost, 0 out of sequence"}
	base := &tsv1.TickToTradeComparison{Benchmark: "untuned", Run: 3, Node: "tsbn-node", Rows: judge.CompareTickToTrade(untunedOf(res), res)}
	v := judge.Evaluate(res, tsv1.Thresholds{})
	return NodeResults{Node: "tsbn-node", Results: res, Verdict: &v, TickToTradeBaseline: base}, res
}

func TestRenderTickToTrade(t *testing.T) {
	n, res := t2tInput(t)
	if len(n.TickToTradeBaseline.Rows) != 3 {
		t.Fatalf("fixture comparison: %d rows, want kernel's two and bypass's accounted one", len(n.TickToTradeBaseline.Rows))
	}
	doc, _ := render(t, Input{Title: "t2t", Generated: time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC), Nodes: []NodeResults{n}})

	// the plot: tick-to-trade median, p99 and p99.9 by rate for each stack, every point where its data says
	pts := readChart(t, doc, ChartTickToTrade+"-0", atoi)
	if len(pts) != 2*3*2 {
		t.Fatalf("%d points, want 2 stacks x 3 percentiles x 2 rates", len(pts))
	}
	for _, p := range pts {
		f := strings.Fields(p.series)
		if len(f) != 2 {
			t.Fatalf("series %q", p.series)
		}
		var row *tsv1.TickToTradeRow
		for i, r := range res.Stack(tsv1.Stack(f[0])).TickToTrade.Rows {
			if fmt.Sprint(r.RateMps) == p.x {
				row = &res.Stack(tsv1.Stack(f[0])).TickToTrade.Rows[i]
			}
		}
		if row == nil {
			t.Fatalf("point %s at %s matches no row", p.series, p.x)
		}
		want := map[string]int64{"median": row.TickToTrade.MedianNs, "p99": row.TickToTrade.P99Ns, "p99.9": row.TickToTrade.P999Ns}[f[1]]
		if p.y != float64(want) {
			t.Errorf("%s at %s: y %v, want %d", p.series, p.x, p.y, want)
		}
		if hasClass(p.node, "open") != (len(row.Unaccounted) > 0) {
			t.Errorf("%s at %s: hollow %v, unaccounted %v", p.series, p.x, hasClass(p.node, "open"), row.Unaccounted)
		}
	}

	// paper 004's table per stack: rates highest first, BUY and SELL means, SD B and SD S
	tables := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "tickToTrade") })
	if len(tables) != 2 {
		t.Fatalf("%d paper 004 tables, want one per stack", len(tables))
	}
	for i, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		rows := res.Stack(st).TickToTrade.Rows
		trs := find(tables[i], isElem("tr"))
		if len(trs) != 5 {
			t.Fatalf("%s: %d rows, want header, BUY, SELL, SD B, SD S", st, len(trs))
		}
		head := find(trs[0], isElem("th"))
		if text(head[1]) != fmt.Sprint(rows[1].RateMps) || text(head[2]) != fmt.Sprint(rows[0].RateMps) {
			t.Errorf("%s: columns %q %q, want the rates highest first", st, text(head[1]), text(head[2]))
		}
		// the page's rows are the text table's (judge.WriteTickToTradeTable)
		for j, want := range judge.TickToTradeLines() {
			cells := find(trs[j+1], isElem("td"))
			if text(find(trs[j+1], isElem("th"))[0]) != want.Name || len(cells) != 2 ||
				text(cells[0]) != us(want.Value(rows[1])) || text(cells[1]) != us(want.Value(rows[0])) {
				t.Errorf("%s %s row: %q", st, want.Name, text(trs[j+1]))
			}
		}
	}

	// the counts with the path each leg took and the unaccounted row marked, and the tuned vs untuned gains
	counts := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "tickToTradeCounts") })
	if len(counts) != 2 || !strings.Contains(text(counts[1]), "no: ticks: 1 lost") || !strings.Contains(text(counts[0]), "kernel") {
		t.Errorf("counts tables: %d", len(counts))
	}
	gains := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "tickToTradeBaseline") })
	if len(gains) != 1 {
		t.Fatalf("%d tuned vs untuned tables", len(gains))
	}
	gtr := find(gains[0], isElem("tr"))
	if len(gtr) != 4 || !strings.Contains(text(gains[0]), "baseline LatencyBenchmark untuned run 3, node tsbn-node") {
		t.Fatalf("tuned vs untuned: %q", text(gains[0]))
	}
	if cells := find(gtr[1], isElem("td")); text(cells[0]) != "kernel" || text(cells[5]) != "20.0" {
		t.Errorf("kernel gain row %q, want a mean gain of 20.0 %%", text(gtr[1]))
	}
}

func TestWriteTextTickToTrade(t *testing.T) {
	n, res := t2tInput(t)
	var buf bytes.Buffer
	if err := WriteText(&buf, n); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		var table bytes.Buffer
		if err := judge.WriteTickToTradeTable(&table, string(st), res.Stack(st).TickToTrade.Rows); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, table.String()) {
			t.Errorf("the text lacks paper 004's %s table:\n%s\nin:\n%s", st, table.String(), out)
		}
		for _, row := range res.Stack(st).TickToTrade.Rows {
			for _, m := range TickToTradeMeasures(row) {
				want := strings.Fields(fmt.Sprintf("%d %s %d %s %s %s %s %s %s %s %s", row.RateMps, m.Name, m.Stats.Samples, us(m.Stats.MinNs), us(m.Stats.MedianNs),
					us(m.Stats.MeanNs), us(m.Stats.P95Ns), us(m.Stats.P99Ns), us(m.Stats.P999Ns), us(m.Stats.MaxNs), us(m.Stats.StdDevNs)))
				if !hasLine(out, want) {
					t.Errorf("%s: no line %q", st, strings.Join(want, " "))
				}
			}
			accounted := "yes"
			if len(row.Unaccounted) > 0 {
				accounted = "no"
			}
			want := strings.Fields(fmt.Sprintf("%d %d %d %d %d %d %d %d %d %d %s %s %s", row.RateMps, row.BurstMps, row.AchievedMps, row.TicksSent, row.TicksReceived,
				row.TicksLost, row.TicksOutOfSequence, row.Orders, row.OrdersUnfilled, row.ExchangeOrders, row.MarketDataPath, row.OrderPath, accounted))
			if !hasLine(out, want) {
				t.Errorf("%s: no counts line %q", st, strings.Join(want, " "))
			}
		}
	}
	testutil.WantContains(t, "text", out,
		"tickToTrade, kernel stack: 32 B ticks, a BUY every 50 ticks, each filled and closed by a SELL",
		"unaccounted at 5000 msg/s: ticks: 1 lost, 0 out of sequence",
		"tick-to-trade, tuned vs untuned: baseline LatencyBenchmark untuned run 3, node tsbn-node",
		"Failed tickToTrade/bypass/5000msgps/accounted: at 5000 msg/s on bypass not every tick and order is accounted for",
	)
}

// hasLine reports whether out has a line whose fields are want.
func hasLine(out string, want []string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}
