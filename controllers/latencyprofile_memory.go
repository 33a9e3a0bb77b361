package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// What the profile reconciler remembers between reconciles, so that a reconcile over a fleet does
// work only for the nodes that changed (docs/scale.md).

// ownWrites remembers each node state's last tuning write until the cache shows it. A reconcile
// that follows the one that wrote sooner than the watch delivers the write (common at fleet size,
// where one reconcile writes thousands) would otherwise see the old object and send the same patch
// again.
type ownWrites struct {
	mu sync.Mutex
	m  map[string]ownWrite
}

type ownWrite struct {
	// from is the resourceVersion the write was made against.
	from   string
	gen    int64
	tuning *tsv1.NodeTuning
}

// pending says whether lns is the cache's copy from before a write of this tuning at generation
// gen: the write is in flight, and there is nothing to do. Any other version ends the record.
func (w *ownWrites) pending(lns *tsv1.LatencyNodeState, gen int64, tuning *tsv1.NodeTuning) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[lns.Name]
	if !ok {
		return false
	}
	if lns.ResourceVersion != e.from {
		delete(w.m, lns.Name)
		return false
	}
	return e.gen == gen && equality.Semantic.DeepEqual(e.tuning, tuning)
}

func (w *ownWrites) record(name, from string, gen int64, tuning *tsv1.NodeTuning) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]ownWrite{}
	}
	w.m[name] = ownWrite{from: from, gen: gen, tuning: tuning}
}

// forgetGone drops the records of node states that no longer exist.
func (w *ownWrites) forgetGone(states map[string]*tsv1.LatencyNodeState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.m {
		if _, ok := states[name]; !ok {
			delete(w.m, name)
		}
	}
}

// resolutions remembers each node's last resolve.Node: a profile reconcile (every node state
// report, every node label change) would otherwise resolve every node it owns again, which was
// half of everything the manager allocated in a 1,000-node run.
type resolutions struct {
	mu sync.Mutex
	m  map[string]resolution
}

type resolution struct {
	profile types.UID
	gen     int64
	// facts is what it was resolved from: the cache's object, read-only.
	facts  *tsv1.NodeFacts
	tuning *tsv1.NodeTuning
	err    error
}

// node is resolve.Node(&p.Spec, facts) for the node named node, from memory when the profile's
// generation and the facts are those of the last resolution. The tuning returned is shared:
// read-only, copied before it is written anywhere.
func (rs *resolutions) node(node string, p *tsv1.LatencyProfile, facts *tsv1.NodeFacts) (*tsv1.NodeTuning, error) {
	rs.mu.Lock()
	e, ok := rs.m[node]
	rs.mu.Unlock()
	if ok && e.profile == p.UID && e.gen == p.Generation &&
		(e.facts == facts || equality.Semantic.DeepEqual(e.facts, facts)) {
		if e.facts != facts {
			rs.remember(node, resolution{profile: e.profile, gen: e.gen, facts: facts, tuning: e.tuning, err: e.err})
		}
		return e.tuning, e.err
	}
	tuning, err := resolve.Node(&p.Spec, facts)
	rs.remember(node, resolution{profile: p.UID, gen: p.Generation, facts: facts, tuning: tuning, err: err})
	return tuning, err
}

func (rs *resolutions) remember(node string, e resolution) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[string]resolution{}
	}
	rs.m[node] = e
}

// forgetGone drops the resolutions of node states that no longer exist.
func (rs *resolutions) forgetGone(states map[string]*tsv1.LatencyNodeState) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for name := range rs.m {
		if _, ok := states[name]; !ok {
			delete(rs.m, name)
		}
	}
}
