package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/bench"
)

func TestWriteText(t *testing.T) {
	res := withBypass(loadResults(t))
	res.Path = &tsv1.NetworkPath{ClientAddress: "198.18.3.2", ReflectorAddress: "198.18.3.1", Interface: "lat0"}
	v := bench.Evaluate(res, tsv1.Thresholds{MinMicroburstPackets: ptrInt64(1 << 40)})
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res, Verdict: &v}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	// Every pingPong row of both stacks is one line with its protocol, size, statistics and stalls
	// (none reported in this document), the bypass rows with their max check.
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		for _, row := range res.Stack(st).PingPong.Rows {
			want := []string{string(row.Protocol), fmt.Sprint(row.MessageSize), fmt.Sprint(row.Samples),
				bench.FormatNanosAsMicros(row.MedianNs), bench.FormatNanosAsMicros(row.P999Ns), bench.FormatNanosAsMicros(row.StdDevNs)}
			fields, check := 13, ""
			if st == tsv1.StackBypass {
				fields, check = 17, MaxCheckCell(row.LatencyStats)
			}
			found := 0
			for _, l := range lines {
				f := strings.Fields(l)
				if len(f) == fields && f[0] == want[0] && f[1] == want[1] && f[2] == want[2] && f[4] == want[3] && f[8] == want[4] && f[10] == want[5] &&
					f[12] == "-" && strings.Join(f[13:], " ") == check {
					found++
				}
			}
			if found != 1 {
				t.Errorf("%s %s %d B: %d matching lines, want 1", st, row.Protocol, row.MessageSize, found)
			}
		}
	}
	k := res.Stack(tsv1.StackKernel)
	for _, want := range []string{
		"verdict: Failed",
		"path: 198.18.3.2 on lat0 to reflector 198.18.3.1",
		fmt.Sprintf("largest burst without a drop: %d messages", k.Microburst.MaxBurstPackets),
		fmt.Sprintf("highest rate sustained without drops, udp 64 B: %d msg/s", k.RateSweep.MaxSustained[0].Mps),
		"kernel vs bypass (us)",
		"2.5", // the derived bypass stack is 2.5x faster
		"jitter (us)",
		"mixedBurst, kernel stack: 2/3 at 100 B, 1/3 at 600 B",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if err := WriteText(&bytes.Buffer{}, NodeResults{Node: "n"}); err == nil {
		t.Error("nil results accepted")
	}
}

func ptrInt64(v int64) *int64 { return &v }

// A search that stopped at its bound is printed as a lower bound in the text and on the page.
func TestSearchBoundsPrintedAsLowerBounds(t *testing.T) {
	res := loadResults(t)
	k := res.Stack(tsv1.StackKernel)
	k.Microburst.LimitReached = true
	k.RateSweep.MaxSustained[0].LimitReached = true
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("largest burst without a drop: at least %d messages (the search's bound", k.Microburst.MaxBurstPackets),
		fmt.Sprintf("udp 64 B: at least %d msg/s (the sweep's highest rate", k.RateSweep.MaxSustained[0].Mps),
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
	var html bytes.Buffer
	if err := Render(&html, Input{Nodes: []NodeResults{{Node: "n", Results: res}}}); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		fmt.Sprintf("<b>at least %d</b> messages (the search's bound", k.Microburst.MaxBurstPackets),
		fmt.Sprintf("64 B: at least %d msg/s (the sweep's highest rate", k.RateSweep.MaxSustained[0].Mps),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
