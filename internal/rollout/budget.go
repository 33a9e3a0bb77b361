package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Budget is how many nodes may be cordoned or rebooting at once: in all (Max) and, when Domain is
// set, in each topology domain (PerDomain nodes of the same Domain value).
type Budget struct {
	Max int
	// Domain maps a node to its topology domain (its rollout.topologyKey label); nil: no domains.
	Domain    func(node string) string
	PerDomain int
}

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

// ProfileBudget is the budget of a profile's rollout over the owned nodes; nodes give the labels.
func ProfileBudget(r *tsv1.RolloutSpec, owned int, nodes []*corev1.Node) Budget {
	b := Budget{Max: MaxUnavailable(r, owned)}
	if r == nil || r.TopologyKey == "" {
		return b
	}
	labels := map[string]map[string]string{}
	for _, n := range nodes {
		labels[n.Name] = n.Labels
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

// Admit picks, from the waiting nodes in name order, those that fit the budget beside the nodes
// already unavailable: the operator's grants, and each wave of `tickstack plan`. A node whose domain
// is full is passed over for the next.
func (b Budget) Admit(unavailable, waiting []string) []string {
	inDomain := map[string]int{}
	if b.Domain != nil {
		for _, n := range unavailable {
			inDomain[b.Domain(n)]++
		}
	}
	left := b.Max - len(unavailable)
	var out []string
	for _, name := range slices.Sorted(slices.Values(waiting)) {
		if left <= 0 {
			break
		}
		if b.Domain != nil {
			d := b.Domain(name)
			if inDomain[d] >= b.PerDomain {
				continue
			}
			inDomain[d]++
		}
		out = append(out, name)
		left--
	}
	return out
}

// Waves splits the waiting nodes into the successive groups the operator would grant, each after
// the previous one finished, starting beside the nodes unavailable now. Nodes that can never fit
// (the budget is used up by others) are left out.
func (b Budget) Waves(unavailable, waiting []string) [][]string {
	var waves [][]string
	rest := slices.Clone(waiting)
	busy := unavailable
	for len(rest) > 0 {
		w := b.Admit(busy, rest)
		if len(w) == 0 {
			break
		}
		waves = append(waves, w)
		rest = slices.DeleteFunc(rest, func(n string) bool { return slices.Contains(w, n) })
		busy = unavailable // the wave finished: only the others' cordons remain
	}
	return waves
}
