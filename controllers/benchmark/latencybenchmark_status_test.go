package benchmark

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/bench/judge/judgetest"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

func resultsJSON(t *testing.T, r *tsv1.BenchmarkResults) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func p99Limit(max string) tsv1.Thresholds {
	return tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: max}}}
}

func TestJudgeNode(t *testing.T) {
	now := time.Unix(1700000100, 0).UTC()
	pending := tsv1.BenchmarkNodeStatus{Node: "n1", Job: "lb-1-abc", Phase: tsv1.NodePending}
	good := resultsJSON(t, judgetest.SampleResults("n1", map[tsv1.Stack]int64{tsv1.StackKernel: 10000, tsv1.StackBypass: 4000}))
	wrongSchema := strings.Replace(good, tsv1.BenchmarkResultsSchemaVersion, "bench.tickstack.io/v0", 1)
	cases := []struct {
		name        string
		prev        tsv1.BenchmarkNodeStatus
		facts       benchJobFacts
		th          tsv1.Thresholds
		phase       tsv1.NodeRunPhase
		verdict     tsv1.VerdictResult
		msgContains string
	}{
		{"no job yet", pending, benchJobFacts{}, tsv1.Thresholds{}, tsv1.NodePending, "", "creating"},
		{"job waiting for its pod", pending, benchJobFacts{jobFound: true}, tsv1.Thresholds{}, tsv1.NodePending, "", "waiting"},
		{"job running", pending, benchJobFacts{jobFound: true, jobActive: true}, tsv1.Thresholds{}, tsv1.NodeRunning, "", "measuring"},
		{"results within the limit", pending, benchJobFacts{jobFound: true, results: good, exitCode: "0"}, p99Limit("40us"), tsv1.NodeCompleted, tsv1.VerdictPassed, "Passed"},
		{"results over the limit", pending, benchJobFacts{jobFound: true, results: good, exitCode: "0"}, p99Limit("20us"), tsv1.NodeCompleted, tsv1.VerdictFailed, "exceeds 20us"},
		{"results with a runner error code", pending, benchJobFacts{results: good, exitCode: "1"}, tsv1.Thresholds{}, tsv1.NodeCompleted, tsv1.VerdictPassed, "exit code 1"},
		{"results of another schema", pending, benchJobFacts{results: wrongSchema}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, "unreadable"},
		{"results without times", pending, benchJobFacts{results: strings.Replace(good, `"startTime":"2023-11-14T22:13:20Z"`, `"startTime":null`, 1)}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, "startTime and completionTime are required"},
		{"results with an unknown protocol", pending, benchJobFacts{results: strings.Replace(good, `"protocol":"udp"`, `"protocol":"sctp"`, 1)}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, `protocol "sctp"`},
		{"uploader says no results", pending, benchJobFacts{uploadError: "the runner wrote no results file"}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, "no results file"},
		{"job failed without results", pending, benchJobFacts{jobFound: true, jobFailed: true, jobMessage: "DeadlineExceeded: too long"}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, "DeadlineExceeded"},
		{"job succeeded without results", pending, benchJobFacts{jobFound: true, jobSucceeded: true}, tsv1.Thresholds{}, tsv1.NodeFailed, tsv1.VerdictFailed, "uploaded no results"},
		{"a judged node keeps its outcome", tsv1.BenchmarkNodeStatus{Node: "n1", Phase: tsv1.NodeCompleted, Message: "Passed: 1 checks", CompletionTime: &metav1.Time{Time: now},
			Verdict: &tsv1.Verdict{Result: tsv1.VerdictPassed}}, benchJobFacts{jobFailed: true}, tsv1.Thresholds{}, tsv1.NodeCompleted, tsv1.VerdictPassed, "Passed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeNode(tc.prev, tc.facts, tc.th, now)
			if got.Phase != tc.phase {
				t.Fatalf("phase %s, want %s (message %q)", got.Phase, tc.phase, got.Message)
			}
			if v := nodeVerdict(got); v != tc.verdict {
				t.Fatalf("verdict %q, want %q", v, tc.verdict)
			}
			if !strings.Contains(got.Message, tc.msgContains) {
				t.Fatalf("message %q does not contain %q", got.Message, tc.msgContains)
			}
			if tc.verdict != "" && got.CompletionTime == nil {
				t.Fatal("a judged node has no completion time")
			}
		})
	}
	// Kernel vs bypass ratios come with the results.
	got := judgeNode(pending, benchJobFacts{results: good}, tsv1.Thresholds{MinBypassSpeedup: "2"}, now)
	if len(got.Comparisons) != 1 || got.Comparisons[0].MedianSpeedup != "2.500" {
		t.Fatalf("comparisons %+v, want one row with median speedup 2.500", got.Comparisons)
	}
	if got.Results == nil || got.Results.Stack(tsv1.StackKernel).PingPong.Rows[0].MedianNs != 10000 {
		t.Fatalf("results not kept: %+v", got.Results)
	}
}

func TestJudgeNodeTickToTrade(t *testing.T) {
	now := time.Unix(1700000100, 0).UTC()
	pending := tsv1.BenchmarkNodeStatus{Node: "n1", Job: "lb-1-abc", Phase: tsv1.NodePending}
	tuned := judgetest.T2TResults("n1", map[int64]int64{500: 30000, 10000: 40000})
	baseline := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "untuned", Namespace: "trading"},
		Status: tsv1.LatencyBenchmarkStatus{Run: 2, Nodes: []tsv1.BenchmarkNodeStatus{{Node: "n1", Phase: tsv1.NodeCompleted, Results: judgetest.T2TResults("n1", map[int64]int64{500: 40000, 10000: 50000})}}}}
	ref := &tsv1.TickToTradeBaseline{Benchmark: "untuned"}

	got := judgeNode(pending, benchJobFacts{results: resultsJSON(t, tuned), t2tBaseline: ref, baseline: baseline}, tsv1.Thresholds{}, now)
	if got.Phase != tsv1.NodeCompleted || got.Verdict.Result != tsv1.VerdictPassed {
		t.Fatalf("phase %s verdict %+v", got.Phase, got.Verdict)
	}
	b := got.TickToTradeBaseline
	if b == nil || b.Benchmark != "untuned" || b.Run != 2 || b.Node != "n1" || len(b.Rows) != 2 ||
		b.Rows[0].MeanGainPercent != "25.0" || b.Rows[1].MeanGainPercent != "20.0" || b.Rows[1].BaselineMeanNs != 50000 {
		t.Fatalf("tuned vs untuned %+v", b)
	}
	// The comparison is taken once, when the node is judged: a later read of the baseline changes nothing.
	again := judgeNode(got, benchJobFacts{results: resultsJSON(t, tuned), t2tBaseline: ref}, tsv1.Thresholds{}, now)
	if again.TickToTradeBaseline == nil || len(again.TickToTradeBaseline.Rows) != 2 {
		t.Fatalf("a judged node's comparison changed: %+v", again.TickToTradeBaseline)
	}
	// Without a baseline field nothing is compared; with a missing baseline the status says so.
	if got := judgeNode(pending, benchJobFacts{results: resultsJSON(t, tuned)}, tsv1.Thresholds{}, now); got.TickToTradeBaseline != nil {
		t.Errorf("comparison without a baseline: %+v", got.TickToTradeBaseline)
	}
	missing := judgeNode(pending, benchJobFacts{results: resultsJSON(t, tuned), t2tBaseline: ref}, tsv1.Thresholds{}, now)
	if missing.TickToTradeBaseline == nil || !strings.Contains(missing.TickToTradeBaseline.Message, "does not exist") {
		t.Errorf("missing baseline: %+v", missing.TickToTradeBaseline)
	}
	// A row with a tick unaccounted for fails the node.
	lost := judgetest.T2TResults("n1", map[int64]int64{500: 30000})
	lost.Stacks[0].TickToTrade.Rows[0].TicksLost = 1
	lost.Stacks[0].TickToTrade.Rows[0].Unaccounted = []string{"ticks: 1 lost, 0 out of sequence"}
	if got := judgeNode(pending, benchJobFacts{results: resultsJSON(t, lost)}, tsv1.Thresholds{}, now); got.Verdict.Result != tsv1.VerdictFailed ||
		!strings.Contains(got.Message, "tickToTrade/kernel/500msgps/accounted") {
		t.Errorf("unaccounted tick: %s", got.Message)
	}
	// A document with a path the status schema refuses fails its node instead of the status update.
	bad := resultsJSON(t, tuned)
	bad = strings.Replace(bad, `"marketDataPath":"kernel"`, `"marketDataPath":"rdma"`, 1)
	if got := judgeNode(pending, benchJobFacts{results: bad}, tsv1.Thresholds{}, now); got.Phase != tsv1.NodeFailed || !strings.Contains(got.Message, `tickToTrade path "rdma"`) {
		t.Errorf("bad path: %s %s", got.Phase, got.Message)
	}
}

func judgedNode(name string, v tsv1.VerdictResult) tsv1.BenchmarkNodeStatus {
	return tsv1.BenchmarkNodeStatus{Node: name, Phase: tsv1.NodeCompleted, Verdict: &tsv1.Verdict{Result: v}}
}

func TestSummarize(t *testing.T) {
	running := tsv1.BenchmarkNodeStatus{Node: "r", Phase: tsv1.NodeRunning}
	failedJob := tsv1.BenchmarkNodeStatus{Node: "f", Phase: tsv1.NodeFailed}
	cases := []struct {
		name    string
		nodes   []tsv1.BenchmarkNodeStatus
		verdict tsv1.VerdictResult
		passed  int32
		done    bool
	}{
		{"no nodes", nil, "", 0, false},
		{"one still running", []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed), running}, "", 1, false},
		{"all passed", []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed), judgedNode("b", tsv1.VerdictPassed)}, tsv1.VerdictPassed, 2, true},
		{"one inconclusive", []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed), judgedNode("b", tsv1.VerdictInconclusive)}, tsv1.VerdictInconclusive, 1, true},
		{"failed beats inconclusive", []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictInconclusive), judgedNode("b", tsv1.VerdictFailed)}, tsv1.VerdictFailed, 0, true},
		{"a failed job without verdict fails", []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed), failedJob}, tsv1.VerdictFailed, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, passed, total, done := summarize(tc.nodes)
			if v != tc.verdict || passed != tc.passed || done != tc.done || total != int32(len(tc.nodes)) {
				t.Fatalf("got (%q, %d, %d, %v), want (%q, %d, %d, %v)", v, passed, total, done, tc.verdict, tc.passed, len(tc.nodes), tc.done)
			}
		})
	}
}

func TestSetBenchmarkStatusConditions(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	cases := []struct {
		name            string
		run             int64
		nodes           []tsv1.BenchmarkNodeStatus
		invalid         string
		complete, passd metav1.ConditionStatus
		reason          string
	}{
		{"invalid before any run", 0, nil, "spec.schedule: bad", metav1.ConditionFalse, metav1.ConditionFalse, tsv1.ReasonInvalidSpec},
		{"no target nodes", 1, nil, "", metav1.ConditionFalse, metav1.ConditionFalse, tsv1.ReasonNoTargetNodes},
		{"running", 1, []tsv1.BenchmarkNodeStatus{{Node: "a", Phase: tsv1.NodeRunning}}, "", metav1.ConditionFalse, metav1.ConditionUnknown, tsv1.ReasonRunning},
		{"passed", 1, []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed)}, "", metav1.ConditionTrue, metav1.ConditionTrue, tsv1.ReasonAllPassed},
		{"failed", 1, []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictFailed)}, "", metav1.ConditionTrue, metav1.ConditionFalse, tsv1.ReasonNodesFailed},
		{"inconclusive", 1, []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictInconclusive)}, "", metav1.ConditionTrue, metav1.ConditionFalse, tsv1.ReasonNodesInconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			b.Status.Run, b.Status.Nodes = tc.run, tc.nodes
			setBenchmarkStatus(b, &benchmarkFacts{now: now, invalid: tc.invalid}, true)
			c := condition(b.Status.Conditions, tsv1.BenchmarkComplete)
			p := condition(b.Status.Conditions, tsv1.BenchmarkPassed)
			if c.Status != tc.complete || p.Status != tc.passd || p.Reason != tc.reason {
				t.Fatalf("Complete %s, Passed %s/%s; want %s, %s/%s", c.Status, p.Status, p.Reason, tc.complete, tc.passd, tc.reason)
			}
			valid := condition(b.Status.Conditions, tsv1.BenchmarkValid)
			if (valid.Status == metav1.ConditionTrue) != (tc.invalid == "") {
				t.Fatalf("Valid %s with invalid=%q", valid.Status, tc.invalid)
			}
			if b.Status.ObservedGeneration != 3 {
				t.Fatalf("observedGeneration %d", b.Status.ObservedGeneration)
			}
			if (b.Status.CompletionTime != nil) != (tc.complete == metav1.ConditionTrue) {
				t.Fatalf("completionTime %v with Complete %s", b.Status.CompletionTime, tc.complete)
			}
		})
	}
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func TestRunDecision(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started := metav1.NewTime(created.Add(10 * time.Minute))
	hourly, err := judge.ParseSchedule("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	base := func(mut func(b *tsv1.LatencyBenchmark)) *tsv1.LatencyBenchmark {
		b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Generation: 1, CreationTimestamp: metav1.NewTime(created)}}
		b.Status.Run, b.Status.RunGeneration, b.Status.StartTime = 1, 1, &started
		b.Status.Nodes = []tsv1.BenchmarkNodeStatus{judgedNode("a", tsv1.VerdictPassed)}
		if mut != nil {
			mut(b)
		}
		return b
	}
	cases := []struct {
		name   string
		b      *tsv1.LatencyBenchmark
		now    time.Time
		reason string
		next   time.Time
	}{
		{"first run", base(func(b *tsv1.LatencyBenchmark) { b.Status = tsv1.LatencyBenchmarkStatus{} }), created, RunReasonCreated, created.Add(time.Hour)},
		{"nothing to do before the hour", base(nil), created.Add(30 * time.Minute), "", created.Add(time.Hour)},
		{"the schedule fires", base(nil), created.Add(61 * time.Minute), RunReasonSchedule, created.Add(2 * time.Hour)},
		{"a due schedule waits for the running run", base(func(b *tsv1.LatencyBenchmark) {
			b.Status.Nodes = []tsv1.BenchmarkNodeStatus{{Node: "a", Phase: tsv1.NodeRunning}}
		}), created.Add(61 * time.Minute), "", created.Add(time.Hour)},
		{"a new rerun annotation", base(func(b *tsv1.LatencyBenchmark) { b.Annotations = map[string]string{tsv1.RerunAnnotation: "x"} }), created.Add(20 * time.Minute), RunReasonRerun, created.Add(time.Hour)},
		{"the same rerun annotation again", base(func(b *tsv1.LatencyBenchmark) {
			b.Annotations = map[string]string{tsv1.RerunAnnotation: "x"}
			b.Status.Rerun = "x"
		}), created.Add(20 * time.Minute), "", created.Add(time.Hour)},
		{"a spec change", base(func(b *tsv1.LatencyBenchmark) { b.Generation = 2 }), created.Add(20 * time.Minute), RunReasonSpecChanged, created.Add(time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, next := runDecision(tc.b, hourly, tc.now)
			if reason != tc.reason {
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			}
			if next == nil || !next.Equal(tc.next) {
				t.Fatalf("next %v, want %v", next, tc.next)
			}
		})
	}
	if reason, next := runDecision(base(nil), nil, created.Add(48*time.Hour)); reason != "" || next != nil {
		t.Fatalf("without a schedule: reason %q next %v, want nothing", reason, next)
	}
}
func TestBuildBenchJob(t *testing.T) {
	mk := func(mut func(b *tsv1.LatencyBenchmark)) *tsv1.LatencyBenchmark {
		b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "trading", UID: "u1"}}
		b.Spec.Target.Profile = "p"
		b.Spec.Suites.PingPong = &tsv1.PingPongSpec{MessageSizes: []int32{64}}
		if mut != nil {
			mut(b)
		}
		return b
	}
	in := func(b *tsv1.LatencyBenchmark) BenchJobInput {
		return BenchJobInput{Benchmark: b, Run: 7, Node: "worker-1", Profile: "p", Image: "img:1"}
	}
	t.Run("same pod", func(t *testing.T) {
		job, err := BuildBenchJob(in(mk(nil)))
		if err != nil {
			t.Fatal(err)
		}
		if len(job.Name) > 63 || job.Name != BenchJobName("nightly", 7, "worker-1") {
			t.Fatalf("name %q", job.Name)
		}
		ps := job.Spec.Template.Spec
		if len(ps.Containers) != 2 || ps.Containers[0].Name != "runner" || ps.Containers[1].Name != "reflector" {
			t.Fatalf("containers %+v", ps.Containers)
		}
		checkPinned(t, ps, "worker-1")
		for _, c := range ps.Containers {
			checkGuaranteedWhole(t, c, 1)
			if c.Image != "img:1" {
				t.Errorf("%s image %q", c.Name, c.Image)
			}
		}
		if env(ps.Containers[0], "TSB_PEER") != "$(POD_IP)" || env(ps.Containers[0], "RESULTS_CONFIGMAP") != job.Name {
			t.Errorf("runner env %+v", ps.Containers[0].Env)
		}
		var spec tsv1.BenchmarkSuites
		if err := json.Unmarshal([]byte(env(ps.Containers[0], "TSB_SPEC")), &spec); err != nil || spec.PingPong == nil {
			t.Errorf("TSB_SPEC %q: %v", env(ps.Containers[0], "TSB_SPEC"), err)
		}
		if _, ok := job.Spec.Template.Labels[tsv1.ProfileLabel]; ok {
			t.Error("a kernel-only pod is labelled for the pod webhook")
		}
		if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != defaultBenchTimeout {
			t.Errorf("backoffLimit %d deadline %d", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
		}
		if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].Kind != "LatencyBenchmark" || !*job.OwnerReferences[0].Controller {
			t.Errorf("owner %+v", job.OwnerReferences)
		}
	})
	t.Run("tickToTrade alone has a reflector, and the runner never sees the baseline", func(t *testing.T) {
		bm := mk(func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites.PingPong = nil
			b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{RatesMps: []int64{1000}, Baseline: &tsv1.TickToTradeBaseline{Benchmark: "untuned"}}
		})
		job, err := BuildBenchJob(in(bm))
		if err != nil {
			t.Fatal(err)
		}
		ps := job.Spec.Template.Spec
		if len(ps.Containers) != 2 || ps.Containers[1].Name != "reflector" {
			t.Fatalf("containers %+v: the venue (publisher, exchange) runs in the reflector", ps.Containers)
		}
		var spec tsv1.BenchmarkSuites
		if err := json.Unmarshal([]byte(env(ps.Containers[0], "TSB_SPEC")), &spec); err != nil || spec.TickToTrade == nil ||
			spec.TickToTrade.RatesMps[0] != 1000 || spec.TickToTrade.Baseline != nil {
			t.Errorf("TSB_SPEC %q: %v", env(ps.Containers[0], "TSB_SPEC"), err)
		}
		if bm.Spec.Suites.TickToTrade.Baseline == nil {
			t.Error("building the Job dropped the benchmark's own baseline")
		}
	})
	t.Run("two pods with bypass", func(t *testing.T) {
		bm := mk(func(b *tsv1.LatencyBenchmark) {
			b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
			b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods, RunnerCPUs: ptr.To[int32](2), ReflectorCPUs: ptr.To[int32](1)}
		})
		if _, err := BuildBenchJob(in(bm)); err == nil || !strings.Contains(err.Error(), "needs its reflector's address") {
			t.Fatalf("a TwoPods runner without its reflector's address: %v", err)
		}
		withPeer := in(bm)
		withPeer.ReflectorAddress = "198.18.9.9"
		job, err := BuildBenchJob(withPeer)
		if err != nil {
			t.Fatal(err)
		}
		ps := job.Spec.Template.Spec
		if job.Spec.Completions != nil || len(ps.Containers) != 1 || ps.Containers[0].Name != "runner" {
			t.Fatalf("runner job %+v", job.Spec)
		}
		checkPinned(t, ps, "worker-1")
		checkGuaranteedWhole(t, ps.Containers[0], 2)
		if env(ps.Containers[0], "TSB_PEER") != "198.18.9.9" || env(ps.Containers[0], "TSB_PEER_TIMEOUT") == "" {
			t.Errorf("runner env %+v", ps.Containers[0].Env)
		}
		if job.Spec.Template.Labels[tsv1.ProfileLabel] != "p" {
			t.Error("bypass pods are not labelled for the pod webhook")
		}
		var spec tsv1.BenchmarkSuites
		_ = json.Unmarshal([]byte(env(ps.Containers[0], "TSB_SPEC")), &spec)
		if len(spec.Stacks) != 2 {
			t.Errorf("runner spec stacks %v", spec.Stacks)
		}

		refl, err := BuildReflectorJob(in(bm))
		if err != nil {
			t.Fatal(err)
		}
		rps := refl.Spec.Template.Spec
		if refl.Name != ReflectorJobName(job.Name) || len(refl.Name) > 63 || len(rps.Containers) != 1 || rps.Containers[0].Name != "reflector" {
			t.Fatalf("reflector job %s: %+v", refl.Name, rps.Containers)
		}
		checkPinned(t, rps, "worker-1")
		checkGuaranteedWhole(t, rps.Containers[0], 1)
		if env(rps.Containers[0], "TSB_DATA_INTERFACE") != "lat0" {
			t.Errorf("reflector env %+v", rps.Containers[0].Env)
		}
		tl := refl.Spec.Template
		if tl.Labels[tsv1.ProfileLabel] != "p" || tl.Labels[tsv1.ReflectorLabel] != job.Name || tl.Annotations[tsv1.ContainerAnnotation] != "reflector" {
			t.Errorf("reflector pod labels %v annotations %v", tl.Labels, tl.Annotations)
		}
		if _, ok := tl.Annotations[tsv1.ExclusiveCPUsAnnotation]; ok {
			t.Error("a reflector with an exclusive CPU is marked for the shared CPUs")
		}
		svc := buildReflectorService(in(bm))
		if svc.Name != job.Name || svc.Spec.Selector[tsv1.ReflectorLabel] != job.Name || svc.Spec.ClusterIP != "" ||
			len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != judge.DefaultControlPort {
			t.Errorf("reflector service %+v", svc)
		}
		if svc.Labels[tsv1.BenchmarkRunLabel] != "7" || len(svc.OwnerReferences) != 1 {
			t.Errorf("reflector service metadata %+v", svc.ObjectMeta)
		}
	})
	t.Run("two pods, kernel only, reflector on shared CPUs: both pods get the profile's network", func(t *testing.T) {
		bm := mk(func(b *tsv1.LatencyBenchmark) {
			b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods, ReflectorCPUs: ptr.To[int32](0)}
		})
		withPeer := in(bm)
		withPeer.ReflectorAddress = "198.18.9.9"
		job, err := BuildBenchJob(withPeer)
		if err != nil {
			t.Fatal(err)
		}
		refl, err := BuildReflectorJob(in(bm))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range []*batchv1.Job{job, refl} {
			if j.Spec.Template.Labels[tsv1.ProfileLabel] != "p" {
				t.Errorf("%s is not labelled for the pod webhook", j.Name)
			}
		}
		r := refl.Spec.Template.Spec.Containers[0].Resources
		if _, ok := r.Limits[corev1.ResourceCPU]; ok || r.Limits.Memory().IsZero() || r.Requests.Memory().Cmp(*r.Limits.Memory()) != 0 {
			t.Errorf("reflector resources %+v", r)
		}
		if refl.Spec.Template.Annotations[tsv1.ExclusiveCPUsAnnotation] != "false" {
			t.Errorf("reflector annotations %v", refl.Spec.Template.Annotations)
		}
	})
	t.Run("jitter only, reflector on shared CPUs ignored", func(t *testing.T) {
		job, err := BuildBenchJob(in(mk(func(b *tsv1.LatencyBenchmark) {
			b.Spec.Suites = tsv1.BenchmarkSuites{Jitter: &tsv1.JitterSpec{CPUs: "1"}}
			b.Spec.Placement = &tsv1.BenchmarkPlacement{ReflectorCPUs: ptr.To[int32](0)}
		})))
		if err != nil {
			t.Fatal(err)
		}
		if cs := job.Spec.Template.Spec.Containers; len(cs) != 1 || env(cs[0], "TSB_PEER") != "" {
			t.Fatalf("containers %+v", cs)
		}
	})
	t.Run("reflector on shared CPUs", func(t *testing.T) {
		job, _ := BuildBenchJob(in(mk(func(b *tsv1.LatencyBenchmark) {
			b.Spec.Placement = &tsv1.BenchmarkPlacement{ReflectorCPUs: ptr.To[int32](0)}
		})))
		r := job.Spec.Template.Spec.Containers[1].Resources
		if _, ok := r.Requests[corev1.ResourceCPU]; ok || r.Limits.Memory().IsZero() {
			t.Fatalf("reflector resources %+v", r)
		}
	})
	if n := BenchJobName(strings.Repeat("a", 200), 123456, "node"); len(n) > 63 {
		t.Fatalf("job name %q is %d characters", n, len(n))
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func checkPinned(t *testing.T, ps corev1.PodSpec, node string) {
	t.Helper()
	terms := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != node {
		t.Errorf("node affinity %+v", terms)
	}
	tolerated := false
	for _, tol := range ps.Tolerations {
		tolerated = tolerated || (tol.Key == tsv1.UnvalidatedTaint && tol.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tolerated {
		t.Error("the unvalidated taint is not tolerated")
	}
	if ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", ps.RestartPolicy)
	}
}

func checkGuaranteedWhole(t *testing.T, c corev1.Container, cpus int64) {
	t.Helper()
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if lim.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("%s: %s request %s limit %s: not Guaranteed", c.Name, r, req.String(), lim.String())
		}
	}
	if got := c.Resources.Limits.Cpu(); got.MilliValue() != cpus*1000 {
		t.Errorf("%s: cpu %s, want %d whole CPUs", c.Name, got.String(), cpus)
	}
}

// TestBenchScripts runs the pod scripts with stand-ins for tickstack-bench and
// tickstack-bench-upload: the runner gets the spec, its CPUs and the peer, LD_PRELOAD is dropped,
// and the uploader gets the runner's exit code.
func TestBenchScripts(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	standIn := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	standIn("tickstack-bench", `echo "bench $* preload=${LD_PRELOAD:-none}" >> "$LOG"; exit 3`+"\n")
	standIn("tickstack-bench-upload", `echo "upload $*" >> "$LOG"`+"\n")
	results := filepath.Join(dir, "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	run := func(script string, env ...string) string {
		t.Helper()
		if err := os.WriteFile(log, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		script = strings.ReplaceAll(script, benchResultsDir+"/", results+"/")
		script = strings.ReplaceAll(script, "--work-dir="+benchResultsDir, "--work-dir="+results)
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + log, "LD_PRELOAD=/opt/tickstack/lib/libtickstack.so",
			"TSB_SPEC={\"pingPong\":{}}", "RESULTS_CONFIGMAP=cm-1", "POD_NAMESPACE=ns", "POD_IP=198.18.0.7"}, env...)
		// The stand-in runner exits 3; the reflector's exec passes that on, the uploader's does not.
		if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 3 {
			t.Fatalf("script: %v\n%s", err, out)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := run(runnerScript, "TSB_PEER=198.18.0.7")
	for _, want := range []string{"--role=client", "--cpus=", "--peer=198.18.0.7", "--spec=" + results + "/spec.json", "--output=" + results + "/results.json",
		"preload=none", "upload --file=" + results + "/results.json --configmap=cm-1 --namespace=ns --exit-code=3"} {
		if !strings.Contains(got, want) {
			t.Errorf("runner script: %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "--cpus= ") {
		t.Errorf("runner script passed no CPUs: %q", got)
	}
	if spec, err := os.ReadFile(filepath.Join(results, "spec.json")); err != nil || string(spec) != `{"pingPong":{}}` {
		t.Errorf("spec file %q: %v", spec, err)
	}
	got = run(runnerScript, `TSB_SPEC={"jitter":{"cpus":"pod"}}`)
	if strings.Contains(got, "--peer") {
		t.Errorf("jitter-only runner got a peer: %q", got)
	}
	cpus := ""
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				cpus = strings.TrimSpace(v)
			}
		}
	}
	// The spec goes to the runner as written; jitter.cpus "pod" is resolved by tickstack-bench from
	// --cpus, the container's CPUs.
	if spec, err := os.ReadFile(filepath.Join(results, "spec.json")); err != nil || string(spec) != `{"jitter":{"cpus":"pod"}}` {
		t.Errorf("jitter cpus pod: spec file %q, want the spec as written: %v", spec, err)
	}
	if !strings.Contains(got, "--cpus="+cpus+" ") {
		t.Errorf("runner script: %q lacks the container's CPUs --cpus=%s", got, cpus)
	}
	got = run(reflectorScript)
	if !strings.Contains(got, "--role=server --listen=198.18.0.7") || !strings.Contains(got, "--once") || strings.Contains(got, "upload") || strings.Contains(got, "--data-interface") {
		t.Errorf("reflector script: %q", got)
	}
	// The data interface is passed only when the pod has it (lo stands in for lat0).
	if got := run(reflectorScript, "TSB_DATA_INTERFACE=lo"); !strings.Contains(got, "--data-interface=lo") {
		t.Errorf("reflector script with its data interface: %q", got)
	}
	if got := run(reflectorScript, "TSB_DATA_INTERFACE=tsnosuch0"); strings.Contains(got, "--data-interface") {
		t.Errorf("reflector script passed an interface the pod lacks: %q", got)
	}
	if got := run(runnerScript, "TSB_PEER=198.18.0.9", "TSB_PEER_TIMEOUT=10m"); !strings.Contains(got, "--peer=198.18.0.9 --peer-timeout=10m") {
		t.Errorf("two-pods runner script: %q", got)
	}
}

// TestBenchPodsPassThePodWebhook runs the pod webhook's mutation on the pods a bypass benchmark's
// Job makes: they are Guaranteed with whole CPUs, so the webhook accepts them, injects the bypass
// library into the runner container, and keeps them on the profile's nodes.
func TestBenchPodsPassThePodWebhook(t *testing.T) {
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "trading"}}
	b.Spec.Target.Profile = "md"
	b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
	b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods}
	b.Spec.Suites.PingPong = &tsv1.PingPongSpec{}
	in := BenchJobInput{Benchmark: b, Run: 1, Node: "worker-1", Profile: "md", Image: "img:1", ReflectorAddress: "198.18.9.9"}
	job, err := BuildBenchJob(in)
	if err != nil {
		t.Fatal(err)
	}
	profile := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "md"}, Spec: tsv1.LatencyProfileSpec{
		NICs: []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth1"}}, Acceleration: tsv1.AccelerationBypass}}}}
	pod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	if pod.Labels[tsv1.ProfileLabel] != "md" {
		t.Fatalf("pod labels %v: not opted in to the pod webhook", pod.Labels)
	}
	if err := tswebhook.MutatePod(pod, profile, tswebhook.PodOptions{DataplaneImage: "dp:1", ResourcePrefix: tsv1.DefaultResourcePrefix}); err != nil {
		t.Fatalf("the pod webhook refuses the benchmark pod: %v", err)
	}
	runner := pod.Spec.Containers[0]
	if env(runner, "LD_PRELOAD") == "" {
		t.Errorf("the webhook did not inject the bypass library into %s: %+v", runner.Name, runner.Env)
	}
	if sc := runner.SecurityContext; sc == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_NICE", "IPC_LOCK"}) ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("the bypass runner's security context %+v: want ALL dropped, only SYS_NICE and IPC_LOCK (tickstack-xdpd attaches XDP and creates the AF_XDP sockets)", sc)
	}
	if c := runner.Command; len(c) != 6 || c[0] != "/usr/bin/env" || c[1] != "-u" || c[2] != "LD_PRELOAD" || !strings.Contains(c[5], "unset LD_PRELOAD") {
		t.Errorf("the pod command %q keeps the injected LD_PRELOAD for the kernel stack's rows", c)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Values[0] != "worker-1" {
		t.Errorf("the pod is no longer pinned to its node: %+v", terms)
	}
}

// TestSharedReflectorPassesThePodWebhook: a TwoPods reflector on the shared CPUs (no CPU request)
// is accepted by the pod webhook, gets the profile's network, and its injected init container asks
// for no CPU, so the pod needs none of the node's allocatable CPU.
func TestSharedReflectorPassesThePodWebhook(t *testing.T) {
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "trading"}}
	b.Spec.Target.Profile = "md"
	b.Spec.Stacks = []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass}
	b.Spec.Placement = &tsv1.BenchmarkPlacement{Mode: tsv1.PlacementTwoPods, ReflectorCPUs: ptr.To[int32](0)}
	b.Spec.Suites.PingPong = &tsv1.PingPongSpec{}
	job, err := BuildReflectorJob(BenchJobInput{Benchmark: b, Run: 1, Node: "worker-1", Profile: "md", Image: "img:1"})
	if err != nil {
		t.Fatal(err)
	}
	profile := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "md"}, Spec: tsv1.LatencyProfileSpec{
		NICs: []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{InterfaceNames: []string{"eth1"}}, Acceleration: tsv1.AccelerationBypass,
			Network: &tsv1.NICNetwork{Type: tsv1.NetworkMacvlan}}}}}
	pod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	if err := tswebhook.MutatePod(pod, profile, tswebhook.PodOptions{DataplaneImage: "dp:1", ResourcePrefix: tsv1.DefaultResourcePrefix, NetworkNamespace: "ops"}); err != nil {
		t.Fatalf("the pod webhook refuses the shared reflector: %v", err)
	}
	if got := pod.Annotations["k8s.v1.cni.cncf.io/networks"]; got != "ops/md-md@lat0" {
		t.Errorf("networks %q", got)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			t.Errorf("container %s asks for CPU: %+v", c.Name, c.Resources)
		}
	}
}

func TestFitResults(t *testing.T) {
	res := judgetest.SampleResults("n", map[tsv1.Stack]int64{tsv1.StackKernel: 10000})
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	one := len(raw) + len("null") // no comparisons: a kernel-only table
	node := func(name string, judged bool) tsv1.BenchmarkNodeStatus {
		n := tsv1.BenchmarkNodeStatus{Node: name, Job: "job-" + name, Phase: tsv1.NodeRunning}
		if judged {
			n.Phase, n.Results = tsv1.NodeCompleted, res.DeepCopy()
			n.Verdict = &tsv1.Verdict{Result: tsv1.VerdictPassed, Reasons: []tsv1.VerdictCheck{{Name: "pingPong/p99", Result: tsv1.VerdictPassed, Message: "within 40us"}}}
		}
		return n
	}
	where := func(b *tsv1.LatencyBenchmark) string {
		var out []string
		for _, n := range b.Status.Nodes {
			switch {
			case n.Results != nil && n.ResultsConfigMap == "":
				out = append(out, n.Node+":status")
			case n.Results == nil && n.ResultsConfigMap == n.Job:
				if n.Verdict == nil || n.Verdict.Result != tsv1.VerdictPassed || len(n.Verdict.Reasons) != 0 {
					t.Errorf("%s moved out: verdict %+v, want its result alone", n.Node, n.Verdict)
				}
				out = append(out, n.Node+":configmap")
			case n.Results == nil && n.ResultsConfigMap == "":
				out = append(out, n.Node+":none")
			default:
				out = append(out, n.Node+":both")
			}
		}
		return strings.Join(out, " ")
	}
	b := &tsv1.LatencyBenchmark{}
	b.Status.Nodes = []tsv1.BenchmarkNodeStatus{node("a", false), node("b", true), node("c", true), node("d", true)}
	fitResults(b, 2*one)
	if got, want := where(b), "a:none b:status c:status d:configmap"; got != want {
		t.Fatalf("two nodes' share: %s, want %s", got, want)
	}
	// a is judged late: it takes its place in order, c's tables move out, d's stay out.
	b.Status.Nodes[0] = node("a", true)
	fitResults(b, 2*one)
	if got, want := where(b), "a:status b:status c:configmap d:configmap"; got != want {
		t.Fatalf("after a's verdict: %s, want %s", got, want)
	}
	fitResults(b, 100*one)
	if got, want := where(b), "a:status b:status c:configmap d:configmap"; got != want {
		t.Fatalf("tables once moved out stay out: %s, want %s", got, want)
	}
}

// TestValidatedLabel: a node that passed for a profile is validated for it, one that failed is not;
// a pass without a profile, an inconclusive or a running node leaves the label as it is.
func TestValidatedLabel(t *testing.T) {
	for _, tc := range []struct {
		n     tsv1.BenchmarkNodeStatus
		value string
		keep  bool
	}{
		{func() tsv1.BenchmarkNodeStatus { n := judgedNode("a", tsv1.VerdictPassed); n.Profile = "p"; return n }(), "p", false},
		{judgedNode("a", tsv1.VerdictPassed), "", true}, // no profile to be validated for
		{judgedNode("a", tsv1.VerdictFailed), "", false},
		{judgedNode("a", tsv1.VerdictInconclusive), "", true},
		{tsv1.BenchmarkNodeStatus{Node: "a", Phase: tsv1.NodeRunning}, "", true},
	} {
		if v, keep := wantValidatedLabel(tc.n); v != tc.value || keep != tc.keep {
			t.Errorf("%s/%v: got (%q, %v), want (%q, %v)", tc.n.Phase, nodeVerdict(tc.n), v, keep, tc.value, tc.keep)
		}
	}
}
