package cli

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/plan"
	"github.com/tickstack/tickstack/internal/testutil"
)

// TestPlanShowsKubeletRestarts plans a profile that takes over the kubelet's settings against a
// real API server: a node whose kubelet already has them is unchanged, a node without them and a
// node whose cpu.reserved moves restart their kubelet (no reboot) in slot waves of
// rollout.maxUnavailable, a node the profile lets go restores the kubelet at once, and with a new
// kernel argument the kubelet change rides on the reboot.
func TestPlanShowsKubeletRestarts(t *testing.T) {
	c := startAPIServer(t)
	for _, n := range []string{"k-same", "k-new", "k-moved", "k-other", "k-gone"} {
		role := "trading"
		if n == "k-gone" {
			role = "batch"
		}
		mustCreate(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"tickstack.io/role": role}}})
	}
	p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "kubelet"}, Spec: tsv1.LatencyProfileSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": "trading"}},
		CPU:          &tsv1.CPUSpec{Reserved: "0"},
		Kubelet:      &tsv1.KubeletSpec{TopologyManagerScope: "pod"},
		Rollout:      &tsv1.RolloutSpec{MaxUnavailable: ptrIntOrString(1)},
	}}
	facts := &tsv1.NodeFacts{OnlineCPUs: "0-3", KernelCmdline: "ro quiet"}
	kubelet := &tsv1.KubeletTuning{TopologyManagerPolicy: "single-numa-node", TopologyManagerScope: "pod",
		SystemReservedMemory: resource.MustParse("1Gi"), EvictionHardMemory: resource.MustParse("100Mi")}
	nodeState(t, c, "k-same", p.Name, &tsv1.NodeTuning{ReservedCPUs: "0", Kubelet: kubelet.DeepCopy()}, facts)
	nodeState(t, c, "k-new", p.Name, &tsv1.NodeTuning{ReservedCPUs: "0"}, facts)
	nodeState(t, c, "k-moved", p.Name, &tsv1.NodeTuning{ReservedCPUs: "1", Kubelet: kubelet.DeepCopy()}, facts)
	nodeState(t, c, "k-other", p.Name, &tsv1.NodeTuning{ReservedCPUs: "0", Kubelet: &tsv1.KubeletTuning{TopologyManagerPolicy: "restricted", TopologyManagerScope: "pod",
		SystemReservedMemory: resource.MustParse("1Gi"), EvictionHardMemory: resource.MustParse("100Mi")}}, facts)
	nodeState(t, c, "k-gone", p.Name, &tsv1.NodeTuning{ReservedCPUs: "0", Kubelet: kubelet.DeepCopy()}, facts)

	var out bytes.Buffer
	got := planNodes(t, c, p, &out)
	for node, want := range map[string]struct {
		action         plan.Action
		kubelet, boots bool
	}{
		"k-same": {plan.Unchanged, false, false}, "k-new": {plan.Apply, true, false}, "k-moved": {plan.Apply, true, false},
		"k-other": {plan.Apply, true, false}, "k-gone": {plan.Restore, true, false},
	} {
		n := got[node]
		if n.Action != want.action || n.KubeletRestart != want.kubelet || n.Reboot != want.boots {
			t.Errorf("node %s: %s kubelet restart %v reboot %v, want %s %v %v\n%s", node, n.Action, n.KubeletRestart, n.Reboot, want.action, want.kubelet, want.boots, out.String())
		}
	}
	testutil.WantContains(t, "plan output", out.String(),
		"would restart their kubelet",
		"node k-moved: apply (kubelet restart: drained, the kubelet restarted with new CPU and memory manager state, uncordoned; no reboot)",
		"~ reservedCPUs: 1 -> 0",
		"+ kubelet.topologyManagerScope: pod",
		"~ kubelet.topologyManagerPolicy: restricted -> single-numa-node",
		"kubelet restart in slot wave 1 of 3, now: the first slots are free (runtime settings at once)",
		"kubelet restart in slot wave 3 of 3, after wave 2 has finished (runtime settings at once)",
		"node k-gone: restore (kubelet restart",
		"when: now: runtime settings at once, then the drain and the kubelet restart (no slot: the profile is gone)",
	)

	// With a kernel argument as well (idle=poll), the kubelet change rides on the reboot.
	args := p.DeepCopy()
	args.Name = "kubelet-args"
	args.Spec.Power = &tsv1.PowerSpec{IdlePoll: ptrBool(true)}
	out.Reset()
	for _, n := range planNodes(t, c, args, &out) {
		if n.Node == "k-new" && (!n.Reboot || n.KubeletRestart || !strings.Contains(n.Detail, "the kubelet's new settings go in with the reboot")) {
			t.Errorf("k-new with idle=poll: reboot %v kubelet restart %v detail %q, want one reboot carrying the kubelet change\n%s", n.Reboot, n.KubeletRestart, n.Detail, out.String())
		}
	}
}

func ptrIntOrString(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
func ptrBool(b bool) *bool                     { return &b }
