package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestReportInChromium is the report as a person sees it: the page of three nodes (every suite
// of the runner's veth documents, the bypass stack beside the kernel, tick-to-trade, PTP) opened
// in headless Chromium. Every chart is laid out with a box, draws something inside it, and shows
// every point it holds; the page raises no error; the full-page screenshot is an image with
// content, kept beside the page for a person to look at.
func TestReportInChromium(t *testing.T) {
	res := withBypass(loadResults(t))
	v := judge.Evaluate(res, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "1us"}}})
	in := Input{Title: "bench/<veth>", Generated: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC), Nodes: []NodeResults{
		{Node: "tsbn-node", Results: res, Verdict: &v},
		{Node: "tsbn-t2t", Results: loadT2TResults(t)},
		{Node: "tsbn-ptp", Results: ptpResults()},
	}}
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	page := tsutil.RenderInChromium(t, path)
	tsutil.CheckChartsDrawn(t, page, strings.Count(buf.String(), `class="chart"`))
}
