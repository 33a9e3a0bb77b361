package benchmark

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// BenchmarkMetrics are per node and suite gauges of the latest judged run of each benchmark.
type BenchmarkMetrics struct {
	latency *prometheus.GaugeVec
	dropped *prometheus.GaugeVec
	burst   *prometheus.GaugeVec
	jitter  *prometheus.GaugeVec
	ptp     *prometheus.GaugeVec
	ptpSys  *prometheus.GaugeVec
	verdict *prometheus.GaugeVec
	run     *prometheus.GaugeVec
	// runStart and runCompletion are the current run's status.startTime and completionTime; the
	// completion is absent while the run goes on.
	runStart, runCompletion *prometheus.GaugeVec

	mu sync.Mutex
	// seen is, per benchmark (namespace/name), what each judged node's series were last set from:
	// a reconcile touches only the nodes whose outcome changed (a run over a fleet reconciles once
	// per verdict or so, and every touch scans the gauges' series).
	seen map[string]map[string]string
}

// gaugeVec is a gauge of the given name and help text over the given labels.
func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// metricStats are the statistics exported per row (the full table stays in the status).
func metricStats() []tsv1.Statistic {
	return []tsv1.Statistic{tsv1.StatMin, tsv1.StatMedian, tsv1.StatMean, tsv1.StatP99, tsv1.StatP999, tsv1.StatMax, tsv1.StatStdDev}
}

// NewBenchmarkMetrics makes the gauges and registers them with reg (controller-runtime's
// metrics.Registry in the manager).
func NewBenchmarkMetrics(reg prometheus.Registerer) *BenchmarkMetrics {
	m := &BenchmarkMetrics{
		latency: gaugeVec("tickstack_benchmark_latency_seconds",
			"Latency statistic of a benchmark row (network suites: half round trip; tickToTrade: tick-to-trade) on a node, from its latest judged run.",
			"namespace", "benchmark", "node", "suite", "stack", "protocol", "size", "rate", "statistic"),
		dropped: gaugeVec("tickstack_benchmark_dropped_messages",
			"Messages dropped in a suite (sum over its rows; tickToTrade: ticks lost or out of sequence) on a node, from its latest judged run.",
			"namespace", "benchmark", "node", "suite", "stack"),
		burst: gaugeVec("tickstack_benchmark_microburst_packets",
			"Largest burst absorbed without a drop by a microburst row (receive_buffer_bytes: the SO_RCVBUF asked for, default: none) on a node, from its latest judged run; limit_reached=true: a lower bound, the search's.",
			"namespace", "benchmark", "node", "stack", "receive_buffer_bytes", "limit_reached"),
		jitter: gaugeVec("tickstack_benchmark_jitter_seconds",
			"OS noise statistic of a jitter row (tool on one CPU) on a node, from its latest judged run.",
			"namespace", "benchmark", "node", "tool", "cpu", "statistic"),
		ptp: gaugeVec("tickstack_benchmark_ptp_offset_seconds",
			"Statistic of |offsetFromMaster| over the ptp suite's SLAVE samples on a node, from its latest judged run.",
			"namespace", "benchmark", "node", "statistic"),
		ptpSys: gaugeVec("tickstack_benchmark_ptp_system_offset_seconds",
			"Statistic of the system clock's |offset| (as the node agent read it) over the ptp suite's SLAVE samples on a node, from its latest judged run.",
			"namespace", "benchmark", "node", "statistic"),
		verdict: gaugeVec("tickstack_benchmark_verdict",
			"1 for the verdict (Passed, Failed, Inconclusive) of a node in a benchmark's latest judged run.",
			"namespace", "benchmark", "node", "verdict"),
		run: gaugeVec("tickstack_benchmark_run",
			"The current run number of a benchmark.",
			"namespace", "benchmark"),
		runStart: gaugeVec("tickstack_benchmark_run_start_timestamp_seconds",
			"When a benchmark's current run started, in Unix seconds.",
			"namespace", "benchmark"),
		runCompletion: gaugeVec("tickstack_benchmark_run_completion_timestamp_seconds",
			"When the last node of a benchmark's current run got its verdict, in Unix seconds; absent while the run goes on.",
			"namespace", "benchmark"),
	}
	m.seen = map[string]map[string]string{}
	reg.MustRegister(m.latency, m.dropped, m.burst, m.jitter, m.ptp, m.ptpSys, m.verdict, m.run, m.runStart, m.runCompletion)
	return m
}

// observe records the judged nodes of a benchmark's current run: each node's verdict, and the
// per-row statistics of the nodes whose tables are in the status (at fleet size, the first nodes'
// only: the others' are in their ConfigMaps, fitResults, and per-row series for a thousand nodes
// would be a hundred thousand). Only the nodes whose outcome changed since the last call are
// touched; the series of nodes no longer in the status go.
func (m *BenchmarkMetrics) observe(b *tsv1.LatencyBenchmark) {
	if m == nil {
		return
	}
	ns, name := b.Namespace, b.Name
	m.run.WithLabelValues(ns, name).Set(float64(b.Status.Run))
	setTimestamp(m.runStart, b.Status.StartTime, ns, name)
	setTimestamp(m.runCompletion, b.Status.CompletionTime, ns, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := ns + "/" + name
	prev := m.seen[key]
	cur := make(map[string]string, len(b.Status.Nodes))
	for _, n := range b.Status.Nodes {
		v := nodeVerdict(n)
		if v == "" {
			continue
		}
		from := fmt.Sprintf("run %d: %s, tables %t", b.Status.Run, v, n.Results != nil)
		cur[n.Node] = from
		if prev[n.Node] == from {
			continue
		}
		if prev[n.Node] != "" {
			// Only a node seen before has series to drop: the drop scans every series.
			m.forgetNode(ns, name, n.Node)
		}
		for _, r := range []tsv1.VerdictResult{tsv1.VerdictPassed, tsv1.VerdictFailed, tsv1.VerdictInconclusive} {
			val := 0.0
			if r == v {
				val = 1
			}
			m.verdict.WithLabelValues(ns, name, n.Node, string(r)).Set(val)
		}
		if n.Results != nil {
			m.observeResults(ns, name, n.Node, n.Results)
		}
	}
	for node := range prev {
		if _, ok := cur[node]; !ok {
			m.forgetNode(ns, name, node)
		}
	}
	m.seen[key] = cur
}

// forgetNode drops one node's series of a benchmark.
func (m *BenchmarkMetrics) forgetNode(ns, name, node string) {
	l := prometheus.Labels{"namespace": ns, "benchmark": name, "node": node}
	for _, g := range m.resultSeries() {
		g.DeletePartialMatch(l)
	}
	m.verdict.DeletePartialMatch(l)
}

// setTimestamp sets g's series to t in Unix seconds, or deletes it when t is unset.
func setTimestamp(g *prometheus.GaugeVec, t *metav1.Time, labels ...string) {
	if t == nil || t.IsZero() {
		g.DeleteLabelValues(labels...)
		return
	}
	g.WithLabelValues(labels...).Set(float64(t.Unix()))
}

func (m *BenchmarkMetrics) observeResults(ns, name, node string, res *tsv1.BenchmarkResults) {
	set := func(suite tsv1.SuiteName, stack tsv1.Stack, proto tsv1.Protocol, size int32, rate int64, st tsv1.LatencyStats) {
		if st.Samples == 0 {
			return
		}
		for _, s := range metricStats() {
			v, _ := s.Of(st)
			m.latency.WithLabelValues(ns, name, node, string(suite), string(stack), string(proto),
				strconv.Itoa(int(size)), strconv.FormatInt(rate, 10), string(s)).Set(float64(v) / 1e9)
		}
	}
	for _, s := range res.Stacks {
		if p := s.PingPong; p != nil {
			var drops int64
			for _, r := range p.Rows {
				set(tsv1.SuitePingPong, s.Stack, r.Protocol, r.MessageSize, 0, r.LatencyStats)
				drops += r.Dropped
			}
			m.dropped.WithLabelValues(ns, name, node, string(tsv1.SuitePingPong), string(s.Stack)).Set(float64(drops))
		}
		if rs := s.RateSweep; rs != nil {
			var drops int64
			for _, r := range rs.Rows {
				set(tsv1.SuiteRateSweep, s.Stack, r.Protocol, r.MessageSize, r.TargetMps, r.LatencyStats)
				drops += r.Dropped
			}
			m.dropped.WithLabelValues(ns, name, node, string(tsv1.SuiteRateSweep), string(s.Stack)).Set(float64(drops))
		}
		if mb := s.MixedBurst; mb != nil {
			var drops int64
			for _, r := range mb.Rows {
				set(tsv1.SuiteMixedBurst, s.Stack, mb.Protocol, 0, r.SteadyMps+r.BurstMps, r.LatencyStats)
				drops += r.Dropped
			}
			m.dropped.WithLabelValues(ns, name, node, string(tsv1.SuiteMixedBurst), string(s.Stack)).Set(float64(drops))
		}
		if t := s.TickToTrade; t != nil {
			var lost int64
			for _, r := range t.Rows {
				set(tsv1.SuiteTickToTrade, s.Stack, tsv1.ProtocolUDPMulticast, 0, r.RateMps, r.TickToTrade)
				lost += r.TicksLost + r.TicksOutOfSequence
			}
			m.dropped.WithLabelValues(ns, name, node, string(tsv1.SuiteTickToTrade), string(s.Stack)).Set(float64(lost))
		}
		if mb := s.Microburst; mb != nil {
			var drops int64
			for _, row := range mb.Rows {
				for _, t := range row.Trials {
					drops += t.Dropped
				}
				if len(row.Trials) == 0 {
					continue
				}
				buf := "default"
				if row.ReceiveBufferBytes != 0 {
					buf = strconv.FormatInt(row.ReceiveBufferBytes, 10)
				}
				m.burst.WithLabelValues(ns, name, node, string(s.Stack), buf, strconv.FormatBool(row.LimitReached)).Set(float64(row.MaxBurstPackets))
			}
			m.dropped.WithLabelValues(ns, name, node, string(tsv1.SuiteMicroburst), string(s.Stack)).Set(float64(drops))
		}
	}
	if j := res.Jitter; j != nil {
		for _, r := range j.Rows {
			if r.Samples == 0 {
				continue
			}
			setStats(m.jitter, r.LatencyStats, ns, name, node, string(r.Tool), strconv.Itoa(int(r.CPU)))
		}
	}
	if p := res.PTP; p != nil && p.Offset.Samples > 0 {
		setStats(m.ptp, p.Offset, ns, name, node)
		if so := p.SystemOffset; so != nil && so.Samples > 0 {
			setStats(m.ptpSys, *so, ns, name, node)
		}
	}
}

// setStats sets g's series of each exported statistic of st, in seconds, under labels followed by
// the statistic's name.
func setStats(g *prometheus.GaugeVec, st tsv1.LatencyStats, labels ...string) {
	for _, s := range metricStats() {
		v, _ := s.Of(st)
		g.WithLabelValues(append(labels[:len(labels):len(labels)], string(s))...).Set(float64(v) / 1e9)
	}
}

// resultSeries are the gauges set from a node's tables.
func (m *BenchmarkMetrics) resultSeries() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{m.latency, m.dropped, m.burst, m.jitter, m.ptp, m.ptpSys}
}

// forget drops a deleted benchmark's series.
func (m *BenchmarkMetrics) forget(namespace, name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.seen, namespace+"/"+name)
	m.mu.Unlock()
	l := prometheus.Labels{"namespace": namespace, "benchmark": name}
	for _, g := range m.resultSeries() {
		g.DeletePartialMatch(l)
	}
	m.verdict.DeletePartialMatch(l)
	m.run.DeletePartialMatch(l)
	m.runStart.DeletePartialMatch(l)
	m.runCompletion.DeletePartialMatch(l)
}
