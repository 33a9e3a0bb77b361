package profile

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestCountNodesResolving: a node whose agent resolves its own tuning counts as applied only when
// it has seen its node state's spec and reports, for this profile, the manager's tuning hash.
func TestCountNodesResolving(t *testing.T) {
	state := func(name string, resolved *tsv1.ResolvedTuning, observed int64) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3},
			Spec:       tsv1.LatencyNodeStateSpec{Profile: tsv1.ProfileReference{Name: "p", ResolveOnNode: true}},
			Status: tsv1.LatencyNodeStateStatus{ObservedGeneration: observed, Resolved: resolved,
				Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue}}},
		}
	}
	f := &profileFacts{
		states: []*tsv1.LatencyNodeState{
			state("current", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "h"}, 3),
			state("older resolution", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "old"}, 3),
			state("other profile", &tsv1.ResolvedTuning{Profile: "q", Generation: 1, TuningHash: "h"}, 3),
			state("spec not seen", &tsv1.ResolvedTuning{Profile: "p", Generation: 1, TuningHash: "h"}, 2),
			state("not resolved yet", nil, 3),
			state("no resolution of ours (an error)", &tsv1.ResolvedTuning{Profile: "p", TuningHash: "h"}, 3),
		},
		wantHash: map[string]string{"current": "h", "older resolution": "h", "other profile": "h", "spec not seen": "h", "not resolved yet": "h"},
	}
	c := countNodes(f)
	if c.applied != 1 || len(c.applying) != 4 {
		t.Errorf("applied %d, applying %v; want 1 applied (current) and 4 applying", c.applied, c.applying)
	}
}

// TestRollupWrite: a status that moves in shape or by a step of progress is written at once, one
// that moved less waits for a window, and one that settled is written.
func TestRollupWrite(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: 2}
	}
	// status is a rollout of 40 owned nodes, applied of them in effect, rebootPending waiting.
	status := func(applied, rebootPending int32, mutate ...func(*tsv1.LatencyProfileStatus)) *tsv1.LatencyProfileStatus {
		st := &tsv1.LatencyProfileStatus{ObservedGeneration: 2, MatchedNodes: 40, OwnedNodes: 40,
			AppliedNodes: applied, RebootPendingNodes: rebootPending,
			Conditions: []metav1.Condition{
				cond(tsv1.ProfileReady, metav1.ConditionFalse, tsv1.ReasonApplying, fmt.Sprintf("%d of 40 nodes have the tuning in effect", applied)),
				cond(tsv1.ProfileProgressing, metav1.ConditionTrue, tsv1.ReasonApplying, fmt.Sprintf("agents of nodes n%d ... are applying the tuning", applied)),
				cond(tsv1.ProfileDegraded, metav1.ConditionFalse, tsv1.ReasonStable, "no node reports a problem"),
			}}
		for _, m := range mutate {
			m(st)
		}
		return st
	}
	for _, tc := range []struct {
		name               string
		written, prev, now *tsv1.LatencyProfileStatus
		want               bool
	}{
		{"first: nothing written by this manager or the API", nil, nil, status(0, 0), true},
		{"first: the API holds an empty status", &tsv1.LatencyProfileStatus{}, nil, status(0, 0), true},
		{"already written", status(5, 0), status(4, 0), status(5, 0), true},
		{"progress below a step waits", status(0, 0), nil, status(9, 0), false},
		{"progress below a step, still moving, waits", status(0, 0), status(8, 0), status(9, 0), false},
		{"progress at a step is written", status(0, 0), status(9, 0), status(10, 0), true},
		{"progress counted from the status written, not the last computed", status(10, 0), status(19, 0), status(20, 0), true},
		{"reboot pending at a step is written", status(0, 0), nil, status(0, 10), true},
		{"progress backwards by a step is written", status(30, 0), nil, status(20, 0), true},
		{"a message alone waits", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) {
			st.Conditions[1].Message = "agents of nodes n7 ... are applying the tuning"
		}), false},
		{"settled: the same as the previous reconcile computed", status(0, 0), status(3, 0), status(3, 0), true},
		{"a condition's reason is written", status(39, 0), nil, status(40, 0, func(st *tsv1.LatencyProfileStatus) {
			st.Conditions[1] = cond(tsv1.ProfileProgressing, metav1.ConditionFalse, tsv1.ReasonStable, "nothing in progress")
		}), true},
		{"a condition's status is written", status(39, 0), nil, status(39, 0, func(st *tsv1.LatencyProfileStatus) {
			st.Conditions[0].Status = metav1.ConditionUnknown
		}), true},
		{"a condition that comes is written", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) {
			st.Conditions = append(st.Conditions, cond(tsv1.ProfileConflict, metav1.ConditionFalse, tsv1.ReasonNoConflict, "none"))
		}), true},
		{"a degraded node is written", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) { st.DegradedNodes = 1 }), true},
		{"a new generation is written", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) { st.ObservedGeneration = 3 }), true},
		{"a node matched is written", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) { st.MatchedNodes = 41 }), true},
		{"a node owned is written", status(3, 0), nil, status(3, 0, func(st *tsv1.LatencyProfileStatus) { st.OwnedNodes = 39 }), true},
		{"a step is at least one node", status(0, 0, func(st *tsv1.LatencyProfileStatus) { st.OwnedNodes = 2 }), nil,
			status(1, 0, func(st *tsv1.LatencyProfileStatus) { st.OwnedNodes = 2 }), true},
	} {
		if got := rollupWrite(tc.written, tc.prev, tc.now); got != tc.want {
			t.Errorf("%s: rollupWrite = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRollupWritesARollout: a rollout of 400 nodes whose reports come in a few at a window is
// written at each quarter and once settled, whatever its pace: the writes are bounded by the
// steps, not the windows.
func TestRollupWritesARollout(t *testing.T) {
	for _, perWindow := range []int32{1, 3, 7, 50} {
		var s rollupStatuses
		api := &tsv1.LatencyProfileStatus{}
		writes := 0
		reconcile := func(applied int32) {
			st := &tsv1.LatencyProfileStatus{MatchedNodes: 400, OwnedNodes: 400, AppliedNodes: applied}
			if s.computed("p", api, st) {
				s.wrote("p", st)
				if !equality.Semantic.DeepEqual(api, st) {
					writes++
				}
				api = st
			}
		}
		for applied := int32(0); applied < 400; applied = min(400, applied+perWindow) {
			reconcile(applied)
		}
		reconcile(400)
		reconcile(400) // a window later: settled
		if api.AppliedNodes != 400 {
			t.Errorf("%d a window: the status written has %d applied, want 400", perWindow, api.AppliedNodes)
		}
		if writes > rollupSteps+1 {
			t.Errorf("%d a window: %d writes, want at most %d", perWindow, writes, rollupSteps+1)
		}
	}
}

// TestRollupStatuses: a manager that has written nothing for a profile (a restart) counts the
// status the API holds as written, so a progress below a step waits rather than being written as a
// first status; a profile forgotten starts over the same way; and the requeue of a status held back
// is the sooner of the window's and the maintenance window's.
func TestRollupStatuses(t *testing.T) {
	var s rollupStatuses
	api := &tsv1.LatencyProfileStatus{MatchedNodes: 40, OwnedNodes: 40, AppliedNodes: 20}
	st := func(applied int32) *tsv1.LatencyProfileStatus {
		return &tsv1.LatencyProfileStatus{MatchedNodes: 40, OwnedNodes: 40, AppliedNodes: applied}
	}
	if s.computed("p", api, st(22)) {
		t.Error("after a restart, 2 nodes more than the API's status were written at once; want held back")
	}
	if !s.computed("p", api, st(22)) {
		t.Error("the same status computed twice was held back; want it written (settled)")
	}
	s.wrote("p", st(22))
	if s.computed("p", api, st(25)) {
		t.Error("3 nodes more than the status written were written at once; want held back")
	}
	if !s.computed("p", api, st(32)) {
		t.Error("10 nodes (a step) more than the status written were held back; want written")
	}
	s.forget("p")
	if s.computed("p", api, st(25)) {
		t.Error("a forgotten profile: 5 nodes more than the API's status were written at once; want held back")
	}
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, time.Second, time.Second},
		{2 * time.Hour, time.Second, time.Second},
		{time.Second, 2 * time.Hour, time.Second},
		{time.Second, 0, time.Second},
		{0, 0, 0},
	} {
		if got := sooner(tc.a, tc.b); got != tc.want {
			t.Errorf("sooner(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
