package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestWantValidated(t *testing.T) {
	for _, tc := range []struct {
		name, passed, profile string
		lost                  bool
		want                  string
	}{
		{"passed, same profile, in sync: validated", "p", "p", false, "p"},
		{"passed, out of sync: not validated", "p", "p", true, ""},
		{"passed for another profile: not validated", "q", "p", false, ""},
		{"passed, no profile any more: not validated", "p", "", false, ""},
		{"never passed", "", "p", false, ""},
	} {
		if got := wantValidated(tc.passed, tc.profile, tc.lost); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTimeSyncLostAndProfile(t *testing.T) {
	withPTP := func(status metav1.ConditionStatus) *tsv1.LatencyNodeState {
		l := &tsv1.LatencyNodeState{Spec: tsv1.LatencyNodeStateSpec{Profile: tsv1.ProfileReference{Name: "p"}, Tuning: &tsv1.NodeTuning{PTP: &tsv1.PTPTuning{}}}}
		if status != "" {
			l.Status.Conditions = []metav1.Condition{{Type: tsv1.NodeTimeSynced, Status: status, Reason: "R"}}
		}
		return l
	}
	noPTP := withPTP(metav1.ConditionFalse)
	noPTP.Spec.Tuning.PTP = nil
	deleting := withPTP(metav1.ConditionFalse)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	for _, tc := range []struct {
		name string
		lns  *tsv1.LatencyNodeState
		want bool
	}{
		{"no node state", nil, false},
		{"TimeSynced False", withPTP(metav1.ConditionFalse), true},
		{"TimeSynced True", withPTP(metav1.ConditionTrue), false},
		{"not reported yet", withPTP(""), false},
		{"False but no ptp section (stale)", noPTP, false},
		{"being deleted", deleting, false},
	} {
		if got, _ := timeSyncLost(tc.lns); got != tc.want {
			t.Errorf("%s: lost %v, want %v", tc.name, got, tc.want)
		}
	}

	node := func(profile string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
		if profile != "" {
			n.Labels[tsv1.ProfileLabel] = profile
		}
		return n
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		lns  *tsv1.LatencyNodeState
		want string
	}{
		{"the node's label", node("q"), withPTP(metav1.ConditionTrue), "q"},
		{"label not set yet: the node state's", node(""), withPTP(metav1.ConditionTrue), "p"},
		{"no label, no node state", node(""), nil, ""},
		{"no label, node state being deleted", node(""), deleting, ""},
	} {
		if got := nodeProfile(tc.node, tc.lns); got != tc.want {
			t.Errorf("%s: nodeProfile %q, want %q", tc.name, got, tc.want)
		}
	}
}

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
	Eventually(func() error {
		cur := &tsv1.LatencyNodeState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, cur); err != nil {
			return err
		}
		orig := cur.DeepCopy()
		apimeta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: tsv1.NodeTimeSynced, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: cur.Generation})
		return k8s.Status().Patch(ctx, cur, client.MergeFrom(orig))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
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

func TestNodeTimeSyncedCondition(t *testing.T) {
	now := metav1.Now()
	lns := &tsv1.LatencyNodeState{Spec: tsv1.LatencyNodeStateSpec{Tuning: &tsv1.NodeTuning{PTP: &tsv1.PTPTuning{}}}}
	if c := wantNodeCondition(lns, now); c == nil || c.Status != corev1.ConditionUnknown || c.Reason != "NotReported" {
		t.Errorf("before the agent reports: %+v", c)
	}
	lns.Status.Conditions = []metav1.Condition{{Type: tsv1.NodeTimeSynced, Status: metav1.ConditionFalse, Reason: "OffsetAboveThreshold", Message: "offset 90000 ns"}}
	want := wantNodeCondition(lns, now)
	if want == nil || want.Type != tsv1.NodeTimeSyncedCondition || want.Status != corev1.ConditionFalse || want.Reason != "OffsetAboveThreshold" || want.Message != "offset 90000 ns" {
		t.Fatalf("out of sync: %+v", want)
	}
	if c := wantNodeCondition(&tsv1.LatencyNodeState{}, now); c != nil {
		t.Errorf("no ptp section: %+v", c)
	}

	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	got, changed := mergeNodeCondition([]corev1.NodeCondition{ready}, want)
	if !changed || len(got) != 2 || got[0] != ready || got[1].Type != tsv1.NodeTimeSyncedCondition {
		t.Errorf("added: %v %+v", changed, got)
	}
	later := *want
	later.LastHeartbeatTime = metav1.NewTime(now.Add(time.Minute))
	if _, changed := mergeNodeCondition(got, &later); changed {
		t.Error("a heartbeat alone counts as a change")
	}
	later.Status = corev1.ConditionTrue
	if out, changed := mergeNodeCondition(got, &later); !changed || len(out) != 2 || out[1].Status != corev1.ConditionTrue {
		t.Errorf("status change: %v %+v", changed, out)
	}
	if out, changed := mergeNodeCondition(got, nil); !changed || len(out) != 1 || out[0] != ready {
		t.Errorf("removed: %v %+v", changed, out)
	}
	if _, changed := mergeNodeCondition([]corev1.NodeCondition{ready}, nil); changed {
		t.Error("removing an absent condition counts as a change")
	}
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
		Eventually(nodeEvents(name), wait, poll).Should(ContainElement(EventTimeSyncLost))
		Eventually(nodeTimeSynced(name), wait, poll).Should(Equal("False/OffsetAboveThreshold"))

		By("back in sync: the label returns without a benchmark, the taint goes")
		setTimeSynced(name, metav1.ConditionTrue)
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{validated: profile, passed: profile}))
		Eventually(unvalidatedTaint(name), wait, poll).Should(BeFalse())
		Eventually(nodeEvents(name), wait, poll).Should(ContainElement(EventTimeSyncRestored))
		Eventually(nodeTimeSynced(name), wait, poll).Should(Equal("True/Synchronized"))

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
		uploadResults(ns, job.Name, sampleResults(name, map[tsv1.Stack]int64{tsv1.StackKernel: 1000}))
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
		uploadResults(ns, job.Name, sampleResults(name, map[tsv1.Stack]int64{tsv1.StackKernel: 50000}))
		Eventually(marksOfNode(name), wait, poll).Should(Equal(validationMarks{}))
		setTimeSynced(name, metav1.ConditionTrue)
		Consistently(marksOfNode(name), 2*time.Second, poll).Should(Equal(validationMarks{}))
	})
})
