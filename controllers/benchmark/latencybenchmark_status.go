package benchmark

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// Run reasons recorded in status.runReason.
const (
	RunReasonCreated     = "Created"
	RunReasonSpecChanged = "SpecChanged"
	RunReasonRerun       = "Rerun"
	RunReasonSchedule    = "Schedule"
)

// benchJobFacts is what the phases learned about one node's Job and results ConfigMap.
type benchJobFacts struct {
	// jobFound: the Job exists.
	jobFound bool
	// jobActive: a pod of the Job runs.
	jobActive bool
	// jobSucceeded / jobFailed: the Job's Complete or Failed condition is True.
	jobSucceeded, jobFailed bool
	// jobMessage is the Failed condition's reason and message.
	jobMessage string
	// results is the ConfigMap's results document (empty: not uploaded yet).
	results string
	// uploadError is what the uploader reported instead of results.
	uploadError string
	// exitCode is the runner's exit code as the uploader recorded it.
	exitCode string
	// t2tBaseline is suites.tickToTrade.baseline (nil: none), and baseline the LatencyBenchmark it
	// names as read when the results arrived (nil: it does not exist).
	t2tBaseline *tsv1.TickToTradeBaseline
	baseline    *tsv1.LatencyBenchmark
}

// judgeNode computes one node's status from its previous status and the facts of its Job. It is
// pure. A node already judged in this run keeps its outcome: results of a run never change.
func judgeNode(prev tsv1.BenchmarkNodeStatus, f benchJobFacts, th tsv1.Thresholds, now time.Time) tsv1.BenchmarkNodeStatus {
	out := prev
	if prev.Phase == tsv1.NodeCompleted || prev.Phase == tsv1.NodeFailed {
		return out
	}
	done := metav1.NewTime(now)
	fail := func(msg string) tsv1.BenchmarkNodeStatus {
		out.Phase, out.Message, out.CompletionTime = tsv1.NodeFailed, msg, &done
		out.Verdict = &tsv1.Verdict{Result: tsv1.VerdictFailed, Reasons: []tsv1.VerdictCheck{{Name: "job", Result: tsv1.VerdictFailed, Message: msg}}}
		return out
	}
	switch {
	case f.results != "":
		res, err := judge.UnmarshalResults([]byte(f.results))
		if err == nil {
			err = checkResults(res)
		}
		if err != nil {
			return fail(fmt.Sprintf("results of Job %s are unreadable: %v", prev.Job, err))
		}
		v := judge.Evaluate(res, th)
		out.Results, out.Verdict, out.Comparisons = res, &v, judge.CompareStacks(res)
		if f.t2tBaseline != nil {
			out.TickToTradeBaseline = judge.CompareTickToTradeBaseline(*f.t2tBaseline, prev.Node, f.baseline, res)
		}
		out.Phase, out.CompletionTime = tsv1.NodeCompleted, &done
		out.Message = verdictMessage(v)
		if f.exitCode != "" && f.exitCode != "0" {
			out.Message += fmt.Sprintf(" (runner exit code %s)", f.exitCode)
		}
		return out
	case f.uploadError != "":
		return fail(fmt.Sprintf("Job %s produced no results: %s", prev.Job, f.uploadError))
	case f.jobFailed:
		return fail(fmt.Sprintf("Job %s failed without results: %s; see kubectl logs job/%s", prev.Job, f.jobMessage, prev.Job))
	case f.jobSucceeded:
		return fail(fmt.Sprintf("Job %s completed but uploaded no results: check that the bench image has tickstack-bench-upload; see kubectl logs job/%s", prev.Job, prev.Job))
	case f.jobActive:
		out.Phase, out.Message = tsv1.NodeRunning, "measuring"
	case f.jobFound:
		out.Phase, out.Message = tsv1.NodePending, "waiting for the benchmark pod to start"
	default:
		out.Phase, out.Message = tsv1.NodePending, "creating the Job"
	}
	return out
}

// checkResults refuses a document the status schema would refuse (enums, required times), so one
// malformed upload fails its node instead of blocking every status update of the benchmark.
func checkResults(r *tsv1.BenchmarkResults) error {
	if r.StartTime.IsZero() || r.CompletionTime.IsZero() {
		return fmt.Errorf("startTime and completionTime are required")
	}
	proto := func(p tsv1.Protocol) error {
		switch p {
		case tsv1.ProtocolUDP, tsv1.ProtocolUDPMulticast, tsv1.ProtocolTCP:
			return nil
		}
		return fmt.Errorf("protocol %q is not udp, udpMulticast or tcp", p)
	}
	var errs []error
	for _, st := range r.Stacks {
		if st.Stack != tsv1.StackKernel && st.Stack != tsv1.StackBypass {
			errs = append(errs, fmt.Errorf("stack %q is not kernel or bypass", st.Stack))
		}
		if p := st.PingPong; p != nil {
			for _, row := range p.Rows {
				errs = append(errs, proto(row.Protocol))
			}
			if p.Curve != nil {
				errs = append(errs, proto(p.Curve.Protocol))
			}
		}
		if rs := st.RateSweep; rs != nil {
			for _, row := range rs.Rows {
				errs = append(errs, proto(row.Protocol))
			}
			for _, m := range rs.MaxSustained {
				errs = append(errs, proto(m.Protocol))
			}
		}
		if m := st.Microburst; m != nil {
			errs = append(errs, proto(m.Protocol))
		}
		if m := st.MixedBurst; m != nil {
			errs = append(errs, proto(m.Protocol))
		}
		if t := st.TickToTrade; t != nil {
			if t.Mix != tsv1.TickMixSteady && t.Mix != tsv1.TickMixSeed003 {
				errs = append(errs, fmt.Errorf("tickToTrade mix %q is not steady or seed003", t.Mix))
			}
			for _, row := range t.Rows {
				for _, p := range []tsv1.Stack{row.MarketDataPath, row.OrderPath} {
					if p != "" && p != tsv1.StackKernel && p != tsv1.StackBypass {
						errs = append(errs, fmt.Errorf("tickToTrade path %q is not kernel or bypass", p))
					}
				}
			}
		}
	}
	if j := r.Jitter; j != nil {
		for _, row := range j.Rows {
			if row.Tool != tsv1.JitterOslat && row.Tool != tsv1.JitterCyclictest {
				errs = append(errs, fmt.Errorf("jitter tool %q is not oslat or cyclictest", row.Tool))
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// verdictMessage sums a verdict up in one line: the result and the first reason that decided it.
func verdictMessage(v tsv1.Verdict) string {
	if len(v.Reasons) == 0 || v.Result == tsv1.VerdictPassed {
		return fmt.Sprintf("%s: %d checks", v.Result, len(v.Reasons))
	}
	return fmt.Sprintf("%s: %s: %s", v.Result, v.Reasons[0].Name, v.Reasons[0].Message)
}

// nodeVerdict is a judged node's verdict, or "" while it runs.
func nodeVerdict(n tsv1.BenchmarkNodeStatus) tsv1.VerdictResult {
	if n.Phase != tsv1.NodeCompleted && n.Phase != tsv1.NodeFailed {
		return ""
	}
	if n.Verdict == nil {
		return tsv1.VerdictFailed
	}
	return n.Verdict.Result
}

// summarize computes the run's verdict and counts from its nodes: Failed if any node failed,
// else Inconclusive if any was, else Passed; "" while a node runs or when there are none.
func summarize(nodes []tsv1.BenchmarkNodeStatus) (verdict tsv1.VerdictResult, passed, total int32, done bool) {
	total = int32(len(nodes))
	done = total > 0
	anyFailed, anyInconclusive := false, false
	for _, n := range nodes {
		switch nodeVerdict(n) {
		case "":
			done = false
		case tsv1.VerdictPassed:
			passed++
		case tsv1.VerdictFailed:
			anyFailed = true
		default:
			anyInconclusive = true
		}
	}
	switch {
	case !done:
		return "", passed, total, false
	case anyFailed:
		return tsv1.VerdictFailed, passed, total, true
	case anyInconclusive:
		return tsv1.VerdictInconclusive, passed, total, true
	}
	return tsv1.VerdictPassed, passed, total, true
}

// benchmarkFacts is what one reconcile learned, from which the status is computed.
type benchmarkFacts struct {
	// invalid is why the spec cannot run ("" when valid).
	invalid string
	// now is the reconcile's time.
	now time.Time
	// next is the next scheduled run (nil without a schedule).
	next *time.Time
	// namespace is namespaceOptedIn when the manager may create the run's objects in the
	// benchmark's namespace, else why not (the NamespaceOptedIn condition's message); "" when not
	// asked in this reconcile (the condition stays as it was).
	namespace string
	// recheck is when to look again (nil: no need): at the namespace, at results held for their
	// batch.
	recheck *time.Time
}

// recheckAt makes recheck at the latest t.
func (f *benchmarkFacts) recheckAt(t time.Time) {
	if f.recheck == nil || t.Before(*f.recheck) {
		f.recheck = &t
	}
}

// setBenchmarkStatus writes the summary fields and conditions from the nodes and the facts. It is
// pure; ok says the reconcile succeeded (observedGeneration is only moved then).
func setBenchmarkStatus(b *tsv1.LatencyBenchmark, f *benchmarkFacts, ok bool) {
	st := &b.Status
	gen := b.Generation
	if f.next != nil {
		t := metav1.NewTime(*f.next)
		st.NextScheduleTime = &t
	} else {
		st.NextScheduleTime = nil
	}
	if f.invalid != "" {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tsv1.BenchmarkValid, Status: metav1.ConditionFalse, Reason: tsv1.ReasonInvalidSpec, Message: f.invalid, ObservedGeneration: gen})
	} else {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tsv1.BenchmarkValid, Status: metav1.ConditionTrue, Reason: tsv1.ReasonSpecValid, Message: "the spec is valid", ObservedGeneration: gen})
	}
	switch f.namespace {
	case "":
	case namespaceOptedIn:
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tsv1.BenchmarkNamespaceOptedIn, Status: metav1.ConditionTrue, Reason: tsv1.ReasonNamespaceOptedIn,
			Message: fmt.Sprintf("the manager may create the benchmark's Jobs in namespace %s", b.Namespace), ObservedGeneration: gen})
	default:
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tsv1.BenchmarkNamespaceOptedIn, Status: metav1.ConditionFalse, Reason: tsv1.ReasonNamespaceNotOptedIn,
			Message: f.namespace, ObservedGeneration: gen})
	}
	verdict, passed, total, done := summarize(st.Nodes)
	st.Verdict, st.NodesPassed, st.NodesTotal = verdict, passed, total
	if done && st.CompletionTime == nil {
		t := metav1.NewTime(f.now)
		st.CompletionTime = &t
	}
	if !done {
		st.CompletionTime = nil
	}
	complete := metav1.Condition{Type: tsv1.BenchmarkComplete, ObservedGeneration: gen}
	passedC := metav1.Condition{Type: tsv1.BenchmarkPassed, ObservedGeneration: gen}
	switch {
	case st.Run == 0 && f.invalid != "":
		complete.Status, complete.Reason, complete.Message = metav1.ConditionFalse, tsv1.ReasonInvalidSpec, "the spec is invalid: see the Valid condition"
		passedC.Status, passedC.Reason, passedC.Message = metav1.ConditionFalse, tsv1.ReasonInvalidSpec, "nothing was measured"
	case total == 0:
		complete.Status, complete.Reason, complete.Message = metav1.ConditionFalse, tsv1.ReasonNoTargetNodes, "the target matches no node"
		passedC.Status, passedC.Reason, passedC.Message = metav1.ConditionFalse, tsv1.ReasonNoTargetNodes, "no node was measured"
	case !done:
		complete.Status, complete.Reason = metav1.ConditionFalse, tsv1.ReasonRunning
		complete.Message = fmt.Sprintf("run %d: %d of %d nodes judged", st.Run, judged(st.Nodes), total)
		passedC.Status, passedC.Reason, passedC.Message = metav1.ConditionUnknown, tsv1.ReasonRunning, fmt.Sprintf("run %d is measuring", st.Run)
	default:
		complete.Status, complete.Reason = metav1.ConditionTrue, tsv1.ReasonAllNodesDone
		complete.Message = fmt.Sprintf("run %d: all %d nodes judged", st.Run, total)
		passedC.Status = metav1.ConditionFalse
		switch verdict {
		case tsv1.VerdictPassed:
			passedC.Status, passedC.Reason, passedC.Message = metav1.ConditionTrue, tsv1.ReasonAllPassed, fmt.Sprintf("all %d nodes passed", total)
		case tsv1.VerdictFailed:
			passedC.Reason, passedC.Message = tsv1.ReasonNodesFailed, fmt.Sprintf("%d of %d nodes passed; failed: %s", passed, total, nodesWith(st.Nodes, tsv1.VerdictFailed))
		default:
			passedC.Reason, passedC.Message = tsv1.ReasonNodesInconclusive, fmt.Sprintf("%d of %d nodes passed; inconclusive: %s", passed, total, nodesWith(st.Nodes, tsv1.VerdictInconclusive))
		}
	}
	apimeta.SetStatusCondition(&st.Conditions, complete)
	apimeta.SetStatusCondition(&st.Conditions, passedC)
	if ok {
		st.ObservedGeneration = gen
	}
}

func judged(nodes []tsv1.BenchmarkNodeStatus) int {
	n := 0
	for _, s := range nodes {
		if nodeVerdict(s) != "" {
			n++
		}
	}
	return n
}

func nodesWith(nodes []tsv1.BenchmarkNodeStatus, v tsv1.VerdictResult) string {
	out := ""
	for _, n := range nodes {
		if nodeVerdict(n) == v {
			if out != "" {
				out += ", "
			}
			out += n.Node
		}
	}
	return out
}

// runDecision says whether a new run must start now, why, and when the schedule fires next. It is
// pure. A run is due when the benchmark never ran, its spec changed since the current run, the
// rerun annotation has a new value, or the schedule's next time after the current run's start has
// passed; a scheduled run waits for the current run to finish, the others replace it.
func runDecision(b *tsv1.LatencyBenchmark, sched cron.Schedule, now time.Time) (reason string, next *time.Time) {
	st := &b.Status
	if sched != nil {
		base := b.CreationTimestamp.Time
		if st.StartTime != nil {
			base = st.StartTime.Time
		}
		n := sched.Next(base.UTC())
		next = &n
	}
	_, _, _, done := summarize(st.Nodes)
	switch {
	case st.Run == 0:
		reason = RunReasonCreated
	case b.Annotations[tsv1.RerunAnnotation] != "" && b.Annotations[tsv1.RerunAnnotation] != st.Rerun:
		reason = RunReasonRerun
	case b.Generation != st.RunGeneration:
		reason = RunReasonSpecChanged
	case next != nil && !now.Before(*next) && (done || len(st.Nodes) == 0):
		reason = RunReasonSchedule
	}
	if reason != "" && sched != nil {
		n := sched.Next(now.UTC())
		next = &n
	}
	return reason, next
}

// wantValidatedLabel says what a judged node's tickstack.io/benchmark-passed annotation (and so
// its tickstack.io/validated label) becomes: the profile when it passed, removed when it failed,
// unchanged (keep=true) when inconclusive or when the node has no profile to be validated for.
func wantValidatedLabel(n tsv1.BenchmarkNodeStatus) (value string, keep bool) {
	switch nodeVerdict(n) {
	case tsv1.VerdictPassed:
		if n.Profile == "" {
			return "", true
		}
		return n.Profile, false
	case tsv1.VerdictFailed:
		return "", false
	}
	return "", true
}

// StatusResultsBudget is the share of a benchmark's status given to its nodes' tables and their
// kernel vs bypass comparisons. An object is limited to about 1.5 MiB, one node's default pingPong
// tables on both stacks take 5 to tens of KiB and their comparisons about 2 KiB, while the rest of a
// node's entry (phase, verdict, message) is about 300 bytes: so a run over a fleet keeps the first
// nodes' tables in the status and the rest in their results ConfigMaps, and a run over a couple of
// thousand nodes still fits.
const StatusResultsBudget = 256 << 10

// fitResults keeps the nodes' results and comparisons in the status, in node order, while they fit
// within budget bytes of JSON; the nodes after that keep their results in the run's results
// ConfigMap (the node's Job name), which resultsConfigMap then names, and their comparisons and
// verdict reasons are left out (they follow from the results and the thresholds: the CLI shows
// them again); the verdict's result and the node's message stay. A node's results never
// change within a run and a node once moved out stays out; a node judged late takes its place in
// order, which may move out a later node's tables.
func fitResults(b *tsv1.LatencyBenchmark, budget int) {
	used := 0
	for i := range b.Status.Nodes {
		n := &b.Status.Nodes[i]
		if n.Results == nil {
			continue
		}
		res, err1 := json.Marshal(n.Results)
		cmp, err2 := json.Marshal(n.Comparisons)
		if err1 == nil && err2 == nil && used+len(res)+len(cmp) <= budget {
			used += len(res) + len(cmp)
			continue
		}
		n.Results, n.Comparisons, n.ResultsConfigMap = nil, nil, n.Job
		if n.Verdict != nil {
			n.Verdict = &tsv1.Verdict{Result: n.Verdict.Result} // its reasons follow from the results
		}
	}
}
