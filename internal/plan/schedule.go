package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/rollout"
)

// Schedule fills in when each changing node would change, as the operator would hand out the reboot
// slots at now: changes without a reboot at once; nodes that reboot in waves of the rollout's
// budgets (rollout.maxUnavailable, the topology domains, nodes cordoned today counting against
// them), the first wave at once or when the rollout is resumed or the next maintenance window
// opens, each further wave after the previous one finished and again only inside a window.
func (p *Plan) Schedule(r *tsv1.RolloutSpec, nodes []corev1.Node, now time.Time) {
	owned := 0
	var waiting, cordoned []string
	unschedulable := map[string]bool{}
	for i := range nodes {
		unschedulable[nodes[i].Name] = nodes[i].Spec.Unschedulable
	}
	for _, n := range p.Nodes {
		switch n.Action {
		case Apply, Restore, Unchanged:
			owned++
		default:
			continue
		}
		slot := n.Reboot || n.KubeletRestart && n.Action == Apply
		if slot {
			waiting = append(waiting, n.Node)
		}
		if unschedulable[n.Node] && !slot {
			cordoned = append(cordoned, n.Node)
		}
	}
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	waves := rollout.ProfileBudget(r, owned, ptrs).Waves(cordoned, waiting)
	ok, _, msg, next := rollout.Gate(r, now)
	first := "now: the first reboot slots are free"
	switch {
	case !ok && !next.IsZero():
		first = fmt.Sprintf("at %s, when the next maintenance window opens", next.UTC().Format(time.RFC3339))
	case !ok:
		first = "not yet: " + msg
	}
	later := ""
	if r != nil && len(r.Windows) > 0 {
		later = ", inside a maintenance window"
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Action != Apply && n.Action != Restore {
			continue
		}
		switch {
		case n.KubeletRestart && n.Action == Restore:
			n.When = "now: runtime settings at once, then the drain and the kubelet restart (no slot: the profile is gone)"
			continue
		case !n.Reboot && !n.KubeletRestart:
			n.When = "now: applied as soon as the agent sees the change (no drain, no reboot)"
			continue
		}
		wave := slices.IndexFunc(waves, func(w []string) bool { return slices.Contains(w, n.Node) })
		switch {
		case wave < 0:
			n.When = "not while the nodes cordoned today use up the rollout's budget for it: uncordon them or raise rollout.maxUnavailable / maxUnavailablePerDomain"
		case wave == 0 && n.Reboot:
			n.When = fmt.Sprintf("reboot wave 1 of %d, %s", len(waves), first)
		case wave == 0:
			n.When = fmt.Sprintf("kubelet restart in slot wave 1 of %d, %s (runtime settings at once)", len(waves), strings.Replace(first, "reboot slots", "slots", 1))
		case n.Reboot:
			n.When = fmt.Sprintf("reboot wave %d of %d, after wave %d has rebooted%s", wave+1, len(waves), wave, later)
		default:
			n.When = fmt.Sprintf("kubelet restart in slot wave %d of %d, after wave %d has finished%s (runtime settings at once)", wave+1, len(waves), wave, later)
		}
	}
}
