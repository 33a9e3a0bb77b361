package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// MaxUnavailable resolves rollout.maxUnavailable against the number of nodes a profile owns: a
// count, or a percentage rounded down; never below 1, so a rollout always moves.
func MaxUnavailable(r *tsv1.RolloutSpec, owned int) int {
	if r == nil || r.MaxUnavailable == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, owned, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

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
// maxUnavailable of the profile's nodes are cordoned or rebooting at once. Nodes cordoned by someone
// else count against the budget too. Grants go in name order, so the rollout is predictable.
func PlanReboots(states []*tsv1.LatencyNodeState, cordoned map[string]bool, maxUnavailable int) (grant, revoke []string) {
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
	budget := maxUnavailable - len(unavailable)
	var waiting []string
	for _, lns := range states {
		if !lns.Spec.RebootGranted && wantsReboot(lns) {
			waiting = append(waiting, lns.Name)
		}
	}
	sort.Strings(waiting)
	for _, name := range waiting {
		if budget <= 0 {
			break
		}
		grant = append(grant, name)
		budget--
	}
	sort.Strings(revoke)
	return grant, revoke
}

// reconcileReboots hands out and takes back reboot slots among the nodes the profile owns.
func (r *LatencyProfileReconciler) reconcileReboots(ctx context.Context, s *profileScope) error {
	cordoned := map[string]bool{}
	for i := range s.nodes {
		if s.nodes[i].Spec.Unschedulable && s.facts.owned[s.nodes[i].Name] {
			cordoned[s.nodes[i].Name] = true
		}
	}
	grant, revoke := PlanReboots(s.facts.states, cordoned, MaxUnavailable(s.profile.Spec.Rollout, len(s.facts.owned)))
	grant = holdForBIOS(s.profile, s.facts.states, grant) // bios_gate.go: BIOS staged before the reboot
	byName := map[string]*tsv1.LatencyNodeState{}
	for _, lns := range s.facts.states {
		byName[lns.Name] = lns
	}
	var errs []error
	set := func(name string, granted bool) {
		lns := byName[name]
		orig := lns.DeepCopy()
		lns.Spec.RebootGranted = granted
		if err := r.Client.Patch(ctx, lns, client.MergeFrom(orig)); err != nil {
			errs = append(errs, fmt.Errorf("node state %s: setting rebootGranted=%v: %w", name, granted, err))
		}
	}
	for _, name := range revoke {
		set(name, false)
	}
	for _, name := range grant {
		set(name, true)
	}
	return errors.Join(errs...)
}
