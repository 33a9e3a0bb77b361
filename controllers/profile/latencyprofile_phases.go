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
	mine, arbiter := resolve.CompileSelector(s.profile), resolve.NewArbiter(s.all)
	for i := range s.nodes {
		node := &s.nodes[i]
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
	f := &s.facts
	p := s.profile
	lns, exists := s.states[node]
	if !exists {
		lns = &tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{tsv1.ProfileLabel: p.Name}},
			Spec:       tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: p.Name, Generation: p.Generation}},
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
	tuning, err := r.resolved.node(node, p, lns.Status.Facts) // shared: copied before a write
	switch {
	case errors.Is(err, resolve.ErrNoFacts):
		f.states = append(f.states, lns)
		f.waitingFacts = append(f.waitingFacts, node)
		return nil
	case err != nil:
		// Keep whatever the node has: never half-apply a profile that does not fit.
		f.states = append(f.states, lns)
		f.resolutionErrors = append(f.resolutionErrors, nodeMessage{node: node, message: err.Error()})
		return nil
	}
	if r.written.pending(lns, p.Generation, tuning) {
		// This tuning is on its way: the cache still shows the object it was written over.
		lns = lns.DeepCopy()
		lns.Spec.Tuning = tuning
		lns.Spec.Profile.Generation = p.Generation
		f.states = append(f.states, lns)
		return nil
	}
	if apiequality.Semantic.DeepEqual(lns.Spec.Tuning, tuning) {
		// Nothing for this node: no write, and no new generation for its agent to apply (a fleet
		// of thousands would otherwise pay a write and a status patch per node for a profile
		// change that moves nothing there; docs/scale.md).
		f.states = append(f.states, lns)
		return nil
	}
	// lns is the cache's: the write goes from a copy, which the later phases see.
	orig := lns
	lns = lns.DeepCopy()
	lns.Spec.Tuning = tuning.DeepCopy() // the patch's response is decoded into it
	lns.Spec.Profile.Generation = p.Generation
	f.states = append(f.states, lns)
	return func(ctx context.Context) error {
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("patching node state: %w", err)
		}
		r.written.record(lns.Name, orig.ResourceVersion, p.Generation, tuning)
		return nil
	}
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
