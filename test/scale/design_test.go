//go:build scale

package scale

// TestDesigns is issue 45's measurement: prototypes of three ways a profile change can reach every
// node's agent, run against the same API server and the same kwok fleet, alternated round by round
// so that they share the machine's load:
//
//   - pernode: today's write pattern. The manager resolves every node and patches each node
//     state's spec.tuning, 32 writes in flight (controllers/latencyprofile_phases.go); each agent
//     watches its own node state (a field selector, as internal/agent does).
//   - agent: agent-side resolution. The manager writes nothing per node; each agent watches the
//     LatencyProfiles and resolves its own node with internal/resolve from its own facts.
//   - group: per-group rendering. The manager groups the nodes by their facts, resolves once per
//     group and writes one object per group (here a ConfigMap holding the tuning: the prototype's
//     stand-in for a group CRD of the same size); each agent watches its group's object.
//
// In each design every agent, once it holds its new desired tuning, writes one status patch to its
// node state (what internal/agent does after applying). Measured per round: seconds from the
// profile update to every agent holding its new tuning ("seen") and to every agent's status patch
// done ("reported"), the manager's writes, and the API server's writes by resource.
//
// The prototype manager runs in the test process and does only the part that differs between the
// designs (no node label churn, no profile status), so pernode is a lower bound of today's design.
//
// TestManagerCaches measures the other target, the manager's memory at fleet size: a child process
// holding the manager's informers over the fleet's Nodes and node states as today (whole objects,
// managedFields stripped) and as the agent-side design needs them (Nodes metadata-only; node states
// without facts and tuning, which the manager no longer reads).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/resolve"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

var (
	designSizes  = flag.String("designs.sizes", "1000", "fleet sizes for TestDesigns and TestManagerCaches, comma-separated")
	designRounds = flag.Int("designs.rounds", 2, "rounds of every design, alternated")
	designOut    = flag.String("designs.out", "", "append TestDesigns' and TestManagerCaches' figures there as JSON lines")
)

// DesignRound is one design's figures for one profile update.
type DesignRound struct {
	Nodes  int    `json:"nodes"`
	Design string `json:"design"`
	Round  int    `json:"round"`
	// SeenS: profile update -> every agent holds its new desired tuning; ReportedS: -> every
	// agent's status patch done.
	SeenS, ReportedS float64
	// ManagerWrites is what the prototype manager wrote for the change; APIWrites the API server's
	// writes by resource (everyone's) between the update and the last report.
	ManagerWrites int64
	APIWrites     map[string]int64
}

const designNamespace = "tickstack-system"

func TestDesigns(t *testing.T) {
	for _, n := range sizes(t) {
		runDesigns(t, n)
	}
}

// sizes is the start of every design test: it needs -scale.kwok, controller-runtime's log is
// silenced, and it runs once a fleet size of -designs.sizes.
func sizes(t *testing.T) []int {
	ctrllog.SetLogger(logr.Discard())
	if *kwokFlag == "" {
		t.Fatal("-scale.kwok is required (hack/bench-scale.sh builds kwok at the pinned version)")
	}
	var out []int
	for _, s := range strings.Split(*designSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 20 {
			t.Fatalf("-designs.sizes: %q is not a fleet size of at least 20", s)
		}
		out = append(out, n)
	}
	return out
}

func record(t *testing.T, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	t.Logf("%s", b)
	if *designOut == "" {
		return
	}
	f, err := os.OpenFile(*designOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// fleetEnv is an API server with a kwok fleet of n Ready nodes and a node state per node holding
// its facts.
type fleetEnv struct {
	c          client.WithWatch
	cfg        *rest.Config
	cs         *kubernetes.Clientset
	kubeconfig string
}

func startFleet(t *testing.T, ctx context.Context, n int) *fleetEnv {
	t.Helper()
	env, err := kubetest.Start(kubetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, kubeconfig := env.AddAdmin(t, "scale-admin")
	cfg := rest.CopyConfig(admin.Config())
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	startKwokFleet(t, ctx, c, kubeconfig, n) // stops at the test's end
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: designNamespace}}); err != nil {
		t.Fatal(err)
	}
	// The profile, and every node's state with its facts, as the fleet has them once settled.
	p := profile(n)
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			lns := &tsv1.LatencyNodeState{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{tsv1.ProfileLabel: p.Name}},
				Spec:       tsv1.LatencyNodeStateSpec{NodeName: nodeName(i), Profile: tsv1.ProfileReference{Name: p.Name, Generation: p.Generation}},
			}
			tuning, err := resolve.Node(&p.Spec, fleetFacts(baseCmdline))
			if err != nil {
				return err
			}
			lns.Spec.Tuning = tuning
			if err := c.Create(gctx, lns); err != nil {
				return err
			}
			lns.Status.Facts = fleetFacts(baseCmdline)
			return c.Status().Update(gctx, lns)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("creating the node states: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fleetEnv{c: c, cfg: cfg, cs: cs, kubeconfig: kubeconfig}
}

func runDesigns(t *testing.T, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFleet(t, ctx, n)
	value := 20
	for round := 1; round <= *designRounds; round++ {
		for _, d := range []string{"pernode", "agent", "group"} {
			value++
			r := f.runDesign(t, ctx, n, d, round, strconv.Itoa(value))
			record(t, r)
		}
	}
}

// designAgents are the simulated agents of one design: each with its own watch.
type designAgents struct {
	want          string // the vm.stat_interval every agent must end with
	seen, reports atomic.Int64
	lastSeen      atomic.Int64 // unix nanos
	ready         atomic.Int64 // agents holding their initial desired tuning
	patches       chan string
}

func (a *designAgents) hold(t *tsv1.NodeTuning) {
	if t != nil && t.Sysctls["vm.stat_interval"] == a.want {
		a.seen.Add(1)
		a.lastSeen.Store(time.Now().UnixNano())
		return
	}
}

func (f *fleetEnv) runDesign(t *testing.T, ctx context.Context, n int, design string, round int, value string) DesignRound {
	t.Helper()
	r := DesignRound{Nodes: n, Design: design, Round: round}
	actx, stop := context.WithCancel(ctx)
	defer stop()
	p := &tsv1.LatencyProfile{}
	if err := f.c.Get(ctx, types.NamespacedName{Name: "fleet"}, p); err != nil {
		t.Fatal(err)
	}
	group := groupName(p, fleetFacts(baseCmdline))
	if design == "group" {
		// The group object as the manager keeps it, written before the agents start (membership
		// is written once, not per profile change).
		if _, err := f.writeGroup(ctx, p, group); err != nil {
			t.Fatal(err)
		}
	}
	ag := &designAgents{want: value, patches: make(chan string, n)}
	// The agents' status patches: 64 in flight, as the simulated fleet elsewhere in this package.
	var pw sync.WaitGroup
	for range 64 {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for node := range ag.patches {
				patch := []byte(fmt.Sprintf(`{"status":{"observedGeneration":%d}}`, time.Now().UnixNano()%1000000))
				lns := &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}}
				for try := 0; try < 5; try++ {
					if err := f.c.Status().Patch(ctx, lns, client.RawPatch(types.MergePatchType, patch)); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				ag.reports.Add(1)
			}
		}()
	}
	// Every agent's watch.
	var wg sync.WaitGroup
	facts := fleetFacts(baseCmdline)
	for i := range n {
		node := nodeName(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.agent(actx, t, design, node, group, facts, ag)
		}()
	}
	waitFor(t, 10*time.Minute, design+": every agent watching", func() (bool, error) { return ag.ready.Load() == int64(n), nil })

	// The change.
	a0 := apiWrites(t, ctx, f.cs)
	p.Spec.Sysctls["vm.stat_interval"] = tsv1.SysctlValue(value)
	t0 := time.Now()
	if err := f.c.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	switch design {
	case "pernode":
		r.ManagerWrites = f.writeNodes(t, ctx, p, n)
	case "group":
		w, err := f.writeGroup(ctx, p, group)
		if err != nil {
			t.Fatal(err)
		}
		r.ManagerWrites = w
	}
	waitFor(t, 15*time.Minute, design+": every agent holds its new tuning", func() (bool, error) { return ag.seen.Load() >= int64(n), nil })
	r.SeenS = time.Unix(0, ag.lastSeen.Load()).Sub(t0).Seconds()
	waitFor(t, 15*time.Minute, design+": every agent reported", func() (bool, error) { return ag.reports.Load() >= int64(n), nil })
	r.ReportedS = time.Since(t0).Seconds()
	r.APIWrites = diffWrites(a0, apiWrites(t, ctx, f.cs))
	stop()
	wg.Wait()
	close(ag.patches)
	pw.Wait()
	return r
}

// agent is one simulated agent of design: its watch, its desired tuning as it sees it, one status
// patch once it holds the tuning the test wants.
func (f *fleetEnv) agent(ctx context.Context, t *testing.T, design, node, group string, facts *tsv1.NodeFacts, ag *designAgents) {
	var (
		list client.ObjectList
		opts = &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	)
	switch design {
	case "pernode":
		list = &tsv1.LatencyNodeStateList{}
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", node)
	case "agent":
		list = &tsv1.LatencyProfileList{}
	case "group":
		list = &corev1.ConfigMapList{}
		opts.Namespace = designNamespace
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", group)
	}
	var w watch.Interface
	for {
		var err error
		if w, err = f.c.Watch(ctx, list, opts); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer w.Stop()
	first, done := true, false
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				if !done && ctx.Err() == nil {
					t.Errorf("%s: %s's watch ended early", design, node)
				}
				return
			}
			var tuning *tsv1.NodeTuning
			switch o := ev.Object.(type) {
			case *tsv1.LatencyNodeState:
				tuning = o.Spec.Tuning
			case *tsv1.LatencyProfile:
				// Which profile wins the node is the manager's (spec.profile.name of the node
				// state, written when it changes); the tuning is the agent's own resolution.
				tu, err := resolve.Node(&o.Spec, facts)
				if err != nil {
					t.Errorf("%s: %v", node, err)
					continue
				}
				tuning = tu
			case *corev1.ConfigMap:
				tu := &tsv1.NodeTuning{}
				if err := json.Unmarshal([]byte(o.Data["tuning"]), tu); err != nil {
					t.Errorf("%s: group %s: %v", node, group, err)
					continue
				}
				tuning = tu
			default:
				continue
			}
			if first {
				first = false
				ag.ready.Add(1)
				continue
			}
			if done || tuning == nil || tuning.Sysctls["vm.stat_interval"] != ag.want {
				continue
			}
			done = true
			ag.hold(tuning)
			ag.patches <- node
		}
	}
}

// writeNodes is today's manager: resolve every node, patch its node state's tuning, 32 in flight.
func (f *fleetEnv) writeNodes(t *testing.T, ctx context.Context, p *tsv1.LatencyProfile, n int) int64 {
	t.Helper()
	var writes atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	facts := fleetFacts(baseCmdline)
	for i := range n {
		g.Go(func() error {
			tuning, err := resolve.Node(&p.Spec, facts)
			if err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"tuning": tuning, "profile": map[string]any{"generation": p.Generation}}})
			if err != nil {
				return err
			}
			writes.Add(1)
			return f.c.Patch(gctx, &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}, client.RawPatch(types.MergePatchType, patch))
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("writing the node states: %v", err)
	}
	return writes.Load()
}

// groupName names the group of nodes a profile resolves alike: the profile and a hash of the
// facts resolution reads.
func groupName(p *tsv1.LatencyProfile, facts *tsv1.NodeFacts) string {
	raw, _ := json.Marshal(facts)
	var h uint32 = 2166136261
	for _, b := range raw {
		h = (h ^ uint32(b)) * 16777619
	}
	return fmt.Sprintf("%s-%08x", p.Name, h)
}

// writeGroup resolves the group's tuning once and writes its object (one write).
func (f *fleetEnv) writeGroup(ctx context.Context, p *tsv1.LatencyProfile, group string) (int64, error) {
	tuning, err := resolve.Node(&p.Spec, fleetFacts(baseCmdline))
	if err != nil {
		return 0, err
	}
	raw, err := json.Marshal(tuning)
	if err != nil {
		return 0, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: designNamespace, Name: group},
		Data: map[string]string{"tuning": string(raw), "generation": strconv.FormatInt(p.Generation, 10)}}
	cur := &corev1.ConfigMap{}
	switch err := f.c.Get(ctx, client.ObjectKeyFromObject(cm), cur); {
	case apierrors.IsNotFound(err):
		return 1, f.c.Create(ctx, cm)
	case err != nil:
		return 0, err
	}
	cur.Data = cm.Data
	return 1, f.c.Update(ctx, cur)
}

// CacheFigures is the manager's informers' memory over one fleet, in one mode.
type CacheFigures struct {
	Nodes int    `json:"nodes"`
	Mode  string `json:"mode"`
	// PeakRSSMiB of the process holding the synced caches; HeapMiB live heap after a GC.
	PeakRSSMiB, HeapMiB float64
}

// The modes of TestManagerCaches.
var cacheModes = []string{"full", "lean", "interned", "full+watchlist", "lean+watchlist", "nodestates", "manager"}

// -designs.cache-modes picks some of them (all by default). "nodestates" is the manager's caches
// before its Node and Job transforms (whole Nodes, shared.NodeStateTransform), "manager" its caches
// as shipped (controllers.CacheOptions).
var cacheModesFlag = flag.String("designs.cache-modes", "", "TestManagerCaches' modes to run, comma-separated (all when empty): "+strings.Join(cacheModes, ", "))

// A mode ending in +watchlist runs the child with client-go's WatchListClient feature on: its
// informers fill by a streamed watch (the API server's WatchList, beta in 1.32) instead of one
// LIST response held whole in memory.
const watchListSuffix = "+watchlist"

func TestManagerCaches(t *testing.T) {
	for _, n := range sizes(t) {
		ctx, cancel := context.WithCancel(context.Background())
		f := startFleet(t, ctx, n)
		for round := 1; round <= *designRounds; round++ {
			for _, mode := range cacheModes {
				if *cacheModesFlag != "" && !slices.Contains(strings.Split(*cacheModesFlag, ","), mode) {
					continue
				}
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "TICKSTACK_CACHE_CHILD="+mode, "KUBECONFIG="+f.kubeconfig, fmt.Sprintf("TICKSTACK_CACHE_NODES=%d", n))
				if strings.HasSuffix(mode, watchListSuffix) {
					cmd.Env = append(cmd.Env, "KUBE_FEATURE_WatchListClient=true")
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v: %s", mode, err, out)
				}
				var fig CacheFigures
				for _, line := range strings.Split(string(out), "\n") {
					if s, ok := strings.CutPrefix(strings.TrimSpace(line), "CACHE "); ok {
						if err := json.Unmarshal([]byte(s), &fig); err != nil {
							t.Fatal(err)
						}
					}
				}
				if fig.Mode != mode {
					t.Fatalf("%s: no figures in the child's output: %s", mode, out)
				}
				record(t, fig)
			}
		}
		cancel()
	}
}

// TestMain runs the cache child when TestManagerCaches starts this binary as one.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TICKSTACK_CACHE_CHILD"); mode != "" {
		if err := cacheChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cacheChild holds the manager's caches over the fleet in mode and prints its memory: the
// parent, TestManagerCaches, runs it once per mode.
func cacheChild(mode string) error {
	ctrllog.SetLogger(logr.Discard())
	fullMode := mode
	mode = strings.TrimSuffix(mode, watchListSuffix)
	n, _ := strconv.Atoi(os.Getenv("TICKSTACK_CACHE_NODES"))
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := cache.Options{Scheme: kubetest.Scheme(), DefaultTransform: cache.TransformStripManagedFields()}
	if mode == "lean" {
		// The agent-side design's manager reads no node state's facts or tuning: which profile
		// holds a node, the reboot protocol and the conditions it rolls up stay.
		opts.ByObject = map[client.Object]cache.ByObject{&tsv1.LatencyNodeState{}: {Transform: func(o any) (any, error) {
			if lns, ok := o.(*tsv1.LatencyNodeState); ok {
				lns.ManagedFields = nil
				lns.Spec.Tuning = nil
				lns.Status.Facts = nil
			}
			return o, nil
		}}}
	}
	if mode == "interned" {
		// The manager's own node state transform (shared.NodeStateTransform, which --resolve-on-node
		// relies on): no settings, of status.tuning only ptp and drainTimeout, one copy per distinct set of facts, shared by
		// every node state that reports it, so that the manager still resolves (memoized per set of
		// facts) and knows which nodes a profile change moves without holding 5,000 copies. This
		// fleet's node states carry today's spec.tuning; a node whose agent resolves has none, so it
		// is dropped first, as in lean.
		manager := shared.NodeStateTransform()
		opts.ByObject = map[client.Object]cache.ByObject{&tsv1.LatencyNodeState{}: {Transform: func(o any) (any, error) {
			if lns, ok := o.(*tsv1.LatencyNodeState); ok {
				lns.Spec.Tuning = nil
			}
			return manager(o)
		}}}
	}
	if mode == "nodestates" || mode == "manager" {
		// The manager's caches before its Node and Job transforms, and as shipped. This fleet's
		// node states carry today's spec.tuning, dropped first as in interned.
		if mode == "manager" {
			opts = controllers.CacheOptions()
			opts.Scheme = kubetest.Scheme()
		}
		if opts.ByObject == nil {
			opts.ByObject = map[client.Object]cache.ByObject{}
		}
		manager := shared.NodeStateTransform()
		opts.ByObject[&tsv1.LatencyNodeState{}] = cache.ByObject{Transform: func(o any) (any, error) {
			if lns, ok := o.(*tsv1.LatencyNodeState); ok {
				lns.Spec.Tuning = nil
			}
			return manager(o)
		}}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	var nodeObj client.Object = &corev1.Node{}
	if mode != "full" && mode != "nodestates" && mode != "manager" {
		pm := &metav1.PartialObjectMetadata{}
		pm.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
		nodeObj = pm
	}
	for _, o := range []client.Object{nodeObj, &tsv1.LatencyNodeState{}, &tsv1.LatencyProfile{}} {
		if _, err := c.GetInformer(ctx, o); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("caches not synced")
	}
	var states tsv1.LatencyNodeStateList
	if err := c.List(ctx, &states); err != nil || len(states.Items) != n {
		return fmt.Errorf("%d node states cached (%v), want %d", len(states.Items), err, n)
	}
	time.Sleep(3 * time.Second)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fig := CacheFigures{Nodes: n, Mode: fullMode, PeakRSSMiB: float64(statusKiB(os.Getpid(), "VmHWM")) / 1024, HeapMiB: float64(ms.HeapAlloc) / (1 << 20)}
	b, _ := json.Marshal(fig)
	fmt.Printf("CACHE %s\n", b)
	return nil
}
