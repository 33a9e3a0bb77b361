package profile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// TestOwnWritesPending: a node state the cache still shows as it was before this reconciler's
// tuning write is not written again; the cache's next version of it, a different tuning or
// generation, and a node state that is gone end the record.
func TestOwnWritesPending(t *testing.T) {
	var w ownWrites
	tuning := func(v string) *tsv1.NodeTuning {
		return &tsv1.NodeTuning{Sysctls: map[string]string{"vm.stat_interval": v}}
	}
	at := func(name, rv string) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	if w.pending(at("n1", "10"), 2, tuning("20")) {
		t.Fatal("pending before any write")
	}
	w.record("n1", "10", 2, tuning("20"))
	w.record("n2", "11", 2, tuning("20"))
	for _, tc := range []struct {
		name string
		lns  *tsv1.LatencyNodeState
		gen  int64
		tu   *tsv1.NodeTuning
		want bool
	}{
		{"the cache behind the write", at("n1", "10"), 2, tuning("20"), true},
		{"still behind, asked again", at("n1", "10"), 2, tuning("20"), true},
		{"another tuning wanted meanwhile", at("n1", "10"), 2, tuning("30"), false},
		{"a newer generation", at("n1", "10"), 3, tuning("20"), false},
		{"the cache caught up", at("n1", "12"), 2, tuning("20"), false},
		{"the record is gone after that", at("n1", "10"), 2, tuning("20"), false},
	} {
		if got := w.pending(tc.lns, tc.gen, tc.tu); got != tc.want {
			t.Errorf("%s: pending %v, want %v", tc.name, got, tc.want)
		}
	}
	w.forgetGone(map[string]*tsv1.LatencyNodeState{"n1": at("n1", "12")})
	if w.pending(at("n2", "11"), 2, tuning("20")) {
		t.Error("n2 is gone, its record should be too")
	}
}

// TestResolutionsNode: a node is resolved again only when its profile's generation or its facts
// change; equal facts in a new object (every status report brings one) reuse the last resolution,
// which is what resolve.Node gives.
func TestResolutionsNode(t *testing.T) {
	var rs resolutions
	p := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", Generation: 1},
		Spec: tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-7"}}}
	facts := func(online string) *tsv1.NodeFacts { return &tsv1.NodeFacts{OnlineCPUs: tsv1.CPUSet(online)} }
	f1 := facts("0-7")
	r1 := rs.node("n1", p, f1)
	first := r1.tuning
	if r1.err != nil {
		t.Fatal(r1.err)
	}
	if want, _ := resolve.Node(&p.Spec, f1); !equality.Semantic.DeepEqual(first, want) {
		t.Fatalf("resolved %+v, want %+v", first, want)
	}
	if r1.hash != resolve.TuningHash(first) {
		t.Errorf("hash %q, want resolve.TuningHash's %q", r1.hash, resolve.TuningHash(first))
	}
	if got := rs.node("n1", p, f1).tuning; got != first {
		t.Error("the same facts were resolved again")
	}
	if got := rs.node("n1", p, facts("0-7")).tuning; got != first {
		t.Error("equal facts in a new object were resolved again")
	}
	// Another node with the same facts object (the cache interns them) shares the resolution.
	if got := rs.node("n3", p, f1).tuning; got != first {
		t.Error("a node with the same facts object was resolved again")
	}
	if got := rs.node("n1", p, facts("0-3")).tuning; got == first || got.IsolatedCPUs != "2-3" {
		t.Errorf("other facts: got %+v, want a new resolution isolating 2-3", got)
	}
	p2 := p.DeepCopy()
	p2.Generation, p2.Spec.CPU.Isolated = 2, "4-7"
	if err := rs.node("n1", p2, facts("0-3")).err; err == nil || !strings.Contains(err.Error(), "spec.cpu.isolated") {
		t.Errorf("a new generation isolating 4-7 on a node with 0-3: %v, want the spec.cpu.isolated error", err)
	}
	if got := rs.node("n3", p2, f1); got.tuning == first || got.err != nil || got.tuning.IsolatedCPUs != "4-7" {
		t.Errorf("a new generation on shared facts: %+v, want a new resolution isolating 4-7", got)
	}
	if err := rs.node("n2", p, nil).err; err != resolve.ErrNoFacts {
		t.Errorf("no facts: %v, want resolve.ErrNoFacts", err)
	}
	rs.byFacts.forgetGoneProfiles(nil)
	if len(rs.byFacts.m) != 0 || len(rs.byFacts.gen) != 0 {
		t.Errorf("the profile is gone, its resolutions should be too: %d left", len(rs.byFacts.m))
	}
	rs.forgetGone(map[string]*tsv1.LatencyNodeState{"n1": {}})
	if _, ok := rs.m["n2"]; ok {
		t.Error("n2 is gone, its resolution should be too")
	}
}

// TestGrantWritesView: a node state the cache shows from before this reconciler's slot write (the
// version it was written against, or any version below the one the write produced) is seen with
// the slot as written, so that the budget counts it; the cache's copy of the write, or a later
// one, ends the record and is seen as it is.
func TestGrantWritesView(t *testing.T) {
	lns := func(rv string, granted bool) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv}, Spec: tsv1.LatencyNodeStateSpec{RebootGranted: granted}}
	}
	var w grantWrites
	if got := w.view(lns("10", false)); got.Spec.RebootGranted {
		t.Error("no write recorded: the cache's copy must be seen as it is")
	}
	w.record("n1", "10", "14", true)
	for _, rv := range []string{"10", "12"} {
		old := lns(rv, false)
		got := w.view(old)
		if !got.Spec.RebootGranted {
			t.Errorf("cache at %s, before the grant that made 14: seen without the slot", rv)
		}
		if old.Spec.RebootGranted {
			t.Error("view changed the cache's object")
		}
	}
	if got := w.view(lns("14", true)); !got.Spec.RebootGranted {
		t.Error("the cache's copy of the write: seen without the slot")
	}
	// The record ended: a later version that took the slot back is seen as it is.
	if got := w.view(lns("12", false)); got.Spec.RebootGranted {
		t.Error("a record the cache has shown must end")
	}
	w.record("n1", "20", "21", false)
	if got := w.view(lns("20", true)); got.Spec.RebootGranted {
		t.Error("a slot taken back is still counted while the cache shows the grant")
	}
	w.forgetGone(map[string]*tsv1.LatencyNodeState{})
	if got := w.view(lns("20", true)); !got.Spec.RebootGranted {
		t.Error("a node state that is gone must end its record")
	}
}

// TestOwnWritesHandedOver: a node state the cache still shows from before this reconciler's
// hand-over to its agent counts as handed over, whatever the profile's generation meanwhile; a
// tuning write is not a hand-over, and the cache's next version ends the record.
func TestOwnWritesHandedOver(t *testing.T) {
	var w ownWrites
	at := func(rv string) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv}}
	}
	if w.handedOver(at("10")) {
		t.Fatal("handed over before any write")
	}
	w.recordHandover("n1", "10", 2)
	if !w.handedOver(at("10")) {
		t.Error("the cache behind the hand-over: not seen as handed over")
	}
	if w.pending(at("10"), 2, nil) {
		t.Error("a hand-over counted as a tuning write in flight")
	}
	if w.handedOver(at("11")) || w.handedOver(at("10")) {
		t.Error("the cache caught up: the record must end")
	}
	w.record("n1", "12", 3, &tsv1.NodeTuning{})
	if w.handedOver(at("12")) {
		t.Error("a tuning write counted as a hand-over")
	}
}
