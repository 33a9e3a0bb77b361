package profile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestCountNodesResolving: a node whose agent resolves its own tuning counts as applied only when
// it has seen its node state's spec and reports, for this profile, the manager's tuning hash.
func TestCountNodesResolving(t *testing.T) {
	state := func(name string, resolved *tsv1.ResolvedTuning, observed int64) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3},
			Spec:       tsv1.LatencyNodeStateSpec{Profile: tsv1.ProfileReference{Name: "p", ResolveOnNode: true}},
			Status: tsv1.LatencyNodeStateStatus{ObservedGeneration: observed, Resolved: resolved,
				Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue}}},
		}
	}
	f := &profileFacts{
		states: []*tsv1.LatencyNodeState{
			state("current", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "h"}, 3),
			state("older resolution", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "old"}, 3),
			state("other profile", &tsv1.ResolvedTuning{Profile: "q", Generation: 1, TuningHash: "h"}, 3),
			state("spec not seen", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "h"}, 2),
			state("not resolved yet", nil, 3),
			state("no resolution of ours (an error)", &tsv1.ResolvedTuning{Profile: "p", TuningHash: "h"}, 3),
		},
		wantHash: map[string]string{"current": "h", "older resolution": "h", "other profile": "h", "spec not seen": "h", "not resolved yet": "h"},
	}
	c := countNodes(f)
	if c.applied != 1 || len(c.applying) != 4 {
		t.Errorf("applied %d, applying %v; want 1 applied (current) and 4 applying", c.applied, c.applying)
	}
}
