package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestUnvalidatedTaint: the taint stays on the nodes of a gated profile until they are validated
// for it, and setTaint adds and removes only its own taint.
func TestUnvalidatedTaint(t *testing.T) {
	gated := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tsv1.LatencyProfileSpec{Validation: &tsv1.ValidationSpec{TaintUntilValidated: true}}}
	ungated := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	node := func(validated string) *corev1.Node { return labeledNode(tsv1.ValidatedLabel, validated) }
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		profile *tsv1.LatencyProfile
		want    bool
	}{
		{"no profile", node(""), nil, false},
		{"profile without gating", node(""), ungated, false},
		{"gated, not validated", node(""), gated, true},
		{"gated, validated for another profile", node("q"), gated, true},
		{"gated, validated", node("p"), gated, false},
	} {
		if got := WantUnvalidatedTaint(tc.node, tc.profile); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	other := corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoExecute}
	taints, changed := setTaint([]corev1.Taint{other}, true)
	if !changed || len(taints) != 2 || taints[1].Key != tsv1.UnvalidatedTaint {
		t.Fatalf("adding: %v %v", taints, changed)
	}
	if _, changed := setTaint(taints, true); changed {
		t.Fatal("adding twice changed the taints")
	}
	taints, changed = setTaint(taints, false)
	if !changed || len(taints) != 1 || taints[0] != other {
		t.Fatalf("removing: %v %v", taints, changed)
	}
}

// labeledNode is node "n" with the label key set to value, or without it when value is "".
func labeledNode(key, value string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
	if value != "" {
		n.Labels[key] = value
	}
	return n
}
