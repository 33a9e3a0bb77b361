package plan

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestPlanOfflinedCPUs: cpu.offlined is planned per node: a runtime change (no reboot), a kubelet
// restart where the profile owns the kubelet's CPU manager, and invalid on a node that lacks a CPU
// or cannot take it offline.
func TestPlanOfflinedCPUs(t *testing.T) {
	const cmdline = "ro isolcpus=managed_irq,2-5 nohz_full=2-5 rcu_nocbs=2-5 irqaffinity=0-1"
	kubelet := &tsv1.KubeletTuning{TopologyManagerPolicy: "single-numa-node", TopologyManagerScope: "container",
		SystemReservedMemory: resource.MustParse("1Gi"), EvictionHardMemory: resource.MustParse("100Mi")}
	profile := func(withKubelet bool) *tsv1.LatencyProfile {
		p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "off"}, Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "trading"}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Offlined: "6-7"},
		}}
		if withKubelet {
			p.Spec.Kubelet = &tsv1.KubeletSpec{}
		}
		return p
	}
	state := func(node string, hotplug tsv1.CPUSet, k *tsv1.KubeletTuning) tsv1.LatencyNodeState {
		return tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec: tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: "off"}, Tuning: &tsv1.NodeTuning{
				ReservedCPUs: "0-1", IsolatedCPUs: "2-5", WorkqueueCPUs: "0-1",
				IRQ:        &tsv1.IRQTuning{HousekeepingCPUs: "0-1", BannedCPUs: "2-5"},
				KernelArgs: strings.Fields(cmdline)[1:], Kubelet: k,
			}},
			Status: tsv1.LatencyNodeStateStatus{Facts: &tsv1.NodeFacts{OnlineCPUs: "0-7", PresentCPUs: "0-7", HotpluggableCPUs: hotplug, KernelCmdline: cmdline}},
		}
	}
	nodes := []corev1.Node{}
	for _, n := range []string{"a", "b"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"role": "trading"}}})
	}
	for _, tt := range []struct {
		name        string
		withKubelet bool
		hotplug     tsv1.CPUSet
		want        NodePlan
	}{
		{"runtime only", false, "1-7", NodePlan{Action: Apply, Changes: []Change{{Setting: "offlinedCPUs", To: "6-7"}}}},
		{"the kubelet restarts for its CPU manager", true, "1-7", NodePlan{Action: Apply, KubeletRestart: true, Changes: []Change{{Setting: "offlinedCPUs", To: "6-7"}}}},
		{"a CPU without an online file", false, "1-6", NodePlan{Action: Invalid, Detail: "spec.cpu.offlined: CPUs 7 cannot be taken offline on this node"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var k *tsv1.KubeletTuning
			if tt.withKubelet {
				k = kubelet.DeepCopy()
			}
			states := []tsv1.LatencyNodeState{state("a", tt.hotplug, k), state("b", "1-7", k)}
			// Node b already has the CPUs offline: nothing to do there.
			states[1].Spec.Tuning.OfflinedCPUs = "6-7"
			pl, err := Compute(profile(tt.withKubelet), nodes, nil, states)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.Nodes[0]
			if got.Action != tt.want.Action || got.Reboot || got.KubeletRestart != tt.want.KubeletRestart ||
				!slices.Equal(got.Changes, tt.want.Changes) || !strings.Contains(got.Detail, tt.want.Detail) {
				t.Errorf("node a: %+v\nwant %+v", got, tt.want)
			}
			if b := pl.Nodes[1]; b.Action != Unchanged || b.Reboot || b.KubeletRestart {
				t.Errorf("node b, its CPUs offline already: %+v, want unchanged", b)
			}
			// The same when node b's agent resolves its own tuning: what it resolved is in its status.
			states[1].Spec.Profile.ResolveOnNode = true
			states[1].Status.Tuning, states[1].Spec.Tuning = states[1].Spec.Tuning, nil
			pl, err = Compute(profile(tt.withKubelet), nodes, nil, states)
			if err != nil {
				t.Fatal(err)
			}
			if b := pl.Nodes[1]; b.Action != Unchanged || b.Reboot || b.KubeletRestart {
				t.Errorf("node b resolving its own tuning, its CPUs offline already: %+v, want unchanged", b)
			}
		})
	}
}

// TestKubeletRestartForCPUPools: a change of the shared pool (in reservedSystemCPUs) or of the
// offlined CPUs restarts a kubelet the profile owns, and nothing else does.
func TestKubeletRestartForCPUPools(t *testing.T) {
	k := &tsv1.KubeletTuning{TopologyManagerPolicy: "single-numa-node", TopologyManagerScope: "container"}
	base := func() *tsv1.NodeTuning {
		return &tsv1.NodeTuning{ReservedCPUs: "0", SharedCPUs: "1", OfflinedCPUs: "7", Kubelet: k.DeepCopy()}
	}
	for _, tt := range []struct {
		name   string
		mutate func(*tsv1.NodeTuning)
		want   bool
	}{
		{"unchanged", func(*tsv1.NodeTuning) {}, false},
		{"shared pool grows", func(n *tsv1.NodeTuning) { n.SharedCPUs = "1-2" }, true},
		{"shared pool goes", func(n *tsv1.NodeTuning) { n.SharedCPUs = "" }, true},
		{"offlined CPUs change", func(n *tsv1.NodeTuning) { n.OfflinedCPUs = "6-7" }, true},
		{"kubelet section dropped", func(n *tsv1.NodeTuning) { n.Kubelet = nil }, true},
	} {
		want := base()
		tt.mutate(want)
		if got := needsKubeletRestart(base(), want); got != tt.want {
			t.Errorf("%s: needsKubeletRestart = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A profile without a kubelet section restarts nothing when its pools change.
	from, to := base(), base()
	from.Kubelet, to.Kubelet, to.SharedCPUs = nil, nil, "1-2"
	if needsKubeletRestart(from, to) {
		t.Error("a change without a kubelet section restarts the kubelet")
	}
}
