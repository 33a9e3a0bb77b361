package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/internal/render"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// startBenchEnv runs a real kube-apiserver with the CRDs and the operator's controllers
// (SetupControllers).
func startBenchEnv(t *testing.T) client.Client {
	t.Helper()
	env, admin := kubetest.New(t, kubetest.Options{})
	cfg := env.Config
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))
	utilruntime.Must(render.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	const operatorNS = "tslb-operator"
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(mgr, controllers.Options{Network: network.NetworkOptions{Namespace: operatorNS},
		BenchImage: "tslb.test/bench:1", BenchmarkMetrics: benchmark.NewBenchmarkMetrics(prometheus.NewRegistry())}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeNodes plays the benchmark pods: for every Job of namespace ns it uploads results whose pingPong
// median is medians[node] (p99 three times that), as tickstack-bench-upload would.
type fakeNodes struct {
	mu      sync.Mutex
	medians map[string]int64
}

func (f *fakeNodes) set(node string, median int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.medians[node] = median
}

func (f *fakeNodes) run(ctx context.Context, t *testing.T, c client.Client, ns string) {
	done := map[string]bool{}
	for ctx.Err() == nil {
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs, client.InNamespace(ns)); err == nil {
			for _, j := range jobs.Items {
				if done[j.Name] {
					continue
				}
				node := j.Annotations[tsv1.BenchmarkNodeAnnotation]
				f.mu.Lock()
				m := f.medians[node]
				f.mu.Unlock()
				res := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: node, StartTime: metav1.Now(), CompletionTime: metav1.Now(),
					Stacks: []tsv1.StackResults{{Stack: tsv1.StackKernel, PingPong: &tsv1.PingPongResult{Rows: []tsv1.PingPongRow{{
						Protocol: tsv1.ProtocolUDP, MessageSize: 64,
						LatencyStats: tsv1.LatencyStats{Samples: 5000, MinNs: m / 2, MedianNs: m, MeanNs: m, P95Ns: 2 * m, P99Ns: 3 * m, P999Ns: 4 * m, MaxNs: 5 * m, StdDevNs: m / 5},
						// the stall report goes through the API server's schema into the status
						Stalls: &tsv1.StallReport{Count: 1, TotalNs: 3000000, LatencyThresholdNs: 1000000, GapThresholdNs: 1000000,
							Stalls: []tsv1.Stall{{OffsetNs: 250000000, DurationNs: 3000000, LatencyNs: 4000,
								ClientRunQueueWaitNs: 200000, ReflectorRunQueueWaitNs: 2800000, Cause: tsv1.StallPreempted}}},
					}}}}}}
				b, _ := json.Marshal(res)
				cm := &corev1.ConfigMap{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: j.Name}, cm); err != nil {
					continue
				}
				cm.Data = map[string]string{tsv1.BenchResultsKey: string(b), tsv1.BenchExitCodeKey: "0"}
				if err := c.Update(ctx, cm); err == nil {
					done[j.Name] = true
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

const benchYAML = `apiVersion: tickstack.io/v1alpha1
kind: LatencyBenchmark
metadata:
  name: ci
spec:
  target:
    nodeNames: [tslb-cli-a, tslb-cli-b]
  suites:
    pingPong:
      protocols: [udp]
      messageSizes: [64]
      durationSeconds: 1
  thresholds:
    latency:
    - suite: pingPong
      statistic: p99
      max: 40us
`

func TestBenchAndReportAgainstTheAPIServer(t *testing.T) {
	c := startBenchEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tslb-cli"}}
	mustCreate(t, c, ns)
	for _, n := range []string{"tslb-cli-a", "tslb-cli-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		mustCreate(t, c, node)
		t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	}
	nodes := &fakeNodes{medians: map[string]int64{"tslb-cli-a": 8000, "tslb-cli-b": 9000}}
	go nodes.run(ctx, t, c, ns.Name)

	dir := t.TempDir()
	file := tsutil.WriteFile(t, dir, "bench.yaml", benchYAML)
	bs, err := ReadBenchmarks(ctx, file, nil)
	if err != nil || len(bs) != 1 {
		t.Fatal(err)
	}
	b := bs[0]

	t.Run("bench -f creates the benchmark, waits and prints the tables", func(t *testing.T) {
		var out bytes.Buffer
		got, err := Bench(ctx, c, BenchOptions{Benchmark: b, Namespace: ns.Name, Wait: true, Poll: 100 * time.Millisecond, Timeout: time.Minute}, &out)
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, out.String())
		}
		if got.Status.Verdict != tsv1.VerdictPassed || got.Status.Run != 1 {
			t.Fatalf("verdict %q run %d", got.Status.Verdict, got.Status.Run)
		}
		for _, want := range []string{"run requested", "pingPong, kernel stack: half round trip (us)", "p99.9", "std-dev",
			"24.000", "8.000", "== node tslb-cli-a", "checks of node tslb-cli-a: Passed", "pingPong/p99", "2 of 2 nodes passed",
			"stalls: udp 64 B: 1 stall, 3.00 ms in total", "at 0.250 s for 3.00 ms (no slow message: a pause between sends) [preempted: run-queue wait client 200 us, reflector 2.80 ms; steal 0]",
			"stalls: udp 64 B: causes of the stalls: 1 preempted"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})

	t.Run("bench NAME reruns and fails on a node over the limit", func(t *testing.T) {
		nodes.set("tslb-cli-b", 20000) // p99 60 us > 40 us
		var out bytes.Buffer
		got, err := Bench(ctx, c, BenchOptions{Name: "ci", Namespace: ns.Name, Wait: true, Poll: 100 * time.Millisecond, Timeout: time.Minute}, &out)
		var verdict *VerdictError
		if !errors.As(err, &verdict) || verdict.Verdict != tsv1.VerdictFailed {
			t.Fatalf("want a Failed VerdictError, got %v\n%s", err, out.String())
		}
		if got.Status.Run != 2 || !strings.Contains(verdict.Message, "tslb-cli-b") {
			t.Fatalf("run %d, message %q", got.Status.Run, verdict.Message)
		}
		if !strings.Contains(out.String(), "exceeds 40us") {
			t.Errorf("output lacks the failed reason:\n%s", out.String())
		}
	})

	t.Run("report writes a self-contained HTML page with plots", func(t *testing.T) {
		path := filepath.Join(dir, "report.html")
		var out bytes.Buffer
		if err := Report(ctx, c, ns.Name, "ci", path, &out); err != nil {
			t.Fatal(err)
		}
		html, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("report mode %v: %v, want 0644", st.Mode(), err)
		}
		for _, want := range []string{"<svg", "tslb-cli-a", "tslb-cli-b", "ci, run 2"} {
			if !strings.Contains(string(html), want) {
				t.Errorf("report lacks %q", want)
			}
		}
		for _, external := range []string{"<script", "<link", `src="http`, `href="http`} {
			if strings.Contains(string(html), external) {
				t.Errorf("the report is not self-contained: it has %s", external)
			}
		}
		// As a person sees it: headless Chromium lays out and draws every chart.
		tsutil.CheckChartsDrawn(t, tsutil.RenderInChromium(t, path), strings.Count(string(html), `class="chart"`))
	})

	t.Run("report reads the tables a large run keeps in the results ConfigMap", func(t *testing.T) {
		// The controller moves a node's tables out of the status past its share (fitResults);
		// here one node's are moved as it would.
		cur := &tsv1.LatencyBenchmark{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "ci"}, cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		i := slices.IndexFunc(cur.Status.Nodes, func(n tsv1.BenchmarkNodeStatus) bool { return n.Node == "tslb-cli-a" })
		if i < 0 || cur.Status.Nodes[i].Results == nil {
			t.Fatalf("node tslb-cli-a has no results in the status: %+v", cur.Status.Nodes)
		}
		want := cur.Status.Nodes[i].Results.Stacks[0].PingPong.Rows[0].MedianNs
		wantChecks := len(cur.Status.Nodes[i].Verdict.Reasons)
		cur.Status.Nodes[i].Results, cur.Status.Nodes[i].Comparisons, cur.Status.Nodes[i].ResultsConfigMap = nil, nil, cur.Status.Nodes[i].Job
		cur.Status.Nodes[i].Verdict = &tsv1.Verdict{Result: cur.Status.Nodes[i].Verdict.Result}
		if err := c.Status().Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		in, err := ReportInput(ctx, c, ns.Name, "ci", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, n := range in.Nodes {
			got[n.Node] = n.Results.Stacks[0].PingPong.Rows[0].MedianNs
			if n.Node == "tslb-cli-a" && (wantChecks == 0 || n.Verdict == nil || len(n.Verdict.Reasons) != wantChecks) {
				t.Errorf("tslb-cli-a's checks, from its tables and the thresholds: %+v, want %d", n.Verdict, wantChecks)
			}
		}
		if len(got) != 2 || got["tslb-cli-a"] != want {
			t.Errorf("report input medians %v, want tslb-cli-a's %d from its ConfigMap beside tslb-cli-b's", got, want)
		}
		// Without the ConfigMap, the error names the node and the ConfigMap.
		if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: orig.Status.Nodes[i].Job}}); err != nil {
			t.Fatal(err)
		}
		if _, err := ReportInput(ctx, c, ns.Name, "ci", time.Time{}); err == nil ||
			!strings.Contains(err.Error(), "node tslb-cli-a") || !strings.Contains(err.Error(), orig.Status.Nodes[i].Job) {
			t.Errorf("report without the ConfigMap: %v", err)
		}
	})

	t.Run("clear errors", func(t *testing.T) {
		_, err := Bench(ctx, c, BenchOptions{Name: "nope", Namespace: ns.Name, Wait: true}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("missing benchmark: %v", err)
		}
		if err := Report(ctx, c, ns.Name, "nope", filepath.Join(dir, "x.html"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("report of a missing benchmark: %v", err)
		}
		bad := b.DeepCopy()
		bad.Name = "no-target"
		bad.Spec.Target = tsv1.BenchmarkTarget{}
		_, err = Bench(ctx, c, BenchOptions{Benchmark: bad, Namespace: ns.Name, Wait: true}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "spec.target") {
			t.Errorf("a benchmark the API server refuses: %v", err)
		}
		unsorted := b.DeepCopy()
		unsorted.Name = "unsorted"
		unsorted.Spec.Suites.RateSweep = &tsv1.RateSweepSpec{RatesMps: []int64{2, 1}}
		_, err = Bench(ctx, c, BenchOptions{Benchmark: unsorted, Namespace: ns.Name, Wait: true, Poll: 100 * time.Millisecond, Timeout: time.Minute}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "rateSweep.ratesMps") {
			t.Errorf("a benchmark the controller refuses: %v", err)
		}
	})

	t.Run("bench -o json: the benchmarks as data, the progress apart, the verdict's exit", func(t *testing.T) {
		var out, progress bytes.Buffer
		err := BenchAll(ctx, c, BenchOptions{Namespace: ns.Name, Wait: true, Poll: 100 * time.Millisecond, Timeout: time.Minute},
			[]*tsv1.LatencyBenchmark{b}, OutputJSON, &out, &progress)
		var verdict *VerdictError
		if !errors.As(err, &verdict) || verdict.Verdict != tsv1.VerdictFailed {
			t.Fatalf("want the Failed verdict of tslb-cli-b, got %v\n%s", err, progress.String())
		}
		var got []tsv1.LatencyBenchmark
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("-o json is not a list of benchmarks: %v\n%s", err, out.String())
		}
		if len(got) != 1 || got[0].Name != "ci" || got[0].Status.Verdict != tsv1.VerdictFailed || len(got[0].Status.Nodes) != 2 {
			t.Errorf("benchmarks %+v, want ci with its Failed verdict over two nodes", got)
		}
		if !strings.Contains(progress.String(), "run requested") || strings.Contains(out.String(), "run requested") {
			t.Errorf("the progress belongs on the other stream:\nout: %s\nprogress: %s", out.String(), progress.String())
		}
	})
}

func TestReadBenchmarksRefusesTyposAndOtherKinds(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ yaml, want string }{
		"typo":       {strings.Replace(benchYAML, "thresholds:", "treshold:", 1), "unknown field"},
		"other kind": {strings.Replace(benchYAML, "kind: LatencyBenchmark", "kind: LatencyProfile", 1), "bench takes LatencyBenchmark, not LatencyProfile"},
		"no name":    {strings.Replace(benchYAML, "name: ci", "labels: {}", 1), "metadata.name: Required value"},
	} {
		path := tsutil.WriteFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yaml", tc.yaml)
		if _, err := ReadBenchmarks(context.Background(), path, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
	if _, err := ReadBenchmarks(context.Background(), "-", strings.NewReader(benchYAML)); err != nil {
		t.Errorf("standard input: %v", err)
	}
}

func TestPrintBenchmarkShapes(t *testing.T) {
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "all"}}
	stats := tsv1.LatencyStats{Samples: 10, MinNs: 1000, MedianNs: 2000, MeanNs: 2100, P95Ns: 3000, P99Ns: 4000, P999Ns: 5000, MaxNs: 6000, StdDevNs: 500}
	granted, rmemDefault, rmemMax := int64(8388608), int64(212992), int64(33554432)
	mb := &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: 64, LinkSpeedMbps: 10000, Rows: []tsv1.MicroburstRow{{ReceiveBufferBytes: 4194304,
		Buffering:       &tsv1.ReceiveBuffering{GrantedBytes: &granted, RmemDefaultBytes: &rmemDefault, RmemMaxBytes: &rmemMax},
		MaxBurstPackets: 23000, BurstTimeNs: 2024000, Trials: []tsv1.BurstTrial{{Packets: 23000, Bursts: 10, Sent: 230000}}}}}
	res := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, StartTime: metav1.Now(), CompletionTime: metav1.Now(), Stacks: []tsv1.StackResults{
		{Stack: tsv1.StackKernel,
			RateSweep:  &tsv1.RateSweepResult{Rows: []tsv1.RateRow{{Protocol: tsv1.ProtocolUDP, MessageSize: 64, TargetMps: 10000, AchievedMps: 9990, Sent: 50000, Sustained: true, LatencyStats: stats}}, MaxSustained: []tsv1.SustainedRate{{Protocol: tsv1.ProtocolUDP, MessageSize: 64, Mps: 10000}}},
			Microburst: mb,
			MixedBurst: &tsv1.MixedBurstResult{Protocol: tsv1.ProtocolUDP, SmallSize: 100, LargeSize: 600, Rows: []tsv1.MixedBurstRow{{SteadyMps: 500000, BurstMps: 500000, Sent: 3000000, LatencyStats: stats, Small: &stats}}},
			TickToTrade: &tsv1.TickToTradeResult{Mix: tsv1.TickMixSteady, MessageSize: 32, OrderEvery: 100, Rows: []tsv1.TickToTradeRow{{RateMps: 500, AchievedMps: 500, TicksSent: 2000, TicksReceived: 2000,
				Orders: 40, ExchangeOrders: 40, TickToTrade: stats, InApplication: stats, OrderToFill: stats, Sell: stats, MarketDataPath: tsv1.StackKernel, OrderPath: tsv1.StackKernel}}}},
		{Stack: tsv1.StackBypass, Unavailable: "tickstack-run not found"},
	}, Jitter: &tsv1.JitterResult{Rows: []tsv1.JitterRow{{Tool: tsv1.JitterOslat, CPU: 3, LatencyStats: stats}}}}
	b.Status.Nodes = []tsv1.BenchmarkNodeStatus{{Node: "n", Phase: tsv1.NodeCompleted, Message: "Passed: 0 checks", Results: res,
		Verdict: &tsv1.Verdict{Result: tsv1.VerdictPassed},
		TickToTradeBaseline: &tsv1.TickToTradeComparison{Benchmark: "untuned", Run: 2, Node: "n", Rows: []tsv1.TickToTradeGain{{Stack: tsv1.StackKernel, RateMps: 500,
			BaselineStack: tsv1.StackKernel, BaselineMeanNs: 2800, MeanNs: 2100, MeanGainPercent: "25.0", BaselineMedianNs: 2500, MedianNs: 2000, MedianGainPercent: "20.0",
			BaselineP99Ns: 5000, P99Ns: 4000, P99GainPercent: "20.0"}}}}}
	var out bytes.Buffer
	PrintBenchmark(&out, b)
	for _, want := range []string{"rateSweep, kernel stack", "highest rate sustained without drops, udp 64 B: 10000 msg/s",
		"microburst, kernel stack: 64 B messages", "4194304  8388608        212992  33554432          23000", "2024.000", "mixedBurst, kernel stack: 2/3 at 100 B, 1/3 at 600 B",
		"bypass stack unavailable: tickstack-run not found", "jitter (us)", "oslat", "== node n: Completed: Passed", "checks of node n: Passed",
		"tick-to-trade, kernel stack (us; columns: market data msg/s)", "BUY         2.100", "SD S        0.500",
		"tick-to-trade, tuned vs untuned: baseline LatencyBenchmark untuned run 2, node n", "25.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
