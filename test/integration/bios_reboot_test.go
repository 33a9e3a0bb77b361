package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
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
	"github.com/tickstack/tickstack/internal/bench"
)

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
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := a.step(ctx); err != nil && ctx.Err() == nil {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}
	}
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
	g := gomega.NewWithT(t)
	const user = "tsbios-admin"
	password := "TsBios-" + rand.Text()
	logs := &bench.SyncBuffer{}
	c := startOperator(t, logs, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	ns, role := biosName("once"), biosName("once")
	namespace(t, c, ns)
	names := []string{biosName("once-a"), biosName("once-b")}
	agents := map[string]*playedAgent{}
	var want string
	for _, n := range names {
		e := startSushy(t, user, password)
		_, want = e.otherTurbo(t)
		makeNode(t, c, n, role, "boot-0")
		bmcFor(t, c, n, ns, e, user, password, tsv1.BMCTLS{CABundle: string(e.ca)})
		a := &playedAgent{c: c, node: n, arg: "tsbios.once=1"}
		agents[n] = a
		go a.run(ctx)
	}

	profile := biosProfile("once", role, tsv1.BIOSAttribute{Name: "ProcTurboMode", Value: want})
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
	for _, n := range names {
		g.Eventually(func() error { return settled(n) }).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	}
	// Nothing asks for another reboot afterwards (the drift checks run every 2 s meanwhile).
	g.Consistently(func() error {
		for _, n := range names {
			if err := settled(n); err != nil {
				return err
			}
		}
		return nil
	}).WithTimeout(4 * time.Second).WithPolling(200 * time.Millisecond).Should(gomega.Succeed())

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
	checkNoSecrets(t, c, logs, user, password)
}
