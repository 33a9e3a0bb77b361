package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/bench/judge/judgetest"
)

var tslbSeq atomic.Int32

// tslbNamespace creates a namespace for one test (envtest never deletes namespaces; names are unique).
func tslbNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tslb-%d-%d", GinkgoParallelProcess(), tslbSeq.Add(1))}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// tslbNode creates a node where the profile is in effect, as the operator leaves it, and removes it
// after the test: see playAgentApplied.
func tslbNode(name, profile string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tslb/select": name}}}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })
	playAgentApplied(name, profile)
	return n
}

// playAgentApplied plays the node's agent: its node state for profile (created when the profile
// controller has not created it) reports the current spec Applied, so the node label controller
// labels the node tickstack.io/profile=<profile>. It waits for that label.
func playAgentApplied(node, profile string) {
	Eventually(func() error {
		lns := &tsv1.LatencyNodeState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, lns); apierrors.IsNotFound(err) {
			lns = &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec: tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: profile, Generation: 1}}}
			if err := k8s.Create(ctx, lns); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		orig := lns.DeepCopy()
		apimeta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue,
			Reason: "Applied", Message: "every setting is in effect", ObservedGeneration: lns.Generation})
		return k8s.Status().Patch(ctx, lns, client.MergeFrom(orig))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}}))).To(Succeed())
	})
	Eventually(func(g Gomega) string {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		return n.Labels[tsv1.ProfileLabel]
	}, 20*time.Second, 100*time.Millisecond).Should(Equal(profile))
}

func validBenchmark(ns, name, profile string) *tsv1.LatencyBenchmark {
	return &tsv1.LatencyBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tsv1.LatencyBenchmarkSpec{
			Target:     tsv1.BenchmarkTarget{Profile: profile},
			Suites:     tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{tsv1.ProtocolUDP}, MessageSizes: []int32{64}, DurationSeconds: 1}},
			Thresholds: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "40us"}}},
		},
	}
}

func getBenchmark(ns, name string) func(Gomega) *tsv1.LatencyBenchmark {
	return func(g Gomega) *tsv1.LatencyBenchmark {
		b := &tsv1.LatencyBenchmark{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b)).To(Succeed())
		return b
	}
}

// nodeJob waits for the Job that measures node in run and returns it.
func nodeJob(ns, bench string, run int64, node string) *batchv1.Job {
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.BenchJobName(bench, run, node)}, job)
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	return job
}

// upload plays the benchmark pod's uploader: it fills the results ConfigMap.
func upload(ns, name string, data map[string]string) {
	Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		cm.Data = data
		return k8s.Update(ctx, cm)
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
}

func uploadResults(ns, job string, r *tsv1.BenchmarkResults) {
	b, err := json.Marshal(r)
	Expect(err).NotTo(HaveOccurred())
	upload(ns, job, map[string]string{tsv1.BenchResultsKey: string(b), tsv1.BenchExitCodeKey: "0"})
}

func nodeStatus(b *tsv1.LatencyBenchmark, node string) tsv1.BenchmarkNodeStatus {
	for _, n := range b.Status.Nodes {
		if n.Node == node {
			return n
		}
	}
	return tsv1.BenchmarkNodeStatus{}
}

// nodesIn counts the nodes of b's status in one of the phases.
func nodesIn(b *tsv1.LatencyBenchmark, phases ...tsv1.NodeRunPhase) int {
	n := 0
	for _, s := range b.Status.Nodes {
		if slices.Contains(phases, s.Phase) {
			n++
		}
	}
	return n
}

func nodeLabel(name, key string) func(Gomega) string {
	return func(g Gomega) string {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		return n.Labels[key]
	}
}

func metricValue(name string, labels map[string]string) (float64, bool) {
	return gaugeValue(benchMetricsReg, name, labels)
}

var _ = Describe("LatencyBenchmark validation by the API server", func() {
	DescribeTable("refuses a bad benchmark with a message naming the field",
		func(mutate func(*tsv1.LatencyBenchmark), field, message string) {
			b := validBenchmark("default", "tslb-invalid", "p")
			mutate(b)
			expectInvalid(b, field, message)
		},
		Entry("two targets", func(b *tsv1.LatencyBenchmark) { b.Spec.Target.NodeNames = []string{"a"} },
			"spec.target", "exactly one of profile, nodeSelector or nodeNames"),
		Entry("no target", func(b *tsv1.LatencyBenchmark) { b.Spec.Target = tsv1.BenchmarkTarget{} },
			"spec.target", "exactly one of profile, nodeSelector or nodeNames"),
		Entry("no suite", func(b *tsv1.LatencyBenchmark) { b.Spec.Suites = tsv1.BenchmarkSuites{} },
			"spec", "suites: select at least one"),
		Entry("stacks inside suites", func(b *tsv1.LatencyBenchmark) { b.Spec.Suites.Stacks = []tsv1.Stack{tsv1.StackKernel} },
			"spec", "set the stacks to compare in spec.stacks"),
		Entry("unknown stack", func(b *tsv1.LatencyBenchmark) { b.Spec.Stacks = []tsv1.Stack{"dpdk"} },
			"spec.stacks[0]", "Unsupported value"),
		Entry("bypass in one pod", func(b *tsv1.LatencyBenchmark) { b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} },
			"spec", "bypass needs placement.mode TwoPods"),
		Entry("bypass without a profile", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Stacks = []tsv1.Stack{tsv1.StackBypass}
			b.Spec.Target = tsv1.BenchmarkTarget{NodeNames: []string{"a"}}
			b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}
		}, "spec", "bypass needs target.profile"),
		Entry("qualify without the bypass stack", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.Qualify = &tsv1.QualifySpec{}
		}, "spec", "suites.qualify needs bypass in stacks"),
		Entry("qualify on an interface name that is not one", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.Qualify = &tsv1.QualifySpec{Interface: "eth0; reboot"}
		}, "spec.suites.qualify.interface", "should match"),
		Entry("rate sweep over tcp", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.RateSweep = &tsv1.RateSweepSpec{Protocol: tsv1.ProtocolTCP}
		}, "spec.suites", "tcp has no message drops"),
		Entry("odd mixed burst duration", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.MixedBurst = &tsv1.MixedBurstSpec{DurationSeconds: 3}
		}, "spec.suites", "use an even number"),
		Entry("an unknown statistic", func(b *tsv1.LatencyBenchmark) { b.Spec.Thresholds.Latency[0].Statistic = "p90" },
			"spec.thresholds.latency[0].statistic", "Unsupported value"),
		Entry("a schedule with four fields", func(b *tsv1.LatencyBenchmark) { b.Spec.Schedule = "0 3 * *" },
			"spec.schedule", "cron expression with five fields"),
		Entry("an unknown placement", func(b *tsv1.LatencyBenchmark) { b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: "Anywhere"} },
			"spec.placement.mode", "Unsupported value"),
		Entry("no runner CPU", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Placement = &tsv1.BenchmarkPlacement{RunnerCPUs: ptr.To[int32](0)}
		},
			"spec.placement.runnerCPUs", "should be greater than or equal to 1"),
		Entry("a timeout under a minute", func(b *tsv1.LatencyBenchmark) { b.Spec.TimeoutSeconds = ptr.To[int32](5) },
			"spec.timeoutSeconds", "should be greater than or equal to 60"),
		Entry("tick-to-trade bursts over an odd number of seconds", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{BurstMps: 1000, DurationSeconds: 3}
		}, "spec.suites", "suites.tickToTrade.durationSeconds: with burstMps use an even number"),
		Entry("an unknown tick mix", func(b *tsv1.LatencyBenchmark) { b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{Mix: "bursty"} },
			"spec.suites.tickToTrade.mix", "Unsupported value"),
		Entry("a baseline without a benchmark", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{Baseline: &tsv1.TickToTradeBaseline{}}
		}, "spec.suites.tickToTrade.baseline.benchmark", "should be at least 1 chars long"),
		Entry("a tick-to-trade limit on an unknown suite name", func(b *tsv1.LatencyBenchmark) { b.Spec.Thresholds.Latency[0].Suite = "tick2trade" },
			"spec.thresholds.latency[0].suite", "Unsupported value"),
		Entry("more receive buffer sizes than a run searches", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.Microburst = &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}}
		}, "spec.suites.microburst.receiveBufferBytes", "must have at most 8 items"),
		Entry("a receive buffer size twice", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.Microburst = &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{65536, 65536}}
		}, "spec.suites.microburst.receiveBufferBytes[1]", "Duplicate value"),
	)

	It("accepts a complete benchmark comparing both stacks", func() {
		b := validBenchmark("default", "tslb-complete", "p")
		b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
		b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods, RunnerCPUs: ptr.To[int32](2), ReflectorCPUs: ptr.To[int32](0)}
		b.Spec.Schedule = "0 3 * * *"
		b.Spec.Suites = tsv1.BenchmarkSuites{
			PingPong:   &tsv1.PingPongSpec{MessageSizes: []int32{14, 1472}},
			RateSweep:  &tsv1.RateSweepSpec{Protocol: tsv1.ProtocolUDP, RatesMps: []int64{10000, 100000}, ReceiveBufferBytes: 212992},
			Microburst: &tsv1.MicroburstSpec{MessageSize: 64, ReceiveBufferBytes: []int64{65536, 212992, 4194304}},
			MixedBurst: &tsv1.MixedBurstSpec{DurationSeconds: 4},
			Jitter:     &tsv1.JitterSpec{CPUs: "2-3,6"},
			TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{500, 100000}, Mix: tsv1.TickMixSeed003, BurstMps: 5000, DurationSeconds: 4,
				Baseline: &tsv1.TickToTradeBaseline{Benchmark: "untuned", Node: "worker-0"}},
		}
		b.Spec.Thresholds.Latency = append(b.Spec.Thresholds.Latency, tsv1.LatencyLimit{Suite: tsv1.SuiteTickToTrade, Stack: tsv1.StackBypass, RateMps: 100000, Statistic: tsv1.StatP99, Max: "50us"})
		b.Spec.Thresholds.MinBypassSpeedup = "1.5"
		b.Spec.Thresholds.Latency[0].Max = "1.5ms"
		Expect(k8s.Create(ctx, b, client.DryRunAll)).To(Succeed())
	})
})

var _ = Describe("LatencyBenchmark controller", func() {
	It("runs one pinned Job per node, judges the uploaded results, labels the nodes that pass, and reruns", func() {
		ns := tslbNamespace()
		n1, n2 := tslbNode("tslb-run-a", "tslb-p1"), tslbNode("tslb-run-b", "tslb-p1")
		tslbNode("tslb-run-other", "tslb-p2") // another profile's node: not a target
		b := validBenchmark(ns, "nightly", "tslb-p1")
		Expect(k8s.Create(ctx, b)).To(Succeed())

		By("creating a pinned, Guaranteed Job and an owned results ConfigMap per target node")
		j1, j2 := nodeJob(ns, "nightly", 1, n1.Name), nodeJob(ns, "nightly", 1, n2.Name)
		for node, job := range map[string]*batchv1.Job{n1.Name: j1, n2.Name: j2} {
			ps := job.Spec.Template.Spec
			terms := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			Expect(terms[0].MatchFields[0].Values).To(Equal([]string{node}))
			Expect(ps.Containers).To(HaveLen(2))
			for _, c := range ps.Containers {
				Expect(c.Image).To(Equal("tslb.test/bench:1"))
				Expect(c.Resources.Limits.Cpu().String()).To(Equal("1"))
				Expect(c.Resources.Requests.Cpu().String()).To(Equal("1"))
			}
			Expect(ps.ServiceAccountName).To(Equal(benchmark.BenchAccessName("nightly")))
			Expect(job.OwnerReferences[0].Name).To(Equal("nightly"))
			cm := &corev1.ConfigMap{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, cm)).To(Succeed())
			// The manager's cache holds only ConfigMaps with this label (CacheOptions).
			Expect(cm.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "tickstack"))
			Eventually(func() error { return mgrClient.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) }, 20*time.Second, 100*time.Millisecond).
				Should(Succeed(), "the results ConfigMap is in the manager's cache")
		}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.BenchJobName("nightly", 1, "tslb-run-other")}, &batchv1.Job{})).
			To(Satisfy(apierrors.IsNotFound))

		By("limiting the pods' service account to this run's ConfigMaps")
		role := &rbacv1.Role{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.BenchAccessName("nightly")}, role)).To(Succeed())
		Expect(role.Rules[0].ResourceNames).To(ConsistOf(j1.Name, j2.Name))
		Expect(role.Rules[0].Verbs).NotTo(ContainElement("create"))

		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "nightly")(g)
			g.Expect(got.Status.Run).To(BeEquivalentTo(1))
			g.Expect(got.Status.NodesTotal).To(BeEquivalentTo(2))
			g.Expect(condition(got.Status.Conditions, tsv1.BenchmarkComplete).Reason).To(Equal(tsv1.ReasonRunning))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

		By("collecting results: one node within the p99 limit, one over it")
		uploadResults(ns, j1.Name, judgetest.SampleResults(n1.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000})) // p99 30 us
		uploadResults(ns, j2.Name, judgetest.SampleResults(n2.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 20000})) // p99 60 us
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "nightly")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictFailed))
			g.Expect(got.Status.NodesPassed).To(BeEquivalentTo(1))
			a, bb := nodeStatus(got, n1.Name), nodeStatus(got, n2.Name)
			g.Expect(a.Phase).To(Equal(tsv1.NodeCompleted))
			g.Expect(a.Verdict.Result).To(Equal(tsv1.VerdictPassed))
			g.Expect(a.Results.Stack(tsv1.StackKernel).PingPong.Rows[0].P99Ns).To(BeEquivalentTo(30000))
			g.Expect(bb.Verdict.Result).To(Equal(tsv1.VerdictFailed))
			g.Expect(bb.Verdict.Reasons[0].Message).To(ContainSubstring("exceeds 40us"))
			g.Expect(condition(got.Status.Conditions, tsv1.BenchmarkComplete).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(got.Status.Conditions, tsv1.BenchmarkPassed).Message).To(ContainSubstring(n2.Name))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		Eventually(nodeLabel(n1.Name, tsv1.ValidatedLabel), 20*time.Second, 100*time.Millisecond).Should(Equal("tslb-p1"))
		Expect(nodeLabel(n2.Name, tsv1.ValidatedLabel)(Default)).To(BeEmpty())

		By("exporting metrics per node and suite")
		v, ok := metricValue("tickstack_benchmark_latency_seconds", map[string]string{"namespace": ns, "node": n2.Name, "suite": "pingPong", "statistic": "p99"})
		Expect(ok).To(BeTrue())
		Expect(v).To(BeNumerically("~", 60e-6, 1e-9))
		v, ok = metricValue("tickstack_benchmark_verdict", map[string]string{"namespace": ns, "node": n2.Name, "verdict": "Failed"})
		Expect(ok && v == 1).To(BeTrue())
		_, ok = metricValue("tickstack_benchmark_dropped_messages", map[string]string{"namespace": ns, "node": n1.Name, "suite": "pingPong"})
		Expect(ok).To(BeTrue())
		run := map[string]string{"namespace": ns, "benchmark": "nightly"}
		started, ok := metricValue("tickstack_benchmark_run_start_timestamp_seconds", run)
		Expect(ok).To(BeTrue(), "the run's start time is exported")
		done, ok := metricValue("tickstack_benchmark_run_completion_timestamp_seconds", run)
		Expect(ok).To(BeTrue(), "the completed run's completion time is exported")
		Expect(done).To(BeNumerically(">=", started))

		By("recording events")
		Eventually(benchmarkEvents(ns), 20*time.Second, 200*time.Millisecond).Should(ContainElements("RunStarted", "NodePassed", "NodeFailed", "NodeValidated"))

		By("rerunning on a new rerun annotation: new Jobs, old ones deleted, a node that fails loses its label")
		cur := getBenchmark(ns, "nightly")(Default)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Annotations = map[string]string{tsv1.RerunAnnotation: "ci-42"}
		Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
		k1, k2 := nodeJob(ns, "nightly", 2, n1.Name), nodeJob(ns, "nightly", 2, n2.Name)
		Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: j1.Name}, &batchv1.Job{})
			return apierrors.IsNotFound(err)
		}, 20*time.Second, 100*time.Millisecond).Should(BeTrue(), "the first run's Job is deleted")
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "nightly")(g)
			g.Expect(got.Status.Rerun).To(Equal("ci-42"))
			g.Expect(got.Status.RunReason).To(Equal(benchmark.RunReasonRerun))
			g.Expect(got.Status.Verdict).To(BeEmpty())
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		Eventually(func() bool {
			_, ok := metricValue("tickstack_benchmark_run_completion_timestamp_seconds", run)
			return ok
		}, 20*time.Second, 100*time.Millisecond).Should(BeFalse(), "no completion time while the second run goes on")
		uploadResults(ns, k1.Name, judgetest.SampleResults(n1.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 50000}))
		uploadResults(ns, k2.Name, judgetest.SampleResults(n2.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 5000}))
		Eventually(nodeLabel(n2.Name, tsv1.ValidatedLabel), 20*time.Second, 100*time.Millisecond).Should(Equal("tslb-p1"))
		Eventually(nodeLabel(n1.Name, tsv1.ValidatedLabel), 20*time.Second, 100*time.Millisecond).Should(BeEmpty())
		Eventually(func(g Gomega) int64 { return getBenchmark(ns, "nightly")(g).Status.Run }, 5*time.Second).Should(BeEquivalentTo(2))
		Expect(k8s.Delete(ctx, b)).To(Succeed())
	})

	It("labels the results ConfigMaps a release before the managed-by label made, judges their results, and deletes an older run's", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-legacy-a", "tslb-legacy")
		// As the previous release left them: the current run's results ConfigMap (run 1, which the
		// new benchmark's first run takes) and an older run's, both without the label the
		// manager's cache selects, so invisible to it.
		legacy := func(run int64) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: benchmark.BenchJobName("legacy", run, n.Name),
				Labels:      map[string]string{tsv1.BenchmarkLabel: "legacy", tsv1.BenchmarkRunLabel: strconv.FormatInt(run, 10)},
				Annotations: map[string]string{tsv1.BenchmarkNodeAnnotation: n.Name}}}
		}
		current, older := legacy(1), legacy(0)
		Expect(k8s.Create(ctx, current)).To(Succeed())
		Expect(k8s.Create(ctx, older)).To(Succeed())
		b := validBenchmark(ns, "legacy", "tslb-legacy")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { _ = client.IgnoreNotFound(k8s.Delete(ctx, b)) })
		// The previous release made its ConfigMaps owned by the benchmark (the owner's UID is
		// known only now): an upload's event reaches the benchmark through that reference.
		owner := *metav1.NewControllerRef(b, tsv1.GroupVersion.WithKind("LatencyBenchmark"))
		for _, cm := range []*corev1.ConfigMap{current, older} {
			Expect(client.IgnoreNotFound(k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType,
				[]byte(fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
					owner.APIVersion, owner.Kind, owner.Name, owner.UID)))))).To(Succeed())
		}

		job := nodeJob(ns, "legacy", 1, n.Name)
		Expect(job.Name).To(Equal(current.Name))
		By("labelling the current run's, so that the manager's cache and watch see it")
		Eventually(func(g Gomega) map[string]string {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(current), cm)).To(Succeed())
			return cm.Labels
		}, 20*time.Second, 100*time.Millisecond).Should(HaveKeyWithValue("app.kubernetes.io/managed-by", "tickstack"))
		Eventually(func() error { return mgrClient.Get(ctx, client.ObjectKeyFromObject(current), &corev1.ConfigMap{}) }, 20*time.Second, 100*time.Millisecond).
			Should(Succeed())
		By("deleting the older run's")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(older), &corev1.ConfigMap{}))
		}, 20*time.Second, 100*time.Millisecond).Should(BeTrue())

		By("judging the results uploaded into it (the Job never ends here: the upload's watch event is what brings them in)")
		uploadResults(ns, job.Name, judgetest.SampleResults(n.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000}))
		Eventually(func(g Gomega) {
			got := nodeStatus(getBenchmark(ns, "legacy")(g), n.Name)
			g.Expect(got.Phase).To(Equal(tsv1.NodeCompleted))
			g.Expect(got.Verdict.Result).To(Equal(tsv1.VerdictPassed))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("fails a node whose Job fails without results, and one whose runner wrote none", func() {
		ns := tslbNamespace()
		n1 := tslbNode("tslb-fail-a", "tslb-p3")
		n2 := tslbNode("tslb-fail-b", "tslb-p3")
		b := validBenchmark(ns, "broken", "tslb-p3")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })

		job := nodeJob(ns, "broken", 1, n1.Name)
		now := metav1.Now()
		job.Status.StartTime = &now
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastTransitionTime: now},
		}
		Expect(k8s.Status().Update(ctx, job)).To(Succeed())
		upload(ns, nodeJob(ns, "broken", 1, n2.Name).Name, map[string]string{tsv1.BenchErrorKey: "the runner wrote no results file (exit code 1)", tsv1.BenchExitCodeKey: "1"})

		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "broken")(g)
			a, bb := nodeStatus(got, n1.Name), nodeStatus(got, n2.Name)
			g.Expect(a.Phase).To(Equal(tsv1.NodeFailed))
			g.Expect(a.Message).To(ContainSubstring("DeadlineExceeded"))
			g.Expect(bb.Phase).To(Equal(tsv1.NodeFailed))
			g.Expect(bb.Message).To(ContainSubstring("no results file"))
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictFailed))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	DescribeTable("reports a spec the runner would refuse on the Valid condition, naming the field, and starts no Job",
		func(name string, mutate func(*tsv1.LatencyBenchmark), field string) {
			ns := tslbNamespace()
			b := validBenchmark(ns, name, "tslb-p4")
			mutate(b)
			Expect(k8s.Create(ctx, b)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
			Eventually(func(g Gomega) {
				got := getBenchmark(ns, name)(g)
				c := condition(got.Status.Conditions, tsv1.BenchmarkValid)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Message).To(ContainSubstring(field))
				g.Expect(got.Status.Run).To(BeZero())
				g.Expect(condition(got.Status.Conditions, tsv1.BenchmarkComplete).Reason).To(Equal(tsv1.ReasonInvalidSpec))
			}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
			var jobs batchv1.JobList
			Expect(k8s.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
			Expect(jobs.Items).To(BeEmpty())
		},
		Entry("rates out of order", "unsorted", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.RateSweep = &tsv1.RateSweepSpec{RatesMps: []int64{500000, 10000}}
		}, "rateSweep.ratesMps"),
		Entry("a 12 byte message", "tiny", func(b *tsv1.LatencyBenchmark) { b.Spec.Suites.PingPong.MessageSizes = []int32{12, 64} },
			"pingPong.messageSizes[0]"),
		Entry("jitter cpus not a list", "cpus", func(b *tsv1.LatencyBenchmark) { b.Spec.Suites.Jitter = &tsv1.JitterSpec{CPUs: "two"} },
			"jitter.cpus"),
		Entry("a latency limit that is not a duration", "limit", func(b *tsv1.LatencyBenchmark) { b.Spec.Thresholds.Latency[0].Max = "25 micros" },
			"thresholds.latency[0].max"),
		Entry("a speedup that is not a number", "speedup", func(b *tsv1.LatencyBenchmark) { b.Spec.Thresholds.MinBypassSpeedup = "2x" },
			"thresholds.minBypassSpeedup"),
		Entry("a schedule cron cannot parse", "cron", func(b *tsv1.LatencyBenchmark) { b.Spec.Schedule = "61 * * * *" },
			"spec.schedule"),
		Entry("receive buffers out of order", "rcvbufs", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.Microburst = &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{212992, 65536}}
		}, "microburst.receiveBufferBytes: sizes must increase"),
		Entry("a receive buffer below a page", "rcvbuf", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.RateSweep = &tsv1.RateSweepSpec{ReceiveBufferBytes: 1024}
		}, "rateSweep.receiveBufferBytes: 1024 out of range: use 4096..67108864 bytes"),
		Entry("tick-to-trade rates out of order", "t2trates", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{RatesMps: []int64{10000, 500}}
		}, "tickToTrade.ratesMps"),
		Entry("a tick-to-trade baseline naming the benchmark itself", "selfbase", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{Baseline: &tsv1.TickToTradeBaseline{Benchmark: "selfbase"}}
		}, "spec.suites.tickToTrade.baseline.benchmark: names this benchmark itself"),
		Entry("a message size selector on tick-to-trade", "t2tsize", func(b *tsv1.LatencyBenchmark) {
			b.Spec.Thresholds.Latency = []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, MessageSize: 64, Statistic: tsv1.StatP99, Max: "1ms"}}
		}, "thresholds.latency[0].messageSize: does not apply to suite tickToTrade"),
	)

	It("measures a fleet in waves of spec.maxParallel: the next node's Job after a verdict, every verdict in", func() {
		ns := tslbNamespace()
		nodes := []*corev1.Node{tslbNode("tslb-wave-a", "tslb-p20"), tslbNode("tslb-wave-b", "tslb-p20"), tslbNode("tslb-wave-c", "tslb-p20")}
		b := validBenchmark(ns, "waves", "tslb-p20")
		b.Spec.MaxParallel = ptr.To[int32](2)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		measuring := func(got *tsv1.LatencyBenchmark) int { return nodesIn(got, tsv1.NodePending, tsv1.NodeRunning) }

		By("the first two nodes by name get a Job, the third waits for a slot")
		j1, j2 := nodeJob(ns, "waves", 1, nodes[0].Name), nodeJob(ns, "waves", 1, nodes[1].Name)
		third := benchmark.BenchJobName("waves", 1, nodes[2].Name)
		Eventually(func(g Gomega) {
			g.Expect(nodeStatus(getBenchmark(ns, "waves")(g), nodes[2].Name).Phase).To(Equal(tsv1.NodeWaiting))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			got := getBenchmark(ns, "waves")(g)
			g.Expect(nodeStatus(got, nodes[2].Name).Phase).To(Equal(tsv1.NodeWaiting))
			g.Expect(nodeStatus(got, nodes[2].Name).Message).To(ContainSubstring("spec.maxParallel 2"))
			g.Expect(measuring(got)).To(BeNumerically("<=", 2))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: third}, &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound))
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed())

		By("a verdict frees a slot: the third node's Job starts")
		uploadResults(ns, j1.Name, judgetest.SampleResults(nodes[0].Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000}))
		j3 := nodeJob(ns, "waves", 1, nodes[2].Name)
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "waves")(g)
			g.Expect(nodeStatus(got, nodes[0].Name).Phase).To(Equal(tsv1.NodeCompleted))
			g.Expect(measuring(got)).To(Equal(2))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

		By("every verdict in")
		uploadResults(ns, j2.Name, judgetest.SampleResults(nodes[1].Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000}))
		uploadResults(ns, j3.Name, judgetest.SampleResults(nodes[2].Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000}))
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "waves")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictPassed))
			g.Expect(got.Status.NodesPassed).To(BeEquivalentTo(3))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("writes the verdicts of nodes whose results come in together in one status write", func() {
		ns := tslbNamespace()
		nodes := []*corev1.Node{tslbNode("tslb-batch-a", "tslb-p23"), tslbNode("tslb-batch-b", "tslb-p23"), tslbNode("tslb-batch-c", "tslb-p23")}
		b := validBenchmark(ns, "batch", "tslb-p23")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		var jobs []*batchv1.Job
		for _, n := range nodes {
			jobs = append(jobs, nodeJob(ns, "batch", 1, n.Name))
		}
		// Every status write of the benchmark from here on, as a watch delivers it. A retry
		// watcher resumes from the last event it delivered if the API server ends the watch (a
		// loaded machine's API server may), so no write is missed and none is seen twice.
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		var start tsv1.LatencyBenchmarkList
		Expect(k8s.List(ctx, &start, client.InNamespace(ns))).To(Succeed())
		w, err := toolswatch.NewRetryWatcherWithContext(ctx, start.ResourceVersion, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return wc.Watch(ctx, &tsv1.LatencyBenchmarkList{}, client.InNamespace(ns), &client.ListOptions{Raw: &o})
			}})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		By("three results uploaded 300 ms apart, as the nodes of a wave finish")
		for i, n := range nodes {
			if i > 0 {
				time.Sleep(300 * time.Millisecond)
			}
			uploadResults(ns, jobs[i].Name, judgetest.SampleResults(n.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 10000}))
		}

		By("one status write takes the run from no verdict to all three")
		judged := func(b *tsv1.LatencyBenchmark) int { return nodesIn(b, tsv1.NodeCompleted, tsv1.NodeFailed) }
		Expect(start.Items).To(HaveLen(1))
		judgedAfterWrites := []int{judged(&start.Items[0])}
		Eventually(func(g Gomega) {
			for {
				select {
				case ev, open := <-w.ResultChan():
					if !open {
						// A closed channel is always ready: without this the loop would spin
						// inside one attempt and Eventually's timeout could never fire.
						StopTrying("the watch on the benchmarks closed before the verdicts (the retry watcher ends only with the test's context)").Now()
					}
					if got, ok := ev.Object.(*tsv1.LatencyBenchmark); ok {
						if k := judged(got); judgedAfterWrites[len(judgedAfterWrites)-1] != k {
							judgedAfterWrites = append(judgedAfterWrites, k)
						}
					}
					continue
				default:
				}
				break
			}
			g.Expect(judgedAfterWrites[len(judgedAfterWrites)-1]).To(Equal(3),
				"nodes judged after each write %v; the benchmark now: %+v", judgedAfterWrites, getBenchmark(ns, "batch")(g).Status.Nodes)
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(judgedAfterWrites).To(Equal([]int{0, 3}), "nodes judged after each status write that changed the count")
		Expect(getBenchmark(ns, "batch")(Default).Status.Verdict).To(Equal(tsv1.VerdictPassed))
	})

	It("keeps a large run's status under the object size limit: the tables past its share stay in their ConfigMaps", func() {
		ns := tslbNamespace()
		var nodes []*corev1.Node
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			nodes = append(nodes, tslbNode("tslb-big-"+n, "tslb-p21"))
		}
		b := validBenchmark(ns, "big", "tslb-p21")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		// About 100 KiB of tables a node: two fit in the status's share, the other three do not.
		big := func(node string) *tsv1.BenchmarkResults {
			r := judgetest.SampleResults(node, map[tsv1.Stack]int64{tsv1.StackKernel: 10000})
			row := r.Stacks[0].PingPong.Rows[0]
			for size := int32(65); size < 65+550; size++ {
				row.MessageSize = size
				r.Stacks[0].PingPong.Rows = append(r.Stacks[0].PingPong.Rows, row)
			}
			return r
		}
		raw, err := json.Marshal(big("x"))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(raw)).To(BeNumerically(">", benchmark.StatusResultsBudget/3), "one node's tables must be more than a third of the share")
		Expect(len(raw)).To(BeNumerically("<", benchmark.StatusResultsBudget/2-8), "two nodes' tables must fit the share")
		for _, n := range nodes {
			uploadResults(ns, nodeJob(ns, "big", 1, n.Name).Name, big(n.Name))
		}
		var got *tsv1.LatencyBenchmark
		Eventually(func(g Gomega) {
			got = getBenchmark(ns, "big")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictPassed))
			g.Expect(got.Status.NodesPassed).To(BeEquivalentTo(5))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		inStatus := 0
		for _, n := range got.Status.Nodes {
			Expect(n.Verdict).NotTo(BeNil(), n.Node)
			if n.Results != nil {
				inStatus++
				Expect(n.ResultsConfigMap).To(BeEmpty(), n.Node)
				continue
			}
			Expect(n.ResultsConfigMap).To(Equal(n.Job), n.Node)
			Expect(n.Comparisons).To(BeEmpty(), n.Node)
			Expect(n.Verdict.Result).To(Equal(tsv1.VerdictPassed), n.Node)
			Expect(n.Verdict.Reasons).To(BeEmpty(), n.Node)
			cm := &corev1.ConfigMap{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.ResultsConfigMap}, cm)).To(Succeed())
			res, err := judge.UnmarshalResults([]byte(cm.Data[tsv1.BenchResultsKey]))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Node).To(Equal(n.Node))
			Expect(res.Stacks[0].PingPong.Rows).To(HaveLen(551))
		}
		Expect(inStatus).To(Equal(2))
	})

	It("measures a node that joins the target during a run, even a run that started with none", func() {
		ns := tslbNamespace()
		b := validBenchmark(ns, "joiner", "tslb-p7")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		Eventually(func(g Gomega) string {
			return condition(getBenchmark(ns, "joiner")(g).Status.Conditions, tsv1.BenchmarkComplete).Reason
		}, 20*time.Second, 100*time.Millisecond).Should(Equal(tsv1.ReasonNoTargetNodes))

		n := tslbNode("tslb-joiner", "tslb-p7") // the profile became applied there
		uploadResults(ns, nodeJob(ns, "joiner", 1, n.Name).Name, judgetest.SampleResults(n.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 1000}))
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "joiner")(g)
			g.Expect(got.Status.Run).To(BeEquivalentTo(1))
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictPassed))
			g.Expect(nodeStatus(got, n.Name).Phase).To(Equal(tsv1.NodeCompleted))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("places TwoPods runs as a reflector Job behind a Service and a runner Job reaching it at the Service's cluster IP", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-two", "tslb-p6")
		b := validBenchmark(ns, "two", "tslb-p6")
		b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods, RunnerCPUs: ptr.To[int32](2), ReflectorCPUs: ptr.To[int32](0)}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		job := nodeJob(ns, "two", 1, n.Name)
		Expect(*job.Spec.Completions).To(BeEquivalentTo(1))
		Expect(job.Spec.Template.Spec.Containers).To(HaveLen(1))
		Expect(job.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String()).To(Equal("2"))

		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).NotTo(BeElementOf("", corev1.ClusterIPNone))
		Expect(svc.Spec.Selector).To(Equal(map[string]string{tsv1.ReflectorLabel: job.Name}))
		var peer string
		for _, e := range job.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "TSB_PEER" {
				peer = e.Value
			}
		}
		Expect(peer).To(Equal(svc.Spec.ClusterIP))

		refl := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.ReflectorJobName(job.Name)}, refl)).To(Succeed())
		Expect(refl.Spec.Template.Labels).To(HaveKeyWithValue(tsv1.ReflectorLabel, job.Name))
		Expect(refl.Spec.Template.Annotations).To(HaveKeyWithValue(tsv1.ExclusiveCPUsAnnotation, "false"))
		Expect(refl.Spec.Template.Spec.Containers[0].Resources.Requests).NotTo(HaveKey(corev1.ResourceCPU))

		By("a rerun deletes the old run's reflector Service")
		Eventually(func() error {
			cur := &tsv1.LatencyBenchmark{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
				return err
			}
			cur.Annotations = map[string]string{tsv1.RerunAnnotation: "2"}
			return k8s.Update(ctx, cur)
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		next := nodeJob(ns, "two", 2, n.Name)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: next.Name}, &corev1.Service{})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, &corev1.Service{}))
		}, 20*time.Second, 100*time.Millisecond).Should(BeTrue())
	})

	It("gives its pods no capability but SYS_NICE and IPC_LOCK, the bypass stack's too, every other one dropped", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-caps", "tslb-p10")
		b := validBenchmark(ns, "caps", "tslb-p10")
		b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
		b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })

		runner := nodeJob(ns, "caps", 1, n.Name)
		reflector := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.ReflectorJobName(runner.Name)}, reflector)).To(Succeed())
		for _, job := range []*batchv1.Job{runner, reflector} {
			Expect(job.Spec.Template.Spec.Containers).NotTo(BeEmpty())
			Expect(job.Spec.Template.Spec.HostNetwork).To(BeFalse())
			for _, c := range job.Spec.Template.Spec.Containers {
				Expect(c.SecurityContext).NotTo(BeNil(), c.Name)
				Expect(c.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}), c.Name)
				Expect(c.SecurityContext.Capabilities.Add).To(Equal([]corev1.Capability{"SYS_NICE", "IPC_LOCK"}), c.Name)
				Expect(c.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)), c.Name)
				Expect(c.SecurityContext.Privileged).To(BeNil(), c.Name)
			}
		}
	})

	It("runs the qualify suite on each node and keeps each interface's report and verdict in the status: Unsupported fails the node", func() {
		ns := tslbNamespace()
		n1, n2 := tslbNode("tslb-qual-a", "tslb-p11"), tslbNode("tslb-qual-b", "tslb-p11")
		b := validBenchmark(ns, "qualify", "tslb-p11")
		b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
		b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}
		b.Spec.Suites = tsv1.BenchmarkSuites{Qualify: &tsv1.QualifySpec{}}
		b.Spec.Thresholds = tsv1.Thresholds{}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		j1, j2 := nodeJob(ns, "qualify", 1, n1.Name), nodeJob(ns, "qualify", 1, n2.Name)
		var spec tsv1.BenchmarkSuites
		Expect(json.Unmarshal([]byte(env(j1.Spec.Template.Spec.Containers[0], "TSB_SPEC")), &spec)).To(Succeed())
		Expect(spec.Qualify).NotTo(BeNil(), "the runner is given the qualify suite")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchmark.ReflectorJobName(j1.Name)}, &batchv1.Job{})).To(Succeed(), "it runs against a reflector pod")

		report := func(v tsv1.QualifyVerdict, reason tsv1.QualifyReason) *tsv1.QualifyReport {
			return &tsv1.QualifyReport{Interface: "lat0", Driver: "iavf", NUMANode: 0, Peer: "198.18.0.2",
				XDP:     tsv1.QualifyXDP{Native: tsv1.QualifyTrial{Works: true, Detail: "XDP native, bound copy"}, ZeroCopy: tsv1.QualifyTrial{Detail: "refused"}},
				Verdict: v, Reasons: []tsv1.QualifyReason{reason}}
		}
		r1 := judgetest.SampleResults(n1.Name, nil)
		r1.Qualify = report(tsv1.QualifyDegraded, tsv1.QualifyReason{Check: "zeroCopy", Verdict: tsv1.QualifyDegraded, Message: "AF_XDP zero-copy is not available"})
		r2 := judgetest.SampleResults(n2.Name, nil)
		r2.Qualify = report(tsv1.QualifyUnsupported, tsv1.QualifyReason{Check: "conformance/iov", Verdict: tsv1.QualifyUnsupported, Message: "differs from the kernel"})
		uploadResults(ns, j1.Name, r1)
		uploadResults(ns, j2.Name, r2)
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "qualify")(g)
			a, bb := nodeStatus(got, n1.Name), nodeStatus(got, n2.Name)
			g.Expect(a.Results).NotTo(BeNil())
			g.Expect(a.Results.Qualify).NotTo(BeNil())
			g.Expect(a.Results.Qualify.Verdict).To(Equal(tsv1.QualifyDegraded))
			g.Expect(a.Results.Qualify.Reasons[0].Check).To(Equal("zeroCopy"))
			g.Expect(a.Verdict.Result).To(Equal(tsv1.VerdictPassed))
			g.Expect(a.Verdict.Reasons[0].Message).To(ContainSubstring("interface lat0 is degraded: zeroCopy"))
			g.Expect(bb.Results).NotTo(BeNil(), "node b's results are copied in their own reconcile")
			g.Expect(bb.Results.Qualify).NotTo(BeNil())
			g.Expect(bb.Results.Qualify.Verdict).To(Equal(tsv1.QualifyUnsupported))
			g.Expect(bb.Verdict.Result).To(Equal(tsv1.VerdictFailed))
			g.Expect(bb.Verdict.Reasons[0].Name).To(Equal("qualify/lat0"))
			g.Expect(bb.Verdict.Reasons[0].Message).To(ContainSubstring("unsupported: conformance/iov: differs from the kernel"))
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictFailed))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("keeps the microburst table by receive buffer size, an unknown buffer left out, and judges every row", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-bufs", "tslb-p9")
		b := validBenchmark(ns, "bufs", "tslb-p9")
		b.Spec.Suites = tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{65536, 4194304}}}
		b.Spec.Thresholds = tsv1.Thresholds{MinMicroburstPackets: ptr.To[int64](100)}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		job := nodeJob(ns, "bufs", 1, n.Name)
		var spec tsv1.BenchmarkSuites
		Expect(json.Unmarshal([]byte(env(job.Spec.Template.Spec.Containers[0], "TSB_SPEC")), &spec)).To(Succeed())
		Expect(spec.Microburst.ReceiveBufferBytes).To(Equal([]int64{65536, 4194304}), "the runner is given the sizes")

		// the small buffer's row: every value read; the large one's: an rmem_max the reflector
		// could not read, so unknown, and a lower bound above the threshold
		granted, rmemDefault := int64(131072), int64(212992)
		res := judgetest.SampleResults(n.Name, nil)
		res.Stacks = []tsv1.StackResults{{Stack: tsv1.StackKernel, Microburst: &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: 256, LinkSpeedMbps: 10000,
			Rows: []tsv1.MicroburstRow{
				{ReceiveBufferBytes: 65536, Buffering: &tsv1.ReceiveBuffering{GrantedBytes: &granted, RmemDefaultBytes: &rmemDefault, RmemMaxBytes: ptr.To[int64](4194304)},
					Trials: []tsv1.BurstTrial{{Packets: 64, Bursts: 10, Sent: 640}, {Packets: 128, Bursts: 10, Sent: 1280, Dropped: 9}, {Packets: 96, Bursts: 10, Sent: 960}}, MaxBurstPackets: 96, BurstTimeNs: 23194},
				{ReceiveBufferBytes: 4194304, Buffering: &tsv1.ReceiveBuffering{GrantedBytes: ptr.To[int64](8388608), RmemDefaultBytes: &rmemDefault, Missing: "net.core.rmem_max: permission denied"},
					Trials: []tsv1.BurstTrial{{Packets: 64, Bursts: 10, Sent: 640}, {Packets: 128, Bursts: 10, Sent: 1280}}, MaxBurstPackets: 128, BurstTimeNs: 30925, LimitReached: true},
			}}}}
		uploadResults(ns, job.Name, res)
		Eventually(func(g Gomega) {
			got := nodeStatus(getBenchmark(ns, "bufs")(g), n.Name)
			g.Expect(got.Verdict).NotTo(BeNil())
			g.Expect(got.Verdict.Result).To(Equal(tsv1.VerdictFailed))
			g.Expect(got.Verdict.Reasons[0].Name).To(Equal("microburst/kernel/rcvbuf65536"))
			g.Expect(got.Verdict.Reasons[0].Message).To(ContainSubstring("at SO_RCVBUF 65536 is 96 messages of 256 B, need 100"))
			g.Expect(got.Verdict.Reasons).To(ContainElement(SatisfyAll(HaveField("Name", "microburst/kernel/rcvbuf4194304"), HaveField("Result", tsv1.VerdictPassed),
				HaveField("Message", ContainSubstring("absorbed at least 128")))))
			rows := got.Results.Stack(tsv1.StackKernel).Microburst.Rows
			g.Expect(rows).To(HaveLen(2))
			g.Expect(rows[0].Buffering).To(Equal(res.Stacks[0].Microburst.Rows[0].Buffering))
			g.Expect(rows[1].Buffering.RmemMaxBytes).To(BeNil(), "an unknown value stays unknown through the status")
			g.Expect(rows[1].Buffering.Missing).To(ContainSubstring("permission denied"))
			g.Expect(rows[1].Trials).To(HaveLen(2))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

		By("exporting the largest burst per receive buffer size")
		v, ok := metricValue("tickstack_benchmark_microburst_packets", map[string]string{"namespace": ns, "node": n.Name, "receive_buffer_bytes": "65536", "limit_reached": "false"})
		Expect(ok).To(BeTrue())
		Expect(v).To(BeEquivalentTo(96))
		v, ok = metricValue("tickstack_benchmark_microburst_packets", map[string]string{"namespace": ns, "node": n.Name, "receive_buffer_bytes": "4194304", "limit_reached": "true"})
		Expect(ok).To(BeTrue())
		Expect(v).To(BeEquivalentTo(128))
		v, ok = metricValue("tickstack_benchmark_dropped_messages", map[string]string{"namespace": ns, "node": n.Name, "suite": "microburst"})
		Expect(ok).To(BeTrue())
		Expect(v).To(BeEquivalentTo(9))
	})

	It("runs tickToTrade with a reflector for the venue, fails a row with a tick unaccounted for, and compares tuned with untuned", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-t2t", "tslb-p8")

		By("the untuned baseline: the kernel on the node named, before a profile is trusted")
		untuned := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "untuned"}, Spec: tsv1.LatencyBenchmarkSpec{
			Target: tsv1.BenchmarkTarget{NodeNames: []string{n.Name}},
			Suites: tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{500, 10000}}},
		}}
		Expect(k8s.Create(ctx, untuned)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, untuned))).To(Succeed()) })
		job := nodeJob(ns, "untuned", 1, n.Name)
		ps := job.Spec.Template.Spec
		Expect(ps.Containers).To(HaveLen(2), "the venue (exchange simulator, publisher) runs in the reflector container")
		Expect(ps.Containers[1].Name).To(Equal(benchmark.BenchReflectorContainer))
		var spec tsv1.BenchmarkSuites
		Expect(json.Unmarshal([]byte(env(ps.Containers[0], "TSB_SPEC")), &spec)).To(Succeed())
		Expect(spec.TickToTrade).NotTo(BeNil())
		Expect(spec.TickToTrade.RatesMps).To(Equal([]int64{500, 10000}))
		uploadResults(ns, job.Name, judgetest.T2TResults(n.Name, map[int64]int64{500: 40000, 10000: 50000}))
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "untuned")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictPassed))
			g.Expect(nodeStatus(got, n.Name).Verdict.Reasons).To(ContainElement(HaveField("Name", "tickToTrade/kernel/10000msgps/accounted")))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

		By("the tuned run points at it: gains in percent per stack and rate, taken when the node is judged")
		tuned := validBenchmark(ns, "tuned", "tslb-p8")
		tuned.Spec.Suites = tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{500, 10000}, Baseline: &tsv1.TickToTradeBaseline{Benchmark: "untuned"}}}
		tuned.Spec.Thresholds = tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Statistic: tsv1.StatP99, Max: "150us"}}}
		Expect(k8s.Create(ctx, tuned)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, tuned))).To(Succeed()) })
		tj := nodeJob(ns, "tuned", 1, n.Name)
		Expect(env(tj.Spec.Template.Spec.Containers[0], "TSB_SPEC")).NotTo(ContainSubstring("baseline"), "the runner does not see the baseline")
		uploadResults(ns, tj.Name, judgetest.T2TResults(n.Name, map[int64]int64{500: 30000, 10000: 40000}))
		Eventually(func(g Gomega) {
			got := nodeStatus(getBenchmark(ns, "tuned")(g), n.Name)
			g.Expect(got.Verdict).NotTo(BeNil())
			g.Expect(got.Verdict.Result).To(Equal(tsv1.VerdictPassed))
			g.Expect(got.Verdict.Reasons).To(ContainElement(SatisfyAll(HaveField("Name", "tickToTrade/p99"), HaveField("Message", ContainSubstring("worst p99 120.000 us at tick-to-trade at 10000 msg/s on kernel is within 150us")))))
			b := got.TickToTradeBaseline
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.Benchmark).To(Equal("untuned"))
			g.Expect(b.Run).To(BeEquivalentTo(1))
			g.Expect(b.Node).To(Equal(n.Name))
			g.Expect(b.Rows).To(HaveLen(2))
			g.Expect(b.Rows[0]).To(Equal(tsv1.TickToTradeGain{Stack: tsv1.StackKernel, RateMps: 500, BaselineStack: tsv1.StackKernel,
				BaselineMeanNs: 40000, MeanNs: 30000, MeanGainPercent: "25.0", BaselineMedianNs: 40000, MedianNs: 30000, MedianGainPercent: "25.0",
				BaselineP99Ns: 120000, P99Ns: 90000, P99GainPercent: "25.0"}))
			g.Expect(b.Rows[1].MeanGainPercent).To(Equal("20.0"))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		v, ok := metricValue("tickstack_benchmark_latency_seconds", map[string]string{"namespace": ns, "benchmark": "tuned", "suite": "tickToTrade", "rate": "10000", "statistic": "p99"})
		Expect(ok).To(BeTrue())
		Expect(v).To(BeNumerically("~", 120e-6, 1e-9))

		By("a rerun with one tick lost fails the node on that row, whatever its latency")
		cur := getBenchmark(ns, "tuned")(Default)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Annotations = map[string]string{tsv1.RerunAnnotation: "lost"}
		Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
		lost := judgetest.T2TResults(n.Name, map[int64]int64{500: 30000, 10000: 40000})
		row := &lost.Stacks[0].TickToTrade.Rows[1]
		row.TicksReceived, row.TicksLost, row.Unaccounted = row.TicksReceived-1, 1, []string{"ticks: 1 lost, 0 out of sequence"}
		uploadResults(ns, nodeJob(ns, "tuned", 2, n.Name).Name, lost)
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "tuned")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictFailed))
			ns := nodeStatus(got, n.Name)
			g.Expect(ns.Message).To(ContainSubstring("tickToTrade/kernel/10000msgps/accounted"))
			g.Expect(ns.Message).To(ContainSubstring("ticks: 1 lost"))
			// the lost row is not compared with the baseline
			g.Expect(ns.TickToTradeBaseline.Rows).To(HaveLen(1))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		Eventually(nodeLabel(n.Name, tsv1.ValidatedLabel), 20*time.Second, 100*time.Millisecond).Should(BeEmpty())
	})

	It("starts a new run when the schedule comes due (injected clock)", func() {
		ns := tslbNamespace()
		n := tslbNode("tslb-sched", "tslb-p5")
		b := validBenchmark(ns, "hourly", "tslb-p5")
		b.Spec.Schedule = "@every 1h"
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		uploadResults(ns, nodeJob(ns, "hourly", 1, n.Name).Name, judgetest.SampleResults(n.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 1000}))
		var next time.Time
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "hourly")(g)
			g.Expect(got.Status.Verdict).To(Equal(tsv1.VerdictPassed))
			g.Expect(got.Status.NextScheduleTime).NotTo(BeNil())
			next = got.Status.NextScheduleTime.Time
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(next.Sub(benchClock.Now())).To(BeNumerically(">", 59*time.Minute))

		benchClock.Advance(61 * time.Minute)
		DeferCleanup(func() { benchClock.Advance(-61 * time.Minute) })
		// A reconcile is due in an hour of real time; any change to the object brings it now.
		cur := getBenchmark(ns, "hourly")(Default)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Labels = map[string]string{"tslb/poke": "1"}
		Expect(k8s.Patch(ctx, cur, patch)).To(Succeed())
		nodeJob(ns, "hourly", 2, n.Name)
		Eventually(func(g Gomega) {
			got := getBenchmark(ns, "hourly")(g)
			g.Expect(got.Status.RunReason).To(Equal(benchmark.RunReasonSchedule))
			g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("keeps the unvalidated taint on a gated profile's nodes until they pass", func() {
		p := createGatedProfile("tslb-gated", "tslb/select", "tslb-taint")
		got := &tsv1.LatencyProfile{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: p.Name}, got)).To(Succeed())
		Expect(got.Spec.Validation.TaintUntilValidated).To(BeTrue(), "the API keeps spec.validation")

		n := tslbNode("tslb-taint", "tslb-gated")
		tainted := func(g Gomega) bool {
			node := &corev1.Node{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: n.Name}, node)).To(Succeed())
			for _, t := range node.Spec.Taints {
				if t.Key == tsv1.UnvalidatedTaint && t.Effect == corev1.TaintEffectNoSchedule {
					return true
				}
			}
			return false
		}
		Eventually(tainted, 20*time.Second, 100*time.Millisecond).Should(BeTrue())

		ns := tslbNamespace()
		b := validBenchmark(ns, "gate", "tslb-gated")
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })
		job := nodeJob(ns, "gate", 1, n.Name)
		Expect(job.Spec.Template.Spec.Tolerations).To(ContainElement(HaveField("Key", tsv1.UnvalidatedTaint)))
		uploadResults(ns, job.Name, judgetest.SampleResults(n.Name, map[tsv1.Stack]int64{tsv1.StackKernel: 1000}))
		Eventually(tainted, 20*time.Second, 100*time.Millisecond).Should(BeFalse())
		Expect(nodeLabel(n.Name, tsv1.ValidatedLabel)(Default)).To(Equal("tslb-gated"))
	})
})

// condition is the condition typ of conds, or the zero condition.
func condition(conds []metav1.Condition, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// env is the value of a container's environment variable name ("" when unset).
func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
