package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/phase"
	"github.com/tickstack/tickstack/internal/resolve"
)

// Acting before the node state (docs/architecture.md, "Fleet scale", "A profile's create"). With
// ResolveOnNode (the agent's --resolve-on-node, the same chart value as the manager's), an agent
// whose node has no node state yet does not wait for the manager to create one: on a profile's
// create it arbitrates for itself which profile wins its node, with resolve.Arbitrate, the pure
// function the manager decides every node with (the highest priority selecting the node wins, a
// tie or a profile being deleted gives nobody the node) over its Node's labels as its cache holds
// them (no read of the API server per event), resolves that profile from the facts it reads, and
// applies the runtime settings. A change of its labels makes it decide again. At 5,000 nodes the manager's 5,000 node state creates
// take longer than the whole fleet takes to act this way (docs/scale.md, fix 24).
//
// It does only what needs nobody else: runtime settings, journalled as always (the originals on
// disk before any write), and the saved tuning the node state's first reconcile compares with, so
// that reconcile changes nothing on the host and taints nothing. What needs the node state waits
// for it: the restore finalizer, status, events, PTP, kernel arguments and reboots (a reboot slot
// is granted in the node state), the kubelet's drop-in, the boot unit, the profile label (which
// the manager gives only once the node state reports Applied, so no latency pod lands meanwhile).
// If no profile wins the node any more before its node state exists (the profile was deleted, the
// node's labels changed, another profile now ties), the agent restores the journalled originals
// itself: with no node state there is no finalizer to do it. Right after a finalizer's restore its
// caches may not show what deleted the node state yet: its first apply then confirms the winner
// with the API server (liveWinner) and waits for the caches where they disagree.

// reconcileUnnamed is Reconcile for a node with no node state, on an agent with ResolveOnNode.
func (r *Reconciler) reconcileUnnamed(ctx context.Context) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// Its labels, from the cache of its own Node (CacheOptions): a profile's create makes every
	// agent of a fleet decide at once, with no read of the API server each.
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, r.nodeKey(), node); err != nil {
		return ctrl.Result{}, fmt.Errorf("reading node %s from the cache: %w", r.NodeName, err)
	}
	var profiles tsv1.LatencyProfileList
	if err := r.Client.List(ctx, &profiles); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing LatencyProfiles: %w", err)
	}
	a := resolve.Arbitrate(node, profiles.Items)
	if a.Winner == "" {
		r.setConfirmLive(false)
		return r.restoreUnnamed(ctx)
	}
	if r.mustConfirmLive() {
		live, err := r.liveWinner(ctx, profiles.Items, a.Winner)
		if err != nil {
			return ctrl.Result{}, err
		}
		if live != a.Winner {
			log.Info("the caches still show a profile winning this node that the API server does not: waiting for them before acting", "cached", a.Winner, "live", live)
			// looked at again as soon as a running drain would be: a cache lags by moments
			return ctrl.Result{RequeueAfter: r.DrainPoll}, nil
		}
		r.setConfirmLive(false)
	}
	lns := &tsv1.LatencyNodeState{}
	lns.Name = r.NodeName
	lns.Spec = tsv1.LatencyNodeStateSpec{NodeName: r.NodeName, Profile: tsv1.ProfileReference{Name: a.Winner, ResolveOnNode: true}}
	s := &scope{lns: lns, base: lns.DeepCopy(), requeue: r.CheckPeriod, labelled: node}
	r.reportFacts(s)
	if stop, err := r.desiredTuning(ctx, s); err != nil || stop {
		if s.obs.resolveErr != nil {
			// The node state, once the manager creates it, reports it (Degraded); the manager
			// reports it on the profile before then.
			log.Info("the profile that wins this node does not resolve here: nothing changed before its node state", "profile", a.Winner, "error", s.obs.resolveErr.Error())
		}
		return ctrl.Result{RequeueAfter: s.requeue}, err
	}
	if err := phase.Run(ctx, s, r.taintRetune, r.validate, r.applyRuntime); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case s.obs.invalid != nil:
		log.Info("the profile that wins this node resolves to a tuning this host refuses: nothing changed before its node state", "profile", a.Winner, "error", joinErrs(s.obs.invalid))
	case s.obs.applyErr != nil:
		log.Info("applying the profile that wins this node failed before its node state; retried", "profile", a.Winner, "error", joinErrs(s.obs.applyErr))
	case s.obs.reportOnly:
		// The profile's spec.drift.action is Report: the node state reports it once it exists.
		if len(s.obs.drifted) > 0 {
			log.Info("settings changed on the host before the node state, left as found (the profile's spec.drift.action is Report)", "profile", a.Winner, "drift", describeDrift(s.obs.drifted))
		}
	default:
		log.Info("acting on the profile that wins this node before its node state exists", "profile", a.Winner, "tuningHash", s.hash, "settings", len(s.obs.results))
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// liveWinner arbitrates the node again with its Node and the cached winner read from the API
// server (the other profiles as cached): the profile that wins it now, "" for nobody. After a
// finalizer's restore, the change that deleted the node state (the profile deleted, the node's
// labels changed) may not be in the caches yet, and an apply from them would tune the node
// again, once, until they catch up. Two reads after a restore, again at each look while the
// caches disagree (moments); a profile's create, which wakes the whole fleet, still reads nothing.
func (r *Reconciler) liveWinner(ctx context.Context, cached []tsv1.LatencyProfile, winner string) (string, error) {
	node := &corev1.Node{}
	if err := r.APIReader.Get(ctx, r.nodeKey(), node); err != nil {
		return "", fmt.Errorf("reading node %s: %w", r.NodeName, err)
	}
	live := &tsv1.LatencyProfile{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: winner}, live)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading LatencyProfile %s: %w", winner, err)
	}
	profiles := make([]tsv1.LatencyProfile, 0, len(cached))
	for i := range cached {
		if cached[i].Name != winner {
			profiles = append(profiles, cached[i])
		}
	}
	if err == nil {
		profiles = append(profiles, *live)
	}
	return resolve.Arbitrate(node, profiles).Winner, nil
}

// setConfirmLive and mustConfirmLive write and read Reconciler.confirmLive.
func (r *Reconciler) setConfirmLive(v bool) {
	r.mu.Lock()
	r.confirmLive = v
	r.mu.Unlock()
}

func (r *Reconciler) mustConfirmLive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.confirmLive
}

// restoreUnnamed restores a node with no node state that no profile wins: what an earlier
// reconcileUnnamed applied (the journalled originals), the saved tuning and pod controls it wrote,
// and the tuning-pending taint it put on a node that still had a profile label. Nothing there:
// nothing to do.
func (r *Reconciler) restoreUnnamed(ctx context.Context) (ctrl.Result, error) {
	journal, err := r.Engine.Journal()
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the journal of original values: %w", err)
	}
	if _, serr := os.Stat(r.Host.Path(DesiredPath)); len(journal) == 0 && errors.Is(serr, fs.ErrNotExist) {
		return ctrl.Result{}, nil
	}
	restored, err := r.Engine.Restore()
	r.forgetEarly()
	lns := &tsv1.LatencyNodeState{}
	lns.Name = r.NodeName
	if slices.Contains(restored, irqbalanceSetting) {
		r.restartIrqbalance(ctx, lns)
	}
	if err != nil {
		return ctrl.Result{RequeueAfter: r.DrainPoll}, fmt.Errorf("restoring the originals of a node no profile wins any more: %w", err)
	}
	if err := r.removeBootUnit(); err != nil {
		return ctrl.Result{RequeueAfter: r.DrainPoll}, fmt.Errorf("removing the saved tuning of a node no profile wins any more: %w", err)
	}
	if err := r.setTaint(ctx, false); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("no profile wins this node any more and it has no node state: restored the originals", "settings", len(restored))
	return ctrl.Result{}, nil
}

// appliedEarly carries the settings an apply before the node state changed over to the node
// state's first apply of the same resolution, which changes nothing on the host, so that its
// Applied event still names them (an event needs the node state). changed is what this apply
// changed and complete whether it left every setting in effect (wasApplied reads it before the
// node state); it returns the settings its Applied event names and how the message says when.
func (r *Reconciler) appliedEarly(s *scope, changed []string, complete bool) ([]string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.lns.UID == "" {
		if r.early == nil || r.early.hash != s.hash {
			r.early = &earlyApply{hash: s.hash}
		}
		r.early.changed = append(r.early.changed, changed...)
		r.early.complete = complete
		return nil, ""
	}
	early := r.early
	r.early = nil
	if len(changed) > 0 || early == nil || early.hash != s.hash || len(early.changed) == 0 {
		return changed, ""
	}
	return early.changed, " before its node state existed"
}

// earlyApply is what applies before the node state changed, for one resolution (its hash), and
// whether the last of them left every setting in effect.
type earlyApply struct {
	hash     string
	changed  []string
	complete bool
}

// forgetEarly drops the record of applies before the node state: the host's originals are back.
func (r *Reconciler) forgetEarly() {
	r.mu.Lock()
	r.early = nil
	r.mu.Unlock()
}
