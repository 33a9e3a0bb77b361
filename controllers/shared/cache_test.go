package shared

import (
	"runtime"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestNodeStateTransformInterns: node states with equal facts share one copy, other facts keep
// their own, and a set of facts no cached node state holds any more leaves the table.
func TestNodeStateTransformInterns(t *testing.T) {
	in := &factsInterner{m: map[[32]byte]weakFacts{}}
	transform := nodeStateTransform(in)
	state := func(online tsv1.CPUSet) *tsv1.LatencyNodeState {
		lns := &tsv1.LatencyNodeState{}
		lns.Status.Facts = &tsv1.NodeFacts{OnlineCPUs: online, Sockets: 1}
		lns.Status.Tuning = &tsv1.NodeTuning{ReservedCPUs: "0", PTP: &tsv1.PTPTuning{}}
		lns.Status.Settings = []tsv1.SettingStatus{{Name: "sysctl/x"}}
		return lns
	}
	get := func(lns *tsv1.LatencyNodeState) *tsv1.LatencyNodeState {
		o, err := transform(lns)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*tsv1.LatencyNodeState)
	}
	func() { // a scope of their own: past it, no reference to the facts is left
		a, b, c := get(state("0-7")), get(state("0-7")), get(state("0-3"))
		if a.Status.Facts != b.Status.Facts {
			t.Error("equal facts were not interned")
		}
		if a.Status.Facts == c.Status.Facts || c.Status.Facts.OnlineCPUs != "0-3" {
			t.Error("other facts were given the first copy")
		}
		if a.Status.Settings != nil || a.Status.Tuning == nil || a.Status.Tuning.ReservedCPUs != "" || a.Status.Tuning.PTP == nil {
			t.Errorf("want no status.settings and of status.tuning only the ptp section: %+v", a.Status)
		}
		if got := get(&tsv1.LatencyNodeState{Status: tsv1.LatencyNodeStateStatus{Tuning: &tsv1.NodeTuning{ReservedCPUs: "0"}}}); got.Status.Tuning != nil {
			t.Errorf("a status.tuning without ptp or drain timeout kept: %+v", got.Status.Tuning)
		}
	}()
	for i := 0; i < 100; i++ {
		runtime.GC()
		in.mu.Lock()
		n := len(in.m)
		in.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d sets of facts no node state holds are still in the table", len(in.m))
}
