// Package report renders LatencyBenchmark results as one self-contained HTML page: tables in the
// seed papers' shapes and inline SVG plots (latency vs message size, latency vs message rate,
// percentile curve, kernel vs bypass, tick-to-trade percentiles vs market-data rate). No
// JavaScript, no external resources.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/bench/judge"
)

// NodeResults is one node's benchmark outcome.
type NodeResults struct {
	// Node is the node's name.
	Node string
	// Results is what the runner measured; required.
	Results *tsv1.BenchmarkResults
	// Verdict is the evaluation against the thresholds; optional.
	Verdict *tsv1.Verdict
	// TickToTradeBaseline is the tuned vs untuned comparison; optional.
	TickToTradeBaseline *tsv1.TickToTradeComparison
}

// Input is everything the report shows.
type Input struct {
	// Title heads the page, e.g. the LatencyBenchmark's namespace/name.
	Title string
	// Generated is stamped on the page; zero means time.Now().
	Generated time.Time
	Nodes     []NodeResults
}

// Chart IDs, suffixed with the node's index ("latency-vs-size-0").
const (
	ChartLatencyVsSize = "latency-vs-size"
	ChartLatencyVsRate = "latency-vs-rate"
	ChartPercentile    = "percentile-curve"
	ChartKernelBypass  = "kernel-vs-bypass"
	ChartTickToTrade   = "tick-to-trade-vs-rate"
)

type nodeView struct {
	Index      int
	Node       string
	Results    *tsv1.BenchmarkResults
	Verdict    *tsv1.Verdict
	Charts     []template.HTML
	Notes      []string
	Stacks     []stackView
	Comparison []tsv1.StackComparison
	Baseline   *tsv1.TickToTradeComparison
}

type stackView struct {
	tsv1.StackResults
}

// Render writes the report. It fails only on a missing Results or a write error.
func Render(w io.Writer, in Input) error {
	gen := in.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	var nodes []nodeView
	for i, n := range in.Nodes {
		if n.Results == nil {
			return fmt.Errorf("report: node %q has no results", n.Node)
		}
		nv := nodeView{Index: i, Node: n.Node, Results: n.Results, Verdict: n.Verdict, Comparison: judge.CompareStacks(n.Results), Baseline: n.TickToTradeBaseline}
		if nv.Node == "" {
			nv.Node = n.Results.Node
		}
		for _, s := range n.Results.Stacks {
			nv.Stacks = append(nv.Stacks, stackView{s})
			if s.Unavailable != "" {
				nv.Notes = append(nv.Notes, fmt.Sprintf("%s stack unavailable: %s", s.Stack, s.Unavailable))
			}
		}
		for _, c := range []*chart{sizeChart(i, n.Results), rateChart(i, n.Results), percentileChart(i, n.Results), bypassChart(i, n.Results), tickToTradeChart(i, n.Results)} {
			if c != nil {
				nv.Charts = append(nv.Charts, template.HTML(c.svg())) //nolint:gosec // built from escaped text and numbers
			}
		}
		nodes = append(nodes, nv)
	}
	title := in.Title
	if title == "" {
		title = "tickstack latency benchmark"
	}
	return page.Execute(w, map[string]any{"Title": title, "Generated": gen.UTC().Format(time.RFC3339), "Nodes": nodes})
}

// span is the range of the values one axis of a chart plots.
type span struct{ lo, hi float64 }

func newSpan() span { return span{lo: math.Inf(1)} }

func (s *span) add(v float64) { s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v) }

// byRateChart is a latency chart over a logarithmic rate axis (rateSweep, tickToTrade).
func byRateChart(id, title, xLabel, yLabel string, ss []series, x, y span) *chart {
	if len(ss) == 0 {
		return nil
	}
	return &chart{
		ID: id, Title: title,
		X:      logAxis(xLabel, x.lo, x.hi, rateLabel),
		Y:      logAxis(yLabel, y.lo, y.hi, usLabel),
		Series: ss,
	}
}

// seriesClass gives each (stack, protocol or size) a stable colour class.
func seriesClass(stack tsv1.Stack, i int) int {
	if stack == tsv1.StackBypass {
		return 4 + i%4
	}
	return i % 4
}

func protocolIndex(p tsv1.Protocol) int {
	switch p {
	case tsv1.ProtocolUDPMulticast:
		return 1
	case tsv1.ProtocolTCP:
		return 2
	}
	return 0
}

// sampledGroups groups the rows that have samples by key: the keys in the order they first appear,
// each group sorted by x (the chart's axis).
func sampledGroups[R any, K comparable](rows []R, samples func(R) int64, key func(R) K, x func(R) int64) ([]K, map[K][]R) {
	groups := map[K][]R{}
	var keys []K
	for _, row := range rows {
		if samples(row) == 0 {
			continue
		}
		k := key(row)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], row)
	}
	for _, rows := range groups {
		sort.Slice(rows, func(a, b int) bool { return x(rows[a]) < x(rows[b]) })
	}
	return keys, groups
}

// medianAndP99 are the two series the size and rate charts draw of each group: the median solid,
// the p99 dashed.
var medianAndP99 = []struct {
	name   string
	dashed bool
	of     func(tsv1.LatencyStats) float64
}{
	{"median", false, func(l tsv1.LatencyStats) float64 { return float64(l.MedianNs) }},
	{"p99", true, func(l tsv1.LatencyStats) float64 { return float64(l.P99Ns) }},
}

// sizeChart plots the pingPong median (solid) and p99 (dashed) by message size, per stack and
// protocol, like papers 000 and 001.
func sizeChart(idx int, r *tsv1.BenchmarkResults) *chart {
	var ss []series
	y := newSpan()
	maxSize := 0.0
	for _, st := range r.Stacks {
		if st.PingPong == nil {
			continue
		}
		protos, byProto := sampledGroups(st.PingPong.Rows,
			func(r tsv1.PingPongRow) int64 { return r.Samples },
			func(r tsv1.PingPongRow) tsv1.Protocol { return r.Protocol },
			func(r tsv1.PingPongRow) int64 { return int64(r.MessageSize) })
		for _, p := range protos {
			rows := byProto[p]
			for _, stat := range medianAndP99 {
				s := series{Name: fmt.Sprintf("%s %s %s", st.Stack, p, stat.name), Class: seriesClass(st.Stack, protocolIndex(p)), Dashed: stat.dashed}
				for _, row := range rows {
					v := stat.of(row.LatencyStats)
					s.Points = append(s.Points, point{X: float64(row.MessageSize), Y: v, RawX: strconv.Itoa(int(row.MessageSize)),
						Title: fmt.Sprintf("%s %s %d B: %s %s", st.Stack, p, row.MessageSize, stat.name, usLabel(v))})
					y.add(v)
					maxSize = math.Max(maxSize, float64(row.MessageSize))
				}
				ss = append(ss, s)
			}
		}
	}
	if len(ss) == 0 {
		return nil
	}
	return &chart{
		ID: fmt.Sprintf("%s-%d", ChartLatencyVsSize, idx), Title: "pingPong: half round trip by message size (median solid, p99 dashed)",
		X:      linearAxis("message size (bytes)", 0, math.Max(maxSize, 100), true, func(v float64) string { return fnum(v) }),
		Y:      logAxis("latency", y.lo, y.hi, usLabel),
		Series: ss,
	}
}

// rateChart plots the rateSweep median (solid) and p99 (dashed) by target rate, per stack and size;
// hollow markers are rates not sustained without drops.
func rateChart(idx int, r *tsv1.BenchmarkResults) *chart {
	var ss []series
	x, y := newSpan(), newSpan()
	for _, st := range r.Stacks {
		if st.RateSweep == nil {
			continue
		}
		sizes, bySize := sampledGroups(st.RateSweep.Rows,
			func(r tsv1.RateRow) int64 { return r.Samples },
			func(r tsv1.RateRow) int32 { return r.MessageSize },
			func(r tsv1.RateRow) int64 { return r.TargetMps })
		for si, size := range sizes {
			rows := bySize[size]
			for _, stat := range medianAndP99 {
				s := series{Name: fmt.Sprintf("%s %d B %s", st.Stack, size, stat.name), Class: seriesClass(st.Stack, si), Dashed: stat.dashed}
				for _, row := range rows {
					v := stat.of(row.LatencyStats)
					s.Points = append(s.Points, point{X: float64(row.TargetMps), Y: v, RawX: strconv.FormatInt(row.TargetMps, 10), Open: !row.Sustained,
						Title: fmt.Sprintf("%s %d B at %d msg/s (achieved %d, dropped %d): %s %s", st.Stack, size, row.TargetMps, row.AchievedMps, row.Dropped, stat.name, usLabel(v))})
					y.add(v)
					x.add(float64(row.TargetMps))
				}
				ss = append(ss, s)
			}
		}
	}
	return byRateChart(fmt.Sprintf("%s-%d", ChartLatencyVsRate, idx), "rateSweep: latency under load (hollow: not sustained without drops)",
		"target rate (msg/s)", "latency", ss, x, y)
}

// tickToTradeChart plots each stack's tick-to-trade percentiles by market-data rate (paper 004's
// "latency over the range of messages per second"): median solid, p99 and p99.9 dashed; hollow
// markers are rows with ticks or orders unaccounted for.
func tickToTradeChart(idx int, r *tsv1.BenchmarkResults) *chart {
	var ss []series
	x, y := newSpan(), newSpan()
	stats := []struct {
		name string
		v    func(tsv1.LatencyStats) int64
	}{
		{"median", func(s tsv1.LatencyStats) int64 { return s.MedianNs }},
		{"p99", func(s tsv1.LatencyStats) int64 { return s.P99Ns }},
		{"p99.9", func(s tsv1.LatencyStats) int64 { return s.P999Ns }},
	}
	for _, st := range r.Stacks {
		if st.TickToTrade == nil {
			continue
		}
		var rows []tsv1.TickToTradeRow
		for _, row := range st.TickToTrade.Rows {
			if row.TickToTrade.Samples > 0 {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		sort.Slice(rows, func(a, b int) bool { return rows[a].RateMps < rows[b].RateMps })
		for si, stat := range stats {
			s := series{Name: fmt.Sprintf("%s %s", st.Stack, stat.name), Class: seriesClass(st.Stack, si), Dashed: si > 0}
			for _, row := range rows {
				v := float64(stat.v(row.TickToTrade))
				s.Points = append(s.Points, point{X: float64(row.RateMps), Y: v, RawX: strconv.FormatInt(row.RateMps, 10), Open: len(row.Unaccounted) > 0,
					Title: fmt.Sprintf("%s at %d msg/s (%d BUY): tick-to-trade %s %s", st.Stack, row.RateMps, row.TickToTrade.Samples, stat.name, usLabel(v))})
				y.add(v)
				x.add(float64(row.RateMps))
			}
			ss = append(ss, s)
		}
	}
	return byRateChart(fmt.Sprintf("%s-%d", ChartTickToTrade, idx),
		"tickToTrade: tick-to-trade percentiles by market-data rate (hollow: not every tick accounted for)",
		"market data rate (msg/s)", "tick-to-trade", ss, x, y)
}

func rateLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fnum(v/1e6) + "M"
	case v >= 1e3:
		return fnum(v/1e3) + "k"
	}
	return fnum(v)
}

// PercentileX is where the percentile curve places a percentile string on its "nines" axis: finite
// percentiles at -log10(1-p/100), "100" (the maximum) one past the largest finite one plotted.
func PercentileX(p string, maxFinite float64) (float64, error) {
	v, err := strconv.ParseFloat(p, 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("percentile %q is not a number in 0..100", p)
	}
	if v == 100 {
		return math.Ceil(maxFinite) + 1, nil
	}
	return nines(v), nil
}

// percentileChart plots each stack's percentile curve of the reference pingPong row.
func percentileChart(idx int, r *tsv1.BenchmarkResults) *chart {
	var curves []struct {
		stack tsv1.Stack
		c     *tsv1.PercentileCurve
	}
	maxFinite := 0.0
	y := newSpan()
	for _, st := range r.Stacks {
		if st.PingPong == nil || st.PingPong.Curve == nil || len(st.PingPong.Curve.Points) == 0 {
			continue
		}
		curves = append(curves, struct {
			stack tsv1.Stack
			c     *tsv1.PercentileCurve
		}{st.Stack, st.PingPong.Curve})
		for _, p := range st.PingPong.Curve.Points {
			if v, err := strconv.ParseFloat(p.Percentile, 64); err == nil && v < 100 {
				maxFinite = math.Max(maxFinite, nines(v))
			}
			y.add(float64(p.ValueNs))
		}
	}
	if len(curves) == 0 {
		return nil
	}
	xMax := math.Ceil(maxFinite) + 1
	var ss []series
	for i, cv := range curves {
		s := series{Name: fmt.Sprintf("%s %s %d B", cv.stack, cv.c.Protocol, cv.c.MessageSize), Class: seriesClass(cv.stack, i)}
		for _, p := range cv.c.Points {
			x, err := PercentileX(p.Percentile, maxFinite)
			if err != nil {
				continue
			}
			s.Points = append(s.Points, point{X: x, Y: float64(p.ValueNs), RawX: p.Percentile, Title: fmt.Sprintf("p%s: %s", p.Percentile, usLabel(float64(p.ValueNs)))})
		}
		ss = append(ss, s)
	}
	ax := axis{Label: "percentile", Scale: ScaleNines, Min: 0, Max: xMax}
	for n := 0.0; n <= xMax; n++ {
		label := "0%"
		switch {
		case n == xMax:
			label = "max"
		case n > 0:
			label = strconv.FormatFloat(100-100/math.Pow(10, n), 'f', -1, 64) + "%"
		}
		ax.Ticks = append(ax.Ticks, tick{V: n, Label: label})
	}
	return &chart{
		ID: fmt.Sprintf("%s-%d", ChartPercentile, idx), Title: "pingPong: percentile curve of the reference size",
		X: ax, Y: logAxis("latency", y.lo, y.hi, usLabel), Series: ss,
	}
}

// bypassChart sets the kernel and bypass pingPong medians side by side for every row measured on
// both, like paper 000's kernel vs OpenOnload exhibit.
func bypassChart(idx int, r *tsv1.BenchmarkResults) *chart {
	var cmp []tsv1.StackComparison
	for _, c := range judge.CompareStacks(r) {
		if c.Suite == tsv1.SuitePingPong {
			cmp = append(cmp, c)
		}
	}
	if len(cmp) == 0 {
		return nil
	}
	k := series{Name: "kernel median", Class: 0}
	b := series{Name: "bypass median", Class: 4}
	var cats []string
	hi := 0.0
	for i, c := range cmp {
		cat := fmt.Sprintf("%s %d B", c.Protocol, c.MessageSize)
		cats = append(cats, cat)
		k.Points = append(k.Points, point{X: float64(i), Y: float64(c.KernelMedianNs), RawX: cat, Title: fmt.Sprintf("kernel %s: %s", cat, usLabel(float64(c.KernelMedianNs)))})
		b.Points = append(b.Points, point{X: float64(i), Y: float64(c.BypassMedianNs), RawX: cat, Title: fmt.Sprintf("bypass %s: %s (%sx faster)", cat, usLabel(float64(c.BypassMedianNs)), c.MedianSpeedup)})
		hi = math.Max(hi, math.Max(float64(c.KernelMedianNs), float64(c.BypassMedianNs)))
	}
	x := axis{Label: "pingPong row", Scale: ScaleLinear, Min: -0.5, Max: float64(len(cats)) - 0.5}
	return &chart{
		ID: fmt.Sprintf("%s-%d", ChartKernelBypass, idx), Title: "kernel vs bypass: pingPong median",
		X: x, Y: linearAxis("latency", 0, hi, true, usLabel), Series: []series{k, b}, Categories: cats,
	}
}

func us(ns int64) string { return judge.FormatNanosAsMicros(ns) }

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"us":        us,
	"searched":  judge.FormatSearched,
	"burstTime": func(ns int64) string { return usLabel(float64(ns)) },
	"ptpStates": PTPStates,
	// receive buffering (buffers.go)
	"bufHead":  BufferingHead,
	"bufCells": BufferingCells,
	"bufText":  BufferingText,
	"bufNotes": BufferingNotes,
	"rcvbuf":   RcvbufAsked,
	"trials":   TrialsCell,
	// stalls (stalls.go)
	"stallCount":     StallCount,
	"maxCheck":       MaxCheckCell,
	"pingPongStalls": PingPongStallNotes,
	"rateStalls":     RateStallNotes,
	"mixedStalls":    MixedStallNotes,
	// tickToTrade
	"t2tByRate": func(rows []tsv1.TickToTradeRow) []tsv1.TickToTradeRow {
		out := append([]tsv1.TickToTradeRow(nil), rows...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].RateMps > out[j].RateMps })
		return out
	},
	"measures":       TickToTradeMeasures,
	"dash":           dash,
	"baselineSource": BaselineSource,
}).Parse(pageTemplate))
