package shared

import (
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"weak"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// NodeStateTransform returns the manager's cache transform of node states (cmd/manager,
// docs/scale.md): it drops what the manager never reads and keeps one copy of each distinct set
// of facts.
//   - No managedFields.
//   - No status.settings (every setting's desired and observed value, up to 1,024 entries), and of
//     status.tuning (the tuning an agent resolved for itself) only its ptp section and drain
//     timeout (resolve.DesiredTuning): the agent, the CLI and kubectl read the rest, the manager compares
//     status.resolved.tuningHash instead. The manager changes node
//     states only by patches computed against its cached copy (never an Update), so a field its
//     cache lacks is never written back.
//   - status.facts interned: a fleet's nodes mostly report the same facts, and the profile
//     controller resolves once per distinct set (its memory is keyed by the facts' pointer), so
//     5,000 alike nodes hold one copy and cost one resolution per profile generation.
//
// The cached objects share the facts: read-only, as every cached object is. Each call returns a
// transform with its own table; the table holds its copies weakly, so a set of facts no node
// reports any more goes with its last node state.
func NodeStateTransform() toolscache.TransformFunc {
	return nodeStateTransform(&factsInterner{m: map[[sha256.Size]byte]weakFacts{}})
}

func nodeStateTransform(in *factsInterner) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		lns, ok := obj.(*tsv1.LatencyNodeState)
		if !ok {
			return obj, nil
		}
		lns.ManagedFields = nil
		lns.Status.Settings = nil
		lns.Status.Tuning = leanTuning(lns.Status.Tuning)
		if lns.Status.Facts != nil {
			f, err := in.intern(lns.Status.Facts)
			if err != nil {
				return nil, err
			}
			lns.Status.Facts = f
		}
		return lns, nil
	}
}

// factsInterner keeps one copy of each distinct set of facts, by the hash of its JSON (encoding/json
// writes fields in order and map keys sorted: equal facts, equal bytes).
type factsInterner struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]weakFacts
}

type weakFacts = weak.Pointer[tsv1.NodeFacts]

func (in *factsInterner) intern(f *tsv1.NodeFacts) (*tsv1.NodeFacts, error) {
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(raw)
	in.mu.Lock()
	defer in.mu.Unlock()
	if have := in.m[key].Value(); have != nil {
		return have, nil
	}
	in.m[key] = weak.Make(f)
	runtime.AddCleanup(f, in.forget, key)
	return f, nil
}

// forget drops a key whose facts are gone (unless another copy took its place since).
func (in *factsInterner) forget(key [sha256.Size]byte) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m[key].Value() == nil {
		delete(in.m, key)
	}
}

// leanTuning is what the manager keeps of an agent's status.tuning: the parts resolve.DesiredTuning's
// readers use (the PTP gate and node validation read the ptp section, the node metrics the drain
// timeout); nil when it has neither.
func leanTuning(t *tsv1.NodeTuning) *tsv1.NodeTuning {
	if t == nil || (t.PTP == nil && t.DrainTimeout == nil) {
		return nil
	}
	return &tsv1.NodeTuning{PTP: t.PTP, DrainTimeout: t.DrainTimeout}
}

// NodeTransform is the manager's cache transform of Nodes (cmd/manager, docs/scale.md): of a
// Node it keeps what a reconciler of the manager reads, and nothing else.
//   - metadata, without managedFields, and of the annotations only tickstack.io/ ones (the BMC
//     name, the benchmark pass): the profile, benchmark and label controllers select by labels,
//     every controller keys by name;
//   - spec.taints (node validation's tickstack.io/unvalidated taint, patched as a whole list) and
//     spec.unschedulable (the profile controller counts cordoned nodes against the budget);
//   - status.nodeInfo.bootID (the BIOS controller sees the node boot);
//   - of status.conditions only tickstack.io/TimeSynced (the PTP gate's own, written by a strategic
//     merge patch that, being computed from two copies that both lack the kubelet's conditions,
//     leaves them alone).
//
// Dropped: the images (a real node lists every image it holds: kilobytes), capacity and
// allocatable, addresses, the rest of nodeInfo, volumes, the kubelet's conditions and every
// annotation of other components. The manager changes Nodes only by patches computed against its
// cached copy (never an Update), so nothing it drops is written back; its predicates see only
// what it keeps, so another component's annotation churn no longer wakes its controllers.
func NodeTransform() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return obj, nil
		}
		lean := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: n.ObjectMeta}
		lean.ManagedFields = nil
		lean.Annotations = nil
		for k, v := range n.Annotations {
			if strings.HasPrefix(k, tsv1.GroupVersion.Group+"/") {
				if lean.Annotations == nil {
					lean.Annotations = map[string]string{}
				}
				lean.Annotations[k] = v
			}
		}
		lean.Spec.Taints, lean.Spec.Unschedulable = n.Spec.Taints, n.Spec.Unschedulable
		lean.Status.NodeInfo.BootID = n.Status.NodeInfo.BootID
		for _, c := range n.Status.Conditions {
			if c.Type == tsv1.NodeTimeSyncedCondition {
				lean.Status.Conditions = append(lean.Status.Conditions, c)
			}
		}
		return lean, nil
	}
}

// JobTransform is the manager's cache transform of Jobs (cmd/manager, docs/scale.md): a Job
// without its spec. The benchmark controller creates its Jobs from what it builds, reads of them
// only their metadata (the run and node they measure, the owner) and status (active, complete,
// failed), and deletes them; their pod template (the runner's containers, environment,
// resources: most of a Job) is never read from the cache, and a benchmark over 1,000 nodes keeps
// up to 1,000 of them.
func JobTransform() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return obj, nil
		}
		lean := &batchv1.Job{TypeMeta: j.TypeMeta, ObjectMeta: j.ObjectMeta, Status: j.Status}
		lean.ManagedFields = nil
		return lean, nil
	}
}
