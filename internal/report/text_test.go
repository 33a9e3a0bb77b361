package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/testutil"
)

func TestWriteText(t *testing.T) {
	res := withBypass(loadResults(t))
	res.Path = &tsv1.NetworkPath{ClientAddress: "198.18.3.2", ReflectorAddress: "198.18.3.1", Interface: "lat0"}
	v := judge.Evaluate(res, tsv1.Thresholds{MinMicroburstPackets: ptrInt64(1 << 40)})
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
				judge.FormatNanosAsMicros(row.MedianNs), judge.FormatNanosAsMicros(row.P999Ns), judge.FormatNanosAsMicros(row.StdDevNs)}
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
	testutil.WantContains(t, "text report", out,
		"verdict: Failed",
		"path: 198.18.3.2 on lat0 to reflector 198.18.3.1",
		"microburst, kernel stack: 256 B messages, bursts 100 ms apart, by the reflector's receive buffer (bytes)",
		"buffers: SO_RCVBUF default: unknown: an older tickstack-bench measured this row",
		"receive buffer: SO_RCVBUF default, granted ? (net.core.rmem_default ?, rmem_max ?)",
		fmt.Sprintf("highest rate sustained without drops, udp 64 B: %d msg/s", k.RateSweep.MaxSustained[0].Mps),
		"kernel vs bypass (us)",
		"2.5", // the derived bypass stack is 2.5x faster
		"jitter (us)",
		"mixedBurst, kernel stack: 2/3 at 100 B, 1/3 at 600 B",
	)
	if err := WriteText(&bytes.Buffer{}, NodeResults{Node: "n"}); err == nil {
		t.Error("nil results accepted")
	}
}

func ptrInt64(v int64) *int64 { return &v }

// A search that stopped at its bound is printed as a lower bound in the text and on the page.
func TestSearchBoundsPrintedAsLowerBounds(t *testing.T) {
	res := loadResults(t)
	k := res.Stack(tsv1.StackKernel)
	k.Microburst.Rows[0].LimitReached = true
	k.RateSweep.MaxSustained[0].LimitReached = true
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res}); err != nil {
		t.Fatal(err)
	}
	testutil.WantContains(t, "text report", buf.String(),
		fmt.Sprintf("at least %d  ", k.Microburst.Rows[0].MaxBurstPackets),
		"at least N: the search's bound: every burst tried was absorbed, the real limit is higher",
		fmt.Sprintf("udp 64 B: at least %d msg/s (the sweep's highest rate", k.RateSweep.MaxSustained[0].Mps),
	)
	var html bytes.Buffer
	if err := Render(&html, Input{Nodes: []NodeResults{{Node: "n", Results: res}}}); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		fmt.Sprintf("<b>at least %d</b>", k.Microburst.Rows[0].MaxBurstPackets),
		fmt.Sprintf("64 B: at least %d msg/s (the sweep's highest rate", k.RateSweep.MaxSustained[0].Mps),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Every burst figure is printed beside the buffering it was measured at: one line per receive
// buffer size with the SO_RCVBUF asked for, granted, the kernel's limits and, on the bypass
// stack, its socket queue, UMEM frames and RX ring; the rateSweep says its buffering once.
func TestBuffersBesideBurstFigures(t *testing.T) {
	res := withBypass(loadResults(t))
	k, b := res.Stack(tsv1.StackKernel), res.Stack(tsv1.StackBypass)
	kb := func(granted int64) *tsv1.ReceiveBuffering {
		return &tsv1.ReceiveBuffering{GrantedBytes: ptrInt64(granted), RmemDefaultBytes: ptrInt64(212992), RmemMaxBytes: ptrInt64(4194304)}
	}
	bb := func(granted int64) *tsv1.ReceiveBuffering {
		x := kb(granted)
		x.SocketQueueDatagrams, x.UMEMFrames, x.RXRingEntries = ptrInt64(1024), ptrInt64(8192), ptrInt64(4096)
		return x
	}
	trials := []tsv1.BurstTrial{{Packets: 64, Bursts: 10, Sent: 640}, {Packets: 128, Bursts: 10, Sent: 1280, Dropped: 7}}
	k.Microburst.Rows = []tsv1.MicroburstRow{
		{ReceiveBufferBytes: 65536, Buffering: kb(131072), Trials: trials, MaxBurstPackets: 100, BurstTimeNs: 24160},
		{ReceiveBufferBytes: 8 << 20, Buffering: kb(8388608), Trials: trials[:1], MaxBurstPackets: 64, BurstTimeNs: 15462, LimitReached: true},
	}
	b.Microburst = &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: 256, LinkSpeedMbps: 10000, Rows: []tsv1.MicroburstRow{
		{Buffering: bb(212992), Trials: trials, MaxBurstPackets: 90, BurstTimeNs: 21744},
	}}
	k.RateSweep.ReceiveBufferBytes, k.RateSweep.Buffering = 65536, kb(131072)
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	rows := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"SO_RCVBUF granted rmem_default rmem_max largest burst burst time at 10000 Mb/s (us) trials (burst:dropped)",
		"65536 131072 212992 4194304 100 24.160 64:0,128:7",
		"8388608 8388608 212992 4194304 at least 64 15.462 64:0",
		"SO_RCVBUF granted rmem_default rmem_max sockq UMEM frames RX ring largest burst burst time at 10000 Mb/s (us) trials (burst:dropped)",
		"default 212992 212992 4194304 1024 8192 4096 90 21.744 64:0,128:7",
		"receive buffer: SO_RCVBUF 65536, granted 131072 (net.core.rmem_default 212992, rmem_max 4194304)",
		"buffers: SO_RCVBUF 8388608: the kernel granted 8388608, less than twice the request: net.core.rmem_max (4194304) caps SO_RCVBUF (sockperf does not force it)",
		"buffers: SO_RCVBUF default: on the bypass stack a socket without SO_RCVBUF queues up to its socket queue's datagrams whatever their size; the kernel's granted bytes do not bound it",
	} {
		if !rows[want] {
			t.Errorf("text report lacks the line %q:\n%s", want, out)
		}
	}
	var html bytes.Buffer
	if err := Render(&html, Input{Nodes: []NodeResults{{Node: "n", Results: res}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<td>65536</td><td>131072</td><td>212992</td><td>4194304</td><td><b>100</b></td>",
		"<td>default</td><td>212992</td><td>212992</td><td>4194304</td><td>1024</td><td>8192</td><td>4096</td><td><b>90</b></td>",
		"rateSweep receive buffer: SO_RCVBUF 65536, granted 131072 (net.core.rmem_default 212992, rmem_max 4194304).",
	} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestQualifyInText: a node's qualify report is printed with its verdict, findings and reasons.
func TestQualifyInText(t *testing.T) {
	res := &tsv1.BenchmarkResults{Node: "n1", Qualify: &tsv1.QualifyReport{Interface: "lat0", Driver: "iavf", DriverVersion: "6.18", Firmware: "4.40",
		Queues:      tsv1.QualifyQueues{ReceiveQueues: 4},
		XDP:         tsv1.QualifyXDP{Native: tsv1.QualifyTrial{Works: true}, ZeroCopy: tsv1.QualifyTrial{Detail: "refused"}},
		Conformance: []tsv1.QualifyConformance{{Case: "cmsg", Passed: true}, {Case: "iov", Detail: "differs"}},
		PingPong: []tsv1.QualifyPingPong{{Stack: tsv1.StackKernel, MessageSize: 64, MedianNs: 9000, P99Ns: 12000},
			{Stack: tsv1.StackBypass, MessageSize: 64, Error: "no result"}},
		Verdict: tsv1.QualifyUnsupported,
		Reasons: []tsv1.QualifyReason{{Check: "conformance/iov", Verdict: tsv1.QualifyUnsupported, Message: "differs"}}}}
	var buf bytes.Buffer
	if err := WriteText(&buf, NodeResults{Results: res}); err != nil {
		t.Fatal(err)
	}
	testutil.WantContains(t, "text", buf.String(),
		"qualify lat0: Unsupported (driver iavf 6.18, firmware 4.40; receive queues 4; XDP native yes, zero-copy no; hardware timestamps no)",
		"conformance: 1 of 2 cases as the kernel",
		"ping-pong kernel, UDP 64 B: median 9.000 us, p99 12.000 us",
		"ping-pong bypass: not measured: no result",
		"- conformance/iov (Unsupported): differs",
	)
}
