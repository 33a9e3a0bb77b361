package benchmark

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/phase"
	"github.com/tickstack/tickstack/internal/render"
)

// reconcileValidation checks what the CRD's rules cannot: the suites and thresholds as the
// runner will read them, and the cron schedule.
func (r *LatencyBenchmarkReconciler) reconcileValidation(_ context.Context, s *benchScope) error {
	if problems := judge.SpecProblems(s.b); len(problems) > 0 {
		s.facts.invalid = strings.Join(problems, "; ")
		return phase.ErrStop
	}
	return nil
}

// reconcileRun starts a new run when one is due: it resolves the target nodes and resets the
// per-node status.
func (r *LatencyBenchmarkReconciler) reconcileRun(ctx context.Context, s *benchScope) error {
	b := s.b
	schedule := scheduleOf(b)
	reason, next := runDecision(b, schedule, s.now)
	s.facts.next = next
	if reason == "" {
		return r.addJoinedNodes(ctx, s)
	}
	nodes, missing, err := r.targetNodes(ctx, b)
	if err != nil {
		return err
	}
	if n := len(nodes) + len(missing); n > tsv1.MaxBenchmarkNodes {
		// Refused before anything starts: the status could not hold the run.
		s.facts.invalid = fmt.Sprintf("spec.target selects %d nodes; one LatencyBenchmark measures at most %d (its status holds an entry per node): "+
			"split the fleet into several LatencyBenchmarks by profile or spec.target.nodeSelector", n, tsv1.MaxBenchmarkNodes)
		return phase.ErrStop
	}
	st := &b.Status
	st.Run++
	st.RunGeneration = b.Generation
	st.RunReason = reason
	st.Rerun = b.Annotations[tsv1.RerunAnnotation]
	start := metav1.NewTime(s.now)
	st.StartTime, st.CompletionTime = &start, nil
	if reason == RunReasonSchedule {
		st.LastScheduleTime = &start
	}
	st.Nodes = nil
	phase, msg := waitingOrPending(b)
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, tsv1.BenchmarkNodeStatus{
			Node: n.Name, Profile: n.Labels[tsv1.ProfileLabel], Job: BenchJobName(b.Name, st.Run, n.Name),
			Phase: phase, Message: msg,
		})
	}
	for _, name := range missing {
		st.Nodes = append(st.Nodes, refusedNode(name, fmt.Sprintf("node %s does not exist: fix spec.target.nodeNames", name), s.now))
	}
	sort.Slice(st.Nodes, func(i, j int) bool { return st.Nodes[i].Node < st.Nodes[j].Node })
	s.newRun = reason
	r.event(b, corev1.EventTypeNormal, "RunStarted", "Start", "run %d started (%s) on %d nodes", st.Run, reason, len(st.Nodes))
	return nil
}

// refusedNode is the status of a target node that is not measured (msg says why and the fix):
// Failed, with no Job.
func refusedNode(node, msg string, now time.Time) tsv1.BenchmarkNodeStatus {
	done := metav1.NewTime(now)
	return tsv1.BenchmarkNodeStatus{Node: node, Phase: tsv1.NodeFailed, Message: msg, CompletionTime: &done,
		Verdict: &tsv1.Verdict{Result: tsv1.VerdictFailed, Reasons: []tsv1.VerdictCheck{{Name: "node", Result: tsv1.VerdictFailed, Message: msg}}}}
}

// scheduleOf is the benchmark's parsed schedule, nil without one (validation ran before).
func scheduleOf(b *tsv1.LatencyBenchmark) cron.Schedule {
	if b.Spec.Schedule == "" {
		return nil
	}
	sched, err := judge.ParseSchedule(b.Spec.Schedule)
	if err != nil {
		return nil
	}
	return sched
}

// copyRBAC copies a Role's rules or a RoleBinding's subjects and roleRef.
func copyRBAC(have, want client.Object) {
	switch h := have.(type) {
	case *rbacv1.Role:
		h.Rules = want.(*rbacv1.Role).Rules
	case *rbacv1.RoleBinding:
		w := want.(*rbacv1.RoleBinding)
		h.Subjects = w.Subjects
		if h.RoleRef.Name == "" {
			h.RoleRef = w.RoleRef
		}
	}
}

// addJoinedNodes adds to the current run the target nodes that joined since it started (a node
// where the profile became applied, a node that got the selected labels), so they are measured
// without waiting for the next run. Nodes that left the target keep their results.
func (r *LatencyBenchmarkReconciler) addJoinedNodes(ctx context.Context, s *benchScope) error {
	b := s.b
	if b.Status.Run == 0 {
		return nil
	}
	nodes, _, err := r.targetNodes(ctx, b)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range b.Status.Nodes {
		have[n.Node] = true
	}
	added := 0
	for _, n := range nodes {
		if have[n.Name] {
			continue
		}
		if len(b.Status.Nodes) >= tsv1.MaxBenchmarkNodes {
			r.event(b, corev1.EventTypeWarning, "NodeNotMeasured", "Add", "run %d: node %s joined the target, which already has %d nodes, the most one LatencyBenchmark measures: split the fleet into several LatencyBenchmarks", b.Status.Run, n.Name, tsv1.MaxBenchmarkNodes)
			continue
		}
		phase, msg := waitingOrPending(b)
		b.Status.Nodes = append(b.Status.Nodes, tsv1.BenchmarkNodeStatus{
			Node: n.Name, Profile: n.Labels[tsv1.ProfileLabel], Job: BenchJobName(b.Name, b.Status.Run, n.Name),
			Phase: phase, Message: msg + " (joined the target during the run)",
		})
		r.event(b, corev1.EventTypeNormal, "NodeJoined", "Add", "run %d: node %s joined the target", b.Status.Run, n.Name)
		added++
	}
	if added > 0 {
		sort.Slice(b.Status.Nodes, func(i, j int) bool { return b.Status.Nodes[i].Node < b.Status.Nodes[j].Node })
	}
	return nil
}

// targetNodes lists the nodes the target picks, and names of nodeNames that do not exist. The
// listed nodes are the cache's own objects (every reconcile lists them, a fleet has thousands):
// read them, never change them.
func (r *LatencyBenchmarkReconciler) targetNodes(ctx context.Context, b *tsv1.LatencyBenchmark) ([]corev1.Node, []string, error) {
	t := b.Spec.Target
	var list corev1.NodeList
	switch {
	case t.Profile != "":
		req, err := labels.NewRequirement(tsv1.ProfileLabel, selection.Equals, []string{t.Profile})
		if err != nil {
			return nil, nil, fmt.Errorf("spec.target.profile %q is not a label value: %w", t.Profile, err)
		}
		if err := r.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, fmt.Errorf("listing the nodes of profile %s: %w", t.Profile, err)
		}
		return list.Items, nil, nil
	case t.NodeSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(t.NodeSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.target.nodeSelector: %w", err)
		}
		if err := r.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, fmt.Errorf("listing the target nodes: %w", err)
		}
		return list.Items, nil, nil
	}
	var nodes []corev1.Node
	var missing []string
	for _, name := range t.NodeNames {
		n := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, name)
				continue
			}
			return nil, nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		nodes = append(nodes, *n)
	}
	return nodes, missing, nil
}

// reconcileAccess keeps the service account, the Role limited to this run's results ConfigMaps,
// and its RoleBinding, while the run still creates Jobs. They are read uncached: the manager may
// not list service accounts, Roles or RoleBindings anywhere (latencybenchmark_namespace.go); so
// once made sure of for a run and its ConfigMaps, they are read again only after
// namespaceRecheck, not on every reconcile of a run's waves.
func (r *LatencyBenchmarkReconciler) reconcileAccess(ctx context.Context, s *benchScope) error {
	b := s.b
	if !createsObjects(b) {
		return nil
	}
	var cms []string
	for _, n := range b.Status.Nodes {
		if n.Job != "" {
			cms = append(cms, n.Job)
		}
	}
	if r.mem.accessLately(b, len(cms), s.now, namespaceRecheck) {
		return nil
	}
	sa, role, rb := buildBenchAccess(b, cms)
	for _, want := range []client.Object{sa, role, rb} {
		if err := r.apply(ctx, want); err != nil {
			return r.forbidden(ctx, s, err)
		}
	}
	r.mem.rememberAccess(b, len(cms), s.now)
	return nil
}

// apply creates an owned object or patches its labels, owner references and rules/subjects to
// what is wanted.
func (r *LatencyBenchmarkReconciler) apply(ctx context.Context, want client.Object) error {
	have := want.DeepCopyObject().(client.Object)
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, want.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", want, want.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %T %s: %w", want, want.GetName(), err)
	}
	orig := have.DeepCopyObject().(client.Object)
	copyRBAC(have, want)
	have.SetLabels(want.GetLabels())
	have.SetOwnerReferences(want.GetOwnerReferences())
	if equality.Semantic.DeepEqual(orig, have) {
		return nil
	}
	if err := r.Client.Patch(ctx, have, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("patching %T %s: %w", want, want.GetName(), err)
	}
	return nil
}

// reconcileJobs creates each node's results ConfigMap and Job, and deletes those of older runs.
// A node whose Job the cache shows is left alone (its ConfigMap was created before it): a
// reconcile of a wave does not ask the API server again for every measuring node's objects.
func (r *LatencyBenchmarkReconciler) reconcileJobs(ctx context.Context, s *benchScope) error {
	b := s.b
	run := b.Status.Run
	if run == 0 {
		return nil
	}
	startWaiting(b)
	var create []tsv1.BenchmarkNodeStatus
	for _, n := range b.Status.Nodes {
		if n.Job == "" || n.Phase == tsv1.NodeCompleted || n.Phase == tsv1.NodeFailed || n.Phase == tsv1.NodeWaiting {
			continue
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: n.Job}, &batchv1.Job{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Job %s: %w", n.Job, err)
		}
		create = append(create, n)
	}
	if err := r.createNodeJobs(ctx, b, create); err != nil {
		return r.forbidden(ctx, s, err)
	}
	return r.deleteOldRuns(ctx, b)
}

// reconcileNextWave starts the Jobs of waiting nodes whose slots the verdicts of this reconcile
// freed (spec.maxParallel), without waiting for another event.
func (r *LatencyBenchmarkReconciler) reconcileNextWave(ctx context.Context, s *benchScope) error {
	return r.forbidden(ctx, s, r.createNodeJobs(ctx, s.b, startWaiting(s.b)))
}

// jobCreators is how many nodes' objects a reconcile creates (or nodes it annotates) at once: a
// wave of a fleet's benchmark starts in a few round trips' time, not one node after the other.
const jobCreators = 32

// createNodeJobs creates the objects of nodes, jobCreators at a time.
func (r *LatencyBenchmarkReconciler) createNodeJobs(ctx context.Context, b *tsv1.LatencyBenchmark, nodes []tsv1.BenchmarkNodeStatus) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobCreators)
	for _, n := range nodes {
		g.Go(func() error { return r.createNodeJob(gctx, b, n, r.Image) })
	}
	return g.Wait()
}

// startWaiting moves waiting nodes, by name, to Pending while fewer than spec.maxParallel nodes
// have a Job measuring, and returns them.
func startWaiting(b *tsv1.LatencyBenchmark) []tsv1.BenchmarkNodeStatus {
	active := 0
	for _, n := range b.Status.Nodes {
		if n.Phase == tsv1.NodePending || n.Phase == tsv1.NodeRunning {
			active++
		}
	}
	var started []tsv1.BenchmarkNodeStatus
	for i := range b.Status.Nodes {
		n := &b.Status.Nodes[i]
		if n.Phase != tsv1.NodeWaiting || (b.Spec.MaxParallel != nil && active >= int(*b.Spec.MaxParallel)) {
			continue
		}
		n.Phase, n.Message = tsv1.NodePending, "creating the Job"
		active++
		started = append(started, *n)
	}
	return started
}

// waitingOrPending is the phase a node of a new run starts in: Waiting when spec.maxParallel
// limits the run (startWaiting then starts the first wave), else Pending.
func waitingOrPending(b *tsv1.LatencyBenchmark) (tsv1.NodeRunPhase, string) {
	if b.Spec.MaxParallel != nil {
		return tsv1.NodeWaiting, fmt.Sprintf("waiting for one of spec.maxParallel %d slots", *b.Spec.MaxParallel)
	}
	return tsv1.NodePending, "creating the Job"
}

// createNodeJob creates a node's results ConfigMap, its reflector when the placement has one, and
// its Job; existing ones are kept.
func (r *LatencyBenchmarkReconciler) createNodeJob(ctx context.Context, b *tsv1.LatencyBenchmark, n tsv1.BenchmarkNodeStatus, image string) error {
	run := b.Status.Run
	in := BenchJobInput{Benchmark: b, Run: run, Node: n.Node, Profile: n.Profile, Image: image}
	if err := r.Client.Create(ctx, buildResultsConfigMap(in)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the results ConfigMap of node %s: %w", n.Node, err)
	}
	if mode, _, _, _ := placementOf(b); mode == tsv1.PlacementTwoPods && judge.RunnerSuites(b).NetworkSuites() {
		addr, err := r.reconcileReflector(ctx, in)
		if err != nil {
			return err
		}
		in.ReflectorAddress = addr
	}
	job, err := BuildBenchJob(in)
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Job of node %s: %w", n.Node, err)
		}
	} else {
		r.event(b, corev1.EventTypeNormal, "JobCreated", "Create", "run %d: Job %s measures node %s", run, job.Name, n.Node)
	}
	return nil
}

func (r *LatencyBenchmarkReconciler) deleteOldRuns(ctx context.Context, b *tsv1.LatencyBenchmark) error {
	req, err := labels.NewRequirement(tsv1.BenchmarkRunLabel, selection.NotEquals, []string{strconv.FormatInt(b.Status.Run, 10)})
	if err != nil {
		return fmt.Errorf("selecting older runs: %w", err)
	}
	own, err := labels.NewRequirement(tsv1.BenchmarkLabel, selection.Equals, []string{b.Name})
	if err != nil {
		return fmt.Errorf("selecting older runs: %w", err)
	}
	sel := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*own, *req)}
	if err := r.adoptUnlabelled(ctx, b); err != nil {
		return err
	}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(b.Namespace), sel); err != nil {
		return fmt.Errorf("listing Jobs of older runs: %w", err)
	}
	var cms corev1.ConfigMapList
	if err := r.Client.List(ctx, &cms, client.InNamespace(b.Namespace), sel); err != nil {
		return fmt.Errorf("listing ConfigMaps of older runs: %w", err)
	}
	if len(jobs.Items) == 0 && len(cms.Items) == 0 {
		// Nothing of an older run is left: its reflector Services went before its ConfigMaps, and
		// Services are listed uncached, so not on every reconcile.
		return nil
	}
	for i := range jobs.Items {
		if err := r.Client.Delete(ctx, &jobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Job %s of an older run: %w", jobs.Items[i].Name, err)
		}
	}
	if err := r.deleteOldReflectorServices(ctx, b.Namespace, sel); err != nil {
		return err
	}
	for i := range cms.Items {
		if err := r.Client.Delete(ctx, &cms.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s of an older run: %w", cms.Items[i].Name, err)
		}
	}
	return nil
}

// adoptUnlabelled labels, once per benchmark and manager start, the benchmark's results
// ConfigMaps that lack render.ManagedByLabel (created by a release before the label), so that the
// manager's cache, which holds only labelled ConfigMaps (controllers.CacheOptions), sees them;
// those of older runs it deletes, as deleteOldRuns would. One uncached list per benchmark and
// start, of metadata only, of the ConfigMaps the API server finds without the label: after an
// upgrade's first reconcile, an empty answer.
func (r *LatencyBenchmarkReconciler) adoptUnlabelled(ctx context.Context, b *tsv1.LatencyBenchmark) error {
	if r.mem.adopted(b) {
		return nil
	}
	own, err := labels.NewRequirement(tsv1.BenchmarkLabel, selection.Equals, []string{b.Name})
	if err != nil {
		return fmt.Errorf("selecting unlabelled results ConfigMaps: %w", err)
	}
	unlabelled, err := labels.NewRequirement(render.ManagedByLabel, selection.NotEquals, []string{render.ManagedBy})
	if err != nil {
		return fmt.Errorf("selecting unlabelled results ConfigMaps: %w", err)
	}
	cms := &metav1.PartialObjectMetadataList{}
	cms.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.APIReader.List(ctx, cms, client.InNamespace(b.Namespace),
		client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*own, *unlabelled)}); err != nil {
		return fmt.Errorf("listing the results ConfigMaps made before the managed-by label: %w", err)
	}
	run := strconv.FormatInt(b.Status.Run, 10)
	for i := range cms.Items {
		m := &cms.Items[i]
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if m.Labels[tsv1.BenchmarkRunLabel] != run {
			if err := r.Client.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting ConfigMap %s of an older run: %w", cm.Name, err)
			}
			continue
		}
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, render.ManagedByLabel, render.ManagedBy)))
		if err := r.Client.Patch(ctx, cm, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling results ConfigMap %s: %w", cm.Name, err)
		}
	}
	r.mem.rememberAdopted(b)
	return nil
}

// reconcileResults reads each measuring node's Job and results ConfigMap and judges the nodes
// whose results are in, in batches: while other nodes still measure, the results that came in
// wait up to ResultsBatch (from the first) for theirs, so a wave's verdicts go into one status
// write (the status of a fleet's run is hundreds of KiB, and every write stores all of it).
func (r *LatencyBenchmarkReconciler) reconcileResults(ctx context.Context, s *benchScope) error {
	b := s.b
	type done struct {
		i      int
		judged tsv1.BenchmarkNodeStatus
		f      benchJobFacts
		job    *batchv1.Job
	}
	var ready []done
	measuring := 0
	for i := range b.Status.Nodes {
		n := &b.Status.Nodes[i]
		if n.Phase == tsv1.NodeCompleted || n.Phase == tsv1.NodeFailed || n.Phase == tsv1.NodeWaiting || n.Job == "" {
			continue
		}
		measuring++
		f, job, err := r.jobFacts(ctx, b.Namespace, n.Job)
		if err != nil {
			return err
		}
		if t := b.Spec.Suites.TickToTrade; t != nil && t.Baseline != nil && f.results != "" {
			if f.baseline, err = r.readBaseline(ctx, b.Namespace, t.Baseline.Benchmark); err != nil {
				return err
			}
			f.t2tBaseline = t.Baseline
		}
		judged := judgeNode(*n, f, b.Spec.Thresholds, s.now)
		if judged.Phase != tsv1.NodeCompleted && judged.Phase != tsv1.NodeFailed {
			*n = judged
			continue
		}
		ready = append(ready, done{i, judged, f, job})
	}
	if len(ready) == 0 {
		return nil
	}
	if len(ready) < measuring {
		if until := r.mem.batchOpen(b, s.now).Add(r.resultsBatch()); s.now.Before(until) {
			s.facts.recheckAt(until)
			return nil
		}
	}
	r.mem.batchClose(b)
	for _, d := range ready {
		n := &b.Status.Nodes[d.i]
		*n = d.judged
		kind, reason := corev1.EventTypeNormal, "NodePassed"
		switch nodeVerdict(*n) {
		case tsv1.VerdictFailed:
			kind, reason = corev1.EventTypeWarning, "NodeFailed"
		case tsv1.VerdictInconclusive:
			kind, reason = corev1.EventTypeWarning, "NodeInconclusive"
		}
		r.event(b, kind, reason, "Judge", "run %d, node %s: %s", b.Status.Run, n.Node, n.Message)
		// Results are in: a reflector still waiting for a client that will not come back would hold
		// its exclusive CPUs until the deadline. A TwoPods runner Job has no reflector: it ends on
		// its own, and keeps its pod's log.
		if mode, _, _, _ := placementOf(b); d.job != nil && d.f.jobActive && mode != tsv1.PlacementTwoPods {
			if err := r.Client.Delete(ctx, d.job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting the finished Job %s: %w", d.job.Name, err)
			}
		}
		if err := r.stopReflector(ctx, b.Namespace, n.Job); err != nil {
			return err
		}
	}
	return nil
}

// resultsBatch is ResultsBatch, DefaultResultsBatch when unset.
func (r *LatencyBenchmarkReconciler) resultsBatch() time.Duration {
	if r.ResultsBatch > 0 {
		return r.ResultsBatch
	}
	return DefaultResultsBatch
}

// readBaseline reads the LatencyBenchmark a tickToTrade baseline names; nil when it does not exist.
func (r *LatencyBenchmarkReconciler) readBaseline(ctx context.Context, ns, name string) (*tsv1.LatencyBenchmark, error) {
	base := &tsv1.LatencyBenchmark{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, base); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the tickToTrade baseline %s: %w", name, err)
	}
	return base, nil
}

// jobFacts reads one node's Job and results ConfigMap.
func (r *LatencyBenchmarkReconciler) jobFacts(ctx context.Context, ns, name string) (benchJobFacts, *batchv1.Job, error) {
	var f benchJobFacts
	key := client.ObjectKey{Namespace: ns, Name: name}
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, key, job); err != nil {
		if !apierrors.IsNotFound(err) {
			return f, nil, fmt.Errorf("reading Job %s: %w", name, err)
		}
		job = nil
	} else {
		f.jobFound = true
		f.jobActive = job.Status.Active > 0
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				f.jobSucceeded = true
			case batchv1.JobFailed:
				f.jobFailed = true
				f.jobMessage = strings.TrimSpace(c.Reason + ": " + c.Message)
			}
		}
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, key, cm)
	if (apierrors.IsNotFound(err) || err == nil && cm.Data[tsv1.BenchResultsKey] == "" && cm.Data[tsv1.BenchErrorKey] == "") && (f.jobSucceeded || f.jobFailed) {
		// The Job's end may have reached the cache before the ConfigMap's update, or before the
		// ConfigMap itself when adoptUnlabelled has just labelled it: ask the API server.
		err = r.APIReader.Get(ctx, key, cm)
	}
	switch {
	case err == nil:
		f.results, f.uploadError, f.exitCode = cm.Data[tsv1.BenchResultsKey], cm.Data[tsv1.BenchErrorKey], cm.Data[tsv1.BenchExitCodeKey]
	case !apierrors.IsNotFound(err):
		return f, job, fmt.Errorf("reading results ConfigMap %s: %w", name, err)
	}
	return f, job, nil
}

// reconcileNodeLabels records each judged node's verdict on the node, once per node and run: the
// annotation tickstack.io/benchmark-passed=<profile> when it passed, none when it failed; a
// batch's nodes jobCreators at a time.
// NodeValidationReconciler turns it into the tickstack.io/validated label while the node has that
// profile and its time is in sync.
func (r *LatencyBenchmarkReconciler) reconcileNodeLabels(ctx context.Context, s *benchScope) error {
	b := s.b
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobCreators)
	for i := range b.Status.Nodes {
		n := &b.Status.Nodes[i] // each goroutine writes its own node's entry only
		if n.Labelled || nodeVerdict(*n) == "" {
			continue
		}
		value, keep := wantValidatedLabel(*n)
		if keep {
			n.Labelled = true
			continue
		}
		g.Go(func() error {
			if err := r.markNode(gctx, b, n.Node, value); err != nil {
				return err
			}
			n.Labelled = true
			return nil
		})
	}
	return g.Wait()
}

// markNode sets a judged node's tickstack.io/benchmark-passed annotation to value (the profile when
// it passed, "" when it failed: removed).
func (r *LatencyBenchmarkReconciler) markNode(ctx context.Context, b *tsv1.LatencyBenchmark, name, value string) error {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if node.Annotations[tsv1.BenchmarkPassedAnnotation] == value {
		return nil
	}
	orig := node.DeepCopy()
	node.Annotations = shared.SetKey(node.Annotations, tsv1.BenchmarkPassedAnnotation, value)
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("annotating node %s: %w", name, err)
	}
	if value != "" {
		r.event(b, corev1.EventTypeNormal, "NodeValidated", "Annotate", "node %s passed run %d: %s=%s; it is labelled %s=%s while it has that profile and its time is in sync",
			name, b.Status.Run, tsv1.BenchmarkPassedAnnotation, value, tsv1.ValidatedLabel, value)
	} else {
		r.event(b, corev1.EventTypeWarning, "NodeUnvalidated", "Annotate", "node %s failed run %d: %s removed, so it loses %s", name, b.Status.Run, tsv1.BenchmarkPassedAnnotation, tsv1.ValidatedLabel)
	}
	return nil
}

func (r *LatencyBenchmarkReconciler) event(b *tsv1.LatencyBenchmark, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(b, nil, kind, reason, action, note, args...)
	}
}
