package benchmark

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/phase"
)

// LatencyBenchmarkReconciler runs a LatencyBenchmark: one pinned Job per target node, results
// collected from the ConfigMap each Job's uploader fills, verdicts against the thresholds, the
// tickstack.io/validated node label, metrics and events; reruns on a new rerun annotation, a spec
// change or the schedule.
type LatencyBenchmarkReconciler struct {
	Client client.Client
	// APIReader reads uncached (the results ConfigMap when its Job has finished, so a Job seen
	// finished before its ConfigMap's update reached the cache is not judged without results).
	APIReader client.Reader
	// Image is the bench image (the manager's --bench-image; DefaultBenchImage by default).
	Image string
	// Now is the clock.
	Now func() time.Time
	// Recorder emits events; nil emits none.
	Recorder events.EventRecorder
	// Metrics, when set, receives each node's results and verdict.
	Metrics *BenchmarkMetrics
	// ClusterRole is the ClusterRole an administrator binds in a namespace to opt it in to
	// benchmarks (--benchmark-cluster-role; DefaultBenchmarkClusterRole by default). Only named in the
	// NamespaceOptedIn condition: the API server decides.
	ClusterRole string
	// ResultsBatch is how long results that came in wait for those of the other nodes measuring
	// before their verdicts are written together (DefaultResultsBatch when 0).
	ResultsBatch time.Duration

	// mem is what reconciles remember of the last ones (latencybenchmark_memory.go).
	mem benchMemory
	// userMu guards user, the manager's user name as the API server knows it (asked once).
	userMu sync.Mutex
	user   string
}

// +kubebuilder:rbac:groups=tickstack.io,resources=latencybenchmarks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencybenchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch
// Cluster-wide, the benchmark controller only reads (its cache watches the Jobs and ConfigMaps
// benchmarks own). What it creates in a benchmark's namespace comes from the ClusterRole
// config/rbac/benchmark_namespace.yaml, bound there by an administrator (latencybenchmark_namespace.go).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// staleRecheck is when a reconcile that found the cache behind this reconciler's own status
// write looks again, should the write's watch event not come first.
const staleRecheck = 200 * time.Millisecond

// benchScope is what one reconcile of one benchmark knows.
type benchScope struct {
	b   *tsv1.LatencyBenchmark
	now time.Time
	// newRun is the reason a run started in this reconcile ("" if none).
	newRun string
	facts  benchmarkFacts
}

// Reconcile is the usual shape: get, one deferred status patch (when the status changed: a JSON
// patch of the node entries that changed, statusPatch), ordered phases (internal/phase).
func (r *LatencyBenchmarkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	b := &tsv1.LatencyBenchmark{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Namespace, req.Name)
			r.mem.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owned Jobs, ConfigMaps and RBAC go with it; node labels stay
	}
	if r.mem.statusInFlight(b) {
		// The cache still shows the benchmark from before this reconciler's last status write:
		// acting on it would judge, create and write again what that write did. Its watch event
		// brings the benchmark back.
		return ctrl.Result{RequeueAfter: staleRecheck}, nil
	}
	now := r.Now().UTC()
	s := &benchScope{b: b, now: now, facts: benchmarkFacts{now: now}}
	orig := b.DeepCopy()
	defer func() {
		setBenchmarkStatus(b, &s.facts, reterr == nil)
		fitResults(b, StatusResultsBudget)
		r.Metrics.observe(b)
		status := func(b *tsv1.LatencyBenchmark) any { return b.Status }
		patch := statusPatch(orig, b)
		err := phase.PatchStatus(ctx, r.Client, orig, b, status, func(client.Object) client.Patch { return patch })
		if err != nil && patch.Type() == types.JSONPatchType && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) {
			// The stored status is not the one the patch of its changes was made from.
			err = phase.PatchStatus(ctx, r.Client, orig, b, status)
		}
		if err == nil && b.ResourceVersion != orig.ResourceVersion {
			r.mem.statusWritten(orig)
		}
		phase.Join(&reterr, err)
	}()

	if err := phase.Run(ctx, s,
		r.reconcileValidation,
		r.reconcileRun,
		r.reconcileNamespace,
		r.reconcileAccess,
		r.reconcileJobs,
		r.reconcileResults,
		r.reconcileNextWave,
		r.reconcileNodeLabels,
	); err != nil {
		return ctrl.Result{}, err
	}
	var res ctrl.Result
	for _, at := range []*time.Time{s.facts.next, s.facts.recheck} {
		if at != nil && (res.RequeueAfter == 0 || at.Sub(now) < res.RequeueAfter) {
			res.RequeueAfter = max(at.Sub(now), time.Second)
		}
	}
	return res, nil
}

// SetupWithManager watches benchmarks, the Jobs and ConfigMaps they own, and node labels.
func (r *LatencyBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// A node's labels decide whether it is a target (profile label, selector): every benchmark
	// looks again when they change. There are few benchmarks.
	return ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyBenchmark{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(shared.AllBenchmarks(r.Client)), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Named("latencybenchmark").
		Complete(r)
}
