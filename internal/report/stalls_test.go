package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"

	"golang.org/x/net/html"
)

const ms = int64(1000000)

// demoStalls is the demo's bypass 1024 B row as the runner would report it: a p99.9 of 18.7 ms,
// a 235 ms maximum, far fewer samples than the other rows, and a fill ring that ran empty.
func demoStalls(res *tsv1.BenchmarkResults) *tsv1.PingPongRow {
	row := &res.Stack(tsv1.StackBypass).PingPong.Rows[1]
	row.Samples, row.P999Ns, row.MaxNs = 23403, 18700000, 235*ms
	row.Stalls = &tsv1.StallReport{
		Count: 12, TotalNs: 4120 * ms, LatencyThresholdNs: 187 * ms, GapThresholdNs: ms,
		Stalls: []tsv1.Stall{
			{OffsetNs: 1234 * ms, DurationNs: 470 * ms, LatencyNs: 235 * ms, ClientRunQueueWaitNs: 2 * ms, ReflectorRunQueueWaitNs: 460 * ms, StealNs: 10 * ms, Cause: tsv1.StallPreempted},
			{OffsetNs: 2500 * ms, DurationNs: 37 * ms, LatencyNs: 2300, ClientRunQueueWaitNs: 1 * ms, Cause: tsv1.StallUnexplained},
		},
		NeighbourSamples: 786517, FewSamples: true,
		Counters: []tsv1.StackCounter{{Name: "xsk.fill_ring_empty", Value: 3}, {Name: "nh.refreshes", Value: 1}},
	}
	return row
}

func TestStallsInTheTextReport(t *testing.T) {
	res := withBypass(loadResults(t))
	row := demoStalls(res)
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	label := string(row.Protocol) + " 1472 B"
	if row.MessageSize != 1472 {
		t.Fatalf("the derived bypass row 1 is %d B: fix the test's label", row.MessageSize)
	}
	testutil.WantContains(t, "text report", out,
		" 12 few  OVER (> 187 ms)",
		"  stalls: "+label+": 12 stalls, 4.12 s in total (a message slower than 187 ms or a pause between sends over 1.00 ms); the 2 longest: "+
			"at 1.234 s for 470 ms (slowest message 235 ms) [preempted: run-queue wait client 2.00 ms, reflector 460 ms; steal 10.0 ms], "+
			"at 2.500 s for 37.0 ms (no slow message: a pause between sends) [unexplained: run-queue wait client 1.00 ms, reflector 0; steal 0; see the bypass stack's counters]",
		"  stalls: "+label+": causes of the stalls: 2 listed: 1 preempted, 1 unexplained",
		"  stalls: "+label+": 23403 samples, under a quarter of the 786517 the suite's other rows timed (their median) in the same time",
		"  stalls: "+label+": the bypass stack counted, runner: xsk.fill_ring_empty=3 nh.refreshes=1; reflector: nothing unusual",
	)
	if n := strings.Count(out, "  stalls: "); n != 4 {
		t.Errorf("%d stall notes, want 4 (the other rows have no stall report)", n)
	}
}

func TestStallsOnThePage(t *testing.T) {
	res := withBypass(loadResults(t))
	demoStalls(res)
	doc, _ := render(t, Input{Nodes: []NodeResults{{Node: "n", Results: res}}})
	tables := find(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "pingPong") })
	if len(tables) != 2 {
		t.Fatalf("%d pingPong tables", len(tables))
	}
	heads := func(tb *html.Node) []string {
		var out []string
		for _, th := range find(tb, isElem("th")) {
			out = append(out, text(th))
		}
		return out
	}
	if h := heads(tables[0]); h[len(h)-1] != "stalls" {
		t.Errorf("kernel pingPong headings %v: want stalls last, no max check", h)
	}
	if h := heads(tables[1]); !reflect.DeepEqual(h[len(h)-2:], []string{"stalls", "max check"}) {
		t.Errorf("bypass pingPong headings %v", h)
	}
	cells := find(find(tables[1], isElem("tr"))[2], isElem("td"))
	if got := []string{text(cells[12]), text(cells[13])}; !reflect.DeepEqual(got, []string{"12 few", "OVER (> 187 ms)"}) {
		t.Errorf("bypass 1472 B stalls and max check cells %q", got)
	}
	lists := find(doc, func(n *html.Node) bool { return n.Data == "ul" && hasClass(n, "stalls") })
	if len(lists) != 1 {
		t.Fatalf("%d stall lists, want the bypass pingPong's", len(lists))
	}
	items := find(lists[0], isElem("li"))
	if len(items) != 4 || !strings.Contains(text(items[0]), "at 1.234 s for 470 ms (slowest message 235 ms) [preempted: run-queue wait client 2.00 ms, reflector 460 ms; steal 10.0 ms]") ||
		!strings.Contains(text(items[1]), "causes of the stalls: 2 listed: 1 preempted, 1 unexplained") {
		t.Errorf("stall list items %d, first %q", len(items), text(items[0]))
	}
}

func TestStallNotes(t *testing.T) {
	quiet := &tsv1.StallReport{LatencyThresholdNs: ms, GapThresholdNs: ms, NeighbourSamples: 1000}
	if n := StallNotes(tsv1.StackBypass, "udp 64 B", 900, quiet); n != nil {
		t.Errorf("an undisturbed bypass row: %q", n)
	}
	if n := StallNotes(tsv1.StackKernel, "udp 64 B", 900, nil); n != nil {
		t.Errorf("no report: %q", n)
	}
	// Counters that are not zero are shown even without a stall; a kernel row has none to show.
	c := *quiet
	c.ReflectorCounters = []tsv1.StackCounter{{Name: "xsk.tx_ring_full", Value: 2}}
	if n := StallNotes(tsv1.StackBypass, "udp 64 B", 900, &c); len(n) != 1 || n[0] != "udp 64 B: the bypass stack counted, runner: nothing unusual; reflector: xsk.tx_ring_full=2" {
		t.Errorf("counters only: %q", n)
	}
	k := *quiet
	k.Count, k.TotalNs, k.Stalls = 1, 3*ms, []tsv1.Stall{{OffsetNs: 5, DurationNs: 3 * ms, LatencyNs: 2 * ms}}
	if n := StallNotes(tsv1.StackKernel, "tcp 14 B", 900, &k); len(n) != 1 || n[0] != "tcp 14 B: 1 stall, 3.00 ms in total (a message slower than 1.00 ms or a pause between sends over 1.00 ms): at 0.000 s for 3.00 ms (slowest message 2.00 ms)" {
		t.Errorf("kernel stall: %q", n)
	}
	// A stall the runner could not attribute says why.
	a := k
	a.AttributionMissing = "runner: the process ended before sockperf's clock variables were set"
	if n := StallNotes(tsv1.StackKernel, "tcp 14 B", 900, &a); len(n) != 2 || n[1] != "tcp 14 B: run-queue wait and steal missing: runner: the process ended before sockperf's clock variables were set" {
		t.Errorf("unattributed stall: %q", n)
	}
	a.Stalls = []tsv1.Stall{{OffsetNs: 5, DurationNs: 3 * ms, LatencyNs: 2 * ms, StealNs: 10 * ms, Cause: tsv1.StallSteal}}
	a.AttributionMissing = ""
	if n := StallNotes(tsv1.StackKernel, "tcp 14 B", 900, &a); len(n) != 2 || !strings.HasSuffix(n[0], "(slowest message 2.00 ms) [steal: run-queue wait client 0, reflector 0; steal 10.0 ms]") || n[1] != "tcp 14 B: causes of the stalls: 1 steal" {
		t.Errorf("steal: %q", n)
	}
	m := *quiet
	m.CountersMissing = "reflector: no statistics dump was written"
	if n := StallNotes(tsv1.StackBypass, "udp 64 B", 900, &m); len(n) != 1 || n[0] != "udp 64 B: bypass stack counters missing: reflector: no statistics dump was written" {
		t.Errorf("missing counters: %q", n)
	}
}

func TestShortDuration(t *testing.T) {
	for ns, want := range map[int64]string{
		999: "999 ns", 1000: "1.00 us", 18700: "18.7 us", 980000: "980 us", 999999999: "1000 ms",
		ms: "1.00 ms", 235 * ms: "235 ms", 4123 * ms: "4.12 s", 125000 * ms: "125 s",
	} {
		if got := shortDuration(ns); got != want {
			t.Errorf("shortDuration(%d) = %q, want %q", ns, got, want)
		}
	}
}
