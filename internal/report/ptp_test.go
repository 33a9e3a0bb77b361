package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"golang.org/x/net/html"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/testutil"
)

// ptpResults is a run with only the ptp suite: 58 SLAVE samples, 2 UNCALIBRATED, 1 failed read.
func ptpResults() *tsv1.BenchmarkResults {
	return &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: "tsbn-ptp",
		StartTime: metav1.NewTime(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)), CompletionTime: metav1.NewTime(time.Date(2026, 11, 22, 3, 1, 0, 0, time.UTC)),
		PTP: &tsv1.PTPResult{Socket: tsv1.DefaultPTPSocket, Domain: 24, IntervalMillis: 1000, Samples: 61, FailedReads: 1, NotSlaveSamples: 2,
			Offset:      tsv1.LatencyStats{Samples: 58, MinNs: 3, MedianNs: 41, MeanNs: 60, P95Ns: 180, P99Ns: 233, P999Ns: 233, MaxNs: 233, StdDevNs: 50},
			MinOffsetNs: -233, MaxOffsetNs: 190, MedianPathDelayNs: 2335, LastFailure: "no response from ptp4l",
			SystemOffset: &tsv1.LatencyStats{Samples: 57, MedianNs: 52, P99Ns: 410, MaxNs: 720},
			PortStates:   []tsv1.PTPPortStateCount{{State: "SLAVE", Samples: 58}, {State: "UNCALIBRATED", Samples: 2}}}}
}

func TestWriteTextPTP(t *testing.T) {
	res := ptpResults()
	v := judge.Evaluate(res, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "200ns"}}})
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res, Verdict: &v}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	testutil.WantContains(t, "text report", out,
		"ptp: ptp4l's |offset from master| through /run/tickstack/ptp/ptp4l.sock, domain 24, read every 1000 ms (us)",
		"last failed read: no response from ptp4l",
		"system clock |offset| (the agent's, 57 samples): median 0.052 us, p99 0.410 us, max 0.720 us",
		"Failed ptp/slave: 3 of 61 samples",
		"Failed ptp/p99: p99 0.233 us",
	)
	// One row: samples, not SLAVE, failed, median, p99, max, signed min and max, path delay, states.
	want := []string{"61", "2", "1", "0.041", "0.233", "0.233", "-0.233", "0.190", "2.335", "SLAVE:58,UNCALIBRATED:2"}
	found := false
	for _, l := range strings.Split(out, "\n") {
		found = found || strings.Join(strings.Fields(l), " ") == strings.Join(want, " ")
	}
	if !found {
		t.Errorf("no ptp row %q in:\n%s", want, out)
	}
}

func TestRenderPTP(t *testing.T) {
	doc, _ := render(t, Input{Nodes: []NodeResults{{Results: ptpResults()}}})
	var tables []string
	for _, tb := range find(doc, isElem("table")) {
		if hasClass(tb, "ptp") {
			tables = append(tables, text(tb))
		}
	}
	if len(tables) != 1 {
		t.Fatalf("%d ptp tables, want 1", len(tables))
	}
	for _, want := range []string{"domain 24", "58", "0.233", "-0.233", "2.335", "SLAVE:58,UNCALIBRATED:2"} {
		if !strings.Contains(tables[0], want) {
			t.Errorf("ptp table lacks %q: %s", want, tables[0])
		}
	}
	if n := len(find(doc, func(n *html.Node) bool {
		return hasClass(n, "note") && strings.Contains(text(n), "no response from ptp4l")
	})); n != 1 {
		t.Errorf("%d notes with the last failed read, want 1", n)
	}
	if n := len(find(doc, func(n *html.Node) bool {
		return n.Data == "p" && strings.Contains(text(n), "system clock |offset| (the node agent's, 57 samples): median 0.052 us, p99 0.410 us, max 0.720 us")
	})); n != 1 {
		t.Errorf("%d lines with the system clock's offset, want 1", n)
	}
}
