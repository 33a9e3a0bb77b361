package controllers

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/profile"
)

const (
	timeout  = 20 * time.Second
	interval = 100 * time.Millisecond
)

// group gives every spec its own label value, so profiles of different specs never select the same nodes.
var groupSeq int

func newGroup() string {
	groupSeq++
	return fmt.Sprintf("g%d", groupSeq)
}

func makeNode(name, group string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tickstack.test/group": group}}}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	DeferCleanup(func() { _ = k8s.Delete(ctx, n) })
	return n
}

func makeProfile(name, group string, priority int32, mutate ...func(*tsv1.LatencyProfile)) *tsv1.LatencyProfile {
	p := &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.test/group": group}},
			Priority:     priority,
			CPU:          &tsv1.CPUSpec{Reserved: "0", Isolated: "1-63"},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	Expect(k8s.Create(ctx, p)).To(Succeed())
	DeferCleanup(func() { deleteProfileAndRelease(p.Name) })
	return p
}

// deleteProfileAndRelease deletes a profile and plays the agents' part: drop the restore finalizer
// of its node states, as an agent does once the host is restored.
func deleteProfileAndRelease(name string) {
	p := &tsv1.LatencyProfile{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); apierrors.IsNotFound(err) {
		return
	}
	_ = k8s.Delete(ctx, p)
	Eventually(func(g Gomega) {
		var states tsv1.LatencyNodeStateList
		g.Expect(k8s.List(ctx, &states, client.MatchingLabels{tsv1.ProfileLabel: name})).To(Succeed())
		for i := range states.Items {
			agentRestored(&states.Items[i])
		}
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, &tsv1.LatencyProfile{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "profile %s still there", name)
	}, timeout, interval).Should(Succeed())
}

// patchUntilDone reads the cluster-scoped object name and merge-patches it, or its status with
// status, as mutate changes it (an error from mutate: not yet, read again), until that succeeds.
func patchUntilDone[T any, P interface {
	*T
	client.Object
}](name string, status bool, mutate func(P) error) {
	GinkgoHelper()
	Eventually(func() error {
		o := P(new(T))
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, o); err != nil {
			return err
		}
		orig := o.DeepCopyObject().(client.Object)
		if err := mutate(o); err != nil {
			return err
		}
		if status {
			return k8s.Status().Patch(ctx, o, client.MergeFrom(orig))
		}
		return k8s.Patch(ctx, o, client.MergeFrom(orig))
	}, timeout, interval).Should(Succeed())
}

// agentApplying plays the agent taking hold of a node state: the restore finalizer goes on first.
func agentApplying(name string) {
	patchUntilDone(name, false, func(lns *tsv1.LatencyNodeState) error {
		controllerutil.AddFinalizer(lns, tsv1.RestoreFinalizer)
		return nil
	})
}

// agentRestored plays the agent having restored the host: the restore finalizer comes off.
func agentRestored(lns *tsv1.LatencyNodeState) {
	if !controllerutil.ContainsFinalizer(lns, tsv1.RestoreFinalizer) {
		return
	}
	orig := lns.DeepCopy()
	controllerutil.RemoveFinalizer(lns, tsv1.RestoreFinalizer)
	_ = k8s.Patch(ctx, lns, client.MergeFrom(orig))
}

// agentPatchesStatus plays the agent: it reads node's state, lets mutate change it (an error
// from mutate: not yet, read again) and patches the status, until that succeeds.
func agentPatchesStatus(node string, mutate func(lns *tsv1.LatencyNodeState) error) {
	GinkgoHelper()
	patchUntilDone(node, true, mutate)
}

// reportFacts plays the agent reporting its host's facts.
func reportFacts(node string, facts *tsv1.NodeFacts) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		lns.Status.Facts = facts
		return nil
	})
}

// reportApplied plays the agent reporting the current spec in effect.
func reportApplied(node string) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		if lns.Spec.Tuning == nil {
			return fmt.Errorf("no tuning resolved yet")
		}
		lns.Status.ObservedGeneration = lns.Generation
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue, Reason: "InSync", Message: "all settings in effect"})
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeDegraded, Status: metav1.ConditionFalse, Reason: "InSync", Message: "ok"})
		return nil
	})
}

func hostFacts(cpus tsv1.CPUSet) *tsv1.NodeFacts {
	return &tsv1.NodeFacts{
		OnlineCPUs: cpus,
		NUMANodes:  []tsv1.NUMANode{{ID: 0, CPUs: cpus}},
		Interfaces: []tsv1.InterfaceFacts{{Name: "ens1f0", Driver: "ice", Vendor: "8086", Device: "1592", PCIAddress: "0000:3b:00.0", SRIOVTotalVFs: 64}},
	}
}

// groupWithOwnedNode makes a group with one node, <group>-a, and a profile <group><suffix> of
// priority that takes it; it returns the group.
func groupWithOwnedNode(suffix string, priority int32) string {
	GinkgoHelper()
	g := newGroup()
	makeNode(g+"-a", g)
	makeProfile(g+suffix, g, priority)
	expectOwner(g+"-a", g+suffix)
	return g
}

// stateOf reads node's state, failing g (an Eventually's attempt, or Default: the spec) on an error.
func stateOf(g Gomega, node string) *tsv1.LatencyNodeState {
	lns, err := getState(node)()
	g.Expect(err).NotTo(HaveOccurred())
	return lns
}

// expectOwner waits until node's state belongs to profile.
func expectOwner(node, profile string) {
	GinkgoHelper()
	Eventually(getState(node), timeout, interval).Should(HaveField("Spec.Profile.Name", profile))
}

func getState(name string) func() (*tsv1.LatencyNodeState, error) {
	return func() (*tsv1.LatencyNodeState, error) {
		lns := &tsv1.LatencyNodeState{}
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, lns)
		return lns, err
	}
}

func profileCondition(name, condType string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		p := &tsv1.LatencyProfile{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		c := meta.FindStatusCondition(p.Status.Conditions, condType)
		g.Expect(c).NotTo(BeNil(), "condition %s missing", condType)
		return c
	}
}

func stateGone(name string) func() bool {
	return func() bool {
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, &tsv1.LatencyNodeState{})
		return apierrors.IsNotFound(err)
	}
}

var _ = Describe("LatencyProfile controller", func() {
	It("selects nodes by label and creates one node state per matched node", func() {
		g := newGroup()
		makeNode(g+"-a", g)
		makeNode(g+"-b", g)
		makeNode(g+"-other", g+"-no")
		makeProfile(g, g, 0)

		for _, n := range []string{g + "-a", g + "-b"} {
			expectOwner(n, g)
			lns, _ := getState(n)()
			Expect(lns.Labels).To(HaveKeyWithValue(tsv1.ProfileLabel, g))
			Expect(lns.OwnerReferences).To(ContainElement(HaveField("Name", g)))
			Expect(lns.Spec.Tuning).To(BeNil(), "nothing to apply before the agent reports facts")
		}
		Consistently(stateGone(g+"-other"), 2*time.Second, interval).Should(BeTrue())

		Eventually(func(gm Gomega) {
			p := &tsv1.LatencyProfile{}
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: g}, p)).To(Succeed())
			gm.Expect(p.Status.MatchedNodes).To(Equal(int32(2)))
			gm.Expect(p.Status.OwnedNodes).To(Equal(int32(2)))
			gm.Expect(p.Finalizers).To(ContainElement(tsv1.ProfileFinalizer))
			c := meta.FindStatusCondition(p.Status.Conditions, tsv1.ProfileProgressing)
			gm.Expect(c).NotTo(BeNil())
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonWaitingForFacts))
			gm.Expect(c.Message).To(ContainSubstring(g + "-a"))
		}, timeout, interval).Should(Succeed())
	})

	It("resolves the tuning against the facts the agent reports", func() {
		g := newGroup()
		makeNode(g+"-a", g)
		makeProfile(g, g, 0, func(p *tsv1.LatencyProfile) {
			p.Spec.NICs = []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{Vendor: "8086"}, NumVFs: ptr.To[int32](4), ResourceName: "md_vf", Acceleration: tsv1.AccelerationBusyPoll}}
		})
		reportFacts(g+"-a", hostFacts("0-7"))
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, g+"-a")
			gm.Expect(lns.Spec.Tuning).NotTo(BeNil())
			t := lns.Spec.Tuning
			gm.Expect(t.IsolatedCPUs).To(Equal(tsv1.CPUSet("1-7")), "isolated 1-63 clipped to an 8-CPU node")
			gm.Expect(t.KernelArgs).To(ContainElements("nohz_full=1-7", "irqaffinity=0"))
			gm.Expect(t.NICs).To(ConsistOf(And(HaveField("Interface", "ens1f0"), HaveField("NumVFs", HaveValue(Equal(int32(4)))))))
			gm.Expect(t.Sysctls).To(HaveKeyWithValue("net.core.busy_poll", "50"))
		}, timeout, interval).Should(Succeed())

		By("reporting a bigger host, the tuning follows")
		reportFacts(g+"-a", hostFacts("0-15"))
		Eventually(getState(g+"-a"), timeout, interval).Should(HaveField("Spec.Tuning.IsolatedCPUs", tsv1.CPUSet("1-15")))
	})

	It("reports a node it cannot resolve as Degraded and leaves its tuning alone", func() {
		g := newGroup()
		makeNode(g+"-a", g)
		makeProfile(g, g, 0, func(p *tsv1.LatencyProfile) { p.Spec.CPU = &tsv1.CPUSpec{Reserved: "64-65", Isolated: "1-3"} })
		reportFacts(g+"-a", hostFacts("0-7"))
		Eventually(func(gm Gomega) {
			c := profileCondition(g, tsv1.ProfileDegraded)(gm)
			gm.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonResolutionFailed))
			gm.Expect(c.Message).To(ContainSubstring("node " + g + "-a: spec.cpu.reserved: none of CPUs 64-65 exist"))
			r := profileCondition(g, tsv1.ProfileReady)(gm)
			gm.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
		lns := stateOf(Default, g+"-a")
		Expect(lns.Spec.Tuning).To(BeNil())
	})

	It("becomes Ready when every agent reports the tuning applied", func() {
		g := newGroup()
		makeNode(g+"-a", g)
		makeNode(g+"-b", g)
		makeProfile(g, g, 0)
		for _, n := range []string{g + "-a", g + "-b"} {
			reportFacts(n, hostFacts("0-3"))
		}
		reportApplied(g + "-a")
		Eventually(func(gm Gomega) {
			c := profileCondition(g, tsv1.ProfileReady)(gm)
			gm.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			gm.Expect(c.Message).To(Equal("1 of 2 nodes have the tuning in effect"))
		}, timeout, interval).Should(Succeed())
		reportApplied(g + "-b")
		Eventually(func(gm Gomega) {
			p := &tsv1.LatencyProfile{}
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: g}, p)).To(Succeed())
			gm.Expect(p.Status.AppliedNodes).To(Equal(int32(2)))
			gm.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
			c := meta.FindStatusCondition(p.Status.Conditions, tsv1.ProfileReady)
			gm.Expect(c).NotTo(BeNil())
			gm.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonAllApplied))
			gm.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, tsv1.ProfileProgressing)).To(BeTrue())
			applied, ok := gaugeValue(profileMetricsReg, "tickstack_profile_nodes", map[string]string{"profile": g, "state": "applied"})
			gm.Expect(ok).To(BeTrue(), "no tickstack_profile_nodes series")
			gm.Expect(applied).To(Equal(2.0))
			ready, ok := gaugeValue(profileMetricsReg, "tickstack_profile_condition", map[string]string{"profile": g, "type": tsv1.ProfileReady, "status": "True"})
			gm.Expect(ok).To(BeTrue(), "no tickstack_profile_condition series")
			gm.Expect(ready).To(Equal(1.0))
		}, timeout, interval).Should(Succeed())

		By("a spec change makes the nodes pending again until the agents catch up")
		updateProfile(g, func(p *tsv1.LatencyProfile) { p.Spec.Sysctls = map[string]tsv1.SysctlValue{"vm.stat_interval": "10"} })
		Eventually(func(gm Gomega) {
			c := profileCondition(g, tsv1.ProfileReady)(gm)
			gm.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonApplying))
		}, timeout, interval).Should(Succeed())
	})

	It("gives a node to the higher priority profile, after the lower one's agent restored it", func() {
		g := groupWithOwnedNode("-low", 1)
		agentApplying(g + "-a")

		makeProfile(g+"-high", g, 5)
		// The low profile releases the node: its state is deleting, held by the agent's finalizer.
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, g+"-a")
			gm.Expect(lns.DeletionTimestamp).NotTo(BeNil())
			gm.Expect(lns.Spec.Profile.Name).To(Equal(g + "-low"))
			c := profileCondition(g+"-high", tsv1.ProfileProgressing)(gm)
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonReleasing))
		}, timeout, interval).Should(Succeed())

		lns := stateOf(Default, g+"-a")
		agentRestored(lns)
		expectOwner(g+"-a", g+"-high")
		Eventually(func(gm Gomega) {
			p := &tsv1.LatencyProfile{}
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: g + "-low"}, p)).To(Succeed())
			gm.Expect(p.Status.MatchedNodes).To(Equal(int32(1)))
			gm.Expect(p.Status.OwnedNodes).To(Equal(int32(0)))
		}, timeout, interval).Should(Succeed())
	})

	It("reports a Conflict on both profiles at equal priority and leaves the node alone", func() {
		g := groupWithOwnedNode("-x", 3)
		reportFacts(g+"-a", hostFacts("0-3"))
		Eventually(getState(g+"-a"), timeout, interval).Should(HaveField("Spec.Tuning", Not(BeNil())))
		before, _ := getState(g + "-a")()

		makeProfile(g+"-y", g, 3)
		for _, pair := range [][2]string{{g + "-x", g + "-y"}, {g + "-y", g + "-x"}} {
			Eventually(func(gm Gomega) {
				c := profileCondition(pair[0], tsv1.ProfileConflict)(gm)
				gm.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				gm.Expect(c.Reason).To(Equal(tsv1.ReasonPriorityTie))
				gm.Expect(c.Message).To(ContainSubstring("nodes " + g + "-a are also selected by " + pair[1]))
			}, timeout, interval).Should(Succeed())
		}
		Consistently(func(gm Gomega) {
			lns := stateOf(gm, g+"-a")
			gm.Expect(lns.DeletionTimestamp).To(BeNil())
			gm.Expect(lns.Spec).To(Equal(before.Spec))
		}, 2*time.Second, interval).Should(Succeed())

		By("raising one priority ends the conflict")
		updateProfile(g+"-x", func(p *tsv1.LatencyProfile) { p.Spec.Priority = 4 })
		Eventually(func(gm Gomega) {
			gm.Expect(profileCondition(g+"-y", tsv1.ProfileConflict)(gm).Status).To(Equal(metav1.ConditionFalse))
			gm.Expect(profileCondition(g+"-x", tsv1.ProfileConflict)(gm).Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
	})

	It("keeps a deleted profile until its agents restored the hosts", func() {
		g := newGroup()
		makeNode(g+"-a", g)
		makeProfile(g, g, 0)
		agentApplying(g + "-a")

		p := &tsv1.LatencyProfile{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: g}, p)).To(Succeed())
		Expect(k8s.Delete(ctx, p)).To(Succeed())
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, g+"-a")
			gm.Expect(lns.DeletionTimestamp).NotTo(BeNil())
			c := profileCondition(g, tsv1.ProfileProgressing)(gm)
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonDeleting))
		}, timeout, interval).Should(Succeed())
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKey{Name: g}, &tsv1.LatencyProfile{})
		}, 2*time.Second, interval).Should(Succeed(), "the profile must wait for the restore")

		lns := stateOf(Default, g+"-a")
		agentRestored(lns)
		Eventually(stateGone(g+"-a"), timeout, interval).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: g}, &tsv1.LatencyProfile{}))
		}, timeout, interval).Should(BeTrue())
	})

	It("releases a node whose labels no longer match, and one that was deleted", func() {
		g := newGroup()
		a := makeNode(g+"-a", g)
		b := makeNode(g+"-b", g)
		makeProfile(g, g, 0)
		agentApplying(g + "-a")
		agentApplying(g + "-b")

		By("relabelling node a: its state is deleted for its agent to restore")
		orig := a.DeepCopy()
		a.Labels["tickstack.test/group"] = "elsewhere"
		Expect(k8s.Patch(ctx, a, client.MergeFrom(orig))).To(Succeed())
		Eventually(getState(g+"-a"), timeout, interval).Should(HaveField("DeletionTimestamp", Not(BeNil())))

		By("deleting node b: no agent is left to restore it, so the finalizer is dropped")
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Eventually(stateGone(g+"-b"), timeout, interval).Should(BeTrue())
		Eventually(func(gm Gomega) {
			p := &tsv1.LatencyProfile{}
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: g}, p)).To(Succeed())
			gm.Expect(p.Status.MatchedNodes).To(Equal(int32(0)))
			c := meta.FindStatusCondition(p.Status.Conditions, tsv1.ProfileReady)
			gm.Expect(c).NotTo(BeNil())
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonNoNodes))
		}, timeout, interval).Should(Succeed())
	})
})

// requestReboot plays an agent that wrote kernel arguments and asks for a reboot slot.
func requestReboot(node string, required bool, phase tsv1.RebootPhase) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		st := metav1.ConditionFalse
		if required {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeRebootRequired, Status: st, Reason: "KernelArguments", Message: "test"})
		lns.Status.Reboot = nil
		if phase != "" {
			lns.Status.Reboot = &tsv1.RebootStatus{Phase: phase}
		}
		return nil
	})
}

var _ = Describe("Reboot slots", func() {
	It("lets at most maxUnavailable nodes reboot at once, in name order", func() {
		g := newGroup()
		nodes := []string{g + "-a", g + "-b", g + "-c"}
		for _, n := range nodes {
			makeNode(n, g)
		}
		makeProfile(g, g, 0)
		for _, n := range nodes {
			reportFacts(n, hostFacts("0-3"))
			requestReboot(n, true, tsv1.RebootRequested)
		}
		granted := func() []string {
			var out []string
			for _, n := range nodes {
				if lns, err := getState(n)(); err == nil && lns.Spec.RebootGranted {
					out = append(out, n)
				}
			}
			return out
		}
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-a"}))
		Consistently(granted, 2*time.Second, interval).Should(Equal([]string{g + "-a"}))

		By("node a finishes its reboot; the slot passes to b")
		requestReboot(g+"-a", false, "")
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-b"}))

		By("node b's drain fails; the slot passes to c")
		requestReboot(g+"-b", true, tsv1.RebootDrainFailed)
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-c"}))
	})
})

// observed plays the agent having acted on the node state's current generation.
func observed(node string) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		lns.Status.ObservedGeneration = lns.Generation
		return nil
	})
}

var _ = Describe("Rollout controls", func() {
	// setup makes nodes named g-<suffix> with the given extra labels, a profile over them with the
	// given rollout, and has every node ask for a reboot.
	setup := func(r *tsv1.RolloutSpec, labels map[string]map[string]string, suffixes ...string) (string, func() []string) {
		g := newGroup()
		var nodes []string
		for _, s := range suffixes {
			n := makeNode(g+"-"+s, g)
			if l := labels[s]; l != nil {
				orig := n.DeepCopy()
				for k, v := range l {
					n.Labels[k] = v
				}
				Expect(k8s.Patch(ctx, n, client.MergeFrom(orig))).To(Succeed())
			}
			nodes = append(nodes, n.Name)
		}
		makeProfile(g, g, 0, func(p *tsv1.LatencyProfile) { p.Spec.Rollout = r })
		for _, n := range nodes {
			reportFacts(n, hostFacts("0-3"))
			Eventually(func(gm Gomega) {
				lns := stateOf(gm, n)
				gm.Expect(lns.Spec.Tuning).NotTo(BeNil())
			}, timeout, interval).Should(Succeed())
			requestReboot(n, true, tsv1.RebootRequested)
			observed(n)
		}
		return g, func() []string {
			var out []string
			for _, n := range nodes {
				if lns, err := getState(n)(); err == nil && lns.Spec.RebootGranted {
					out = append(out, n)
				}
			}
			return out
		}
	}
	setRollout := func(name string, mutate func(*tsv1.RolloutSpec)) {
		updateProfile(name, func(p *tsv1.LatencyProfile) {
			if p.Spec.Rollout == nil {
				p.Spec.Rollout = &tsv1.RolloutSpec{}
			}
			mutate(p.Spec.Rollout)
		})
	}
	allDays := []tsv1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	hhmm := func(t time.Time) string { return t.UTC().Format("15:04") }

	It("starts nothing while paused, and the held nodes go once it is resumed", func() {
		g, granted := setup(&tsv1.RolloutSpec{Paused: true}, nil, "a", "b")
		Eventually(func(gm Gomega) string { return profileCondition(g, tsv1.ProfileProgressing)(gm).Reason }, timeout, interval).
			Should(Equal(tsv1.ReasonRolloutPaused))
		Consistently(granted, 2*time.Second, interval).Should(BeEmpty())

		By("resuming the rollout")
		setRollout(g, func(r *tsv1.RolloutSpec) { r.Paused = false })
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-a"}))
	})

	It("lets a node that already holds its slot finish while paused", func() {
		g, granted := setup(nil, nil, "a")
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-a"}))
		requestReboot(g+"-a", true, tsv1.RebootRebooting)
		setRollout(g, func(r *tsv1.RolloutSpec) { *r = tsv1.RolloutSpec{Paused: true} })
		Consistently(granted, 2*time.Second, interval).Should(Equal([]string{g + "-a"}))
	})

	It("grants slots only inside a maintenance window", func() {
		now := benchClock.Now()
		closed := tsv1.MaintenanceWindow{Days: allDays, Start: hhmm(now.Add(2 * time.Hour)), End: hhmm(now.Add(3 * time.Hour)), TimeZone: "UTC"}
		g, granted := setup(&tsv1.RolloutSpec{Windows: []tsv1.MaintenanceWindow{closed}}, nil, "a")
		Eventually(func(gm Gomega) string {
			c := profileCondition(g, tsv1.ProfileProgressing)(gm)
			gm.Expect(c.Message).To(ContainSubstring("the next window opens at"))
			return c.Reason
		}, timeout, interval).Should(Equal(tsv1.ReasonOutsideWindow))
		Consistently(granted, 2*time.Second, interval).Should(BeEmpty())

		By("the reconcile asks to run again when the window opens")
		rr := &profile.LatencyProfileReconciler{Client: k8s, Now: func() time.Time { return now }}
		res, err := rr.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: g}})
		Expect(err).NotTo(HaveOccurred())
		// The window starts at now+2h truncated to the minute; the requeue is a second after it.
		Expect(res.RequeueAfter).To(BeNumerically(">", 119*time.Minute))
		Expect(res.RequeueAfter).To(BeNumerically("<=", 2*time.Hour+time.Second))

		By("a window that is open now")
		setRollout(g, func(r *tsv1.RolloutSpec) {
			// Written in New York's wall time: the zone is honoured, not taken as UTC.
			ny, err := time.LoadLocation("America/New_York")
			Expect(err).NotTo(HaveOccurred())
			r.Windows = []tsv1.MaintenanceWindow{{Days: allDays, Start: now.Add(-time.Hour).In(ny).Format("15:04"),
				End: now.Add(time.Hour).In(ny).Format("15:04"), TimeZone: "America/New_York"}}
		})
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-a"}))
	})

	It("keeps to the budget of each topology domain", func() {
		rack := "tickstack.test/rack"
		g, granted := setup(&tsv1.RolloutSpec{MaxUnavailable: ptr.To(intstr.FromInt32(3)), TopologyKey: rack},
			map[string]map[string]string{"a": {rack: "r1"}, "b": {rack: "r1"}, "c": {rack: "r2"}}, "a", "b", "c")
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-a", g + "-c"}))
		Consistently(granted, 2*time.Second, interval).Should(Equal([]string{g + "-a", g + "-c"}))

		By("a in rack r1 finishes; b, the other node of r1, gets the slot")
		requestReboot(g+"-a", false, "")
		Eventually(granted, timeout, interval).Should(Equal([]string{g + "-b", g + "-c"}))
	})
})

var _ = Describe("Status roll-up", func() {
	It("writes a profile's status a bounded number of times while its nodes' reports stream in over many windows", func() {
		const nodes = 40
		g := newGroup()
		var names []string
		for i := range nodes {
			names = append(names, fmt.Sprintf("%s-n%02d", g, i))
			makeNode(names[i], g)
		}
		makeProfile(g, g, 0)
		for _, n := range names {
			reportFacts(n, hostFacts("0-3"))
		}
		By("every node resolved, the profile waits for its agents")
		Eventually(func(gm Gomega) {
			p := &tsv1.LatencyProfile{}
			gm.Expect(k8s.Get(ctx, client.ObjectKey{Name: g}, p)).To(Succeed())
			gm.Expect(p.Status.OwnedNodes).To(Equal(int32(nodes)))
			c := meta.FindStatusCondition(p.Status.Conditions, tsv1.ProfileProgressing)
			gm.Expect(c).NotTo(BeNil())
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonApplying))
		}, timeout, interval).Should(Succeed())

		// Every status write of the profile from here on, as a watch delivers it: its first event is
		// the profile as it is, then one for each write; one that leaves the status as it was (the
		// finalizer's) is not a status write.
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &tsv1.LatencyProfileList{}, client.MatchingFields{"metadata.name": g})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var (
			mu      sync.Mutex
			last    *tsv1.LatencyProfileStatus
			written []int32 // appliedNodes after each status write
			ready   bool    // Ready True in the status last written
		)
		go func() {
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*tsv1.LatencyProfile)
				if !ok {
					continue
				}
				mu.Lock()
				if last != nil && !equality.Semantic.DeepEqual(*last, p.Status) {
					written = append(written, p.Status.AppliedNodes)
				}
				last = p.Status.DeepCopy()
				ready = meta.IsStatusConditionTrue(p.Status.Conditions, tsv1.ProfileReady)
				mu.Unlock()
			}
		}()

		By("the agents report Applied one by one, 300 ms apart: 12 s, a dozen roll-up windows")
		// The ticker is the agents' pace, what the test drives, not a wait for the manager.
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for _, n := range names {
			<-tick.C
			reportApplied(n)
		}
		Eventually(func(gm Gomega) {
			mu.Lock()
			defer mu.Unlock()
			gm.Expect(last).NotTo(BeNil())
			gm.Expect(last.AppliedNodes).To(Equal(int32(nodes)))
			gm.Expect(ready).To(BeTrue())
		}, timeout, interval).Should(Succeed())

		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("status writes while %d agents reported Applied over 12 s: %d, appliedNodes after each: %v\n",
			nodes, len(written), written)
		Expect(len(written)).To(BeNumerically("<=", 8), "status writes, appliedNodes after each: %v", written)
		Expect(written).To(ContainElement(And(BeNumerically(">", 0), BeNumerically("<", nodes))),
			"the rollout's progress is written on its way, not only at its end")
	})
})
