//go:build scale

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/agent"
	"github.com/tickstack/tickstack/internal/resolve"
)

// The simulated fleet: Node objects that kwok keeps alive (heartbeats, leases) and a load generator
// that plays every node's agent on the node states, the way internal/agent writes them: facts as
// soon as the node state exists, the tuning's conditions after an apply delay when its spec
// changes, the reboot protocol when the operator grants a slot. Like the real agent it patches
// status only when something changes, so an idle fleet writes nothing.
//
// With resolving set (the manager runs with --resolve-on-node, its default) the generator plays
// agents that resolve their own node (docs/architecture.md, "Fleet scale"), as internal/agent
// does: each reports the ResolveOnNode capability; for a node state the operator handed over
// (spec.profile.resolveOnNode, no spec.tuning) it resolves resolve.Node(&profile.Spec, facts)
// from the LatencyProfile the node state names, and when the resolution's TuningHash moves it
// puts the tuning-pending taint on its Node, applies (the same apply delay), writes
// status.resolved and status.tuning in its one status patch and takes the taint off (a node
// state's first tuning on an unlabelled node is not tainted, agent.RetuneNeedsTaint). A
// resolution is made as soon as the node's own profile watch delivers the change, or the node
// state watch the hand-over (a real agent resolves on its own CPU, in parallel with every other):
// the moment it starts acting is recorded per node (acting), which is what the test's "reached"
// waits for, independent of how fast the generator's workers then patch. The n profile watches
// make the API server fan a profile change out as to a real fleet; their decoding and the n
// resolutions share this machine's CPUs with everything else, so "reached" is an upper bound.

const (
	kwokAnnotation = "kwok.x-k8s.io/node"
	roleLabel      = "tickstack.io/role"
	rackLabel      = "tickstack.test/rack"
	zoneLabel      = "topology.kubernetes.io/zone"
)

// nodeName is the i-th simulated node.
func nodeName(i int) string { return fmt.Sprintf("kwok-%05d", i) }

// fleetNode is a node as a bare-metal trading server reports it: 64 CPUs on 2 NUMA nodes, 256 GiB,
// labels for its rack (40 per rack) and zone (4).
func fleetNode(i int) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: nodeName(i),
		Labels: map[string]string{
			corev1.LabelHostname: nodeName(i), corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			roleLabel: "trading", rackLabel: fmt.Sprintf("r%03d", i/40), zoneLabel: fmt.Sprintf("z%d", i%4),
			"node.kubernetes.io/instance-type": "bm.2s64c",
		},
		Annotations: map[string]string{kwokAnnotation: "fake"},
	}}
	if i < benchNodes {
		n.Labels[benchLabel] = "in"
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "hugepages-1Gi": resource.MustParse("0"),
	}
	n.Status.Capacity, n.Status.Allocatable = res, res.DeepCopy()
	return n
}

// fleetFacts is what an agent reports for its node.
func fleetFacts(cmdline string) *tsv1.NodeFacts {
	return &tsv1.NodeFacts{
		OnlineCPUs: "0-63", ThreadsPerCore: 1, Sockets: 2,
		NUMANodes: []tsv1.NUMANode{{ID: 0, CPUs: "0-31"}, {ID: 1, CPUs: "32-63"}},
		Interfaces: []tsv1.InterfaceFacts{
			{Name: "ens1f0", Driver: "ice", PCIAddress: "0000:3b:00.0", Vendor: "8086", Device: "159b", NUMANode: ptrInt32(0), SRIOVTotalVFs: 64},
			{Name: "eno1", Driver: "igb", PCIAddress: "0000:01:00.0", Vendor: "8086", Device: "1521", NUMANode: ptrInt32(0)},
		},
		KernelCmdline: cmdline, KernelRelease: "6.18.0",
	}
}

func ptrInt32(v int32) *int32 { return &v }

const baseCmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"

// agents plays every node's agent.
type agents struct {
	c client.Client
	// applyDelay is how long an apply takes; rebootTime how long a reboot.
	applyDelay, rebootTime time.Duration
	q                      workqueue.TypedRateLimitingInterface[string]
	mu                     sync.Mutex
	// booted is each node's kernel command line (what a reboot brings in).
	booted map[string]string
	// drifted are the nodes told to report drift (Applied False, Degraded True) until cleared.
	drifted map[string]bool
	// rebooting are the nodes between their grant and the end of their reboot.
	rebooting map[string]bool
	// patches counts the generator's own writes; nodePatches those to Nodes (cordons, taints).
	patches, nodePatches atomic.Int64

	// resolving: the agents resolve their own node when the operator hands it over.
	resolving bool
	// states and profiles are the watched node states and LatencyProfiles (the test's cache):
	// a resolution reads them, never the API server.
	states, profiles client.Reader
	// acts is, per node, the resolution its agent acts on (resolving); tainted the nodes whose
	// agent holds the tuning-pending taint on for a re-tune.
	acts    map[string]*acting
	tainted map[string]bool
}

// acting is the resolution a resolving agent acts on.
type acting struct {
	profile string
	// generation is the profile generation the agent resolved it from; hash its TuningHash.
	generation int64
	hash       string
	tuning     *tsv1.NodeTuning
	// at is when the agent started acting on it.
	at time.Time
	// early: the agent applied it before its node state existed (agent.Reconciler's
	// ResolveOnNode, unnamed.go), so the node state's first reconcile changes nothing on the host.
	early bool
}

func newAgents(c client.Client, applyDelay, rebootTime time.Duration) *agents {
	return &agents{
		c: c, applyDelay: applyDelay, rebootTime: rebootTime,
		q:      workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 2*time.Second)),
		booted: map[string]string{}, drifted: map[string]bool{}, rebooting: map[string]bool{},
		acts: map[string]*acting{}, tainted: map[string]bool{},
	}
}

// resolveOwn makes the generator's agents resolve their own node (the manager's
// --resolve-on-node, its default), reading node states and profiles from r.
func (a *agents) resolveOwn(r client.Reader) {
	a.resolving, a.states, a.profiles = true, r, r
}

// handedOver says whether the operator left the node's tuning to its agent.
func handedOver(lns *tsv1.LatencyNodeState) bool {
	return lns.Spec.Profile.ResolveOnNode && lns.Spec.Tuning == nil && lns.Spec.Profile.Name != ""
}

// resolveWith is an agent's resolution of its node state lns from profile p: the resolution it
// acts on, a new one (its start recorded) when the tuning's hash moved. A profile older than
// the one the agent already resolved from (a watch event delivered late) changes nothing.
func (a *agents) resolveWith(lns *tsv1.LatencyNodeState, p *tsv1.LatencyProfile) (*acting, error) {
	facts := lns.Status.Facts
	if facts == nil {
		facts = fleetFacts(a.cmdline(lns.Name))
	}
	t, err := resolve.Node(&p.Spec, facts)
	if err != nil {
		return nil, fmt.Errorf("%s: resolving LatencyProfile %s: %w", lns.Name, p.Name, err)
	}
	h := resolve.TuningHash(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.acts[lns.Name]
	if cur != nil && cur.profile == p.Name && (cur.hash == h || p.Generation < cur.generation) {
		return cur, nil
	}
	cur = &acting{profile: p.Name, generation: p.Generation, hash: h, tuning: t, at: time.Now()}
	a.acts[lns.Name] = cur
	return cur, nil
}

// resolveOwnNode resolves lns from the profile it names, as read from the watch.
func (a *agents) resolveOwnNode(ctx context.Context, lns *tsv1.LatencyNodeState) (*acting, error) {
	p := &tsv1.LatencyProfile{}
	if err := a.profiles.Get(ctx, types.NamespacedName{Name: lns.Spec.Profile.Name}, p); err != nil {
		return nil, err
	}
	return a.resolveWith(lns, p)
}

// acted counts the nodes whose agent acts on a resolution of profile at generation gen whose
// tuning passes check, and the latest moment one of them started.
func (a *agents) acted(profile string, gen int64, check func(*tsv1.NodeTuning) bool) (int, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, last := 0, time.Time{}
	for _, act := range a.acts {
		if act.profile == profile && act.generation == gen && (check == nil || check(act.tuning)) {
			n++
			if act.at.After(last) {
				last = act.at
			}
		}
	}
	return n, last
}

// run watches the node states through inf and works on them with workers goroutines until ctx ends.
func (a *agents) run(ctx context.Context, inf cache.Informer, workers int) error {
	enqueue := func(obj any) {
		if o, ok := obj.(client.Object); ok {
			a.q.Add(o.GetName())
		}
	}
	if a.resolving {
		// A hand-over is resolved as the watch delivers it.
		enqueue = func(obj any) {
			if lns, ok := obj.(*tsv1.LatencyNodeState); ok {
				if handedOver(lns) {
					_, _ = a.resolveOwnNode(ctx, lns) // an error: sync reports it
				}
				a.q.Add(lns.Name)
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	}); err != nil {
		return err
	}
	work(ctx, a.q, workers, a.sync)
	return nil
}

// watchProfiles gives each of the n nodes' resolving agents its own watch on the LatencyProfiles,
// as a real agent's cache has one: a profile change fans out to n watches, and each agent
// resolves when its own watch delivers the change (status-only events, the manager's roll-ups,
// are skipped as the agent's predicate does). It returns once every watch is open; they end with
// ctx, and one the API server closes is opened again.
func (a *agents) watchProfiles(ctx context.Context, c client.WithWatch, n int) {
	var open sync.WaitGroup
	for i := range n {
		open.Add(1)
		go a.watchProfilesOf(ctx, c, nodeName(i), &open)
	}
	open.Wait()
}

func (a *agents) watchProfilesOf(ctx context.Context, c client.WithWatch, node string, open *sync.WaitGroup) {
	var once sync.Once
	seen := map[string]int64{} // profile -> generation this agent last resolved from
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &tsv1.LatencyProfileList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		once.Do(open.Done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*tsv1.LatencyProfile)
			if !ok || ev.Type == watch.Deleted || seen[p.Name] == p.Generation {
				continue
			}
			lns := &tsv1.LatencyNodeState{}
			err := a.states.Get(ctx, types.NamespacedName{Name: node}, lns)
			if apierrors.IsNotFound(err) {
				// No node state yet: the agent arbitrates for itself which profile wins its node
				// and acts on it at once, as agent.Reconciler does with ResolveOnNode.
				if a.actUnnamed(ctx, node, p) {
					seen[p.Name] = p.Generation
				}
				continue
			}
			if err != nil || !handedOver(lns) || lns.Spec.Profile.Name != p.Name {
				// Not this node's profile (yet): the hand-over, through the node state's
				// watch, resolves from the cached profile.
				continue
			}
			seen[p.Name] = p.Generation
			_, _ = a.resolveWith(lns, p) // an error: sync reports it
			a.q.Add(node)
		}
		w.Stop()
	}
}

// actUnnamed is an agent acting on a profile's event before its node state exists: it reads its
// Node's labels from its cache (agent.CacheOptions: its own Node), arbitrates between the watched
// profiles with resolve.Arbitrate, and, when p wins, resolves its node and applies it (the apply
// delay). It reports whether it acted.
func (a *agents) actUnnamed(ctx context.Context, node string, p *tsv1.LatencyProfile) bool {
	n := &corev1.Node{}
	if err := a.states.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		return false
	}
	var all tsv1.LatencyProfileList
	if err := a.profiles.List(ctx, &all); err != nil {
		return false
	}
	if !slices.ContainsFunc(all.Items, func(q tsv1.LatencyProfile) bool { return q.Name == p.Name }) {
		// The watch delivered the create before the cache: judge with the event's profile too.
		all.Items = append(all.Items, *p)
	}
	if resolve.Arbitrate(n, all.Items).Winner != p.Name {
		return false
	}
	lns := &tsv1.LatencyNodeState{}
	lns.Name = node
	act, err := a.resolveWith(lns, p)
	if err != nil {
		return false
	}
	a.mu.Lock()
	act.early = true
	a.mu.Unlock()
	time.Sleep(a.applyDelay)
	return true
}

// work runs workers goroutines that take keys off q for fn, retrying a failure with back-off,
// until ctx ends.
func work[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int, fn func(context.Context, T) error) {
	go func() { <-ctx.Done(); q.ShutDown() }()
	for range workers {
		go func() {
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				if err := fn(ctx, key); err != nil && ctx.Err() == nil {
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		}()
	}
}

// setDrift makes nodes report (on) or stop reporting drift.
func (a *agents) setDrift(names []string, on bool) {
	a.mu.Lock()
	for _, n := range names {
		if on {
			a.drifted[n] = true
		} else {
			delete(a.drifted, n)
		}
	}
	a.mu.Unlock()
	for _, n := range names {
		a.q.Add(n)
	}
}

func (a *agents) cmdline(node string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.booted[node]; ok {
		return c
	}
	return baseCmdline
}

func setCond(st *tsv1.LatencyNodeStateStatus, t string, ok bool, reason, msg string, gen int64) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// sync is one agent's reconcile.
func (a *agents) sync(ctx context.Context, name string) error {
	lns := &tsv1.LatencyNodeState{}
	if err := a.c.Get(ctx, types.NamespacedName{Name: name}, lns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !lns.DeletionTimestamp.IsZero() {
		return nil
	}
	base := lns.DeepCopy()
	st := &lns.Status
	cmdline := a.cmdline(name)
	if st.Facts == nil {
		st.Facts = fleetFacts(cmdline)
	}
	st.Facts.KernelCmdline = cmdline
	t, retune, err := a.desired(ctx, lns)
	if err != nil {
		return err
	}
	if retune {
		// The node's resolution moved: no new latency pod lands until it is Applied (unless no
		// latency pod can land yet, agent.RetuneNeedsTaint).
		if err := a.taintRetune(ctx, name, base); err != nil {
			return err
		}
	}
	if t != nil {
		if st.ObservedGeneration != lns.Generation || retune {
			// Applying takes a moment.
			time.Sleep(a.applyDelay)
		}
		missing := []string{}
		for _, arg := range t.KernelArgs {
			if !strings.Contains(" "+cmdline+" ", " "+arg+" ") {
				missing = append(missing, arg)
			}
		}
		a.mu.Lock()
		drifted, inReboot := a.drifted[name], a.rebooting[name]
		a.mu.Unlock()
		gen := lns.Generation
		st.ObservedGeneration = gen
		setCond(st, tsv1.NodeDrifted, false, "NoDrift", "every setting is as applied", gen)
		switch {
		case drifted:
			setCond(st, tsv1.NodeApplied, false, "SettingsNotInSync", "settings not in effect after applying: sysctl/vm.stat_interval", gen)
			setCond(st, tsv1.NodeDegraded, true, "SettingsNotInSync", "settings not in effect after applying: sysctl/vm.stat_interval", gen)
		case len(missing) > 0:
			setCond(st, tsv1.NodeApplied, false, "PendingReboot", "runtime settings are in effect; kernel arguments wait for a reboot", gen)
			setCond(st, tsv1.NodeDegraded, false, "AsExpected", "no problem found", gen)
		default:
			setCond(st, tsv1.NodeApplied, true, "Applied", "42 settings in effect", gen)
			setCond(st, tsv1.NodeDegraded, false, "AsExpected", "no problem found", gen)
		}
		setCond(st, tsv1.NodeRebootRequired, len(missing) > 0, map[bool]string{true: "RebootRequested", false: "KernelArgsInEffect"}[len(missing) > 0], "kernel arguments", gen)
		switch {
		case len(missing) == 0:
			st.Reboot = nil
		case st.Reboot == nil:
			st.Reboot = &tsv1.RebootStatus{Phase: tsv1.RebootRequested, Action: tsv1.ActionReboot, BootID: "boot-1"}
		case st.Reboot.Phase == tsv1.RebootRequested && lns.Spec.RebootGranted && !inReboot:
			st.Reboot.Phase = tsv1.RebootRebooting
			a.reboot(ctx, name, t.KernelArgs)
		}
	}
	if !equalStatus(base, lns) {
		a.patches.Add(1)
		if err := a.c.Status().Patch(ctx, lns, client.MergeFrom(base)); err != nil {
			return err
		}
	}
	a.mu.Lock()
	tainted := a.tainted[name]
	a.mu.Unlock()
	if tainted && meta.IsStatusConditionTrue(st.Conditions, tsv1.NodeApplied) {
		// Applied: the taint of a re-tune comes off.
		return a.taint(ctx, name, false)
	}
	return nil
}

// desired is the tuning the node's agent applies, written into lns's status as the agent reports
// it: spec.tuning, or, for a resolving agent the operator handed the node to, its own resolution
// (status.resolved and status.tuning, written when its hash moved: retune). nil: none yet.
func (a *agents) desired(ctx context.Context, lns *tsv1.LatencyNodeState) (t *tsv1.NodeTuning, retune bool, err error) {
	if !a.resolving {
		return lns.Spec.Tuning, false, nil
	}
	st := &lns.Status
	st.Capabilities = []tsv1.AgentCapability{tsv1.CapabilityResolveOnNode}
	if !handedOver(lns) {
		// status.resolved and status.tuning describe only a resolution of the agent's own.
		st.Resolved, st.Tuning = nil, nil
		return lns.Spec.Tuning, false, nil
	}
	act, err := a.resolveOwnNode(ctx, lns)
	if err != nil {
		return nil, false, err
	}
	if r := st.Resolved; r == nil || r.Profile != act.profile || r.TuningHash != act.hash {
		st.Resolved = &tsv1.ResolvedTuning{Profile: act.profile, Generation: act.generation, TuningHash: act.hash}
		st.Tuning = act.tuning.DeepCopy()
		// Applied before the node state existed: the tuning in effect is this one already.
		a.mu.Lock()
		retune = !act.early
		a.mu.Unlock()
	}
	return act.tuning, retune, nil
}

// taintRetune puts the tuning-pending taint on for a resolution that moves the node, where the
// agent does (agent.RetuneNeedsTaint: not on a node state's first tuning of an unlabelled node),
// base being the node state as last written.
func (a *agents) taintRetune(ctx context.Context, name string, base *tsv1.LatencyNodeState) error {
	n := &corev1.Node{}
	if err := a.c.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
		return err
	}
	if !agent.RetuneNeedsTaint(base, n) {
		return nil
	}
	return a.taintNode(ctx, n, true)
}

// taint puts the tuning-pending taint on the node or takes it off, as a resolving agent does
// while its node re-tunes.
func (a *agents) taint(ctx context.Context, name string, on bool) error {
	n := &corev1.Node{}
	if err := a.c.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
		return err
	}
	return a.taintNode(ctx, n, on)
}

// taintNode is taint on n as just read.
func (a *agents) taintNode(ctx context.Context, n *corev1.Node, on bool) error {
	name := n.Name
	taints, changed := agent.TuningPendingTaints(n.Spec.Taints, on)
	if !changed {
		a.mu.Lock()
		a.tainted[name] = on
		a.mu.Unlock()
		return nil
	}
	orig := n.DeepCopy()
	n.Spec.Taints = taints
	a.patches.Add(1)
	a.nodePatches.Add(1)
	if err := a.c.Patch(ctx, n, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	a.mu.Lock()
	a.tainted[name] = on
	a.mu.Unlock()
	return nil
}

// reboot plays a reboot: the node cordoned, down for rebootTime, back with the arguments, uncordoned.
func (a *agents) reboot(ctx context.Context, name string, args []string) {
	a.mu.Lock()
	a.rebooting[name] = true
	a.mu.Unlock()
	cordon := func(on bool) {
		n := &corev1.Node{}
		if err := a.c.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			return
		}
		orig := n.DeepCopy()
		n.Spec.Unschedulable = on
		a.patches.Add(1)
		a.nodePatches.Add(1)
		_ = a.c.Patch(ctx, n, client.MergeFrom(orig))
	}
	cordon(true)
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.rebootTime):
		}
		a.mu.Lock()
		a.booted[name] = baseCmdline + " " + strings.Join(args, " ")
		delete(a.rebooting, name)
		a.mu.Unlock()
		cordon(false)
		a.q.Add(name)
	}()
}

func equalStatus(a, b *tsv1.LatencyNodeState) bool {
	return equalityDeep(a.Status, b.Status)
}

// benchLabel marks the nodes a fleet's LatencyBenchmark measures: the first 1,000.
const (
	benchLabel = "tickstack.test/bench"
	benchNodes = 1000
)

// runners plays the benchmark pods of a LatencyBenchmark: each Job the operator creates measures its
// node for measureTime, then its uploader fills the Job's results ConfigMap, as
// tickstack-bench-upload does. It counts the Jobs measuring at once.
type runners struct {
	c           client.Client
	measureTime time.Duration
	q           workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu          sync.Mutex
	started     map[types.NamespacedName]string // Job -> node
	uploaded    map[types.NamespacedName]bool
	measuring   atomic.Int64
	maxAtOnce   atomic.Int64
}

func newRunners(c client.Client, measureTime time.Duration) *runners {
	return &runners{
		c: c, measureTime: measureTime,
		q:       workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 2*time.Second)),
		started: map[types.NamespacedName]string{}, uploaded: map[types.NamespacedName]bool{},
	}
}

// run watches the Jobs through inf and uploads with workers goroutines until ctx ends.
func (r *runners) run(ctx context.Context, inf cache.Informer, workers int) error {
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		job, ok := obj.(*batchv1.Job)
		if !ok || job.Annotations[tsv1.BenchmarkNodeAnnotation] == "" {
			return
		}
		key := client.ObjectKeyFromObject(job)
		r.mu.Lock()
		_, seen := r.started[key]
		r.started[key] = job.Annotations[tsv1.BenchmarkNodeAnnotation]
		r.mu.Unlock()
		if seen {
			return
		}
		if k := r.measuring.Add(1); k > r.maxAtOnce.Load() {
			r.maxAtOnce.Store(k)
		}
		r.q.AddAfter(key, r.measureTime)
	}}); err != nil {
		return err
	}
	work(ctx, r.q, workers, r.upload)
	return nil
}

// upload fills the Job's results ConfigMap with its node's tables.
func (r *runners) upload(ctx context.Context, key types.NamespacedName) error {
	r.mu.Lock()
	node, done := r.started[key], r.uploaded[key]
	r.mu.Unlock()
	if done {
		return nil
	}
	cm := &corev1.ConfigMap{}
	if err := r.c.Get(ctx, key, cm); err != nil {
		return err
	}
	raw, err := json.Marshal(fleetResults(node))
	if err != nil {
		return err
	}
	orig := cm.DeepCopy()
	cm.Data = map[string]string{tsv1.BenchResultsKey: string(raw), tsv1.BenchExitCodeKey: "0"}
	// The pod's measuring is over once it uploads: counted before the patch, whose effect (the
	// operator starting the next Job) may reach the Job watch before the patch's response here.
	r.measuring.Add(-1)
	if err := r.c.Patch(ctx, cm, client.MergeFrom(orig)); err != nil {
		r.measuring.Add(1)
		return err
	}
	r.mu.Lock()
	r.uploaded[key] = true
	r.mu.Unlock()
	return nil
}

// fleetResults is a node's tables as a default pingPong run on both stacks leaves them: UDP and
// TCP at five sizes, with the reference row's percentile curve (about 8 KiB of JSON).
func fleetResults(node string) *tsv1.BenchmarkResults {
	now := time.Now().UTC().Truncate(time.Second)
	r := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: node,
		StartTime: metav1.NewTime(now.Add(-time.Minute)), CompletionTime: metav1.NewTime(now),
		Tools: []string{"sockperf 3.7-no.git"}}
	for si, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		pp := &tsv1.PingPongResult{}
		for _, proto := range []tsv1.Protocol{tsv1.ProtocolUDP, tsv1.ProtocolTCP} {
			for _, size := range []int32{14, 64, 256, 1024, 1472} {
				m := int64(9000-3000*si) + int64(size)
				pp.Rows = append(pp.Rows, tsv1.PingPongRow{Protocol: proto, MessageSize: size, LatencyStats: tsv1.LatencyStats{
					Samples: 250000 + int64(size), MinNs: m * 8 / 10, MedianNs: m, MeanNs: m * 11 / 10, P95Ns: m * 13 / 10,
					P99Ns: m * 15 / 10, P999Ns: m * 3, MaxNs: m * 40, StdDevNs: m / 5}})
			}
		}
		pp.Curve = &tsv1.PercentileCurve{Protocol: tsv1.ProtocolUDP, MessageSize: 14}
		for _, p := range []string{"1", "5", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999", "100"} {
			pp.Curve.Points = append(pp.Curve.Points, tsv1.PercentilePoint{Percentile: p, ValueNs: int64(9000 - 3000*si + len(p)*100)})
		}
		r.Stacks = append(r.Stacks, tsv1.StackResults{Stack: st, PingPong: pp})
	}
	return r
}
