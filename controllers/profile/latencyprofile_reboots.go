package profile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/rollout"
)

// MaxUnavailable resolves rollout.maxUnavailable against the number of nodes a profile owns
// (internal/rollout).
func MaxUnavailable(r *tsv1.RolloutSpec, owned int) int { return rollout.MaxUnavailable(r, owned) }

// rebootHeld reports whether a granted node still needs its slot: it has not finished (RebootRequired
// still True) and did not give up on a failed drain.
func rebootHeld(lns *tsv1.LatencyNodeState) bool {
	if lns.Status.Reboot != nil && lns.Status.Reboot.Phase == tsv1.RebootDrainFailed {
		return false
	}
	return meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeRebootRequired)
}

// wantsReboot reports whether a node asks for a slot.
func wantsReboot(lns *tsv1.LatencyNodeState) bool {
	return lns.Status.Reboot != nil && lns.Status.Reboot.Phase == tsv1.RebootRequested &&
		meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeRebootRequired)
}

// PlanReboots decides which nodes get a reboot slot and which give theirs back, so that no more than
// b.Max of the profile's nodes, and no more than b.PerDomain of one topology domain, are cordoned or
// rebooting at once. Nodes cordoned by someone else count against the budgets too. Grants go in name
// order, so the rollout is predictable; a node whose domain is full is passed over for the next.
func PlanReboots(states []*tsv1.LatencyNodeState, cordoned map[string]bool, b rollout.Budget) (grant, revoke []string) {
	unavailable := map[string]bool{}
	for _, lns := range states {
		switch {
		case lns.Spec.RebootGranted && rebootHeld(lns):
			unavailable[lns.Name] = true
		case lns.Spec.RebootGranted:
			revoke = append(revoke, lns.Name)
		}
		if cordoned[lns.Name] {
			unavailable[lns.Name] = true
		}
	}
	var waiting []string
	for _, lns := range states {
		if !lns.Spec.RebootGranted && wantsReboot(lns) {
			waiting = append(waiting, lns.Name)
		}
	}
	grant = b.Admit(slices.Sorted(maps.Keys(unavailable)), waiting)
	sort.Strings(revoke)
	return grant, revoke
}

// reconcileReboots hands out and takes back reboot slots among the nodes the profile owns.
func (r *LatencyProfileReconciler) reconcileReboots(ctx context.Context, s *profileScope) error {
	// The slots this reconciler granted or took back lately count as written even where the cache
	// does not show them yet: planning from the older copies would exceed the budget.
	for i, lns := range s.facts.states {
		s.facts.states[i] = r.grants.view(lns)
	}
	cordoned := map[string]bool{}
	for _, n := range s.nodes {
		if n.Spec.Unschedulable && s.facts.owned[n.Name] {
			cordoned[n.Name] = true
		}
	}
	grant, revoke := PlanReboots(s.facts.states, cordoned, rollout.ProfileBudget(s.profile.Spec.Rollout, len(s.facts.owned), s.nodes))
	now := r.Now()
	if ok, reason, msg, next := rollout.Gate(s.profile.Spec.Rollout, now); !ok {
		if len(grant) > 0 {
			s.facts.heldReason, s.facts.heldMessage = reason, msg
		}
		grant = nil
		if !next.IsZero() {
			s.requeue = next.Sub(now) + time.Second
		}
	}
	grant = shared.HoldForBIOS(s.profile, s.facts.states, grant) // bios_gate.go: BIOS staged before the reboot
	index := map[string]int{}
	for i, lns := range s.facts.states {
		index[lns.Name] = i
	}
	var errs []error
	set := func(name string, granted bool) {
		i := index[name]
		orig := s.facts.states[i] // possibly the cache's: changed through a copy
		lns := orig.DeepCopy()
		lns.Spec.RebootGranted = granted
		s.facts.states[i] = lns
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil {
			errs = append(errs, fmt.Errorf("node state %s: setting rebootGranted=%v: %w", name, granted, err))
			return
		}
		r.grants.record(name, orig.ResourceVersion, lns.ResourceVersion, granted)
	}
	for _, name := range revoke {
		set(name, false)
	}
	for _, name := range grant {
		set(name, true)
	}
	return errors.Join(errs...)
}
