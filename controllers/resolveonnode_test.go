package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// Issue 45, build steps 3 to 5 (the manager's part): with --resolve-on-node, nodes whose agent
// reports the ResolveOnNode capability resolve their own tuning (docs/architecture.md, "Fleet
// scale"). The tests play the agents: they write what an agent writes in its node state's status.

// turnResolveOnNode sets the manager's --resolve-on-node for one test. Turning it does not start a
// reconcile: the next event does.
func turnResolveOnNode(on bool) {
	resolveOnNode.Store(on)
	DeferCleanup(func() { resolveOnNode.Store(false) })
}

// reportCapableFacts plays a new agent's first report: its host's facts and its capability, in one
// status patch.
func reportCapableFacts(node string, facts *tsv1.NodeFacts) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		lns.Status.Facts = facts
		lns.Status.Capabilities = []tsv1.AgentCapability{tsv1.CapabilityResolveOnNode}
		return nil
	})
}

// agentResolves plays a resolving agent that has resolved its node from the profile as it is now
// and applied it: status.resolved and status.tuning, observedGeneration, Applied (or not).
func agentResolves(node, profileName string, applied metav1.ConditionStatus) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		p := &tsv1.LatencyProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: profileName}, p); err != nil {
			return err
		}
		tuning, err := resolve.Node(&p.Spec, lns.Status.Facts)
		if err != nil {
			return err
		}
		lns.Status.ObservedGeneration = lns.Generation
		lns.Status.Tuning = tuning
		lns.Status.Resolved = &tsv1.ResolvedTuning{Profile: p.Name, Generation: p.Generation, TuningHash: resolve.TuningHash(tuning)}
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeApplied, Status: applied, Reason: "Resolved", Message: "as resolved"})
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeDegraded, Status: metav1.ConditionFalse, Reason: "InSync", Message: "ok"})
		return nil
	})
}

// setNodeCondition plays the agent setting one condition.
func setNodeCondition(node, condType string, status metav1.ConditionStatus) {
	agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: condType, Status: status, Reason: "Test", Message: "set by the test"})
		return nil
	})
}

// moveTuning changes the profile so that every node's tuning moves (two reserved CPUs, not one).
func moveTuning(name string) {
	updateProfile(name, func(p *tsv1.LatencyProfile) { p.Spec.CPU = &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-63"} })
}

// updateProfile changes the profile as mutate does (a merge patch), until that succeeds.
func updateProfile(name string, mutate func(*tsv1.LatencyProfile)) {
	GinkgoHelper()
	patchUntilDone(name, false, func(p *tsv1.LatencyProfile) error {
		mutate(p)
		return nil
	})
}

// appliedNodes is the profile's status.appliedNodes once its status describes its generation.
func appliedNodes(name string) func(Gomega) int32 {
	return func(g Gomega) int32 {
		p := &tsv1.LatencyProfile{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		return p.Status.AppliedNodes
	}
}

// managerTuning is what the manager resolves for node from the profile as it is now.
func managerTuning(node, profileName string) *tsv1.NodeTuning {
	p := &tsv1.LatencyProfile{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: profileName}, p)).To(Succeed())
	lns := stateOf(Default, node)
	tuning, err := resolve.Node(&p.Spec, lns.Status.Facts)
	Expect(err).NotTo(HaveOccurred())
	return tuning
}

var _ = Describe("Resolve on node (--resolve-on-node)", func() {
	It("hands capable nodes their own resolution, writes nothing to them on a profile change, and rolls up status.resolved", func() {
		turnResolveOnNode(true)
		g := newGroup()
		capable, old := "tsro-"+g+"-new", "tsro-"+g+"-old"
		makeNode(capable, g)
		makeNode(old, g)
		name := "tsro-" + g
		makeProfile(name, g, 0)
		Eventually(func() error { _, err := getState(capable)(); return err }, timeout, interval).Should(Succeed())
		Eventually(func() error { _, err := getState(old)(); return err }, timeout, interval).Should(Succeed())
		By("both node states are created handed over, before any agent reports")
		for _, n := range []string{capable, old} {
			lns := stateOf(Default, n)
			Expect(lns.Spec.Profile.ResolveOnNode).To(BeTrue(), n)
			Expect(lns.Spec.Tuning).To(BeNil(), n)
		}
		agentApplying(capable)
		agentApplying(old)
		reportCapableFacts(capable, hostFacts("0-63"))
		reportFacts(old, hostFacts("0-63")) // an agent of the previous release: no capability

		By("the capable node keeps resolveOnNode and no tuning; the other, whose agent reports no capability, gets spec.tuning as before")
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, capable)
			gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeTrue())
			gm.Expect(lns.Spec.Tuning).To(BeNil())
			lns = stateOf(gm, old)
			gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeFalse())
			gm.Expect(lns.Spec.Tuning).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())

		By("the roll-up counts the resolving node once its status.resolved has the manager's hash")
		reportApplied(old)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(1)))
		Consistently(appliedNodes(name), "1s", interval).Should(Equal(int32(1)))
		agentResolves(capable, name, metav1.ConditionTrue)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(2)))

		By("a profile change that moves no node: no write, both current at once")
		before := stateOf(Default, capable)
		updateProfile(name, func(p *tsv1.LatencyProfile) { p.Spec.Priority = 5 })
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(2)))

		By("a profile change that moves both: the old node's spec.tuning is written, the capable node's state is not")
		oldBefore := stateOf(Default, old)
		moveTuning(name)
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, old)
			gm.Expect(lns.Generation).To(BeNumerically(">", oldBefore.Generation))
			gm.Expect(lns.Spec.Tuning.ReservedCPUs).To(Equal(tsv1.CPUSet("0-1")))
		}, timeout, interval).Should(Succeed())
		// The capable node is not current until its agent reports the new resolution.
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(0)))
		Consistently(func(gm Gomega) string {
			lns := stateOf(gm, capable)
			return lns.ResourceVersion
		}, "2s", interval).Should(Equal(before.ResourceVersion), "the capable node's state was written")
		agentResolves(capable, name, metav1.ConditionTrue)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(1)))
		reportApplied(old)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(2)))
	})

	It("hands a live node over only when its spec.tuning is what it would resolve and Applied, and takes it back with the flag off", func() {
		g := newGroup()
		n := "tsro-" + g + "-live"
		makeNode(n, g)
		name := "tsro-" + g
		makeProfile(name, g, 0)
		Eventually(func() error { _, err := getState(n)(); return err }, timeout, interval).Should(Succeed())
		agentApplying(n)

		By("flag off: a capable agent gets spec.tuning, as today")
		reportCapableFacts(n, hostFacts("0-63"))
		reportApplied(n)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(1)))
		t1 := stateOf(Default, n)
		Expect(t1.Spec.Tuning).NotTo(BeNil())
		Expect(t1.Spec.Profile.ResolveOnNode).To(BeFalse())
		// Let the reconciles of these reports end: turning the flag on starts none.
		Consistently(appliedNodes(name), "1s", interval).Should(Equal(int32(1)))

		By("flag on and a profile change at once: spec.tuning (Applied) differs from the new resolution, so it is written, not handed over")
		turnResolveOnNode(true)
		moveTuning(name)
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, n)
			gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeFalse())
			gm.Expect(lns.Spec.Tuning).NotTo(BeNil())
			gm.Expect(lns.Spec.Tuning.ReservedCPUs).To(Equal(tsv1.CPUSet("0-1")))
		}, timeout, interval).Should(Succeed())

		By("not handed over while its agent has not applied that tuning")
		// An unrelated report (an event for the manager), still at the older generation.
		setNodeCondition(n, tsv1.NodeDrifted, metav1.ConditionFalse)
		Consistently(func(gm Gomega) bool {
			lns := stateOf(gm, n)
			return lns.Spec.Profile.ResolveOnNode
		}, "2s", interval).Should(BeFalse())

		By("Applied: handed over in one write, spec.tuning cleared")
		reportApplied(n)
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, n)
			gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeTrue())
			gm.Expect(lns.Spec.Tuning).To(BeNil())
		}, timeout, interval).Should(Succeed())
		agentResolves(n, name, metav1.ConditionTrue)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(1)))

		By("flag off: the node gets spec.tuning back, the same values its agent resolved")
		resolveOnNode.Store(false)
		setNodeCondition(n, tsv1.NodeDrifted, metav1.ConditionTrue) // a change: an event for the manager
		want := managerTuning(n, name)
		Eventually(func(gm Gomega) {
			lns := stateOf(gm, n)
			gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeFalse())
			gm.Expect(lns.Spec.Tuning).NotTo(BeNil())
			gm.Expect(resolve.TuningHash(lns.Spec.Tuning)).To(Equal(resolve.TuningHash(want)))
			gm.Expect(resolve.TuningHash(lns.Spec.Tuning)).To(Equal(lns.Status.Resolved.TuningHash))
		}, timeout, interval).Should(Succeed())
	})

	It("reports a resolving node's resolution error itself, and writes nothing to its node state", func() {
		n, name, handed := handedToNode("err")
		agentResolves(n, name, metav1.ConditionTrue)
		Eventually(appliedNodes(name), timeout, interval).Should(Equal(int32(1)))

		By("a profile whose reserved CPUs the node lacks: Degraded ResolutionFailed from the manager")
		updateProfile(name, func(p *tsv1.LatencyProfile) { p.Spec.CPU = &tsv1.CPUSpec{Reserved: "64-65", Isolated: "1-3"} })
		Eventually(func(gm Gomega) {
			c := profileCondition(name, tsv1.ProfileDegraded)(gm)
			gm.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			gm.Expect(c.Reason).To(Equal(tsv1.ReasonResolutionFailed))
			gm.Expect(c.Message).To(ContainSubstring(n))
		}, timeout, interval).Should(Succeed())
		lns := stateOf(Default, n)
		Expect(lns.Generation).To(Equal(handed.Generation), "the node state's spec was written")
		Expect(lns.Spec.Tuning).To(BeNil())
	})

	It("keeps the profile label on a resolving node while it re-tunes, and takes it off when it is Degraded", func() {
		n, name, _ := handedToNode("label")
		agentResolves(n, name, metav1.ConditionFalse)
		Consistently(nodeLabel(n, tsv1.ProfileLabel), "1s", interval).Should(BeEmpty(), "labelled before it was ever Applied")
		agentResolves(n, name, metav1.ConditionTrue)
		Eventually(nodeLabel(n, tsv1.ProfileLabel), timeout, interval).Should(Equal(name))

		By("a profile change: the agent re-tunes (Applied False, its own taint keeps pods off), the label stays")
		moveTuning(name)
		agentResolves(n, name, metav1.ConditionFalse)
		Consistently(nodeLabel(n, tsv1.ProfileLabel), "2s", interval).Should(Equal(name))
		agentResolves(n, name, metav1.ConditionTrue)

		By("Degraded: the label goes")
		setNodeCondition(n, tsv1.NodeDegraded, metav1.ConditionTrue)
		Eventually(nodeLabel(n, tsv1.ProfileLabel), timeout, interval).Should(BeEmpty())
	})
})

// handedToNode turns resolveOnNode on, makes a profile and a node (name suffix) of a new group that
// can resolve it itself (the agent applying, facts reported), and waits until the manager hands
// the node its resolution. It returns the node, the profile and the node state as handed.
func handedToNode(suffix string) (node, profile string, handed *tsv1.LatencyNodeState) {
	turnResolveOnNode(true)
	g := newGroup()
	node, profile = "tsro-"+g+"-"+suffix, "tsro-"+g
	makeNode(node, g)
	makeProfile(profile, g, 0)
	Eventually(func() error { _, err := getState(node)(); return err }, timeout, interval).Should(Succeed())
	agentApplying(node)
	reportCapableFacts(node, hostFacts("0-63"))
	Eventually(func(gm Gomega) {
		lns := stateOf(gm, node)
		gm.Expect(lns.Spec.Profile.ResolveOnNode).To(BeTrue())
		handed = lns
	}, timeout, interval).Should(Succeed())
	return node, profile, handed
}
