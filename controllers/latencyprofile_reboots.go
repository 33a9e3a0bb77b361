package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/rollout"
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

// Budget is how many nodes may be cordoned or rebooting at once: in all (Max) and, when Domain is
// set, in each topology domain (PerDomain nodes whose Domain value is the same).
type Budget struct {
	Max int
	// Domain maps a node to its topology domain (the value of rollout.topologyKey); nil: no domains.
	Domain    func(node string) string
	PerDomain int
}

// ProfileBudget is the budget of profile p over the nodes it owns.
func ProfileBudget(p *tsv1.LatencyProfile, owned int, nodes []corev1.Node) Budget {
	b := Budget{Max: MaxUnavailable(p.Spec.Rollout, owned)}
	r := p.Spec.Rollout
	if r == nil || r.TopologyKey == "" {
		return b
	}
	labels := map[string]map[string]string{}
	for i := range nodes {
		labels[nodes[i].Name] = nodes[i].Labels
	}
	b.PerDomain = 1
	if r.MaxUnavailablePerDomain != nil && *r.MaxUnavailablePerDomain > 0 {
		b.PerDomain = int(*r.MaxUnavailablePerDomain)
	}
	key := r.TopologyKey
	b.Domain = func(node string) string {
		if v, ok := labels[node][key]; ok {
			return key + "=" + v
		}
		return "node/" + node // a node without the label is its own domain
	}
	return b
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
// b.Max of the profile's nodes, and no more than b.PerDomain of one topology domain, are cordoned or
// rebooting at once. Nodes cordoned by someone else count against the budgets too. Grants go in name
// order, so the rollout is predictable; a node whose domain is full is passed over for the next.
func PlanReboots(states []*tsv1.LatencyNodeState, cordoned map[string]bool, b Budget) (grant, revoke []string) {
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
	inDomain := map[string]int{}
	if b.Domain != nil {
		for name := range unavailable {
			inDomain[b.Domain(name)]++
		}
	}
	budget := b.Max - len(unavailable)
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
		if b.Domain != nil {
			d := b.Domain(name)
			if inDomain[d] >= b.PerDomain {
				continue
			}
			inDomain[d]++
		}
		grant = append(grant, name)
		budget--
	}
	sort.Strings(revoke)
	return grant, revoke
}

// RolloutGate says whether a new reboot slot may be given at now: not while paused, nor outside
// the maintenance windows. When not, reason and message say why, and next is when the next window
// opens (zero: paused, or none opens).
func RolloutGate(r *tsv1.RolloutSpec, now time.Time) (ok bool, reason, message string, next time.Time) {
	if r == nil {
		return true, "", "", time.Time{}
	}
	if r.Paused {
		return false, tsv1.ReasonRolloutPaused, "spec.rollout.paused is true: no reboot or kubelet restart starts until it is false", time.Time{}
	}
	open, next, _, err := rollout.Open(r.Windows, now)
	switch {
	case err != nil:
		return false, tsv1.ReasonOutsideWindow, "spec.rollout.windows: " + err.Error(), time.Time{}
	case open:
		return true, "", "", time.Time{}
	case next.IsZero():
		return false, tsv1.ReasonOutsideWindow, "no spec.rollout.windows window opens in the next 8 days", time.Time{}
	}
	return false, tsv1.ReasonOutsideWindow, fmt.Sprintf("outside spec.rollout.windows: the next window opens at %s", next.UTC().Format(time.RFC3339)), next
}

// reconcileReboots hands out and takes back reboot slots among the nodes the profile owns.
func (r *LatencyProfileReconciler) reconcileReboots(ctx context.Context, s *profileScope) error {
	cordoned := map[string]bool{}
	for i := range s.nodes {
		if s.nodes[i].Spec.Unschedulable && s.facts.owned[s.nodes[i].Name] {
			cordoned[s.nodes[i].Name] = true
		}
	}
	grant, revoke := PlanReboots(s.facts.states, cordoned, ProfileBudget(s.profile, len(s.facts.owned), s.nodes))
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	if ok, reason, msg, next := RolloutGate(s.profile.Spec.Rollout, now); !ok {
		if len(grant) > 0 {
			s.facts.heldReason, s.facts.heldMessage = reason, msg
		}
		grant = nil
		if !next.IsZero() {
			s.requeue = next.Sub(now) + time.Second
		}
	}
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
