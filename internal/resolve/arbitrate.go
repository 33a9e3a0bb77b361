package resolve

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Arbitration is how one node is shared out between the profiles that select it.
type Arbitration struct {
	// Winner is the profile that tunes the node, empty when nobody does.
	Winner string
	// Tied lists the profiles sharing the top priority when there is a tie (then Winner is empty).
	Tied []string
	// Priority is the top priority among the profiles selecting the node.
	Priority int32
}

// SelectsNode reports whether the profile's node selector picks the node.
func SelectsNode(p *tsv1.LatencyProfile, node *corev1.Node) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
	if err != nil {
		return false, fmt.Errorf("spec.nodeSelector: %w", err)
	}
	return sel.Matches(labels.Set(node.Labels)), nil
}

// Arbitrate decides which of the profiles selecting a node tunes it: the highest priority wins; at
// equal top priority nobody does, and all of them report a conflict. Profiles being deleted take no
// part: they give their nodes up.
func Arbitrate(node *corev1.Node, profiles []tsv1.LatencyProfile) Arbitration {
	var a Arbitration
	found := false
	for i := range profiles {
		p := &profiles[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if ok, err := SelectsNode(p, node); err != nil || !ok {
			continue
		}
		switch {
		case !found || p.Spec.Priority > a.Priority:
			a = Arbitration{Winner: p.Name, Tied: []string{p.Name}, Priority: p.Spec.Priority}
			found = true
		case p.Spec.Priority == a.Priority:
			a.Tied = append(a.Tied, p.Name)
			a.Winner = ""
		}
	}
	if len(a.Tied) < 2 {
		a.Tied = nil
	} else {
		sort.Strings(a.Tied)
	}
	return a
}
