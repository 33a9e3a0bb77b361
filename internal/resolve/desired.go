package resolve

import tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

// DesiredTuning is the tuning a node state asks its agent for: spec.tuning, or, for a node whose
// agent resolves its own (spec.profile.resolveOnNode), the tuning the agent reports it resolved,
// status.tuning (docs/architecture.md, "Fleet scale"). nil: none yet. The operator's node
// controllers and `tickstack plan` read a node's tuning through it.
func DesiredTuning(lns *tsv1.LatencyNodeState) *tsv1.NodeTuning {
	if lns.Spec.Profile.ResolveOnNode {
		return lns.Status.Tuning
	}
	return lns.Spec.Tuning
}
