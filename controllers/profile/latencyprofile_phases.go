package profile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// reconcileSelection finds the nodes the profile selects and which of them it wins.
func (r *LatencyProfileReconciler) reconcileSelection(_ context.Context, s *profileScope) error {
	f := &s.facts
	f.owned = map[string]bool{}
	f.conflicted = map[string]bool{}
	f.wantHash = map[string]string{}
	mine, arbiter := resolve.CompileSelector(s.profile), resolve.NewArbiter(s.all)
	for _, node := range s.nodes {
		ok, err := mine.Selects(node)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		f.matched++
		a := arbiter.Node(node)
		switch {
		case a.Winner == s.profile.Name:
			f.owned[node.Name] = true
		case len(a.Tied) > 0:
			f.conflicted[node.Name] = true
			f.conflicts = append(f.conflicts, nodeConflict{node: node.Name, profiles: a.TiedWith(s.profile.Name), priority: a.Priority})
		}
	}
	return nil
}

// nodeStateWriters bounds the node state writes one reconcile has in flight: one at a time, a
// profile change on 5,000 nodes waits on 5,000 API round trips in a row (docs/scale.md).
const nodeStateWriters = 32

// reconcileNodeStates creates or updates the node state of every node the profile owns: what to
// write is decided node by node, the writes go out in parallel.
func (r *LatencyProfileReconciler) reconcileNodeStates(ctx context.Context, s *profileScope) error {
	type write struct {
		node string
		do   func(context.Context) error
	}
	var writes []write
	r.written.forgetGone(s.states)
	r.resolved.forgetGone(s.states)
	r.resolved.byFacts.forgetGoneProfiles(s.all)
	r.grants.forgetGone(s.states)
	for _, name := range slices.Sorted(maps.Keys(s.facts.owned)) {
		if do := r.reconcileNodeState(s, name); do != nil {
			writes = append(writes, write{name, do})
		}
	}
	errs := make([]error, len(writes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(nodeStateWriters)
	for i, w := range writes {
		g.Go(func() error {
			if err := w.do(gctx); err != nil {
				errs[i] = fmt.Errorf("node %s: %w", w.node, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// reconcileNodeState records what the profile's node state on node stands at, and returns the
// write that brings it to the profile (nil: none).
func (r *LatencyProfileReconciler) reconcileNodeState(s *profileScope, node string) func(context.Context) error {
	f, p := &s.facts, s.profile
	lns, exists := s.states[node]
	if !exists {
		// With --resolve-on-node a node state is created handed over: an agent that can resolve
		// does so from the facts it reads in the same pass and acts on the create, with no hand-over
		// write in between (at 5,000 nodes, a second round of 5,000 writes). An agent that cannot
		// (an older release) sees a node state without spec.tuning, as every new one was: it reports
		// its facts without the capability, and gets spec.tuning as before (writeTuning).
		lns = &tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{tsv1.ProfileLabel: p.Name}},
			Spec: tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: p.Name, Generation: p.Generation,
				ResolveOnNode: r.ResolveOnNode != nil && r.ResolveOnNode()}},
		}
		f.waitingFacts = append(f.waitingFacts, node)
		return func(ctx context.Context) error {
			if err := controllerutil.SetOwnerReference(p, lns, r.Client.Scheme()); err != nil {
				return err
			}
			if err := r.Client.Create(ctx, lns); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node state: %w", err)
			}
			return nil
		}
	}
	if lns.Spec.Profile.Name != p.Name || !lns.DeletionTimestamp.IsZero() {
		// Another profile (or an earlier life of this one) still holds the node; its agent restores the
		// host before the state goes, and the deletion event brings us back here.
		f.waitingRelease = append(f.waitingRelease, node)
		return nil
	}
	res := r.resolved.node(node, p, lns.Status.Facts) // shared: copied before a write
	tuning := res.tuning
	switch {
	case errors.Is(res.err, resolve.ErrNoFacts):
		f.states = append(f.states, lns)
		f.waitingFacts = append(f.waitingFacts, node)
		return nil
	case res.err != nil:
		// Keep whatever the node has: never half-apply a profile that does not fit. A node that
		// resolves on its own would hit the same error: it is reported here, before any agent acts.
		f.states = append(f.states, lns)
		f.resolutionErrors = append(f.resolutionErrors, nodeMessage{node: node, message: res.err.Error()})
		return nil
	}
	if r.resolvesOnNode(lns) {
		return r.reconcileResolvingNode(s, lns, res)
	}
	return r.writeTuning(s, lns, tuning)
}

// writeTuning records lns as it stands and returns the write that brings its spec.tuning to the
// manager's resolution (nil: none).
func (r *LatencyProfileReconciler) writeTuning(s *profileScope, lns *tsv1.LatencyNodeState, tuning *tsv1.NodeTuning) func(context.Context) error {
	f, p := &s.facts, s.profile
	if r.written.pending(lns, p.Generation, tuning) {
		// This tuning is on its way: the cache still shows the object it was written over.
		lns = lns.DeepCopy()
		lns.Spec.Tuning = tuning
		lns.Spec.Profile.Generation = p.Generation
		lns.Spec.Profile.ResolveOnNode = false
		f.states = append(f.states, lns)
		return nil
	}
	if !lns.Spec.Profile.ResolveOnNode && apiequality.Semantic.DeepEqual(lns.Spec.Tuning, tuning) {
		// Nothing for this node: no write, and no new generation for its agent to apply (a fleet
		// of thousands would otherwise pay a write and a status patch per node for a profile
		// change that moves nothing there; docs/scale.md).
		f.states = append(f.states, lns)
		return nil
	}
	// lns is the cache's: the write goes from a copy, which the later phases see. A node its agent
	// resolved (the flag turned off, or an agent without the capability now) gets spec.tuning
	// back, the same values its agent resolved: nothing moves on the host.
	orig := lns
	lns = lns.DeepCopy()
	lns.Spec.Tuning = tuning.DeepCopy() // the patch's response is decoded into it
	lns.Spec.Profile.Generation = p.Generation
	lns.Spec.Profile.ResolveOnNode = false
	f.states = append(f.states, lns)
	return func(ctx context.Context) error {
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("patching node state: %w", err)
		}
		r.written.record(lns.Name, orig.ResourceVersion, p.Generation, tuning)
		return nil
	}
}

// resolvesOnNode says whether the node's agent is to resolve its own tuning (docs/architecture.md,
// "Fleet scale"): the manager runs with --resolve-on-node and the agent reports the capability.
// Others (an agent of an older release during an upgrade) get spec.tuning as before.
func (r *LatencyProfileReconciler) resolvesOnNode(lns *tsv1.LatencyNodeState) bool {
	return r.ResolveOnNode != nil && r.ResolveOnNode() && slices.Contains(lns.Status.Capabilities, tsv1.CapabilityResolveOnNode)
}

// reconcileResolvingNode is reconcileNodeState for a node whose agent resolves: it costs a write
// only to hand the node over (spec.profile.resolveOnNode, no spec.tuning), never per profile
// change. res is the manager's own resolution of the node at the profile's generation, which the
// roll-ups compare with the agent's status.resolved.
func (r *LatencyProfileReconciler) reconcileResolvingNode(s *profileScope, lns *tsv1.LatencyNodeState, res resolved) func(context.Context) error {
	f, p := &s.facts, s.profile
	switch {
	case lns.Spec.Profile.ResolveOnNode && lns.Spec.Tuning == nil:
		f.wantHash[lns.Name] = res.hash
		f.states = append(f.states, lns)
		return nil
	case r.written.handedOver(lns):
		// The hand-over is on its way: the cache still shows the object it was written over.
		lns = lns.DeepCopy()
		lns.Spec.Tuning = nil
		lns.Spec.Profile.ResolveOnNode = true
		f.wantHash[lns.Name] = res.hash
		f.states = append(f.states, lns)
		return nil
	case lns.Spec.Tuning != nil && !lns.Spec.Profile.ResolveOnNode && !switchable(lns, res.hash):
		// A live node is handed over only once its agent has in effect exactly what it would
		// resolve itself; until then it is kept (or brought) there through spec.tuning, as today.
		return r.writeTuning(s, lns, res.tuning)
	}
	// New (nothing applied yet), or live with spec.tuning equal to this generation's resolution
	// and Applied: one write, after which the agent resolves the same tuning and moves nothing.
	orig := lns
	lns = lns.DeepCopy()
	lns.Spec.Tuning = nil
	lns.Spec.Profile.ResolveOnNode = true
	lns.Spec.Profile.Generation = p.Generation
	f.wantHash[lns.Name] = res.hash
	f.states = append(f.states, lns)
	return func(ctx context.Context) error {
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("handing the node state to its agent: %w", err)
		}
		r.written.recordHandover(lns.Name, orig.ResourceVersion, p.Generation)
		return nil
	}
}

// switchable says whether a live node may be handed to its agent without moving anything: its
// spec.tuning is the manager's resolution at the profile's generation (hash) and its agent reports
// that spec Applied.
func switchable(lns *tsv1.LatencyNodeState, hash string) bool {
	return resolve.TuningHash(lns.Spec.Tuning) == hash && lns.Status.ObservedGeneration == lns.Generation &&
		meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeApplied)
}

// reconcileReleases deletes this profile's node states on nodes it no longer owns: unselected, lost
// to a higher priority, or gone. Nodes in a priority tie are left alone.
func (r *LatencyProfileReconciler) reconcileReleases(ctx context.Context, s *profileScope) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.states)) {
		lns := s.states[name]
		if lns.Spec.Profile.Name != s.profile.Name || s.facts.owned[name] || s.facts.conflicted[name] {
			continue
		}
		if err := r.release(ctx, s, lns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// release deletes a node state so its agent restores the host. When the node itself is gone there is
// no agent left to do that, so the restore finalizer is dropped here.
func (r *LatencyProfileReconciler) release(ctx context.Context, s *profileScope, lns *tsv1.LatencyNodeState) error {
	s.facts.releasing = append(s.facts.releasing, lns.Name)
	if !s.nodeNames[lns.Name] && controllerutil.ContainsFinalizer(lns, tsv1.RestoreFinalizer) {
		orig := lns // the cache's: changed through a copy
		lns = lns.DeepCopy()
		controllerutil.RemoveFinalizer(lns, tsv1.RestoreFinalizer)
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("node state %s: dropping the restore finalizer of a deleted node: %w", lns.Name, err)
		}
	}
	if !lns.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, lns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("node state %s: deleting: %w", lns.Name, err)
	}
	return nil
}

// reconcileDelete releases every node state of the profile and drops the finalizer once they are all
// gone, which is when every agent has restored its host.
func (r *LatencyProfileReconciler) reconcileDelete(ctx context.Context, s *profileScope) (ctrl.Result, error) {
	s.facts.deleting = true
	var errs []error
	remaining := 0
	for _, name := range slices.Sorted(maps.Keys(s.states)) {
		lns := s.states[name]
		if lns.Spec.Profile.Name != s.profile.Name {
			continue
		}
		remaining++
		if err := r.release(ctx, s, lns); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 || remaining > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	orig := s.profile.DeepCopy()
	controllerutil.RemoveFinalizer(s.profile, tsv1.ProfileFinalizer)
	return ctrl.Result{}, r.Client.Patch(ctx, s.profile, client.MergeFrom(orig))
}
