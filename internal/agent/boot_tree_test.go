package agent_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

func tainted(t *testing.T, node string) bool {
	t.Helper()
	return slices.ContainsFunc(getNode(t, node).Spec.Taints, func(x corev1.Taint) bool {
		return x.Key == tsv1.TuningPendingTaint && x.Effect == corev1.TaintEffectNoSchedule
	})
}

// TestTuningPendingTaints: the taint goes on once and comes off, other taints kept in order, and
// the list passed in is never changed (a patch is computed against it).
func TestTuningPendingTaints(t *testing.T) {
	other := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoExecute}
	pending := corev1.Taint{Key: tsv1.TuningPendingTaint, Effect: corev1.TaintEffectNoSchedule}
	in := make([]corev1.Taint, 1, 4) // room to append into: an append must not write there
	in[0] = other
	on, changed := agent.TuningPendingTaints(in, true)
	if !changed || !slices.Equal(on, []corev1.Taint{other, pending}) || !slices.Equal(in[:cap(in)][:2], []corev1.Taint{other, {}}) {
		t.Errorf("on: %v %v, the list passed in now %v", on, changed, in[:cap(in)][:2])
	}
	if again, changed := agent.TuningPendingTaints(on, true); changed || !slices.Equal(again, on) {
		t.Errorf("on twice: %v %v", again, changed)
	}
	off, changed := agent.TuningPendingTaints(on, false)
	if !changed || !slices.Equal(off, []corev1.Taint{other}) || !slices.Equal(on, []corev1.Taint{other, pending}) {
		t.Errorf("off: %v %v, the list passed in now %v", off, changed, on)
	}
	if none, changed := agent.TuningPendingTaints(nil, false); changed || none != nil {
		t.Errorf("off without it: %v %v", none, changed)
	}
}

// TestTreeBootBeforePods: while a tuning is in force the agent keeps it in the saved tuning and
// installs the boot unit (enabled for kubelet.service) with a copy of its binary; after an
// unplanned reboot (a new boot ID, the runtime values back at the host's defaults) the boot unit's
// --boot-apply puts them back without the API server; the agent then taints the node until it
// finds the tuning Applied for the new boot (held here by a setting it cannot write), records that
// boot and takes the taint off; the restore removes the unit, the binary and the saved tuning.
func TestTreeBootBeforePods(t *testing.T) {
	node := agenttest.Name("boot")
	a := agenttest.NewTreeAgent(t, node)
	before := agenttest.Snapshot(t, a.Root)
	self := filepath.Join(agenttest.TempDir(t, "self"), "agent")
	if err := os.WriteFile(self, []byte("#!/bin/sh\n# the agent's binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.R.BootUnit = agent.BootOptions{UnitDir: "/etc/systemd/system", Self: self, Args: []string{"--journal-path=/var/lib/tickstack/tuning-journal.json"}}
	// A kubelet the agent cannot read (here a config dir below a file; on the local cluster's VM,
	// PID 1's root closed to containers): without a kubelet section it is never read.
	a.R.Kubelet = agent.KubeletOptions{ConfigDir: "/proc/sys/vm/swappiness/kubelet.conf.d", StopCommand: []string{"false"}, StartCommand: []string{"false"}}
	tuningOf := &tsv1.NodeTuning{ReservedCPUs: "0-1", IsolatedCPUs: "2-3",
		Sysctls: map[string]string{"vm.stat_interval": "10", "vm.swappiness": "10"}}
	stop := startOnTree(t, a, node, tuningOf)

	bootID := readTree(t, a, "proc/sys/kernel/random/boot_id")
	tsutil.Poll(t, 20*time.Second, "applied for this boot", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied); err != nil {
			return err
		}
		if l.Status.AppliedBootID != bootID {
			return fmt.Errorf("appliedBootID %q, want %q", l.Status.AppliedBootID, bootID)
		}
		return nil
	})
	unit := readTree(t, a, "etc/systemd/system/"+agent.BootUnitName)
	for _, want := range []string{"Before=kubelet.service", "ExecStart=" + agent.DefaultBootBinary + " --boot-apply --host-root=/ --journal-path=/var/lib/tickstack/tuning-journal.json", "WantedBy=kubelet.service"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the boot unit lacks %q:\n%s", want, unit)
		}
	}
	for _, w := range []string{"kubelet.service.wants", "multi-user.target.wants"} {
		if l, err := os.Readlink(filepath.Join(a.Root, "etc/systemd/system", w, agent.BootUnitName)); err != nil || l != "../"+agent.BootUnitName {
			t.Errorf("%s link %q, %v", w, l, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(a.Root, agent.DefaultBootBinary)); err != nil || !bytes.Contains(b, []byte("the agent's binary")) {
		t.Errorf("the binary copy: %q, %v", b, err)
	}
	if !strings.Contains(readTree(t, a, agent.DesiredPath), `"vm.stat_interval": "10"`) {
		t.Errorf("the saved tuning lacks the sysctls:\n%s", readTree(t, a, agent.DesiredPath))
	}
	if tainted(t, node) {
		t.Error("tainted while Applied for the running boot")
	}

	// An unplanned reboot: the agent gone, a new boot ID, the host's defaults back.
	stop()
	newBoot := "00000000-0000-4000-8000-0000000000b2"
	for p, v := range map[string]string{"proc/sys/kernel/random/boot_id": newBoot, "proc/sys/vm/stat_interval": "1", "proc/sys/vm/swappiness": "60"} {
		if err := os.WriteFile(filepath.Join(a.Root, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The boot unit, before the kubelet: no API server needed.
	var out bytes.Buffer
	bootR := agenttest.TreeAgentOn("", a.Root, agenttest.TempDir(t, "bootlogs")).R
	if err := agent.BootApply(bootR, &out); err != nil {
		t.Fatalf("boot apply: %v\n%s", err, out.String())
	}
	if got := readTree(t, a, "proc/sys/vm/stat_interval"); got != "10" {
		t.Errorf("after the boot unit vm.stat_interval is %q, want 10 (%s)", got, out.String())
	}
	if !strings.Contains(out.String(), "2 settings written") {
		t.Errorf("boot apply said %q", out.String())
	}
	// A setting the agent cannot write in this boot holds the confirmation back.
	swap := filepath.Join(a.Root, "proc/sys/vm/swappiness")
	if err := os.Remove(swap); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(swap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Root, "proc/sys/vm/stat_interval"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop = agenttest.StartAgent(t, cfg, a.R, nil)
	tsutil.Poll(t, 20*time.Second, "tainted until confirmed", func() error {
		if !tainted(t, node) {
			return fmt.Errorf("no %s taint", tsv1.TuningPendingTaint)
		}
		if l := getLNS(t, node); l.Status.AppliedBootID != bootID {
			return fmt.Errorf("appliedBootID %q while not Applied", l.Status.AppliedBootID)
		}
		return nil
	})
	if err := os.Remove(swap); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swap, []byte("60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "confirmed for the new boot", func() error {
		l := getLNS(t, node)
		if l.Status.AppliedBootID != newBoot {
			return fmt.Errorf("appliedBootID %q, want %q", l.Status.AppliedBootID, newBoot)
		}
		if tainted(t, node) {
			return fmt.Errorf("still tainted")
		}
		return nil
	})

	// The restore takes it all away.
	deleteLNS(t, node)
	stop()
	after := agenttest.Snapshot(t, a.Root)
	// The tree's own boot ID and the sysctl files the test rewrote are not the restore's business.
	var diff []string
	for _, d := range hosttest.Diff(before, after) {
		if !strings.Contains(d, "boot_id") {
			diff = append(diff, d)
		}
	}
	if len(diff) > 0 {
		t.Errorf("the host differs after the restore:\n%s", strings.Join(diff, "\n"))
	}
}

// TestRetuneNeedsTaint: a moving resolution is tainted unless it is the node state's first tuning
// on a Node without the profile label.
func TestRetuneNeedsTaint(t *testing.T) {
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{tsv1.ProfileLabel: "p"}}}
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"other": "x"}}}
	fresh := &tsv1.LatencyNodeState{}
	resolved := &tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Resolved: &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "h"}}}
	tuned := &tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Tuning: &tsv1.NodeTuning{}}}
	applied := &tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue}}}}
	notApplied := &tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: metav1.ConditionFalse}}}}
	for _, c := range []struct {
		name string
		base *tsv1.LatencyNodeState
		node *corev1.Node
		want bool
	}{
		{"first tuning, unlabelled node", fresh, bare, false},
		{"first tuning, never applied, unlabelled node", notApplied, bare, false},
		{"first tuning, labelled node (a label left from before)", fresh, labelled, true},
		{"something resolved before", resolved, bare, true},
		{"a tuning in status", tuned, bare, true},
		{"applied before", applied, bare, true},
		{"applied before, labelled", applied, labelled, true},
	} {
		if got := agent.RetuneNeedsTaint(c.base, c.node); got != c.want {
			t.Errorf("%s: RetuneNeedsTaint %v, want %v", c.name, got, c.want)
		}
	}
}
