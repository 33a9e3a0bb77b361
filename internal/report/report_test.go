package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"golang.org/x/net/html"

	"github.com/tickstack/tickstack/internal/bench/judge"
)

// testdata/results_veth.json is a document the runner wrote on this machine over a veth pair
// (kernel stack measured, bypass unavailable).
func loadResults(t *testing.T) *tsv1.BenchmarkResults {
	t.Helper()
	return loadTestdata(t, "results_veth.json")
}

// loadTestdata reads testdata/NAME, a results document the runner wrote.
func loadTestdata(t *testing.T, name string) *tsv1.BenchmarkResults {
	t.Helper()
	r, err := judge.ReadResultsFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withBypass replaces the unavailable bypass stack by one derived from the kernel rows (each
// latency divided by 2.5), so the kernel-vs-bypass plot has data.
func withBypass(r *tsv1.BenchmarkResults) *tsv1.BenchmarkResults {
	r = r.DeepCopy()
	k := r.Stack(tsv1.StackKernel)
	pp := k.PingPong.DeepCopy()
	for i := range pp.Rows {
		s := &pp.Rows[i].LatencyStats
		for _, v := range []*int64{&s.MinNs, &s.MedianNs, &s.MeanNs, &s.P95Ns, &s.P99Ns, &s.P999Ns, &s.MaxNs, &s.StdDevNs} {
			*v = *v * 2 / 5
		}
	}
	pp.Rows = pp.Rows[:4] // bypass measured fewer rows: only the pairs are compared
	for i := range pp.Curve.Points {
		pp.Curve.Points[i].ValueNs = pp.Curve.Points[i].ValueNs * 2 / 5
	}
	b := r.Stack(tsv1.StackBypass)
	*b = tsv1.StackResults{Stack: tsv1.StackBypass, PingPong: pp}
	return r
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func find(n *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if pred(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func isElem(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }
}

func hasClass(n *html.Node, c string) bool {
	v, _ := attr(n, "class")
	for _, f := range strings.Fields(v) {
		if f == c {
			return true
		}
	}
	return false
}

func num(t *testing.T, n *html.Node, key string) float64 {
	t.Helper()
	v, ok := attr(n, key)
	if !ok {
		t.Fatalf("<%s> lacks %s", n.Data, key)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.Data, key, v, err)
	}
	return f
}

func text(n *html.Node) string {
	var b strings.Builder
	for _, t := range find(n, func(n *html.Node) bool { return n.Type == html.TextNode }) {
		b.WriteString(t.Data)
	}
	return strings.TrimSpace(b.String())
}

// plotted is one data point read back from a chart.
type plotted struct {
	series, x string
	y         float64
	px, py    float64
	node      *html.Node
}

// readChart returns the chart's points and checks each one sits where the axes declared on the
// <svg> put its data-x and data-y.
func readChart(t *testing.T, doc *html.Node, id string, xOf func(string) float64) []plotted {
	t.Helper()
	svgs := find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return n.Data == "svg" && v == id })
	if len(svgs) != 1 {
		t.Fatalf("%d <svg id=%q>, want 1", len(svgs), id)
	}
	svg := svgs[0]
	left, top := num(t, svg, "data-plot-left"), num(t, svg, "data-plot-top")
	width, height := num(t, svg, "data-plot-width"), num(t, svg, "data-plot-height")
	xMin, xMax, yMin, yMax := num(t, svg, "data-x-min"), num(t, svg, "data-x-max"), num(t, svg, "data-y-min"), num(t, svg, "data-y-max")
	xScale, _ := attr(svg, "data-x-scale")
	yScale, _ := attr(svg, "data-y-scale")
	tr := func(scale string, v float64) float64 {
		if scale == "log10" {
			return math.Log10(v)
		}
		return v
	}
	var out []plotted
	for _, c := range find(svg, isElem("circle")) {
		if !hasClass(c, "pt") {
			continue
		}
		s, _ := attr(c, "data-series")
		x, _ := attr(c, "data-x")
		p := plotted{series: s, x: x, y: num(t, c, "data-y"), px: num(t, c, "cx"), py: num(t, c, "cy"), node: c}
		xv := xOf(x)
		wantX := left + (tr(xScale, xv)-tr(xScale, xMin))/(tr(xScale, xMax)-tr(xScale, xMin))*width
		wantY := top + height - (tr(yScale, p.y)-tr(yScale, yMin))/(tr(yScale, yMax)-tr(yScale, yMin))*height
		if math.Abs(p.px-wantX) > 0.01 || math.Abs(p.py-wantY) > 0.01 {
			t.Errorf("%s: point %s x=%s y=%v at (%v, %v), axes put it at (%.2f, %.2f)", id, s, x, p.y, p.px, p.py, wantX, wantY)
		}
		if p.px < left-0.01 || p.px > left+width+0.01 || p.py < top-0.01 || p.py > top+height+0.01 {
			t.Errorf("%s: point %s x=%s outside the plot area", id, s, x)
		}
		out = append(out, p)
	}
	return out
}

func render(t *testing.T, in Input) (*html.Node, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.String()
}

func atoi(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

func TestRenderPlotsTheData(t *testing.T) {
	res := withBypass(loadResults(t))
	verdict := judge.Evaluate(res, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "1us"}}})
	doc, page := render(t, Input{Title: "bench/<veth>", Generated: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC),
		Nodes: []NodeResults{{Node: "tsbn-node", Results: res, Verdict: &verdict}}})

	// Self-contained: no script, nothing loaded from elsewhere.
	if n := len(find(doc, isElem("script"))); n != 0 {
		t.Errorf("%d <script> elements", n)
	}
	for _, n := range find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		for _, k := range []string{"src", "href"} {
			if v, ok := attr(n, k); ok {
				t.Errorf("<%s %s=%q> loads something", n.Data, k, v)
			}
		}
	}
	if !strings.Contains(page, "bench/&lt;veth&gt;") {
		t.Error("the title is not escaped")
	}

	k, b := res.Stack(tsv1.StackKernel), res.Stack(tsv1.StackBypass)

	// Latency vs size: a median and a p99 point per pingPong row of each stack.
	pts := readChart(t, doc, "latency-vs-size-0", atoi)
	if want := 2 * (len(k.PingPong.Rows) + len(b.PingPong.Rows)); len(pts) != want {
		t.Fatalf("latency-vs-size: %d points, want %d", len(pts), want)
	}
	for _, st := range []*tsv1.StackResults{k, b} {
		for _, row := range st.PingPong.Rows {
			for _, stat := range []struct {
				name string
				v    int64
			}{{"median", row.MedianNs}, {"p99", row.P99Ns}} {
				series := fmt.Sprintf("%s %s %s", st.Stack, row.Protocol, stat.name)
				found := 0
				for _, p := range pts {
					if p.series == series && p.x == strconv.Itoa(int(row.MessageSize)) && p.y == float64(stat.v) {
						found++
					}
				}
				if found != 1 {
					t.Errorf("latency-vs-size: %d points for %s at %d B = %d ns, want 1", found, series, row.MessageSize, stat.v)
				}
			}
		}
	}
	// Lines join each series' points in size order.
	if n := len(find(doc, func(n *html.Node) bool {
		v, _ := attr(n, "class")
		return n.Data == "polyline" && strings.HasPrefix(v, "line")
	})); n < 12 {
		t.Errorf("%d series lines, want at least 12", n)
	}

	// Latency vs rate: two points per rate row; the unsustained ones hollow.
	pts = readChart(t, doc, "latency-vs-rate-0", atoi)
	if len(pts) != 2*len(k.RateSweep.Rows) {
		t.Fatalf("latency-vs-rate: %d points, want %d", len(pts), 2*len(k.RateSweep.Rows))
	}
	for _, row := range k.RateSweep.Rows {
		for _, p := range pts {
			if p.x == strconv.FormatInt(row.TargetMps, 10) && strings.HasSuffix(p.series, "median") {
				if p.y != float64(row.MedianNs) || hasClass(p.node, "open") == row.Sustained {
					t.Errorf("latency-vs-rate: %d msg/s plotted %v (open %v), row median %d sustained %v", row.TargetMps, p.y, hasClass(p.node, "open"), row.MedianNs, row.Sustained)
				}
			}
		}
	}

	// Percentile curve: every curve point of both stacks on the "nines" axis.
	maxFinite := 0.0
	for _, p := range k.PingPong.Curve.Points {
		if v := atoi(p.Percentile); v < 100 {
			maxFinite = math.Max(maxFinite, -math.Log10(1-v/100))
		}
	}
	pts = readChart(t, doc, "percentile-curve-0", func(s string) float64 {
		x, err := PercentileX(s, maxFinite)
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
	if want := len(k.PingPong.Curve.Points) + len(b.PingPong.Curve.Points); len(pts) != want {
		t.Fatalf("percentile-curve: %d points, want %d", len(pts), want)
	}
	for i, p := range k.PingPong.Curve.Points {
		if pts[i].x != p.Percentile || pts[i].y != float64(p.ValueNs) {
			t.Errorf("percentile point %d: plotted p%s = %v, curve p%s = %d", i, pts[i].x, pts[i].y, p.Percentile, p.ValueNs)
		}
		if i > 0 && pts[i].px <= pts[i-1].px {
			t.Errorf("percentile points not left to right at p%s", p.Percentile)
		}
	}
	if x, _ := PercentileX("99.9", 4); math.Abs(x-3) > 1e-9 {
		t.Errorf("p99.9 at %v on the nines axis, want 3", x)
	}

	// Kernel vs bypass: one bar per stack for every row measured on both, heights to the baseline.
	svg := find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == "kernel-vs-bypass-0" })
	if len(svg) != 1 {
		t.Fatal("no kernel-vs-bypass chart")
	}
	bars := find(svg[0], func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "bar") })
	cmp := judge.CompareStacks(res)
	if len(bars) != 2*len(cmp) || len(cmp) != 4 {
		t.Fatalf("%d bars for %d compared rows", len(bars), len(cmp))
	}
	bottom := num(t, svg[0], "data-plot-top") + num(t, svg[0], "data-plot-height")
	yMax := num(t, svg[0], "data-y-max")
	for i, bar := range bars {
		c := cmp[i%len(cmp)]
		want := float64(c.KernelMedianNs)
		if i >= len(cmp) {
			want = float64(c.BypassMedianNs)
		}
		if num(t, bar, "data-y") != want {
			t.Errorf("bar %d: data-y %v, want %v", i, num(t, bar, "data-y"), want)
		}
		if y, h := num(t, bar, "y"), num(t, bar, "height"); math.Abs(y+h-bottom) > 0.02 || math.Abs(h-want/yMax*num(t, svg[0], "data-plot-height")) > 0.02 {
			t.Errorf("bar %d: y %v height %v for %v ns (axis max %v)", i, y, h, want, yMax)
		}
	}

	// Tables in the papers' shape, values in microseconds.
	tables := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "pingPong") })
	if len(tables) != 2 {
		t.Fatalf("%d pingPong tables, want one per stack", len(tables))
	}
	rows := find(tables[0], isElem("tr"))
	if len(rows) != len(k.PingPong.Rows)+1 {
		t.Fatalf("kernel pingPong table has %d rows, want %d", len(rows), len(k.PingPong.Rows)+1)
	}
	cells := find(rows[1], isElem("td"))
	if text(cells[4]) != judge.FormatNanosAsMicros(k.PingPong.Rows[0].MedianNs) {
		t.Errorf("median cell %q, want %q", text(cells[4]), judge.FormatNanosAsMicros(k.PingPong.Rows[0].MedianNs))
	}
	for _, cls := range []string{"rateSweep", "microburst", "mixedBurst", "jitter", "comparison", "verdict"} {
		if len(find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, cls) })) == 0 {
			t.Errorf("no %s table", cls)
		}
	}
	// microburst: one row per receive buffer, its buffering beside the answer; this older
	// runner's document reported none, which shows as unknown, not as zero
	mbTables := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "microburst") })
	mbRows := find(mbTables[0], isElem("tr"))
	if len(mbRows) != len(k.Microburst.Rows)+1 {
		t.Fatalf("kernel microburst table has %d rows, want %d", len(mbRows), len(k.Microburst.Rows)+1)
	}
	mbCells := find(mbRows[1], isElem("td"))
	if got := []string{text(mbCells[0]), text(mbCells[1]), text(mbCells[3]), text(mbCells[4])}; !slices.Equal(got, []string{"default", "?", "?", fmt.Sprint(k.Microburst.Rows[0].MaxBurstPackets)}) {
		t.Errorf("microburst row cells %q", got)
	}
	if !strings.Contains(page, "buffers: SO_RCVBUF default: unknown: an older tickstack-bench measured this row") {
		t.Error("the unknown buffering is not explained")
	}
	if !strings.Contains(page, `class="Failed">Failed`) {
		t.Error("the verdict is missing")
	}
}

func TestRenderUnavailableBypass(t *testing.T) {
	res := loadResults(t)
	doc, page := render(t, Input{Nodes: []NodeResults{{Results: res}}})
	if !strings.Contains(page, "bypass stack unavailable: client side: stack unavailable: bypass launcher") {
		t.Error("the unavailable bypass stack is not explained")
	}
	if n := len(find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == "kernel-vs-bypass-0" })); n != 0 {
		t.Error("a kernel-vs-bypass chart without bypass data")
	}
	if !strings.Contains(page, "<h2>Node "+res.Node) {
		t.Error("the node name from the results is not used")
	}
	// Each chart of the kernel stack is still drawn.
	for _, id := range []string{"latency-vs-size-0", "latency-vs-rate-0", "percentile-curve-0"} {
		if len(readChart(t, doc, id, func(s string) float64 {
			if id == "percentile-curve-0" {
				x, _ := PercentileX(s, 4)
				return x
			}
			return atoi(s)
		})) == 0 {
			t.Errorf("%s has no points", id)
		}
	}
	if err := Render(&bytes.Buffer{}, Input{Nodes: []NodeResults{{Node: "x"}}}); err == nil || !strings.Contains(err.Error(), `node "x" has no results`) {
		t.Errorf("nil results: %v", err)
	}
}
