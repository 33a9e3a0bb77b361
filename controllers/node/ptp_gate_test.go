package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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

// resolving makes lns a node whose agent resolves its own tuning: its spec.tuning becomes its
// status.tuning.
func resolving(lns *tsv1.LatencyNodeState) *tsv1.LatencyNodeState {
	lns.Spec.Profile.ResolveOnNode = true
	lns.Status.Tuning, lns.Spec.Tuning = lns.Spec.Tuning, nil
	return lns
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
		{"resolving node, ptp in the tuning its agent resolved", resolving(withPTP(metav1.ConditionFalse)), true},
		{"being deleted", deleting, false},
	} {
		if got, _ := timeSyncLost(tc.lns); got != tc.want {
			t.Errorf("%s: lost %v, want %v", tc.name, got, tc.want)
		}
	}

	node := func(profile string) *corev1.Node { return labeledNode(tsv1.ProfileLabel, profile) }
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

// TestTimeSyncedPatchNamesOneCondition: the gate's patch carries its condition alone, or a
// delete of it by its merge key, never the list (which the manager's cache holds only in part).
func TestTimeSyncedPatchNamesOneCondition(t *testing.T) {
	for _, tc := range []struct {
		want *corev1.NodeCondition
		body string
	}{
		{nil, `{"status":{"conditions":[{"$patch":"delete","type":"tickstack.io/TimeSynced"}]}}`},
		{&corev1.NodeCondition{Type: tsv1.NodeTimeSyncedCondition, Status: corev1.ConditionTrue, Reason: "Synchronized"},
			`{"status":{"conditions":[{"type":"tickstack.io/TimeSynced","status":"True","lastHeartbeatTime":null,"lastTransitionTime":null,"reason":"Synchronized"}]}}`},
	} {
		p, err := timeSyncedPatch(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		body, err := p.Data(nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Type() != types.StrategicMergePatchType || string(body) != tc.body {
			t.Errorf("patch %s %s, want a strategic merge patch %s", p.Type(), body, tc.body)
		}
	}
}
