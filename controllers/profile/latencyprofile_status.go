package profile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// profileFacts is what the phases found; the status is a pure function of it.
type profileFacts struct {
	matched    int32
	owned      map[string]bool
	conflicted map[string]bool
	conflicts  []nodeConflict
	states     []*tsv1.LatencyNodeState // this profile's current node states on owned nodes
	// wantHash is, for each node whose agent resolves (spec.profile.resolveOnNode), the
	// resolve.TuningHash of the manager's resolution of it at the profile's generation: the node
	// is current once its agent reports that hash in status.resolved.
	wantHash         map[string]string
	waitingFacts     []string
	waitingRelease   []string
	releasing        []string
	resolutionErrors []nodeMessage
	deleting         bool
	// held says why no new reboot slot is given (paused, outside the windows): reason and message.
	heldReason, heldMessage string
}

type nodeConflict struct {
	node     string
	profiles []string
	priority int32
}

type nodeMessage struct {
	node, message string
}

// maxListed bounds how many nodes a condition message names.
const maxListed = 5

// nodeCounts are the per-node tallies of the status.
type nodeCounts struct {
	applied, rebootPending, degraded int32
	applying                         []string
	degradedMsgs                     []nodeMessage
}

func countNodes(f *profileFacts) nodeCounts {
	var c nodeCounts
	for _, lns := range f.states {
		var current bool
		switch want, resolving := f.wantHash[lns.Name]; {
		case lns.Spec.Profile.ResolveOnNode && resolving:
			current = resolvedCurrent(lns, want)
		case lns.Spec.Profile.ResolveOnNode, lns.Spec.Tuning == nil:
			continue
		default:
			current = lns.Status.ObservedGeneration == lns.Generation
		}
		switch {
		case current && meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeDegraded):
			c.degraded++
			cond := meta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeDegraded)
			c.degradedMsgs = append(c.degradedMsgs, nodeMessage{node: lns.Name, message: cond.Message})
		case current && meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeRebootRequired):
			c.rebootPending++
		case current && meta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeApplied):
			c.applied++
		default:
			c.applying = append(c.applying, lns.Name)
		}
	}
	c.degraded += int32(len(f.resolutionErrors))
	return c
}

// resolvedCurrent says whether the agent of a node that resolves on its own has acted on the
// profile's current generation: it has seen the node state's spec and reports, for this profile,
// the tuning the manager resolves for it (hash). A profile change that does not move the node
// changes no hash: the node is current at once, without a write. Its conditions then describe that
// tuning.
func resolvedCurrent(lns *tsv1.LatencyNodeState, hash string) bool {
	r := lns.Status.Resolved
	return lns.Status.ObservedGeneration == lns.Generation && r != nil &&
		r.Profile == lns.Spec.Profile.Name && r.TuningHash == hash && hash != ""
}

// setProfileStatus computes the whole status from the facts. ok says whether the reconcile succeeded;
// only then is observedGeneration advanced.
func setProfileStatus(p *tsv1.LatencyProfile, f *profileFacts, ok bool) {
	c := countNodes(f)
	st := &p.Status
	st.MatchedNodes = f.matched
	st.OwnedNodes = int32(len(f.owned))
	st.AppliedNodes, st.RebootPendingNodes, st.DegradedNodes = c.applied, c.rebootPending, c.degraded
	gen := p.Generation
	set := func(cond metav1.Condition) {
		cond.ObservedGeneration = gen
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	set(conflictCondition(f))
	set(degradedCondition(f, c))
	set(progressingCondition(f, c))
	set(readyCondition(f, c))
	if ok {
		st.ObservedGeneration = gen
	}
}

func conflictCondition(f *profileFacts) metav1.Condition {
	if len(f.conflicts) == 0 {
		return metav1.Condition{Type: tsv1.ProfileConflict, Status: metav1.ConditionFalse, Reason: tsv1.ReasonNoConflict,
			Message: "no other profile of equal priority selects these nodes"}
	}
	byOthers := map[string][]string{}
	prio := f.conflicts[0].priority
	for _, c := range f.conflicts {
		key := strings.Join(c.profiles, ", ")
		byOthers[key] = append(byOthers[key], c.node)
	}
	var parts []string
	for _, others := range slices.Sorted(maps.Keys(byOthers)) {
		parts = append(parts, fmt.Sprintf("nodes %s are also selected by %s", list(byOthers[others]), others))
	}
	return metav1.Condition{Type: tsv1.ProfileConflict, Status: metav1.ConditionTrue, Reason: tsv1.ReasonPriorityTie,
		Message: fmt.Sprintf("%s at the same priority %d; these nodes are left as they are: give one profile a higher spec.priority or narrow a nodeSelector",
			strings.Join(parts, "; "), prio)}
}

func degradedCondition(f *profileFacts, c nodeCounts) metav1.Condition {
	msgs := append([]nodeMessage{}, f.resolutionErrors...)
	reason := tsv1.ReasonResolutionFailed
	if len(msgs) == 0 {
		reason = tsv1.ReasonNodeDegraded
	}
	msgs = append(msgs, c.degradedMsgs...)
	if len(msgs) == 0 {
		return metav1.Condition{Type: tsv1.ProfileDegraded, Status: metav1.ConditionFalse, Reason: tsv1.ReasonStable,
			Message: "no node reports a problem"}
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].node < msgs[j].node })
	var parts []string
	for i, m := range msgs {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more nodes", len(msgs)-maxListed))
			break
		}
		parts = append(parts, fmt.Sprintf("node %s: %s", m.node, m.message))
	}
	return metav1.Condition{Type: tsv1.ProfileDegraded, Status: metav1.ConditionTrue, Reason: reason,
		Message: strings.Join(parts, "; ")}
}

func progressingCondition(f *profileFacts, c nodeCounts) metav1.Condition {
	cond := metav1.Condition{Type: tsv1.ProfileProgressing, Status: metav1.ConditionTrue}
	switch {
	case f.deleting:
		cond.Reason = tsv1.ReasonDeleting
		cond.Message = fmt.Sprintf("restoring the original host settings of nodes %s before the profile goes", list(f.releasing))
	case len(f.waitingRelease) > 0:
		cond.Reason = tsv1.ReasonReleasing
		cond.Message = fmt.Sprintf("nodes %s are still held by another profile whose agent is restoring them", list(f.waitingRelease))
	case len(f.waitingFacts) > 0:
		cond.Reason = tsv1.ReasonWaitingForFacts
		cond.Message = fmt.Sprintf("waiting for the agents of nodes %s to report their host facts (is the tickstack agent running there?)", list(f.waitingFacts))
	case len(c.applying) > 0:
		cond.Reason = tsv1.ReasonApplying
		cond.Message = fmt.Sprintf("agents of nodes %s are applying the tuning", list(c.applying))
	case c.rebootPending > 0 && f.heldReason != "":
		cond.Reason = f.heldReason
		cond.Message = fmt.Sprintf("%d nodes wait for their rollout slot (a reboot or a kubelet restart) to finish applying: %s", c.rebootPending, f.heldMessage)
	case c.rebootPending > 0:
		cond.Reason = tsv1.ReasonRebootPending
		cond.Message = fmt.Sprintf("%d nodes wait for their rollout slot (a reboot or a kubelet restart) to finish applying", c.rebootPending)
	case len(f.releasing) > 0:
		cond.Reason = tsv1.ReasonDeleting
		cond.Message = fmt.Sprintf("restoring nodes %s that the profile no longer selects", list(f.releasing))
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, tsv1.ReasonStable, "nothing in progress"
	}
	return cond
}

func readyCondition(f *profileFacts, c nodeCounts) metav1.Condition {
	cond := metav1.Condition{Type: tsv1.ProfileReady, Status: metav1.ConditionFalse}
	owned := int32(len(f.owned))
	switch {
	case f.deleting:
		cond.Reason, cond.Message = tsv1.ReasonDeleting, "the profile is being deleted"
	case f.matched == 0:
		cond.Reason, cond.Message = tsv1.ReasonNoNodes, "spec.nodeSelector matches no node: check the node labels"
	case c.degraded > 0:
		cond.Reason = tsv1.ReasonNodeDegraded
		if len(f.resolutionErrors) > 0 {
			cond.Reason = tsv1.ReasonResolutionFailed
		}
		cond.Message = fmt.Sprintf("%d of %d nodes are degraded: see the Degraded condition", c.degraded, owned)
	case len(f.conflicts) > 0 && owned == 0:
		cond.Reason, cond.Message = tsv1.ReasonPriorityTie, "every matched node is in a priority conflict: see the Conflict condition"
	case c.applied < owned || owned == 0:
		cond.Reason = tsv1.ReasonApplying
		if c.rebootPending > 0 {
			cond.Reason = tsv1.ReasonRebootPending
		}
		cond.Message = fmt.Sprintf("%d of %d nodes have the tuning in effect", c.applied, owned)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, tsv1.ReasonAllApplied
		cond.Message = fmt.Sprintf("all %d nodes have the tuning in effect", owned)
		if len(f.conflicts) > 0 {
			cond.Message += fmt.Sprintf("; %d more are in a priority conflict", len(f.conflicts))
		}
	}
	return cond
}

// rollupSteps is how many steps a rollout's progress is written in: a quarter of the owned nodes
// a step, so a status reads 0, 1/4, 1/2, 3/4 and all of them applied on its way.
const rollupSteps = 4

// rollupWrite says whether a reconcile writes now the status it computed (now), given the status
// last written and the one the previous reconcile computed (prevComputed, nil for none); when it
// does not, the profile is reconciled again after its roll-up window, and that reconcile decides
// again. It writes
//   - a status that moved in shape (statusShape): a generation, the nodes matched or owned, a
//     condition's status or reason, the degraded nodes (what an operator acts on; rare);
//   - progress (appliedNodes, rebootPendingNodes) that moved by a step since the status written;
//   - a status that settled: what the previous reconcile computed, nothing having moved for a
//     window;
//   - one that is already written (there is nothing to hold back), or the first.
//
// The rest, progress within a step and condition messages, waits. A condition's message names the
// nodes still applying and counts them, so a change whose reports stream in over T seconds
// differed at every window; written then, its writes grew with T, and T with the fleet
// (docs/scale.md, fix 21). Held back, a change costs its shape's moves, at most rollupSteps
// progress writes and the settled status, at any size, and the status written is never more than
// about two windows behind its nodes once they stop moving.
func rollupWrite(written, prevComputed, now *tsv1.LatencyProfileStatus) bool {
	switch {
	case written == nil, !statusShape(written, now):
		return true
	case equality.Semantic.DeepEqual(written, now), equality.Semantic.DeepEqual(prevComputed, now):
		return true
	}
	step := max(1, now.OwnedNodes/rollupSteps)
	moved := max(abs(now.AppliedNodes-written.AppliedNodes), abs(now.RebootPendingNodes-written.RebootPendingNodes))
	return moved >= step
}

// statusShape says whether two statuses have the same shape: all but the progress counts and the
// conditions' messages (and transition times, which move with a status) the same.
func statusShape(a, b *tsv1.LatencyProfileStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.MatchedNodes != b.MatchedNodes ||
		a.OwnedNodes != b.OwnedNodes || a.DegradedNodes != b.DegradedNodes || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, c := range a.Conditions {
		d := meta.FindStatusCondition(b.Conditions, c.Type)
		if d == nil || d.Status != c.Status || d.Reason != c.Reason || d.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

func abs(n int32) int32 {
	if n < 0 {
		return -n
	}
	return n
}

// list names at most maxListed nodes.
func list(nodes []string) string {
	n := append([]string{}, nodes...)
	sort.Strings(n)
	if len(n) > maxListed {
		return fmt.Sprintf("%s and %d more", strings.Join(n[:maxListed], ", "), len(n)-maxListed)
	}
	return strings.Join(n, ", ")
}
