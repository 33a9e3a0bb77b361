package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/bench"
)

// playKubelet copies a tree's boot ID into its Node's status.nodeInfo.bootID, as a kubelet
// reports it after a reboot, until ctx ends.
func playKubelet(ctx context.Context, c client.Client, node, root string) {
	path := filepath.Join(root, "proc", "sys", "kernel", "random", "boot_id")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		boot := strings.TrimSpace(string(raw))
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil || n.Status.NodeInfo.BootID == boot {
			continue
		}
		orig := n.DeepCopy()
		n.Status.NodeInfo.BootID = boot
		_ = c.Status().Patch(ctx, n, client.MergeFrom(orig))
	}
}

// TestBIOSAndKernelArgsOneRebootWithTheRealAgent: the real operator (profile and BIOS controllers)
// and the real node agents in-process, each on its own host-root tree, with one sushy-tools
// emulator per node. One profile change with a kernel argument and a BIOS attribute, maxUnavailable
// 1: the agents write the argument and ask for their slots at once, the operator grants none before
// the node's BIOS settings are staged, and each node reboots exactly once (the agent's reboot log);
// after it the kernel argument is in effect and every BIOS attribute is verified. Then a BIOS-only
// change (the attribute back, the kernel argument kept): the agents ask for a slot for the staged
// firmware alone (RebootRequired reason FirmwarePendingReboot), and each node reboots exactly once
// more, the earlier kernel-argument reboot not mistaken for one that did not apply. The test plays
// only the kubelet (the boot ID in the Node's status).
func TestBIOSAndKernelArgsOneRebootWithTheRealAgent(t *testing.T) {
	g := gomega.NewWithT(t)
	const user = "tsbios-admin"
	password := "TsBios-" + rand.Text()
	logs := &bench.SyncBuffer{}
	c := startOperator(t, logs, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	ns, role := biosName("real"), biosName("real")
	namespace(t, c, ns)
	names := []string{biosName("real-a"), biosName("real-b")}
	agents := map[string]*agenttest.TreeAgent{}
	var origTurbo, want string
	for _, n := range names {
		e := startSushy(t, user, password)
		origTurbo, want = e.otherTurbo(t)
		a := agenttest.NewTreeAgent(t, n)
		agents[n] = a
		boot, err := os.ReadFile(filepath.Join(a.Root, "proc", "sys", "kernel", "random", "boot_id"))
		if err != nil {
			t.Fatal(err)
		}
		makeNode(t, c, n, role, strings.TrimSpace(string(boot)))
		bmcFor(t, c, n, ns, e, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
		go playKubelet(ctx, c, n, a.Root)
		agenttest.StartAgent(t, restCfg, a.R, nil)
	}
	// Every grant must find the node's BIOS staged: record what each granted node state showed,
	// and every reason RebootRequired=True had.
	var (
		earlyMu sync.Mutex
		early   []string
		reasons = map[string]bool{}
	)
	go func() {
		seen := map[string]bool{}
		for ctx.Err() == nil {
			for _, n := range names {
				l := lnsOf(c, n)
				if l.Spec.RebootGranted && !seen[n] {
					seen[n] = true
					if fw := l.Spec.Firmware; fw == nil || !fw.PendingReboot {
						earlyMu.Lock()
						early = append(early, fmt.Sprintf("%s granted with spec.firmware %+v", n, fw))
						earlyMu.Unlock()
					}
				}
				if !l.Spec.RebootGranted {
					seen[n] = false
				}
				if c := meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeRebootRequired); c != nil && (c.Status == metav1.ConditionTrue || c.Reason == agent.ReasonRebootDidNotApply) {
					earlyMu.Lock()
					reasons[c.Reason] = true
					earlyMu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	profile := biosProfile("real", role, tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: want})
	profile.Spec.CPU = &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-3"}
	profile.Spec.Rollout = &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}

	settled := func(n, want string) error {
		l := lnsOf(c, n)
		if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot {
			return fmt.Errorf("%s: spec.firmware %+v", n, fw)
		}
		if a := attrState(l, "ProcTurboMode"); a == nil || a.State != tsv1.BIOSApplied || a.Observed != want {
			return fmt.Errorf("%s: attribute %+v", n, a)
		}
		rr := meta.FindStatusCondition(l.Status.Conditions, tsv1.NodeRebootRequired)
		if rr == nil || rr.Status != metav1.ConditionFalse || l.Status.Reboot != nil || l.Spec.RebootGranted {
			return fmt.Errorf("%s: RebootRequired %+v, reboot %+v, granted %v", n, rr, l.Status.Reboot, l.Spec.RebootGranted)
		}
		if !meta.IsStatusConditionTrue(l.Status.Conditions, tsv1.NodeApplied) || meta.IsStatusConditionTrue(l.Status.Conditions, tsv1.NodeDegraded) {
			return fmt.Errorf("%s: not Applied, or Degraded: %+v", n, l.Status.Conditions)
		}
		return nil
	}
	// allSettled waits until every node settled with value, stays so, and rebooted reboots times.
	allSettled := func(value string, reboots int) {
		t.Helper()
		for _, n := range names {
			g.Eventually(func() error { return settled(n, value) }).WithTimeout(120 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
		}
		g.Consistently(func() error {
			for _, n := range names {
				if err := settled(n, value); err != nil {
					return err
				}
			}
			return nil
		}).WithTimeout(3 * time.Second).WithPolling(200 * time.Millisecond).Should(gomega.Succeed())
		for _, n := range names {
			if got := agenttest.Lines(t, agents[n].Reboots); len(got) != reboots {
				t.Errorf("%s rebooted %d times, want exactly %d", n, len(got), reboots)
			}
			cmdline, err := os.ReadFile(filepath.Join(agents[n].Root, "proc", "cmdline"))
			if err != nil || !strings.Contains(string(cmdline), "nohz_full=2-3") {
				t.Errorf("%s: the kernel argument is not in effect after the reboot: %q %v", n, cmdline, err)
			}
		}
	}
	allSettled(want, 1)

	// A BIOS-only change: the attribute back, the kernel argument unchanged. The firmware alone
	// needs the reboot, and it must not read as the earlier kernel-argument reboot done in vain.
	earlyMu.Lock()
	clear(reasons)
	earlyMu.Unlock()
	g.Eventually(func() error {
		p := &tsv1.LatencyProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), p); err != nil {
			return err
		}
		base := p.DeepCopy()
		p.Spec.BIOS.Attributes = []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: origTurbo}}
		return c.Patch(ctx, p, client.MergeFrom(base))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	allSettled(origTurbo, 2)

	earlyMu.Lock()
	if len(early) > 0 {
		t.Errorf("reboot slots granted before the BIOS settings were staged: %v", early)
	}
	if !reasons[agent.ReasonFirmwarePendingReboot] || reasons[agent.ReasonRebootDidNotApply] || reasons[agent.ReasonDrainFailed] {
		t.Errorf("RebootRequired reasons during the BIOS-only change: %v, want %s and neither %s nor %s", reasons,
			agent.ReasonFirmwarePendingReboot, agent.ReasonRebootDidNotApply, agent.ReasonDrainFailed)
	}
	earlyMu.Unlock()
	checkNoSecrets(t, c, logs, user, password)

	// The profile goes: the agents restore their trees and the node states go, before the agents stop.
	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error {
		for _, n := range names {
			if l := lnsOf(c, n); l.Name != "" {
				return fmt.Errorf("node state %s still there", n)
			}
		}
		return nil
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
}
