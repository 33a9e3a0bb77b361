package profile

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/resolve"
)

// What the profile reconciler remembers between reconciles, so that a reconcile over a fleet does
// work only for the nodes that changed (docs/scale.md).

// nodeMemory is a map by node name kept from one reconcile to the next, safe for the reconcile's
// parallel writers.
type nodeMemory[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (n *nodeMemory[V]) get(name string) (V, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.m[name]
	return v, ok
}

func (n *nodeMemory[V]) put(name string, v V) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]V{}
	}
	n.m[name] = v
}

func (n *nodeMemory[V]) drop(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.m, name)
}

// forgetGone drops what is kept for node states that no longer exist.
func (n *nodeMemory[V]) forgetGone(states map[string]*tsv1.LatencyNodeState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name := range n.m {
		if _, ok := states[name]; !ok {
			delete(n.m, name)
		}
	}
}

// ownWrites remembers each node state's last tuning write until the cache shows it. A reconcile
// that follows the one that wrote sooner than the watch delivers the write (common at fleet size,
// where one reconcile writes thousands) would otherwise see the old object and send the same patch
// again.
type ownWrites struct{ nodeMemory[ownWrite] }

type ownWrite struct {
	// from is the resourceVersion the write was made against.
	from   string
	gen    int64
	tuning *tsv1.NodeTuning
	// resolveOnNode: the write handed the node to its agent (spec.profile.resolveOnNode, no
	// spec.tuning).
	resolveOnNode bool
}

// pending says whether lns is the cache's copy from before a write of this tuning at generation
// gen: the write is in flight, and there is nothing to do. Any other version ends the record.
func (w *ownWrites) pending(lns *tsv1.LatencyNodeState, gen int64, tuning *tsv1.NodeTuning) bool {
	e, ok := w.inFlight(lns)
	return ok && !e.resolveOnNode && e.gen == gen && equality.Semantic.DeepEqual(e.tuning, tuning)
}

// handedOver says whether lns is the cache's copy from before this reconciler's write that handed
// the node to its agent: the node resolves on its own now, whatever the profile's generation.
func (w *ownWrites) handedOver(lns *tsv1.LatencyNodeState) bool {
	e, ok := w.inFlight(lns)
	return ok && e.resolveOnNode
}

// inFlight is the record of this reconciler's write over lns while the cache still shows the
// version it was written over; any other version ends the record.
func (w *ownWrites) inFlight(lns *tsv1.LatencyNodeState) (ownWrite, bool) {
	e, ok := w.get(lns.Name)
	if !ok {
		return e, false
	}
	if lns.ResourceVersion != e.from {
		w.drop(lns.Name)
		return e, false
	}
	return e, true
}

func (w *ownWrites) record(name, from string, gen int64, tuning *tsv1.NodeTuning) {
	w.put(name, ownWrite{from: from, gen: gen, tuning: tuning})
}

func (w *ownWrites) recordHandover(name, from string, gen int64) {
	w.put(name, ownWrite{from: from, gen: gen, resolveOnNode: true})
}

// grantWrites remembers each node state's last reboot slot write (spec.rebootGranted) until the
// cache shows it. The slots are a budget: a reconcile that plans from a cache which has not shown
// the grants the previous reconcile wrote would count those slots free and grant them to more
// nodes than the budget allows. It happens: a reconcile started by another object's event (the
// profile's own status write) can run before the watch shows the node states' change.
type grantWrites struct{ nodeMemory[grantWrite] }

type grantWrite struct {
	// from is the resourceVersion the write was made against, to the one it produced.
	from, to string
	granted  bool
}

func (w *grantWrites) record(name, from, to string, granted bool) {
	w.put(name, grantWrite{from: from, to: to, granted: granted})
}

// view returns lns as the reconciler last wrote its slot when the cache's copy predates that
// write (the write itself is in flight), else lns itself, ending the record.
func (w *grantWrites) view(lns *tsv1.LatencyNodeState) *tsv1.LatencyNodeState {
	e, ok := w.get(lns.Name)
	if !ok {
		return lns
	}
	if !olderThan(lns.ResourceVersion, e.from, e.to) {
		w.drop(lns.Name)
		return lns
	}
	if lns.Spec.RebootGranted == e.granted {
		return lns
	}
	c := lns.DeepCopy()
	c.Spec.RebootGranted = e.granted
	return c
}

// olderThan says whether the cache's resourceVersion rv comes before the write from -> to: it is
// from itself, or (the API server's versions being etcd revisions) a number below to.
func olderThan(rv, from, to string) bool {
	if rv == from {
		return true
	}
	n, err1 := strconv.ParseUint(rv, 10, 64)
	t, err2 := strconv.ParseUint(to, 10, 64)
	return err1 == nil && err2 == nil && n < t
}

// resolutions remembers each node's last resolve.Node: a profile reconcile (every node state
// report, every node label change) would otherwise resolve every node it owns again, which was
// half of everything the manager allocated in a 1,000-node run. Behind the per-node memory, a
// resolution is shared by every node whose facts are the same object: the manager's cache interns
// the facts (shared.NodeStateTransform), so a fleet of alike nodes costs one resolution (and one
// tuning hash) per profile generation.
type resolutions struct {
	nodeMemory[resolution]
	byFacts factsMemory
}

type resolution struct {
	profile types.UID
	gen     int64
	// facts is what it was resolved from: the cache's object, read-only.
	facts *tsv1.NodeFacts
	resolved
}

// resolved is one resolution's outcome: the tuning (shared, read-only), its resolve.TuningHash,
// or the error.
type resolved struct {
	tuning *tsv1.NodeTuning
	hash   string
	err    error
}

// node is resolve.Node(&p.Spec, facts) for the node named node, from memory when the profile's
// generation and the facts are those of the last resolution (of this node, or of another node
// with the same facts object). The tuning returned is shared: read-only, copied before it is
// written anywhere; hash is its resolve.TuningHash.
func (rs *resolutions) node(node string, p *tsv1.LatencyProfile, facts *tsv1.NodeFacts) resolved {
	e, ok := rs.get(node)
	if ok && e.profile == p.UID && e.gen == p.Generation &&
		(e.facts == facts || equality.Semantic.DeepEqual(e.facts, facts)) {
		if e.facts != facts {
			rs.put(node, resolution{profile: e.profile, gen: e.gen, facts: facts, resolved: e.resolved})
		}
		return e.resolved
	}
	r := rs.byFacts.resolve(p, facts)
	rs.put(node, resolution{profile: p.UID, gen: p.Generation, facts: facts, resolved: r})
	return r
}

// factsMemory is the resolutions of each profile's current generation by facts object.
type factsMemory struct {
	mu sync.Mutex
	// gen is the generation each profile's entries are of.
	gen map[types.UID]int64
	m   map[factsKey]resolved
}

type factsKey struct {
	profile types.UID
	facts   *tsv1.NodeFacts
}

func (fm *factsMemory) resolve(p *tsv1.LatencyProfile, facts *tsv1.NodeFacts) resolved {
	key := factsKey{p.UID, facts}
	fm.mu.Lock()
	if fm.m == nil {
		fm.gen, fm.m = map[types.UID]int64{}, map[factsKey]resolved{}
	}
	if g, ok := fm.gen[p.UID]; !ok || g != p.Generation {
		// A new generation: the profile's older resolutions are of no more use.
		for k := range fm.m {
			if k.profile == p.UID {
				delete(fm.m, k)
			}
		}
		fm.gen[p.UID] = p.Generation
	}
	r, ok := fm.m[key]
	fm.mu.Unlock()
	if ok && facts != nil {
		return r
	}
	tuning, err := resolve.Node(&p.Spec, facts)
	r = resolved{tuning: tuning, hash: resolve.TuningHash(tuning), err: err}
	if facts != nil {
		fm.mu.Lock()
		if fm.gen[p.UID] == p.Generation {
			fm.m[key] = r
		}
		fm.mu.Unlock()
	}
	return r
}

// forgetGoneProfiles drops the resolutions of profiles that no longer exist.
func (fm *factsMemory) forgetGoneProfiles(all []tsv1.LatencyProfile) {
	live := make(map[types.UID]bool, len(all))
	for i := range all {
		live[all[i].UID] = true
	}
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for uid := range fm.gen {
		if live[uid] {
			continue
		}
		for k := range fm.m {
			if k.profile == uid {
				delete(fm.m, k)
			}
		}
		delete(fm.gen, uid)
	}
}
