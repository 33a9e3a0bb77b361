package profile

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/rollout"
)

func lnsWith(name string, granted bool, phase tsv1.RebootPhase, required bool) *tsv1.LatencyNodeState {
	l := &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: name}}
	l.Spec.RebootGranted = granted
	if phase != "" {
		l.Status.Reboot = &tsv1.RebootStatus{Phase: phase}
	}
	st := metav1.ConditionFalse
	if required {
		st = metav1.ConditionTrue
	}
	l.Status.Conditions = []metav1.Condition{{Type: tsv1.NodeRebootRequired, Status: st}}
	return l
}

func TestPlanReboots(t *testing.T) {
	tests := []struct {
		name        string
		states      []*tsv1.LatencyNodeState
		cordoned    map[string]bool
		max         int
		grant, take []string
	}{{
		name:   "one slot: the first in name order gets it",
		states: []*tsv1.LatencyNodeState{lnsWith("c", false, tsv1.RebootRequested, true), lnsWith("a", false, tsv1.RebootRequested, true), lnsWith("b", false, tsv1.RebootRequested, true)},
		max:    1, grant: []string{"a"},
	}, {
		name:   "a node mid-reboot holds the only slot",
		states: []*tsv1.LatencyNodeState{lnsWith("a", true, tsv1.RebootRebooting, true), lnsWith("b", false, tsv1.RebootRequested, true)},
		max:    1,
	}, {
		name:   "a finished node gives its slot back and the next one gets it",
		states: []*tsv1.LatencyNodeState{lnsWith("a", true, "", false), lnsWith("b", false, tsv1.RebootRequested, true)},
		max:    1, grant: []string{"b"}, take: []string{"a"},
	}, {
		name:   "a failed drain gives its slot back",
		states: []*tsv1.LatencyNodeState{lnsWith("a", true, tsv1.RebootDrainFailed, true), lnsWith("b", false, tsv1.RebootRequested, true)},
		max:    1, grant: []string{"b"}, take: []string{"a"},
	}, {
		name:     "a node cordoned by someone else uses up the budget",
		states:   []*tsv1.LatencyNodeState{lnsWith("a", false, "", false), lnsWith("b", false, tsv1.RebootRequested, true)},
		cordoned: map[string]bool{"a": true},
		max:      1,
	}, {
		name:   "two slots",
		states: []*tsv1.LatencyNodeState{lnsWith("a", false, tsv1.RebootRequested, true), lnsWith("b", false, tsv1.RebootRequested, true), lnsWith("c", false, tsv1.RebootRequested, true)},
		max:    2, grant: []string{"a", "b"},
	}, {
		name:   "no request without RebootRequired",
		states: []*tsv1.LatencyNodeState{lnsWith("a", false, tsv1.RebootRequested, false)},
		max:    1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grant, take := PlanReboots(tt.states, tt.cordoned, rollout.Budget{Max: tt.max})
			if !reflect.DeepEqual(grant, tt.grant) || !reflect.DeepEqual(take, tt.take) {
				t.Errorf("grant %v revoke %v, want %v %v", grant, take, tt.grant, tt.take)
			}
		})
	}
}

func TestMaxUnavailable(t *testing.T) {
	for _, tt := range []struct {
		v     *intstr.IntOrString
		owned int
		want  int
	}{{nil, 10, 1}, {ptr.To(intstr.FromInt32(3)), 10, 3}, {ptr.To(intstr.FromString("25%")), 10, 2}, {ptr.To(intstr.FromString("10%")), 3, 1}, {ptr.To(intstr.FromString("100%")), 4, 4}} {
		if got := MaxUnavailable(&tsv1.RolloutSpec{MaxUnavailable: tt.v}, tt.owned); got != tt.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, want %d", tt.v, tt.owned, got, tt.want)
		}
	}
}

func TestPlanRebootsPerDomain(t *testing.T) {
	rack := map[string]string{"a": "r1", "b": "r1", "c": "r2", "d": "r2"}
	b := rollout.Budget{Max: 3, Domain: func(n string) string { return rack[n] }, PerDomain: 1}
	req := func(n string) *tsv1.LatencyNodeState { return lnsWith(n, false, tsv1.RebootRequested, true) }
	grant, _ := PlanReboots([]*tsv1.LatencyNodeState{req("a"), req("b"), req("c"), req("d")}, nil, b)
	if !reflect.DeepEqual(grant, []string{"a", "c"}) {
		t.Errorf("one per rack: grant %v, want [a c]", grant)
	}
	grant, _ = PlanReboots([]*tsv1.LatencyNodeState{req("a"), req("b"), req("c"), req("d")}, map[string]bool{"c": true}, b)
	if !reflect.DeepEqual(grant, []string{"a"}) {
		t.Errorf("c cordoned by someone else fills r2: grant %v, want [a]", grant)
	}
}
