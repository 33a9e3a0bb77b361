package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// One profile change with both kernel arguments and BIOS attributes costs each node exactly one
// reboot: with the node agent played by the test (TestBIOSAndKernelArgsCostOneReboot) and with the
// real agent on a host-root tree (TestBIOSAndKernelArgsOneRebootWithTheRealAgent).

// rebootEnv is what both tests share: the real operator (profile and BIOS controllers) with its
// log, a context the test's end cancels, the BMC admin's password, a namespace for the BMC
// secrets, the profile's node role and two node names, all named after tag.
type rebootEnv struct {
	g        *gomega.WithT
	c        client.WithWatch
	logs     *bench.SyncBuffer
	ctx      context.Context
	password string
	ns, role string
	names    []string
}

const rebootUser = "tsbios-admin"

func newRebootEnv(t *testing.T, tag string) *rebootEnv {
	env := &rebootEnv{g: gomega.NewWithT(t), logs: &bench.SyncBuffer{}, password: "TsBios-" + rand.Text()}
	env.c = startOperator(t, env.logs, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env.ctx = ctx
	env.ns, env.role = biosName(tag), biosName(tag)
	namespace(t, env.c, env.ns)
	env.names = []string{biosName(tag + "-a"), biosName(tag + "-b")}
	return env
}

// settleAll waits (up to wait) until settled holds for every node, then checks that it keeps
// holding for hold.
func (env *rebootEnv) settleAll(settled func(node string) error, wait, hold time.Duration) {
	for _, n := range env.names {
		env.g.Eventually(func() error { return settled(n) }).WithTimeout(wait).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	}
	env.g.Consistently(func() error {
		for _, n := range env.names {
			if err := settled(n); err != nil {
				return err
			}
		}
		return nil
	}).WithTimeout(hold).WithPolling(200 * time.Millisecond).Should(gomega.Succeed())
}

// every50ms calls f every 50 ms until ctx ends.
func every50ms(ctx context.Context, f func()) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f()
	}
}

// playedAgent plays the node agent's reboot protocol and the kubelet's boot ID for one node: it
// reports facts, asks for a reboot slot as soon as its kernel arguments are not in effect or
// spec.firmware.pendingReboot names its current boot, and "reboots" when granted (new boot ID,
// kernel arguments in effect, RebootRequired cleared). It records every reboot.
type playedAgent struct {
	c    client.Client
	node string
	arg  string

	mu           sync.Mutex
	boot         int
	argsInEffect bool
	// reboots holds, per reboot, whether the BIOS settings were staged (spec.firmware.pendingReboot
	// for the current boot) when it ran.
	reboots []bool
	errs    []error
}

func (a *playedAgent) bootID() string { return fmt.Sprintf("boot-%d", a.boot) }

func (a *playedAgent) snapshot() (reboots []bool, errs []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reboots), slices.Clone(a.errs)
}

func (a *playedAgent) run(ctx context.Context) {
	every50ms(ctx, func() {
		if err := a.step(ctx); err != nil && ctx.Err() == nil {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}
	})
}

func (a *playedAgent) status(ctx context.Context, l *tsv1.LatencyNodeState, change func(*tsv1.LatencyNodeStateStatus)) error {
	orig := l.DeepCopy()
	change(&l.Status)
	return client.IgnoreNotFound(a.c.Status().Patch(ctx, l, client.MergeFrom(orig)))
}

func requested(required bool, phase tsv1.RebootPhase) func(*tsv1.LatencyNodeStateStatus) {
	return func(st *tsv1.LatencyNodeStateStatus) {
		cond := metav1.Condition{Type: tsv1.NodeRebootRequired, Status: metav1.ConditionFalse, Reason: "KernelArgsInEffect", Message: "played by the test"}
		st.Reboot = nil
		if required {
			cond.Status, cond.Reason = metav1.ConditionTrue, "PendingReboot"
			st.Reboot = &tsv1.RebootStatus{Phase: phase, LastTransitionTime: metav1.Now()}
		}
		meta.SetStatusCondition(&st.Conditions, cond)
	}
}

func (a *playedAgent) step(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := &tsv1.LatencyNodeState{}
	if err := a.c.Get(ctx, client.ObjectKey{Name: a.node}, l); err != nil {
		return client.IgnoreNotFound(err)
	}
	if l.Status.Facts == nil {
		return a.status(ctx, l, func(st *tsv1.LatencyNodeStateStatus) { st.Facts = &tsv1.NodeFacts{OnlineCPUs: "0-3"} })
	}
	wantsArgs := l.Spec.Tuning != nil && slices.Contains(l.Spec.Tuning.KernelArgs, a.arg)
	fw := l.Spec.Firmware
	fwPending := fw.PendingFor(a.bootID() + "\n")
	required := (wantsArgs && !a.argsInEffect) || fwPending
	switch {
	case required && l.Status.Reboot == nil:
		return a.status(ctx, l, requested(true, tsv1.RebootRequested))
	case required && l.Spec.RebootGranted:
		a.reboots = append(a.reboots, fwPending)
		a.boot++
		a.argsInEffect = wantsArgs
		n := &corev1.Node{}
		if err := a.c.Get(ctx, client.ObjectKey{Name: a.node}, n); err != nil {
			return err
		}
		orig := n.DeepCopy()
		n.Status.NodeInfo.BootID = a.bootID()
		if err := a.c.Status().Patch(ctx, n, client.MergeFrom(orig)); err != nil {
			return err
		}
		return a.status(ctx, l, requested(false, ""))
	case !required && l.Status.Reboot != nil:
		return a.status(ctx, l, requested(false, ""))
	}
	return nil
}

// TestBIOSAndKernelArgsCostOneReboot is the done-when of the BIOS work: one profile change with
// both kernel arguments and BIOS attributes costs each node exactly one reboot. The real operator
// (profile and BIOS controllers) runs against two real Redfish servers (sushy-tools, one per node);
// the node agent's reboot protocol and the kubelet's boot ID are played by the test (playedAgent),
// which asks for its slot for the kernel arguments at once, before the BIOS settings are staged.
// Each node must reboot once, with its BIOS settings already staged at that reboot, and end with
// every attribute verified and nothing left to reboot for.
func TestBIOSAndKernelArgsCostOneReboot(t *testing.T) {
	env := newRebootEnv(t, "once")
	c, ctx, names, user, password := env.c, env.ctx, env.names, rebootUser, env.password
	agents := map[string]*playedAgent{}
	var want string
	for _, n := range names {
		e := startSushy(t, user, password)
		_, want = e.otherTurbo(t)
		makeNode(t, c, n, env.role, "boot-0")
		bmcFor(t, c, n, env.ns, e, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
		a := &playedAgent{c: c, node: n, arg: "tsbios.once=1"}
		agents[n] = a
		go a.run(ctx)
	}

	profile := biosProfile("once", env.role, tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: want})
	profile.Spec.Kernel = &tsv1.KernelSpec{AdditionalArgs: []string{"tsbios.once=1"}}
	profile.Spec.Rollout = &tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	if err := c.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), profile) })

	settled := func(n string) error {
		l := lnsOf(c, n)
		if l.Spec.Tuning == nil || !slices.Contains(l.Spec.Tuning.KernelArgs, "tsbios.once=1") {
			return fmt.Errorf("%s: tuning %+v", n, l.Spec.Tuning)
		}
		if fw := l.Spec.Firmware; fw == nil || fw.PendingReboot {
			return fmt.Errorf("%s: spec.firmware %+v", n, fw)
		}
		if a := attrState(l, "ProcTurboMode"); a == nil || a.State != tsv1.BIOSApplied || a.Observed != want {
			return fmt.Errorf("%s: attribute %+v", n, a)
		}
		if meta.IsStatusConditionTrue(l.Status.Conditions, tsv1.NodeRebootRequired) || l.Status.Reboot != nil || l.Spec.RebootGranted {
			return fmt.Errorf("%s: still in a reboot: %+v granted=%v", n, l.Status.Reboot, l.Spec.RebootGranted)
		}
		return nil
	}
	// Nothing asks for another reboot afterwards (the drift checks run every 2 s meanwhile).
	env.settleAll(settled, 90*time.Second, 4*time.Second)

	for _, n := range names {
		reboots, errs := agents[n].snapshot()
		if len(errs) > 0 {
			t.Errorf("%s: the played agent failed: %v", n, errs)
		}
		if len(reboots) != 1 {
			t.Errorf("%s rebooted %d times, want exactly 1", n, len(reboots))
		}
		for i, staged := range reboots {
			if !staged {
				t.Errorf("%s: reboot %d ran before its BIOS settings were staged", n, i+1)
			}
		}
	}
	checkNoSecrets(t, c, env.logs, user, password)
}

// playKubelet copies a tree's boot ID into its Node's status.nodeInfo.bootID, as a kubelet
// reports it after a reboot, until ctx ends.
func playKubelet(ctx context.Context, c client.Client, node, root string) {
	path := filepath.Join(root, "proc", "sys", "kernel", "random", "boot_id")
	every50ms(ctx, func() {
		raw, err := os.ReadFile(path)
		if err != nil {
			return
		}
		boot := strings.TrimSpace(string(raw))
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil || n.Status.NodeInfo.BootID == boot {
			return
		}
		orig := n.DeepCopy()
		n.Status.NodeInfo.BootID = boot
		_ = c.Status().Patch(ctx, n, client.MergeFrom(orig))
	})
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
	env := newRebootEnv(t, "real")
	g, c, ctx, names, user, password := env.g, env.c, env.ctx, env.names, rebootUser, env.password
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
		makeNode(t, c, n, env.role, strings.TrimSpace(string(boot)))
		bmcFor(t, c, n, env.ns, e, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
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

	profile := biosProfile("real", env.role, tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: want})
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
		env.settleAll(func(n string) error { return settled(n, value) }, 120*time.Second, 3*time.Second)
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
	checkNoSecrets(t, c, env.logs, user, password)

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
