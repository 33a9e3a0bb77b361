// Package profile is the LatencyProfile controller: it selects each profile's nodes, arbitrates
// between overlapping profiles, writes one LatencyNodeState spec per node, hands out reboot slots
// within the rollout's budgets (and the BIOS gate) and reports the profile's status and metrics.
package profile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/phase"
)

// LatencyProfileReconciler turns each LatencyProfile into one LatencyNodeState per node it wins, and
// reports how those nodes stand.
type LatencyProfileReconciler struct {
	Client client.Client
	// Cache is the manager's cache, from which a reconcile reads every Node and node state without
	// copying them (shared.Cached); SetupWithManager sets it. Nil: client.List through Client.
	Cache cache.Cache
	// Metrics, when set, receives each profile's counts and conditions.
	Metrics *ProfileMetrics
	// Now is the clock of the maintenance windows.
	Now func() time.Time
	// ResolveOnNode says whether nodes whose agent reports the ResolveOnNode capability resolve
	// their own tuning (--resolve-on-node; docs/architecture.md, "Fleet scale"): their node states
	// get spec.profile.resolveOnNode and no spec.tuning. Off (or nil), every node gets
	// spec.tuning, and nodes handed over before get it back.
	ResolveOnNode func() bool

	// written is the tuning writes the cache has not shown yet.
	written ownWrites
	// grants is the reboot slot writes the cache has not shown yet.
	grants grantWrites
	// resolved is each node's last resolution.
	resolved resolutions
	// rollups is each profile's status roll-up window.
	rollups rollupWindows
	// statuses is each profile's last written and last computed status, from which a reconcile
	// decides whether it writes the status it computed (rollupWrite).
	statuses rollupStatuses
}

// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles/finalizers,verbs=update
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// profileScope is what one reconcile of one profile knows.
type profileScope struct {
	profile *tsv1.LatencyProfile
	// all is every profile in the cluster, for arbitration between overlapping ones.
	all []tsv1.LatencyProfile
	// nodes is every node in the cluster. It, all and states are the cache's objects: read-only.
	nodes []*corev1.Node
	// nodeNames says which nodes exist.
	nodeNames map[string]bool
	// states is every LatencyNodeState in the cluster, by name (= node name).
	states map[string]*tsv1.LatencyNodeState
	// facts gathered by the phases, from which the status is computed.
	facts profileFacts
	// requeue, when set, is when the rollout next needs a look (a maintenance window opens).
	requeue time.Duration
}

// Reconcile is the usual shape: get, finalizer, one deferred status patch (when the status
// changed, and rollupWrite lets it go now: else a reconcile one window later writes it), ordered
// phases (internal/phase).
func (r *LatencyProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	profile := &tsv1.LatencyProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, profile); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
			r.rollups.forget(req.Name)
			r.statuses.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if profile.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(profile, tsv1.ProfileFinalizer) {
		orig := profile.DeepCopy()
		controllerutil.AddFinalizer(profile, tsv1.ProfileFinalizer)
		return ctrl.Result{}, r.Client.Patch(ctx, profile, client.MergeFrom(orig))
	}

	scope, err := r.newScope(ctx, profile)
	if err != nil {
		return ctrl.Result{}, err
	}
	orig := profile.DeepCopy()
	defer func() {
		setProfileStatus(profile, &scope.facts, reterr == nil)
		r.Metrics.observe(profile)
		r.rollups.size(profile.Name, len(scope.facts.owned))
		// A deleting profile's status, and one computed by a failed reconcile (retried with
		// backoff, so it cannot wait for a window), are written as they are.
		writeNow := r.statuses.computed(profile.Name, &orig.Status, &profile.Status)
		if profile.DeletionTimestamp.IsZero() && reterr == nil && !writeNow {
			res.RequeueAfter = sooner(res.RequeueAfter, r.rollups.of(profile.Name))
			return
		}
		err := phase.PatchStatus(ctx, r.Client, orig, profile, func(p *tsv1.LatencyProfile) any { return p.Status })
		if err == nil {
			r.statuses.wrote(profile.Name, &profile.Status)
		}
		phase.Join(&reterr, err)
	}()

	if !profile.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, scope)
	}
	err = phase.Run(ctx, scope,
		r.reconcileSelection,
		r.reconcileNodeStates,
		r.reconcileReboots,
		r.reconcileReleases,
	)
	return ctrl.Result{RequeueAfter: scope.requeue}, err
}

// newScope reads the cluster from the cache without copying it: every profile, node and node state
// in scope is the cache's own object, shared and read-only. A phase that changes one writes a copy
// (client.MergeFrom the cached one); copying 5,000 nodes and node states on every reconcile was most
// of the manager's garbage at fleet size (docs/scale.md).
func (r *LatencyProfileReconciler) newScope(ctx context.Context, profile *tsv1.LatencyProfile) (*profileScope, error) {
	s := &profileScope{profile: profile, states: map[string]*tsv1.LatencyNodeState{}, nodeNames: map[string]bool{}}
	var profiles tsv1.LatencyProfileList
	if err := r.Client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing profiles: %w", err)
	}
	s.all = profiles.Items
	var err error
	if s.nodes, err = cachedOrListed[corev1.Node, *corev1.Node](ctx, r, &corev1.NodeList{}); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range s.nodes {
		s.nodeNames[n.Name] = true
	}
	states, err := cachedOrListed[tsv1.LatencyNodeState, *tsv1.LatencyNodeState](ctx, r, &tsv1.LatencyNodeStateList{})
	if err != nil {
		return nil, fmt.Errorf("listing node states: %w", err)
	}
	for _, l := range states {
		s.states[l.Name] = l
	}
	return s, nil
}

// cachedOrListed is every object of T's kind as the cache holds it: shared.Cached from r.Cache,
// or, without one, client.List into list (a test's reconciler built without a manager).
func cachedOrListed[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r *LatencyProfileReconciler, list client.ObjectList) ([]PT, error) {
	if r.Cache != nil {
		return shared.Cached[T, PT](ctx, r.Cache)
	}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []PT
	err := meta.EachListItem(list, func(o runtime.Object) error {
		if p, ok := o.(PT); ok {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// StatusRollup is how long an agent's report on its node state waits, at the least, before its
// profile is reconciled, so that the reports that come in meanwhile share one roll-up and at most
// one status write; StatusRollupPerNode more for each node the profile owns, up to MaxStatusRollup.
//
// A change that moves every node of a 5,000-node fleet brings 5,000 reports within seconds, and
// reconciling the profile for each wrote its status hundreds of times (411 at 1,000 nodes,
// docs/scale.md). Each status write also goes to every agent's watch on the profiles (an agent
// that resolves its own node watches them), so a fleet's roll-ups cost the API server writes
// times nodes. A window that grows with the fleet keeps both flat: the reports of a change take
// about as long as the fleet is large, so a change takes few reconciles at any size, and what
// the watches carry stays near 1,000 profile events a second; rollupWrite then writes only a
// handful of those reconciles' statuses. A status at most a few seconds behind its nodes is as
// current as a person or a pipeline reads it.
const (
	StatusRollup        = time.Second
	StatusRollupPerNode = time.Millisecond
	MaxStatusRollup     = 10 * time.Second
)

// rollupWindows is each profile's status roll-up window, from the nodes it owned at its last
// reconcile; the node state event handler reads it, the reconciles write it.
type rollupWindows struct{ m sync.Map }

func (w *rollupWindows) size(profile string, owned int) {
	w.m.Store(profile, min(max(StatusRollup, time.Duration(owned)*StatusRollupPerNode), MaxStatusRollup))
}

func (w *rollupWindows) forget(profile string) { w.m.Delete(profile) }

// of is profile's window: StatusRollup before its first reconcile.
func (w *rollupWindows) of(profile string) time.Duration {
	if d, ok := w.m.Load(profile); ok {
		return d.(time.Duration)
	}
	return StatusRollup
}

// rollupStatuses is, for each profile, the status last written and the status its last reconcile
// computed, for rollupWrite; forgotten when the profile is gone. A profile's reconciles run one at
// a time, different profiles' at once.
type rollupStatuses struct {
	mu sync.Mutex
	m  map[string]*rollupStatus
}

type rollupStatus struct {
	// written is the status last written; nil until this manager writes one.
	written *tsv1.LatencyProfileStatus
	// computed is the status the last reconcile computed, written or not.
	computed *tsv1.LatencyProfileStatus
}

// computed records now, the status a reconcile computed, and says whether to write it now
// (rollupWrite). api is the status the reconcile read: what was written, as far as a manager
// that has written nothing yet (a new profile, a restart) knows.
func (s *rollupStatuses) computed(profile string, api, now *tsv1.LatencyProfileStatus) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*rollupStatus{}
	}
	st := s.m[profile]
	if st == nil {
		st = &rollupStatus{}
		s.m[profile] = st
	}
	written := cmp.Or(st.written, api)
	write := rollupWrite(written, st.computed, now)
	st.computed = now.DeepCopy()
	return write
}

// wrote records the status a reconcile wrote.
func (s *rollupStatuses) wrote(profile string, st *tsv1.LatencyProfileStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[profile]; e != nil {
		e.written = st.DeepCopy()
	}
}

func (s *rollupStatuses) forget(profile string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, profile)
}

// sooner is the earlier of two requeues, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// SetupWithManager watches profiles. Who owns a node depends on every profile at once, so a profile
// change or a node's labels re-evaluate every profile (there are few). A node state's own changes
// (its agent's reports, thousands a minute across a fleet) concern only the profile that owns it, or
// owned it before the change; a node state that goes may free its node for another profile, so its
// deletion re-evaluates them all.
func (r *LatencyProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Cache == nil {
		r.Cache = mgr.GetCache()
	}
	allProfiles := shared.AllProfiles(r.Client)
	all := handler.EnqueueRequestsFromMapFunc(allProfiles)
	return ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyProfile{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: notStatusOnly})).
		Watches(&tsv1.LatencyProfile{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tsv1.LatencyNodeState{}, nodeStateOwners{all: allProfiles, rollup: r.rollups.of}).
		Watches(&corev1.Node{}, allAfterRollup{all: allProfiles, rollup: r.rollups.of}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Named("latencyprofile").
		Complete(r)
}

// allAfterRollup enqueues every profile, each after its roll-up window, for a node that comes, goes
// or changes its labels: a fleet's nodes joining, or the operator's own node labels following
// Applied, are thousands of events that one reconcile a window sees together.
type allAfterRollup struct {
	all    handler.MapFunc
	rollup func(profile string) time.Duration
}

func (h allAfterRollup) enqueue(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range h.all(ctx, o) {
		q.AddAfter(req, h.rollup(req.Name))
	}
}

func (h allAfterRollup) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

func (h allAfterRollup) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.ObjectNew, q)
}

func (h allAfterRollup) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

func (h allAfterRollup) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

// notStatusOnly passes a profile's update unless only its status changed: its spec, its finalizers
// or its deletion. The reconcile's own status write would otherwise bring the profile straight back
// and undo the roll-up window.
func notStatusOnly(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}

// nodeStateOwners enqueues, for a node state's create, update or generic event, the profile that
// owns it (both, when an update moves it from one to another), and every profile on its deletion.
// An update that keeps its owner (an agent's report, the bulk of the events) enqueues it after the
// rollup window: the workqueue keeps one waiting request per profile, so every report of the window
// is rolled up by one reconcile.
type nodeStateOwners struct {
	all    func(context.Context, client.Object) []reconcile.Request
	rollup func(profile string) time.Duration
}

// ownerOf returns the profile that owns o, "" when none does.
func ownerOf(o client.Object) string {
	if lns, ok := o.(*tsv1.LatencyNodeState); ok {
		return lns.Spec.Profile.Name
	}
	return ""
}

// add enqueues the profile that owns o, if any: after its roll-up window when rollup.
func (h nodeStateOwners) add(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], rollup bool) {
	name := ownerOf(o)
	switch {
	case name == "":
	case rollup:
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, h.rollup(name))
	default:
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}

func (h nodeStateOwners) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(e.Object, q, false)
}

func (h nodeStateOwners) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if ownerOf(e.ObjectOld) == ownerOf(e.ObjectNew) {
		h.add(e.ObjectNew, q, true)
		return
	}
	h.add(e.ObjectOld, q, false)
	h.add(e.ObjectNew, q, false)
}

func (h nodeStateOwners) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range h.all(ctx, e.Object) {
		q.Add(req)
	}
}

func (h nodeStateOwners) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.add(e.Object, q, false)
}
