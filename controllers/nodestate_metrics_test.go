package controllers

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
)

// gaugeValue is the value of the first series of name in reg whose labels include labels.
func gaugeValue(reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	families, err := reg.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		if series, _ := testutil.SeriesWith(f, labels); len(series) > 0 {
			return series[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

var _ = Describe("Node metrics", func() {
	It("exports each node state's conditions, reboot phase and drain timeout, and drops them when the node state goes", func() {
		g := newGroup()
		node := g + "-a"
		makeNode(node, g)
		makeProfile(g, g, 0, func(p *tsv1.LatencyProfile) {
			p.Spec.Rollout = &tsv1.RolloutSpec{DrainTimeout: &metav1.Duration{Duration: 7 * time.Minute}}
		})
		reportFacts(node, hostFacts("0-3"))
		began := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
		agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
			if lns.Spec.Tuning == nil {
				return fmt.Errorf("no tuning resolved yet")
			}
			for typ, st := range map[string]metav1.ConditionStatus{tsv1.NodeApplied: metav1.ConditionFalse, tsv1.NodeDegraded: metav1.ConditionFalse,
				tsv1.NodeDrifted: metav1.ConditionTrue, tsv1.NodeRebootRequired: metav1.ConditionTrue} {
				meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: "Test", Message: "test"})
			}
			lns.Status.Reboot = &tsv1.RebootStatus{Phase: tsv1.RebootDraining, LastTransitionTime: began}
			return nil
		})

		value := func(name string, labels map[string]string) func() (float64, bool) {
			return func() (float64, bool) {
				labels["node"] = node
				return gaugeValue(nodeMetricsReg, name, labels)
			}
		}
		Eventually(func(gm Gomega) {
			v, ok := value("tickstack_node_condition", map[string]string{"profile": g, "type": tsv1.NodeDrifted, "status": "True"})()
			gm.Expect(ok && v == 1).To(BeTrue(), "Drifted=True exported")
			v, ok = value("tickstack_node_reboot_phase", map[string]string{"phase": string(tsv1.RebootDraining), "action": string(tsv1.ActionReboot)})()
			gm.Expect(ok && v == 1).To(BeTrue(), "the Draining phase exported")
			v, ok = value("tickstack_node_reboot_phase_start_timestamp_seconds", map[string]string{})()
			gm.Expect(ok).To(BeTrue(), "the phase's start exported")
			gm.Expect(v).To(BeEquivalentTo(began.Unix()))
			v, ok = value("tickstack_node_drain_timeout_seconds", map[string]string{})()
			gm.Expect(ok).To(BeTrue(), "the profile's drain timeout exported")
			gm.Expect(v).To(BeEquivalentTo(420))
		}, timeout, interval).Should(Succeed())
		_, ok := value("tickstack_node_condition", map[string]string{"type": tsv1.NodeDrifted, "status": "False"})()
		Expect(ok).To(BeFalse(), "one series per condition type: the current status alone")

		By("the reboot ends and the drift is corrected: the phase goes, the condition follows")
		agentPatchesStatus(node, func(lns *tsv1.LatencyNodeState) error {
			meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: tsv1.NodeDrifted, Status: metav1.ConditionFalse, Reason: "Test", Message: "test"})
			lns.Status.Reboot = nil
			return nil
		})
		Eventually(func(gm Gomega) {
			_, ok := value("tickstack_node_reboot_phase", map[string]string{})()
			gm.Expect(ok).To(BeFalse(), "no reboot phase after the reboot")
			_, ok = value("tickstack_node_reboot_phase_start_timestamp_seconds", map[string]string{})()
			gm.Expect(ok).To(BeFalse(), "no phase start after the reboot")
			v, ok := value("tickstack_node_condition", map[string]string{"type": tsv1.NodeDrifted, "status": "False"})()
			gm.Expect(ok && v == 1).To(BeTrue(), "Drifted=False exported")
			_, ok = value("tickstack_node_condition", map[string]string{"type": tsv1.NodeDrifted, "status": "True"})()
			gm.Expect(ok).To(BeFalse(), "Drifted=True gone")
		}, timeout, interval).Should(Succeed())

		By("the profile goes, and with it the node state: no series of the node is left")
		deleteProfileAndRelease(g)
		Eventually(stateGone(node), timeout, interval).Should(BeTrue())
		Eventually(func() int {
			families, err := nodeMetricsReg.Gather()
			Expect(err).NotTo(HaveOccurred())
			n := 0
			for _, f := range families {
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "node" && l.GetValue() == node {
							n++
						}
					}
				}
			}
			return n
		}, timeout, interval).Should(BeZero())
	})
})
