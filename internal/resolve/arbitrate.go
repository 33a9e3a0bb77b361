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

// TiedWith lists the profiles tied with profile for the node: Tied without profile itself.
func (a Arbitration) TiedWith(profile string) []string {
	var out []string
	for _, n := range a.Tied {
		if n != profile {
			out = append(out, n)
		}
	}
	return out
}

// SelectsNode reports whether the profile's node selector picks the node.
func SelectsNode(p *tsv1.LatencyProfile, node *corev1.Node) (bool, error) {
	return CompileSelector(p).Selects(node)
}

// Selector is a profile's node selector, compiled once for deciding many nodes.
type Selector struct {
	sel labels.Selector
	err error
}

// CompileSelector compiles the profile's spec.nodeSelector.
func CompileSelector(p *tsv1.LatencyProfile) Selector {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
	if err != nil {
		return Selector{err: fmt.Errorf("spec.nodeSelector: %w", err)}
	}
	return Selector{sel: sel}
}

// Selects reports whether the selector picks the node.
func (s Selector) Selects(node *corev1.Node) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	return s.sel.Matches(labels.Set(node.Labels)), nil
}

// Arbitrate decides which of the profiles selecting a node tunes it: the highest priority wins; at
// equal top priority nobody does, and all of them report a conflict. Profiles being deleted take no
// part: they give their nodes up.
func Arbitrate(node *corev1.Node, profiles []tsv1.LatencyProfile) Arbitration {
	return NewArbiter(profiles).Node(node)
}

// Arbiter arbitrates many nodes between the same profiles, their selectors compiled once (a
// fleet's reconcile decides thousands of nodes).
type Arbiter struct {
	profiles []tsv1.LatencyProfile
	sels     []Selector
}

// NewArbiter compiles the profiles' selectors. profiles is read, not copied: keep it unchanged.
func NewArbiter(profiles []tsv1.LatencyProfile) *Arbiter {
	a := &Arbiter{profiles: profiles, sels: make([]Selector, len(profiles))}
	for i := range profiles {
		a.sels[i] = CompileSelector(&profiles[i])
	}
	return a
}

// Node is Arbitrate(node, profiles).
func (arb *Arbiter) Node(node *corev1.Node) Arbitration {
	var a Arbitration
	found := false
	for i := range arb.profiles {
		p := &arb.profiles[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if ok, err := arb.sels[i].Selects(node); err != nil || !ok {
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
