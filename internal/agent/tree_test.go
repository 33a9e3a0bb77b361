package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/host/hosttest"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

func readTree(t *testing.T, a *agenttest.TreeAgent, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.Root, p))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// treeTuning is what the operator resolves for the tree's node: runtime settings a VM cannot
// change (SR-IOV, cpufreq, turbo) and kernel arguments.
func treeTuning() *tsv1.NodeTuning {
	return &tsv1.NodeTuning{
		ReservedCPUs: "0-1", IsolatedCPUs: "2-3",
		KernelArgs: []string{"isolcpus=managed_irq,2-3", "nohz_full=2-3", "rcu_nocbs=2-3", "irqaffinity=0-1"},
		Sysctls:    map[string]string{"vm.stat_interval": "10", "vm.swappiness": "10"},
		IRQ:        &tsv1.IRQTuning{HousekeepingCPUs: "0-1", BannedCPUs: "2-3"},
		Governor:   "performance", Turbo: tsv1.Disabled,
		MaxCStateExitLatencyMicroseconds: ptr.To[int32](2),
		WorkqueueCPUs:                    "0-1",
		NICs: []tsv1.NICTuning{{Group: "md", Interface: "ens1f0", PCIAddress: "0000:3b:00.0", Driver: "ice",
			NumVFs: ptr.To[int32](4), Acceleration: tsv1.AccelerationKernel, RPSCPUs: "0-1"}},
	}
}

// TestTreeRebootProtocol runs the agent against a host-root tree: facts before the tuning,
// runtime settings applied, kernel arguments written through a GRUB drop-in, RebootRequired and
// the reboot protocol (granted by the test as the operator would; the fake reboot swaps the
// tree's boot ID and /proc/cmdline), exactly one reboot, then deletion restores the tree.
func TestTreeRebootProtocol(t *testing.T) {
	node := agenttest.Name("tree")
	a := agenttest.NewTreeAgent(t, node)
	before := agenttest.Snapshot(t, a.Root)
	bootID := readTree(t, a, "proc/sys/kernel/random/boot_id")
	startOnTree(t, a, node, nil)

	// Facts first; nothing on the host changes while spec.tuning is unset.
	tsutil.Poll(t, 20*time.Second, "facts reported", func() error {
		l := getLNS(t, node)
		if l.Status.Facts == nil || l.Status.Facts.OnlineCPUs != "0-3" {
			return fmt.Errorf("facts %+v", l.Status.Facts)
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonWaitingForTuning)
	})
	l := getLNS(t, node)
	if ifc := l.Status.Facts.Interfaces; len(ifc) != 1 || ifc[0].Name != "ens1f0" || ifc[0].SRIOVTotalVFs != 8 || ifc[0].Driver != "ice" {
		t.Errorf("interface facts %+v", ifc)
	}
	if controllerutil.ContainsFinalizer(l, tsv1.RestoreFinalizer) {
		t.Error("finalizer added before any tuning")
	}
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Fatalf("the host changed while spec.tuning was unset:\n%s", strings.Join(d, "\n"))
	}

	// The operator resolves the tuning: runtime settings go in, kernel arguments wait for a slot.
	patchLNS(t, node, func(l *tsv1.LatencyNodeState) { l.Spec.Tuning = treeTuning() })
	tsutil.Poll(t, 20*time.Second, "reboot requested", func() error {
		l := getLNS(t, node)
		if l.Status.Reboot == nil || l.Status.Reboot.Phase != tsv1.RebootRequested {
			return fmt.Errorf("reboot %+v", l.Status.Reboot)
		}
		if err := wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionTrue, "RebootRequested"); err != nil {
			return err
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionFalse, agent.ReasonPendingReboot)
	})
	l = getLNS(t, node)
	if l.Status.Reboot.BootID != bootID {
		t.Errorf("reboot.bootID = %q, want the running kernel's %q", l.Status.Reboot.BootID, bootID)
	}
	if !controllerutil.ContainsFinalizer(l, tsv1.RestoreFinalizer) {
		t.Error("no restore finalizer although the host was changed")
	}
	for p, want := range map[string]string{
		"sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs":                         "4",
		"sys/devices/system/cpu/cpu2/cpufreq/scaling_governor":                  "performance",
		"sys/devices/system/cpu/intel_pstate/no_turbo":                          "1",
		"sys/devices/system/cpu/cpu3/cpuidle/state3/disable":                    "1",
		"proc/sys/vm/swappiness":                                                "10",
		"etc/default/irqbalance":                                                "#IRQBALANCE_ONESHOT=\nIRQBALANCE_BANNED_CPULIST=2-3",
		"proc/cmdline":                                                          agenttest.InitialCmdline,
		"sys/class/net/ens1f0/queues/rx-1/rps_cpus":                             "3",
		"etc/default/grub.d/99-tickstack.cfg":                                   "",
		"sys/devices/system/cpu/cpu0/cpuidle/state1/disable":                    "0",
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages": "0",
	} {
		got := readTree(t, a, p)
		if p == "etc/default/grub.d/99-tickstack.cfg" {
			if !strings.Contains(got, "nohz_full=2-3") {
				t.Errorf("GRUB drop-in lacks the arguments:\n%s", got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if n := len(agenttest.Lines(t, a.Irqbalance)); n != 1 {
		t.Errorf("irqbalance restarted %d times after its banned CPUs changed, want 1", n)
	}
	states := map[string]tsv1.SettingState{}
	for _, s := range l.Status.Settings {
		states[s.Name] = s.State
		if s.State == tsv1.SettingInSync && s.Observed == "" {
			t.Errorf("setting %s in sync without an observed value", s.Name)
		}
	}
	for name, want := range map[string]tsv1.SettingState{
		"sysctl/vm.swappiness":      tsv1.SettingInSync,
		"sriov/0000:3b:00.0/numvfs": tsv1.SettingInSync,
		"kernel/nohz_full=2-3":      tsv1.SettingPendingReboot,
		"irqbalance/banned-cpus":    tsv1.SettingInSync,
		"cpufreq/cpu3/governor":     tsv1.SettingInSync,
		"cpufreq/turbo":             tsv1.SettingInSync,
		"rps/ens1f0/rx-0":           tsv1.SettingInSync,
		"cpuidle/cpu2/state2":       tsv1.SettingInSync,
		"workqueue/cpumask":         tsv1.SettingInSync,
		"irq/default_smp_affinity":  tsv1.SettingInSync,
	} {
		if states[name] != want {
			t.Errorf("status.settings[%s] = %q, want %q (all: %v)", name, states[name], want, states)
		}
	}
	if n := len(agenttest.Lines(t, a.Reboots)); n != 0 {
		t.Fatalf("rebooted %d times without a slot", n)
	}

	// The operator grants the slot: cordon, drain (nothing to evict), reboot, verify, uncordon.
	setGranted(t, node, true)
	pollSlotDone(t, node, "reboot done", 30*time.Second, func(l *tsv1.LatencyNodeState) error {
		if err := wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionFalse, agent.ReasonKernelArgsInEffect); err != nil {
			return err
		}
		return wantCondition(l, tsv1.NodeApplied, metav1.ConditionTrue, agent.ReasonApplied)
	})
	setGranted(t, node, false) // the operator takes the slot back
	if n := len(agenttest.Lines(t, a.Reboots)); n != 1 {
		t.Errorf("rebooted %d times, want 1", n)
	}
	if got := readTree(t, a, "proc/cmdline"); !strings.Contains(got, "isolcpus=managed_irq,2-3") {
		t.Errorf("cmdline after reboot: %q", got)
	}
	n := getNode(t, node)
	if n.Spec.Unschedulable {
		t.Error("node left cordoned after the reboot")
	}
	l = getLNS(t, node)
	if l.Status.Fingerprint == "" || n.Labels[tsv1.FingerprintLabel] != l.Status.Fingerprint {
		t.Errorf("fingerprint label %q, status %q", n.Labels[tsv1.FingerprintLabel], l.Status.Fingerprint)
	}
	tsutil.Poll(t, 10*time.Second, "observedGeneration", func() error {
		if l := getLNS(t, node); l.Status.ObservedGeneration != l.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", l.Status.ObservedGeneration, l.Generation)
		}
		return nil
	})
	for _, s := range l.Status.Settings {
		if strings.HasPrefix(s.Name, "kernel/") && s.State != tsv1.SettingInSync {
			t.Errorf("%s is %s after the reboot", s.Name, s.State)
		}
	}
	// A few more checks must not reboot again.
	gomega.NewWithT(t).Consistently(func() int { return len(agenttest.Lines(t, a.Reboots)) }).
		WithTimeout(2*a.R.CheckPeriod).WithPolling(50*time.Millisecond).Should(gomega.Equal(1), "reboots after the change was in effect")

	// Deleting the node state restores the runtime originals and the boot configuration; the
	// running kernel keeps its arguments until the next reboot (an event says so).
	deleteLNS(t, node)
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Errorf("the tree differs from its originals after the restore:\n%s", strings.Join(d, "\n"))
	}
	if _, err := os.Stat(filepath.Join(a.Root, "etc/default/grub.d/99-tickstack.cfg")); !os.IsNotExist(err) {
		t.Errorf("GRUB drop-in still there: %v", err)
	}
	if _, ok := getNode(t, node).Labels[tsv1.FingerprintLabel]; ok {
		t.Error("fingerprint label left on the node")
	}
	pollEvent(t, node, "KernelArgsPendingRemoval")
}

// TestTreeRefusedTuningChangesNothing: a tuning the host layer refuses, invalid or valid but
// beyond this host (CPUs it does not have, more VFs than the NIC supports), is Degraded with the
// field and the fix before any write: nothing on the host changes, not the kernel arguments, and
// for an invalid tuning not even the finalizer.
func TestTreeRefusedTuningChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		valid  bool
		mutate func(*tsv1.NodeTuning)
		want   []string
	}{
		{"invalid", false, func(tun *tsv1.NodeTuning) {
			tun.Sysctls["vm.swappiness"] = "900"
			tun.NICs[0].Interface = "no/such"
		}, []string{"sysctls[vm.swappiness]", "interfaces[no/such].name", "use the interface's name"}},
		{"beyond", true, func(tun *tsv1.NodeTuning) {
			tun.WorkqueueCPUs = "0-7"
			tun.NICs[0].NumVFs = ptr.To[int32](16)
		}, []string{"workqueueCPUs", "not online", "sriovNumVFs", "at most 8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := agenttest.Name(tc.name)
			a := agenttest.NewTreeAgent(t, node)
			before := agenttest.Snapshot(t, a.Root)
			createNode(t, node)
			tun := treeTuning()
			tc.mutate(tun)
			createLNS(t, node, tun)
			agenttest.StartAgent(t, cfg, a.R, nil)
			tsutil.Poll(t, 20*time.Second, "degraded", func() error {
				return wantCondition(getLNS(t, node), tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonValidationFailed)
			})
			l := getLNS(t, node)
			msg := condition(l, tsv1.NodeDegraded).Message
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("Degraded message lacks %q: %s", want, msg)
				}
			}
			if !tc.valid && controllerutil.ContainsFinalizer(l, tsv1.RestoreFinalizer) {
				t.Error("finalizer added for a tuning that was refused")
			}
			if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
				t.Errorf("the host changed although the tuning was refused:\n%s", strings.Join(d, "\n"))
			}
			if _, err := os.Stat(filepath.Join(a.Root, "etc/default/grub.d/99-tickstack.cfg")); !os.IsNotExist(err) {
				t.Errorf("kernel arguments written for a tuning that was refused: %v", err)
			}
		})
	}
}

// TestTreeRebootThatDoesNotHappen: a reboot command that succeeds without rebooting is reported
// (Degraded, RebootCommandFailed) and run again after RebootTimeout; deleting the node state
// still uncordons the node, restores the tree and says once that the reboot is abandoned.
func TestTreeRebootThatDoesNotHappen(t *testing.T) {
	node := agenttest.Name("noreboot")
	a := agenttest.NewTreeAgent(t, node)
	a.R.RebootCommand = agenttest.LogCommand(a.Reboots) // "succeeds", the boot ID stays
	a.R.RebootTimeout = time.Second
	before := agenttest.Snapshot(t, a.Root)
	startOnTree(t, a, node, treeTuning())
	pollRebootRequested(t, node)
	setGranted(t, node, true)
	tsutil.Poll(t, 20*time.Second, "missing reboot reported", func() error {
		l := getLNS(t, node)
		if err := wantCondition(l, tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonRebootFailed); err != nil {
			return err
		}
		if !strings.Contains(condition(l, tsv1.NodeDegraded).Message, "still runs boot ID") {
			return fmt.Errorf("message %q", condition(l, tsv1.NodeDegraded).Message)
		}
		if n := len(agenttest.Lines(t, a.Reboots)); n < 2 {
			return fmt.Errorf("reboot command ran %d times", n)
		}
		return nil
	})
	if !getNode(t, node).Spec.Unschedulable {
		t.Error("a drained node waiting for its reboot was uncordoned")
	}
	deleteLNS(t, node)
	if getNode(t, node).Spec.Unschedulable {
		t.Error("node left cordoned after the node state was deleted")
	}
	// The operator is told the reboot is no longer awaited, once.
	if evs := events(t, node, agent.ReasonRebootAbandoned); len(evs) != 1 || !strings.Contains(evs[0].Note, "while the node was Rebooting") {
		t.Errorf("RebootAbandoned events: %+v, want one saying the node was Rebooting", evs)
	}
	if d := hosttest.Diff(before, agenttest.Snapshot(t, a.Root)); len(d) > 0 {
		t.Errorf("the tree differs after the restore:\n%s", strings.Join(d, "\n"))
	}
}

// TestTreeRebootWithoutTheArguments: the node reboots (new boot ID) but the boot loader did not
// carry the arguments. The agent does not reboot again for them: Degraded RebootDidNotApply,
// RebootRequired False (the slot goes back), the node uncordoned, one reboot only.
func TestTreeRebootWithoutTheArguments(t *testing.T) {
	node := agenttest.Name("vain")
	a := agenttest.NewTreeAgent(t, node)
	a.R.RebootCommand = []string{"/bin/sh", "-c", `cat /proc/sys/kernel/random/uuid > "$TICKSTACK_HOST_ROOT/proc/sys/kernel/random/boot_id"; echo "$TICKSTACK_NODE_NAME" >> "$1"`, "vain-reboot", a.Reboots}
	startOnTree(t, a, node, treeTuning())
	pollRebootRequested(t, node)
	setGranted(t, node, true)
	pollSlotDone(t, node, "reboot in vain reported", 20*time.Second, func(l *tsv1.LatencyNodeState) error {
		if err := wantCondition(l, tsv1.NodeDegraded, metav1.ConditionTrue, agent.ReasonRebootDidNotApply); err != nil {
			return err
		}
		return wantCondition(l, tsv1.NodeRebootRequired, metav1.ConditionFalse, agent.ReasonRebootDidNotApply)
	})
	setGranted(t, node, false)
	gomega.NewWithT(t).Consistently(func() int { return len(agenttest.Lines(t, a.Reboots)) }).
		WithTimeout(2*a.R.CheckPeriod).WithPolling(50*time.Millisecond).Should(gomega.Equal(1), "reboots for the same arguments")
	if getNode(t, node).Spec.Unschedulable {
		t.Error("node left cordoned after the reboot")
	}
	if getLNS(t, node).Annotations[tsv1.RebootedForAnnotation] == "" {
		t.Errorf("no %s annotation", tsv1.RebootedForAnnotation)
	}
}

// pollRebootRequested polls until the agent asks for a reboot slot.
func pollRebootRequested(t *testing.T, node string) {
	t.Helper()
	tsutil.Poll(t, 20*time.Second, "reboot requested", func() error {
		return wantCondition(getLNS(t, node), tsv1.NodeRebootRequired, metav1.ConditionTrue, "RebootRequested")
	})
}
