package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/tickstack/tickstack/internal/testutil"
)

const (
	us = int64(1000)
	ms = 1000 * us
)

// pingPongLog is a crafted ping-pong full log: n messages, each sent think after the previous
// reply, each with the half round trip lat(i) (its reply comes 2 x lat(i) after its send); the
// first send is at 7 s of sockperf's clock.
func pingPongLog(n int, think int64, lat func(i int) int64) []FullLogSample {
	rows := make([]FullLogSample, n)
	t := 7000 * ms
	for i := range rows {
		l := lat(i)
		rows[i] = FullLogSample{Packet: int64(i), TxNs: t, RxNs: t + 2*l, LatencyNs: l}
		t += 2*l + think
	}
	return rows
}

func p999(rows []FullLogSample) int64 {
	return ComputeStats(latencies(rows)).P999Ns
}

func TestDetectStallsQuietRun(t *testing.T) {
	rows := pingPongLog(10000, 1*us, func(int) int64 { return 2 * us })
	rep := DetectStalls(rows, p999(rows))
	// 10 x p99.9 (20 us) and 10 x the 5 us pause are both under the 1 ms floor.
	want := &tsv1.StallReport{LatencyThresholdNs: ms, GapThresholdNs: ms}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("quiet run: %+v, want %+v", rep, want)
	}
}

// A reply 40 ms late in a ping-pong: the slow message and the pause it causes are one stall, from
// the slow message's send to the next send.
func TestDetectStallsSlowReply(t *testing.T) {
	rows := pingPongLog(20000, 1*us, func(i int) int64 {
		if i == 12000 {
			return 40 * ms
		}
		return 2 * us
	})
	rep := DetectStalls(rows, p999(rows))
	want := []tsv1.Stall{{OffsetNs: rows[12000].TxNs - rows[0].TxNs, DurationNs: 80*ms + 1*us, LatencyNs: 40 * ms}}
	if rep.Count != 1 || rep.TotalNs != 80*ms+1*us || !reflect.DeepEqual(rep.Stalls, want) {
		t.Errorf("slow reply: %+v, want one stall %+v", rep, want)
	}
	if rep.Stalls[0].OffsetNs != 12000*5*us {
		t.Errorf("offset %d ns, want %d (12000 messages of 5 us before it)", rep.Stalls[0].OffsetNs, 12000*5*us)
	}
}

// The sender paused 30 ms between two messages whose replies were quick: a stall whose slowest
// message was not slow.
func TestDetectStallsSenderPause(t *testing.T) {
	rows := pingPongLog(5000, 1*us, func(int) int64 { return 2 * us })
	for i := 3000; i < len(rows); i++ {
		rows[i].TxNs += 30 * ms
		rows[i].RxNs += 30 * ms
	}
	rep := DetectStalls(rows, p999(rows))
	want := []tsv1.Stall{{OffsetNs: 2999 * 5 * us, DurationNs: 30*ms + 5*us, LatencyNs: 2 * us}}
	if rep.Count != 1 || !reflect.DeepEqual(rep.Stalls, want) {
		t.Errorf("sender pause: %+v, want %+v", rep, want)
	}
	if rep.Stalls[0].LatencyNs > rep.LatencyThresholdNs {
		t.Error("a pause with quick replies reported a slow message")
	}
}

// Under load the sends are paced whatever the replies do: a slow reply is a stall from its send to
// its reply, and a reply just under the threshold is none.
func TestDetectStallsPacedSends(t *testing.T) {
	rows := make([]FullLogSample, 3000)
	for i := range rows {
		tx := 1000*ms + int64(i)*ms // one timed message a millisecond
		l := 20 * us
		switch i {
		case 1000:
			l = 30 * ms
		case 2000:
			l = 999 * us // 10 x p99.9 is 200 us: the 1 ms floor decides
		}
		rows[i] = FullLogSample{Packet: int64(i), TxNs: tx, RxNs: tx + 2*l, LatencyNs: l}
	}
	rep := DetectStalls(rows, 20*us)
	want := []tsv1.Stall{{OffsetNs: 1000 * ms, DurationNs: 60 * ms, LatencyNs: 30 * ms}}
	if rep.LatencyThresholdNs != ms || rep.GapThresholdNs != 10*ms || !reflect.DeepEqual(rep.Stalls, want) {
		t.Errorf("paced sends: %+v, want thresholds 1 ms and 10 ms and %+v", rep, want)
	}
	// A p99.9 of 200 us puts the latency threshold at 2 ms: 999 us is under it, 30 ms over.
	if rep := DetectStalls(rows, 200*us); rep.LatencyThresholdNs != 2*ms || rep.Count != 1 {
		t.Errorf("p99.9 200 us: threshold %d, %d stalls; want 2 ms and 1", rep.LatencyThresholdNs, rep.Count)
	}
}

// Two slow messages in a row are one stall; the list keeps the longest stalls in time order and
// the count and total cover all of them.
func TestDetectStallsMergesAndCaps(t *testing.T) {
	slow := map[int]int64{100: 5 * ms, 101: 7 * ms}
	for k := 0; k < 14; k++ {
		slow[1000+1000*k] = int64(2+k) * ms // 2 ms ... 15 ms
	}
	rows := pingPongLog(20000, 1*us, func(i int) int64 {
		if l, ok := slow[i]; ok {
			return l
		}
		return 2 * us
	})
	rep := DetectStalls(rows, p999(rows))
	if rep.Count != 15 {
		t.Fatalf("%d stalls, want 15 (messages 100 and 101 are one)", rep.Count)
	}
	var total int64
	for _, l := range slow {
		total += 2*l + 1*us
	}
	if rep.TotalNs != total {
		t.Errorf("total %d ns, want %d", rep.TotalNs, total)
	}
	if len(rep.Stalls) != tsv1.MaxListedStalls {
		t.Fatalf("%d stalls listed, want %d", len(rep.Stalls), tsv1.MaxListedStalls)
	}
	// The longest ten: messages 100+101 (24 ms + 2 us) and the 7..15 ms ones (k = 5..13, from
	// 14 ms + 1 us), listed by time.
	if first := rep.Stalls[0]; first.OffsetNs != rows[100].TxNs-rows[0].TxNs || first.DurationNs != 24*ms+2*us || first.LatencyNs != 7*ms {
		t.Errorf("first listed stall %+v, want messages 100 and 101 merged", first)
	}
	for i, s := range rep.Stalls[1:] {
		want := rows[1000+1000*(i+5)]
		if s.OffsetNs != want.TxNs-rows[0].TxNs || s.LatencyNs != want.LatencyNs {
			t.Errorf("listed stall %d: %+v, want message %d", i+1, s, want.Packet)
		}
	}
}

func TestDetectStallsEdges(t *testing.T) {
	if rep := DetectStalls(nil, 0); rep.Count != 0 || rep.LatencyThresholdNs != ms || rep.GapThresholdNs != 0 {
		t.Errorf("no rows: %+v", rep)
	}
	// Rows without a send time cannot be placed: left out, not read as a pause since time 0.
	rows := pingPongLog(100, 1*us, func(int) int64 { return 2 * us })
	rows[50].TxNs, rows[50].RxNs = 0, 0
	if rep := DetectStalls(rows, p999(rows)); rep.Count != 0 {
		t.Errorf("an untimed row made %d stalls: %+v", rep.Count, rep.Stalls)
	}
}

// A captured sockperf ping-pong at 1000 msg/s: the times are read to the nanosecond; its slowest
// message (11 ms) is under 10 x its p99.9 (5 ms), and every
// run of consecutive pauses above the gap threshold (10 x the median pause) is one stall.
func TestDetectStallsCapturedLog(t *testing.T) {
	rows := readFullLog(t, "pp_small")
	if r := rows[0]; r.TxNs != 2436765509 || r.RxNs != 2436794561 || r.LatencyNs != 14526 {
		t.Fatalf("first row %+v, want tx 2.436765509 s, rx 2.436794561 s, 14.526 us", r)
	}
	st := ComputeStats(latencies(rows))
	rep := DetectStalls(rows, st.P999Ns)
	if rep.LatencyThresholdNs != 10*st.P999Ns {
		t.Errorf("latency threshold %d, want 10 x p99.9 %d", rep.LatencyThresholdNs, st.P999Ns)
	}
	var runs int32
	for i := 1; i < len(rows); i++ {
		long := rows[i].TxNs-rows[i-1].TxNs > rep.GapThresholdNs
		if long && (i == 1 || rows[i-1].TxNs-rows[i-2].TxNs <= rep.GapThresholdNs) {
			runs++
		}
	}
	if rep.GapThresholdNs < ms || rep.Count != runs || runs == 0 {
		t.Errorf("gap threshold %d, %d stalls; want >= 1 ms and the %d runs of pauses above it", rep.GapThresholdNs, rep.Count, runs)
	}
	for _, s := range rep.Stalls {
		if s.LatencyNs > rep.LatencyThresholdNs {
			t.Errorf("stall %+v has a message above the latency threshold %d", s, rep.LatencyThresholdNs)
		}
	}
}

func TestMarkFewSamples(t *testing.T) {
	row := func(p tsv1.Protocol, size int32, n int64) tsv1.PingPongRow {
		return tsv1.PingPongRow{Protocol: p, MessageSize: size, LatencyStats: tsv1.LatencyStats{Samples: n, P999Ns: 20 * us}}
	}
	// The demo's bypass rows: 1024 B timed 23,403 messages where the others timed ~780,000.
	rows := []tsv1.PingPongRow{
		row(tsv1.ProtocolUDP, 14, 800000), row(tsv1.ProtocolUDP, 256, 786517), row(tsv1.ProtocolUDP, 1024, 23403),
		row(tsv1.ProtocolUDP, 1472, 700000), row(tsv1.ProtocolTCP, 14, 1000),
	}
	rows[1].Stalls = &tsv1.StallReport{Count: 2}
	MarkFewSamples(rows)
	for i, want := range []struct {
		neighbours int64
		few        bool
	}{{700000, false}, {700000, false}, {786517, true}, {786517, false}} {
		s := rows[i].Stalls
		if s == nil || s.NeighbourSamples != want.neighbours || s.FewSamples != want.few {
			t.Errorf("udp %d B: %+v, want neighbours %d, few %v", rows[i].MessageSize, s, want.neighbours, want.few)
		}
	}
	if rows[1].Stalls.Count != 2 {
		t.Error("the row's stall report was replaced, not completed")
	}
	if rows[4].Stalls != nil {
		t.Errorf("the only tcp row was compared: %+v", rows[4].Stalls)
	}
	// Exactly a quarter is not below a quarter.
	edge := []tsv1.PingPongRow{row(tsv1.ProtocolUDP, 14, 400), row(tsv1.ProtocolUDP, 64, 100)}
	MarkFewSamples(edge)
	if edge[1].Stalls.FewSamples || edge[1].Stalls.NeighbourSamples != 400 {
		t.Errorf("100 of 400: %+v, want not few", edge[1].Stalls)
	}
	edge[1].Samples = 99
	MarkFewSamples(edge)
	if !edge[1].Stalls.FewSamples {
		t.Errorf("99 of 400: %+v, want few", edge[1].Stalls)
	}
}

func TestMaxCheck(t *testing.T) {
	for _, c := range []struct {
		p999, max, bound int64
		ok               bool
	}{
		{20 * us, 900 * us, ms, true},
		{20 * us, 5 * ms, ms, false},
		{18700 * us, 235 * ms, 187 * ms, false}, // the demo's bypass 1024 B row
		{18700 * us, 187 * ms, 187 * ms, true},
	} {
		b, ok := judge.MaxCheck(tsv1.LatencyStats{P999Ns: c.p999, MaxNs: c.max})
		if b != c.bound || ok != c.ok {
			t.Errorf("p99.9 %d, max %d: bound %d ok %v, want %d %v", c.p999, c.max, b, ok, c.bound, c.ok)
		}
	}
}

// writeFullLog writes rows as sockperf's --full-log does.
func writeFullLog(t *testing.T, path string, rows []FullLogSample) {
	t.Helper()
	var b strings.Builder
	b.WriteString("sockperf: a summary\npacket, txTime(sec), rxTime(sec), latency(usec)\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%d, %d.%09d, %d.%09d, %s\n", r.Packet, r.TxNs/1e9, r.TxNs%1e9, r.RxNs/1e9, r.RxNs%1e9, judge.FormatNanosAsMicros(r.LatencyNs))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dataplane/bench/report.py finds stalls for docs/bench-dataplane.md with its own copy of the
// rules: on the same full logs it must find what DetectStalls finds.
func TestReportPyFindsTheSameStalls(t *testing.T) {
	python := testutil.RequireTool(t, "python3")
	slow := map[int]int64{100: 5 * ms, 101: 7 * ms, 7000: 900 * us}
	for k := 0; k < 14; k++ {
		slow[1000+1000*k] = int64(2+k) * ms
	}
	paced := make([]FullLogSample, 3000)
	for i := range paced {
		l := 20 * us
		if i == 1000 {
			l = 30 * ms
		}
		tx := 1000*ms + int64(i)*ms
		if i >= 2000 {
			tx += 25 * ms // the sender stopped
		}
		paced[i] = FullLogSample{Packet: int64(i), TxNs: tx, RxNs: tx + 2*l, LatencyNs: l}
	}
	for name, rows := range map[string][]FullLogSample{
		"ping-pong": pingPongLog(20000, 1*us, func(i int) int64 {
			if l, ok := slow[i]; ok {
				return l
			}
			return 2 * us
		}),
		"paced": paced,
		"quiet": pingPongLog(500, 1*us, func(int) int64 { return 2 * us }),
	} {
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "full.csv")
			writeFullLog(t, log, rows)
			out, err := exec.Command(python, "-B", filepath.Join("..", "..", "dataplane", "bench", "report.py"), "--stalls", log).Output()
			if err != nil {
				t.Fatalf("report.py --stalls: %v", err)
			}
			var py struct {
				Count              int32 `json:"count"`
				TotalNs            int64 `json:"total_ns"`
				LatencyThresholdNs int64 `json:"latency_threshold_ns"`
				GapThresholdNs     int64 `json:"gap_threshold_ns"`
				Stalls             []struct {
					OffsetNs   int64 `json:"offset_ns"`
					DurationNs int64 `json:"duration_ns"`
					LatencyNs  int64 `json:"latency_ns"`
				} `json:"stalls"`
			}
			if err := json.Unmarshal(out, &py); err != nil {
				t.Fatalf("report.py printed %q: %v", out, err)
			}
			got := &tsv1.StallReport{Count: py.Count, TotalNs: py.TotalNs, LatencyThresholdNs: py.LatencyThresholdNs, GapThresholdNs: py.GapThresholdNs}
			for _, s := range py.Stalls {
				got.Stalls = append(got.Stalls, tsv1.Stall{OffsetNs: s.OffsetNs, DurationNs: s.DurationNs, LatencyNs: s.LatencyNs})
			}
			want := DetectStalls(rows, p999(rows))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("report.py found %+v,\nDetectStalls %+v", got, want)
			}
		})
	}
}
