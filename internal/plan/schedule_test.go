package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestScheduleSaysWhenEachNodeChanges(t *testing.T) {
	rack := func(name, r string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": r}}}
	}
	nodes := []corev1.Node{rack("a", "r1"), rack("b", "r1"), rack("c", "r2"), rack("d", "r2"), rack("e", "r3")}
	fresh := func() *Plan {
		return &Plan{Nodes: []NodePlan{
			{Node: "a", Action: Apply, Reboot: true}, {Node: "b", Action: Apply, Reboot: true},
			{Node: "c", Action: Apply, Reboot: true}, {Node: "d", Action: Apply}, {Node: "e", Action: Unchanged},
		}}
	}
	// Monday 2026-11-23 12:00 UTC; the window opens Saturdays 01:00 in London (GMT in November).
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), TopologyKey: "rack",
		Windows: []tsv1.MaintenanceWindow{{Days: []tsv1.Weekday{"Sat"}, Start: "01:00", End: "05:00", TimeZone: "Europe/London"}}}
	p := fresh()
	p.Schedule(r, nodes, now)
	want := map[string]string{
		"a": "reboot wave 1 of 2, at 2026-11-28T01:00:00Z, when the next maintenance window opens",
		"b": "reboot wave 2 of 2, after wave 1 has rebooted, inside a maintenance window",
		"c": "reboot wave 1 of 2, at 2026-11-28T01:00:00Z",
		"d": "now: applied as soon as the agent sees the change",
		"e": "",
	}
	for _, n := range p.Nodes {
		if w := want[n.Node]; (w == "") != (n.When == "") || !strings.HasPrefix(n.When, w) {
			t.Errorf("node %s: when %q, want %q", n.Node, n.When, w)
		}
	}

	p = fresh()
	p.Schedule(&tsv1.RolloutSpec{Paused: true}, nodes, now)
	if w := p.Nodes[0].When; !strings.Contains(w, "wave 1 of 3, not yet: spec.rollout.paused is true") {
		t.Errorf("paused: node a when %q", w)
	}

	var out strings.Builder
	p.Print(&out)
	if !strings.Contains(out.String(), "node b: apply (reboot required)\n  when: reboot wave 2 of 3, after wave 1 has rebooted\n") {
		t.Errorf("printed plan lacks b's when line:\n%s", out.String())
	}
}
