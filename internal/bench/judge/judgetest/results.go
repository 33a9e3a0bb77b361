// Package judgetest holds runner documents for the tests of the code that judges them (the
// benchmark controller, the PTP gate). Tests only.
package judgetest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// SampleResults is a runner document with one pingPong row per stack at the given median.
func SampleResults(node string, medians map[tsv1.Stack]int64) *tsv1.BenchmarkResults {
	r := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: node,
		StartTime: metav1.NewTime(time.Unix(1700000000, 0).UTC()), CompletionTime: metav1.NewTime(time.Unix(1700000060, 0).UTC()),
		Tools: []string{"sockperf 3.7"}}
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		m, ok := medians[st]
		if !ok {
			continue
		}
		r.Stacks = append(r.Stacks, tsv1.StackResults{Stack: st, PingPong: &tsv1.PingPongResult{Rows: []tsv1.PingPongRow{{
			Protocol: tsv1.ProtocolUDP, MessageSize: 64,
			LatencyStats: tsv1.LatencyStats{Samples: 1000, MinNs: m / 2, MedianNs: m, MeanNs: m, P95Ns: 2 * m, P99Ns: 3 * m, P999Ns: 4 * m, MaxNs: 5 * m, StdDevNs: m / 4},
		}}}})
	}
	return r
}

// T2TResults is a runner document with a kernel tickToTrade table: one accounted row per rate at
// the given mean tick-to-trade.
func T2TResults(node string, means map[int64]int64) *tsv1.BenchmarkResults {
	r := SampleResults(node, nil)
	t := &tsv1.TickToTradeResult{Mix: tsv1.TickMixSteady, MessageSize: 32, OrderEvery: 100}
	for _, rate := range []int64{500, 10000} {
		m, ok := means[rate]
		if !ok {
			continue
		}
		buys := rate * 4 / 100
		st := tsv1.LatencyStats{Samples: buys, MinNs: m / 2, MedianNs: m, MeanNs: m, P95Ns: 2 * m, P99Ns: 3 * m, P999Ns: 4 * m, MaxNs: 5 * m, StdDevNs: m / 4}
		t.Rows = append(t.Rows, tsv1.TickToTradeRow{RateMps: rate, AchievedMps: rate, TicksSent: rate * 4, TicksReceived: rate * 4, Orders: 2 * buys, ExchangeOrders: 2 * buys,
			TickToTrade: st, InApplication: st, OrderToFill: st, Sell: st, MarketDataPath: tsv1.StackKernel, OrderPath: tsv1.StackKernel})
	}
	r.Stacks = []tsv1.StackResults{{Stack: tsv1.StackKernel, TickToTrade: t}}
	return r
}

// PTPResults is a runner document with only the ptp table: 120 SLAVE samples, |offset| p99
// 250 ns, and notSlave samples in UNCALIBRATED.
func PTPResults(notSlave int64) *tsv1.BenchmarkResults {
	start := metav1.NewTime(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(2 * time.Minute))
	p := &tsv1.PTPResult{Socket: tsv1.DefaultPTPSocket, Domain: 24, IntervalMillis: 1000, Samples: 120 + notSlave, NotSlaveSamples: notSlave,
		Offset:      tsv1.LatencyStats{Samples: 120, MinNs: 2, MedianNs: 60, MeanNs: 75, P95Ns: 180, P99Ns: 250, P999Ns: 310, MaxNs: 310, StdDevNs: 55},
		MinOffsetNs: -310, MaxOffsetNs: 240, MedianPathDelayNs: 2100, PortStates: []tsv1.PTPPortStateCount{{State: "SLAVE", Samples: 120}},
		SystemOffset: &tsv1.LatencyStats{Samples: 118, MedianNs: 40, P99Ns: 90, MaxNs: 120}}
	if notSlave > 0 {
		p.PortStates = append(p.PortStates, tsv1.PTPPortStateCount{State: "UNCALIBRATED", Samples: notSlave})
	}
	return &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: "n1", StartTime: start, CompletionTime: end, PTP: p}
}
