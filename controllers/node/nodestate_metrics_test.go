package node

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func metricsNodeState(name, profile string, conds map[string]metav1.ConditionStatus, reboot *tsv1.RebootStatus, drain time.Duration) *tsv1.LatencyNodeState {
	lns := &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: name}}
	lns.Spec.Profile.Name = profile
	if drain != 0 {
		lns.Spec.Tuning = &tsv1.NodeTuning{DrainTimeout: &metav1.Duration{Duration: drain}}
	}
	for typ, st := range conds {
		meta.SetStatusCondition(&lns.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: "Test"})
	}
	lns.Status.Reboot = reboot
	return lns
}

// The collector's series of node states, as a scrape sees them: one series per exported condition
// type, the reboot phase while one is in progress, and nothing left of a node state that changed
// profile, finished its reboot or went.
func TestNodeMetricsSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewNodeMetrics(reg)
	start := metav1.NewTime(time.Unix(1700000000, 0))
	m.observe(metricsNodeState("n1", "p1", map[string]metav1.ConditionStatus{
		tsv1.NodeApplied: metav1.ConditionFalse, tsv1.NodeDrifted: metav1.ConditionTrue, "SomethingElse": metav1.ConditionTrue,
	}, &tsv1.RebootStatus{Phase: tsv1.RebootDraining, LastTransitionTime: start}, 7*time.Minute))
	m.observe(metricsNodeState("n2", "p2", map[string]metav1.ConditionStatus{tsv1.NodeDegraded: metav1.ConditionTrue},
		&tsv1.RebootStatus{Phase: tsv1.RebootRequested, Action: tsv1.ActionKubeletRestart}, 0))
	names := []string{"tickstack_node_condition", "tickstack_node_reboot_phase",
		"tickstack_node_reboot_phase_start_timestamp_seconds", "tickstack_node_drain_timeout_seconds"}
	header := `# HELP tickstack_node_condition 1 for each condition of a node's LatencyNodeState (Applied, Degraded, RebootRequired, Drifted, TimeSynced), status the current one.
# TYPE tickstack_node_condition gauge
`
	want := header + `tickstack_node_condition{node="n1",profile="p1",status="False",type="Applied"} 1
tickstack_node_condition{node="n1",profile="p1",status="True",type="Drifted"} 1
tickstack_node_condition{node="n2",profile="p2",status="True",type="Degraded"} 1
# HELP tickstack_node_drain_timeout_seconds The drain timeout of the node's profile (rollout.drainTimeout); absent when the profile sets none and the agent's --drain-timeout applies.
# TYPE tickstack_node_drain_timeout_seconds gauge
tickstack_node_drain_timeout_seconds{node="n1"} 420
# HELP tickstack_node_reboot_phase 1 while a node is in this phase of a reboot or kubelet restart (status.reboot of its LatencyNodeState); absent when none is in progress.
# TYPE tickstack_node_reboot_phase gauge
tickstack_node_reboot_phase{action="KubeletRestart",node="n2",phase="Requested"} 1
tickstack_node_reboot_phase{action="Reboot",node="n1",phase="Draining"} 1
# HELP tickstack_node_reboot_phase_start_timestamp_seconds When the node's current reboot phase began, in Unix seconds.
# TYPE tickstack_node_reboot_phase_start_timestamp_seconds gauge
tickstack_node_reboot_phase_start_timestamp_seconds{node="n1"} 1.7e+09
`
	if err := promtest.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// n1 moves to another profile and finishes its reboot; n2's node state goes.
	m.observe(metricsNodeState("n1", "p3", map[string]metav1.ConditionStatus{tsv1.NodeApplied: metav1.ConditionTrue}, nil, 0))
	m.forget("n2")
	want = header + `tickstack_node_condition{node="n1",profile="p3",status="True",type="Applied"} 1
`
	if err := promtest.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	m.forget("n1")
	if n, err := promtest.GatherAndCount(reg, names...); err != nil || n != 0 {
		t.Errorf("%d series left after every node state went (%v)", n, err)
	}
}

// A status write that changes nothing exported is not worth a reconcile; one that does is.
func TestNodeSeriesEqual(t *testing.T) {
	a := metricsNodeState("n", "p", map[string]metav1.ConditionStatus{tsv1.NodeApplied: metav1.ConditionTrue}, nil, 0)
	b := a.DeepCopy()
	b.Status.Settings = []tsv1.SettingStatus{{Name: "sysctl/x", State: tsv1.SettingInSync}}
	if !nodeSeriesOf(a).equal(nodeSeriesOf(b)) {
		t.Error("a settings change alters the exported series")
	}
	for name, change := range map[string]func(*tsv1.LatencyNodeState){
		"condition": func(l *tsv1.LatencyNodeState) {
			meta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{Type: tsv1.NodeDrifted, Status: metav1.ConditionTrue, Reason: "Test"})
		},
		"profile": func(l *tsv1.LatencyNodeState) { l.Spec.Profile.Name = "q" },
		"reboot":  func(l *tsv1.LatencyNodeState) { l.Status.Reboot = &tsv1.RebootStatus{Phase: tsv1.RebootVerifying} },
		"drain": func(l *tsv1.LatencyNodeState) {
			l.Spec.Tuning = &tsv1.NodeTuning{DrainTimeout: &metav1.Duration{Duration: time.Minute}}
		},
	} {
		c := a.DeepCopy()
		change(c)
		if nodeSeriesOf(a).equal(nodeSeriesOf(c)) {
			t.Errorf("a %s change is not seen", name)
		}
	}
}
