package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestTreeOfflinedCPUs: the agent reports which CPUs the tree has and can take offline, takes
// spec.tuning.offlinedCPUs offline through cpuN/online (no reboot), reports each in
// status.settings, takes a CPU brought back by someone else offline again, and brings every CPU
// back when the node state goes.
func TestTreeOfflinedCPUs(t *testing.T) {
	node := agenttest.Name("offline")
	a := agenttest.NewTreeAgent(t, node)
	before := agenttest.Snapshot(t, a.Root)
	startOnTree(t, a, node, &tsv1.NodeTuning{ReservedCPUs: "0-1", OfflinedCPUs: "2-3"})
	pollApplied(t, node, 20*time.Second)
	tsutil.Poll(t, 20*time.Second, "facts", func() error {
		if f := getLNS(t, node).Status.Facts; f == nil || f.PresentCPUs != "0-3" || f.HotpluggableCPUs != "1-3" {
			return fmt.Errorf("facts %+v, want present 0-3 and hotpluggable 1-3 (Degraded: %s)", f, condition(getLNS(t, node), tsv1.NodeDegraded).Message)
		}
		return nil
	})
	l := getLNS(t, node)
	if l.Status.Reboot != nil {
		t.Errorf("offlining CPUs asked for a reboot: %+v", l.Status.Reboot)
	}
	for _, cpu := range []int{2, 3} {
		if got := readTree(t, a, fmt.Sprintf("sys/devices/system/cpu/cpu%d/online", cpu)); got != "0" {
			t.Errorf("cpu%d/online = %q, want 0", cpu, got)
		}
		if st := setting(l, fmt.Sprintf("hotplug/cpu%d/online", cpu)); st.State != tsv1.SettingInSync || st.Desired != "0" {
			t.Errorf("status.settings hotplug/cpu%d/online = %+v, want InSync 0", cpu, st)
		}
	}
	if got := readTree(t, a, "sys/devices/system/cpu/cpu1/online"); got != "1" {
		t.Errorf("cpu1/online = %q, want 1 (not offlined)", got)
	}

	// Someone brings CPU 3 back: the drift check takes it offline again.
	if err := os.WriteFile(filepath.Join(a.Root, "sys/devices/system/cpu/cpu3/online"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "cpu3 offline again", func() error {
		if got := readTree(t, a, "sys/devices/system/cpu/cpu3/online"); got != "0" {
			return fmt.Errorf("cpu3/online = %q", got)
		}
		return nil
	})

	deleteLNS(t, node)
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Errorf("the tree differs from its originals after the restore:\n%s", strings.Join(d, "\n"))
	}
}

// setting is the status.settings entry of that name (zero when there is none).
func setting(l *tsv1.LatencyNodeState, name string) tsv1.SettingStatus {
	for _, s := range l.Status.Settings {
		if s.Name == name {
			return s
		}
	}
	return tsv1.SettingStatus{}
}

// TestTreeKubeletRestartsForOfflinedCPUs: with the profile's kubelet section, CPUs taken offline
// under a running kubelet leave its static CPU manager planning with CPUs that are gone (its
// checkpoint); the agent reports it (kubelet/cpuManagerCPUs PendingRestart, RebootRequired
// KubeletRestartRequired) and restarts the kubelet with new checkpoints in the node's slot.
func TestTreeKubeletRestartsForOfflinedCPUs(t *testing.T) {
	node := agenttest.Name("offkubelet")
	// The kubelet takes the drop-in in a first slot; its checkpoint then covers CPUs 0-3.
	a, k := startKubeletRestartRequested(t, node)
	setGranted(t, node, true)
	tsutil.Poll(t, 30*time.Second, "applied with the drop-in", func() error {
		l := getLNS(t, node)
		if s := setting(l, "kubelet/cpuManagerCPUs"); s.State != tsv1.SettingInSync || s.Observed != "0-3" {
			return fmt.Errorf("setting %+v", s)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, "")
	})
	setGranted(t, node, false)

	// CPU 3 goes offline; the tree's kernel is the test: it drops CPU 3 from the online CPUs.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning.OfflinedCPUs = "3" })
	tsutil.Poll(t, 20*time.Second, "cpu3 offline", func() error {
		if got := readTree(t, a, "sys/devices/system/cpu/cpu3/online"); got != "0" {
			return fmt.Errorf("cpu3/online = %q", got)
		}
		return nil
	})
	if got := k.log(t); got != "stop start" {
		t.Fatalf("kubelet log %q before its CPUs changed, want one restart", got)
	}
	if err := os.WriteFile(filepath.Join(a.Root, "sys/devices/system/cpu/online"), []byte("0-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tsutil.Poll(t, 20*time.Second, "a kubelet restart requested for the CPUs", func() error {
		l := getLNS(t, node)
		if s := setting(l, "kubelet/cpuManagerCPUs"); s.State != tsv1.SettingPendingRestart || s.Desired != "0-2" || s.Observed != "0-3" {
			return fmt.Errorf("setting %+v", s)
		}
		if r := l.Status.Reboot; r == nil || r.Phase != tsv1.RebootRequested || r.Action != tsv1.ActionKubeletRestart {
			return fmt.Errorf("reboot status %+v", r)
		}
		return wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionTrue, agent.ReasonKubeletRestartRequired)
	})
	if got := k.log(t); got != "stop start" {
		t.Fatalf("the kubelet was restarted before the slot: %s", got)
	}
	setGranted(t, node, true)
	pollSlotDone(t, node, "the kubelet restarted over the online CPUs", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		if s := setting(l, "kubelet/cpuManagerCPUs"); s.State != tsv1.SettingInSync || s.Observed != "0-2" {
			return fmt.Errorf("setting %+v", s)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, "")
	})
	if got := k.log(t); got != "stop start stop start" {
		t.Errorf("kubelet log %q, want one more restart for the CPUs", got)
	}
	if getNode(t, node).Spec.Unschedulable {
		t.Error("the node stays cordoned after the restart")
	}
}
