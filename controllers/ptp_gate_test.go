package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/node"
	"github.com/tickstack/tickstack/internal/bench/judge/judgetest"
)

// gateNode creates a node of a profile, that passed its benchmark for passed ("" none), with extra
// labels, and removes it after the test.
func gateNode(name, profile, passed string, extra map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tsv1.ProfileLabel: profile}}}
	if passed != "" {
		n.Annotations = map[string]string{tsv1.BenchmarkPassedAnnotation: passed}
	}
	for k, v := range extra {
		n.Labels[k] = v
	}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })
	return n
}

// gateNodeState creates the node state of a node for a profile, with a ptp section, and reports
// TimeSynced as given.
func gateNodeState(node, profile string, synced metav1.ConditionStatus) {
	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: tsv1.LatencyNodeStateSpec{NodeName: node, Profile: tsv1.ProfileReference{Name: profile, Generation: 1},
			Tuning: &tsv1.NodeTuning{PTP: &tsv1.PTPTuning{Role: tsv1.PTPRoleSlave, Interface: "eth0", Transport: tsv1.PTPTransportUDPv4,
				Timestamping: tsv1.PTPTimestampingSoftware, MaxOffsetNs: 1000, HoldTime: metav1.Duration{Duration: 10 * time.Second}}}},
	}
	Expect(k8s.Create(ctx, lns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, lns))).To(Succeed()) })
	setTimeSynced(node, synced)
}

// setTimeSynced plays the agent: it reports the node state's TimeSynced condition.
func setTimeSynced(node string, status metav1.ConditionStatus) {
	reason, msg := "Synchronized", "port SLAVE, offset 12 ns"
	if status == metav1.ConditionFalse {
		reason, msg = "OffsetAboveThreshold", "offset 90000 ns above 1000 ns for 10.2s (hold time 10s)"
	}
	agentPatchesStatus(node, func(cur *tsv1.LatencyNodeState) error {
		apimeta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: tsv1.NodeTimeSynced, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: cur.Generation})
		return nil
	})
}

// patchGate changes an object with a merge patch, retried on conflicts.
func patchGate(obj client.Object, change func()) {
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		orig := obj.DeepCopyObject().(client.Object)
		change()
		return k8s.Patch(ctx, obj, client.MergeFrom(orig))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// validationMarks is what a node carries about its validation: the value of the
// tickstack.io/validated label and of the tickstack.io/benchmark-passed annotation ("" absent).
type validationMarks struct {
	validated, passed string
}

// marksOfNode reads a node's validation label and benchmark-passed annotation.
func marksOfNode(name string) func(Gomega) validationMarks {
	return func(g Gomega) validationMarks {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		return validationMarks{validated: n.Labels[tsv1.ValidatedLabel], passed: n.Annotations[tsv1.BenchmarkPassedAnnotation]}
	}
}

func unvalidatedTaint(name string) func(Gomega) bool {
	return func(g Gomega) bool {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		for _, t := range n.Spec.Taints {
			if t.Key == tsv1.UnvalidatedTaint && t.Effect == corev1.TaintEffectNoSchedule {
				return true
			}
		}
		return false
	}
}

// nodeEvents lists the reasons of the events recorded on a node (cluster-scoped objects' events
// go to the default namespace).
func nodeEvents(name string) func(Gomega) []string {
	return func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		var reasons []string
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// benchmarkEvents lists the reasons of the events recorded in a benchmark's namespace.
func benchmarkEvents(ns string) func(Gomega) []string {
	return func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}
}

// kubeletReady plays the kubelet: it reports the node Ready, beside the gate's own condition.
func kubeletReady(name string) {
	Eventually(func() error {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		orig := n.DeepCopy()
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
		return k8s.Status().Patch(ctx, n, client.StrategicMergeFrom(orig))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// nodeConditions lists a node's condition types and statuses, as TYPE=STATUS.
func nodeConditions(name string) []string {
	n := &corev1.Node{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	return out
}

// nodeTimeSynced reads a node's tickstack.io/TimeSynced condition status ("" when absent).
func nodeTimeSynced(name string) func(Gomega) string {
	return func(g Gomega) string {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		for _, c := range n.Status.Conditions {
			if c.Type == tsv1.NodeTimeSyncedCondition {
				return string(c.Status) + "/" + c.Reason
			}
		}
		return ""
	}
}

var _ = Describe("PTP readiness gate", func() {
	const wait, poll = 20 * time.Second, 100 * time.Millisecond

	It("takes tickstack.io/validated away while TimeSynced is False, taints the node, and gives the label back when True", func() {
		const profile, name = "tsgate-p1", "tsgate-a"
		gateNode(name, profile, profile, map[string]string{"tsgate/select": name})
		// The manager's cache holds only the gate's own condition (shared.NodeTransform): its
		// patches must still leave the kubelet's alone.
		kubeletReady(name)
		gateNodeState(name, profile, metav1.ConditionTrue)
		// A gated profile that selects the node (so its controller keeps the node state).
		p := &tsv1.LatencyProfile{
			ObjectMeta: metav1.ObjectMeta{Name: profile},
			Spec: tsv1.LatencyProfileSpec{
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tsgate/select": name}},
				Validation:   &tsv1.ValidationSpec{TaintUntilValidated: true},
			},
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed()) })

		By("in sync: validated, no taint")
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{validated: profile, passed: profile}))
		Consistently(marksOfNode(name), 2*time.Second, poll).Should(Equal(validationMarks{validated: profile, passed: profile}))
		Expect(unvalidatedTaint(name)(Default)).To(BeFalse())

		By("out of sync: the label goes, the pass stays, and the profile's taint comes back")
		setTimeSynced(name, metav1.ConditionFalse)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{passed: profile}))
		Eventually(unvalidatedTaint(name), wait, poll).Should(BeTrue())
		Eventually(nodeEvents(name), wait, poll).Should(ContainElement(node.EventTimeSyncLost))
		Eventually(nodeTimeSynced(name), wait, poll).Should(Equal("False/OffsetAboveThreshold"))
		Expect(nodeConditions(name)).To(ContainElement("Ready=True"))

		By("back in sync: the label returns without a benchmark, the taint goes")
		setTimeSynced(name, metav1.ConditionTrue)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{validated: profile, passed: profile}))
		Eventually(unvalidatedTaint(name), wait, poll).Should(BeFalse())
		Eventually(nodeEvents(name), wait, poll).Should(ContainElement(node.EventTimeSyncRestored))
		Eventually(nodeTimeSynced(name), wait, poll).Should(Equal("True/Synchronized"))
		Expect(nodeConditions(name)).To(ContainElement("Ready=True"))

		By("the ptp section goes: so does the node condition")
		Eventually(func() error {
			cur := &tsv1.LatencyNodeState{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
				return err
			}
			cur.Spec.Tuning.PTP = nil
			return k8s.Update(ctx, cur)
		}, wait, poll).Should(Succeed())
		Eventually(nodeTimeSynced(name), wait, poll).Should(BeEmpty())
		Expect(nodeConditions(name)).To(Equal([]string{"Ready=True"}))
	})

	It("does not give the validation back to a node whose profile changed", func() {
		const name = "tsgate-b"
		n := gateNode(name, "tsgate-p2", "tsgate-p2", nil)
		gateNodeState(name, "tsgate-p2", metav1.ConditionFalse)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{passed: "tsgate-p2"}))

		By("moving the node to another profile while out of sync")
		lns := &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: name}}
		patchGate(lns, func() { lns.Spec.Profile = tsv1.ProfileReference{Name: "tsgate-q2", Generation: 1} })
		patchGate(n, func() {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[tsv1.ProfileLabel] = "tsgate-q2"
		})

		By("back in sync: no validation for either profile")
		setTimeSynced(name, metav1.ConditionTrue)
		Consistently(marksOfNode(name), 3*time.Second, poll).Should(Equal(validationMarks{passed: "tsgate-p2"}))
	})

	It("keeps a benchmark pass while TimeSynced is False, labels on recovery, and drops the pass on a failed run", func() {
		const profile, name = "tsgate-p3", "tsgate-c"
		gateNode(name, profile, "", nil)
		gateNodeState(name, profile, metav1.ConditionFalse)
		playAgentApplied(name, profile) // a benchmark targets the nodes where the profile is in effect
		ns := tslbNamespace()
		b := validBenchmark(ns, "held", profile)
		Expect(k8s.Create(ctx, b)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, b))).To(Succeed()) })

		By("a pass while out of sync gives the pass annotation, not the label")
		job := nodeJob(ns, "held", 1, name)
		uploadResults(ns, job.Name, judgetest.SampleResults(name, map[tsv1.Stack]int64{tsv1.StackKernel: 1000}))
		Eventually(func(g Gomega) tsv1.VerdictResult {
			return getBenchmark(ns, "held")(g).Status.Verdict
		}, wait, poll).Should(Equal(tsv1.VerdictPassed))
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{passed: profile}))
		Eventually(benchmarkEvents(ns), wait, poll).Should(ContainElement("NodeValidated"))
		Consistently(marksOfNode(name), 2*time.Second, poll).Should(Equal(validationMarks{passed: profile}))

		By("back in sync: labelled")
		setTimeSynced(name, metav1.ConditionTrue)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{validated: profile, passed: profile}))

		By("out of sync again, then a failed run: nothing is kept any more")
		setTimeSynced(name, metav1.ConditionFalse)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{passed: profile}))
		patchGate(b, func() { b.Annotations = map[string]string{tsv1.RerunAnnotation: "fail"} })
		job = nodeJob(ns, "held", 2, name)
		uploadResults(ns, job.Name, judgetest.SampleResults(name, map[tsv1.Stack]int64{tsv1.StackKernel: 50000}))
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{}))
		setTimeSynced(name, metav1.ConditionTrue)
		Consistently(marksOfNode(name), 2*time.Second, poll).Should(Equal(validationMarks{}))
	})
})
