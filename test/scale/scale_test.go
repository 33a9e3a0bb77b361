//go:build scale

// Package scale is the operator at fleet size (issue 20): a real kube-apiserver and etcd (the
// envtest assets), kwok (sigs.k8s.io/kwok, pinned) keeping hundreds to thousands of simulated
// nodes alive, a load generator playing their agents (fleet_test.go), and the manager binary run
// as in production (cmd/manager: the same SetupControllers and flags; webhooks off, as nothing here
// would call them). For each fleet size it measures, from the outside:
//
//   - the time from a profile's create, and from an update that changes every node's tuning, to
//     every node state rendered (spec.tuning at the profile's generation);
//   - the time for the profile's status to show 5 % of the nodes degraded after they report it,
//     and to show them back;
//   - the manager's API writes (its own client metrics) per node that changed, and for an update
//     that changes no node's tuning (the target: none per node);
//   - the manager's peak RSS and CPU seconds (/proc);
//   - a reboot rollout of every node with maxUnavailable 5 %: granted slots sampled continuously
//     (never above the budget), the total time;
//   - a LatencyBenchmark over 1,000 nodes (the whole fleet when smaller) with maxParallel 5 %: the
//     Jobs measuring at once (never above it), the time to every verdict in, the status's size.
//
// make bench-scale runs it (-scale.sizes=100,1000,5000 -scale.out=...) and hack/bench-scale.sh
// writes docs/bench-scale.md; no timing is asserted, only what must hold at any speed (everything
// rendered, the budget never exceeded).
package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

var (
	sizesFlag = flag.String("scale.sizes", "100,1000", "fleet sizes to measure, comma-separated")
	outFlag   = flag.String("scale.out", "", "write the results there as JSON")
	kwokFlag  = flag.String("scale.kwok", "", "the kwok binary (hack/bench-scale.sh builds sigs.k8s.io/kwok/cmd/kwok at the pinned version)")
	argsFlag  = flag.String("scale.manager-args", "", "extra manager flags, space-separated (to compare settings); --resolve-on-node=false measures the manager writing every node's tuning, the design before issue 45 (the generator then plays agents that do not resolve)")
	envFlag   = flag.String("scale.manager-env", "", "extra environment of the manager, space-separated NAME=VALUE (to compare, e.g. GOMEMLIMIT)")
	srcFlag   = flag.String("scale.manager-src", "", "build cmd/manager from this tree instead (a git worktree of another revision, to compare)")
	profFlag  = flag.String("scale.profile", "", "write CPU profiles of the manager and the API server, and the manager's heap profile, 20 s into the benchmark step, and the manager's metrics after it, to this directory")
	profStep  = flag.String("scale.profile-step", "benchmark", "the step -scale.profile profiles: benchmark or rollout")
	onlyFlag  = flag.String("scale.only", "", "\""+onlyBenchmark+"\": after the profile's create (every node applied and labelled), only the benchmark step (no updates, drift or rollout)")
)

// onlyBenchmark is -scale.only's one value: the benchmark step alone.
const onlyBenchmark = "benchmark"

// benchMeasure is how long each simulated benchmark pod measures before it uploads.
const benchMeasure = time.Second

func equalityDeep(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// kwokStages make a new simulated node Ready (its capacity as created) and, like a kubelet that
// renews a lease every 10 s (kwok's --node-lease-duration-seconds=40), post its status every few
// minutes.
const kwokStages = kwokNodeStage + `{name: tickstack-scale-node-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True']}
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running` + kwokNodeConditions + `---
` + kwokNodeStage + `{name: tickstack-scale-node-status}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.phase', operator: In, values: ['Running']}
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: In, values: ['True']}
  delay: {durationMilliseconds: 240000, jitterDurationMilliseconds: 300000}
  next:
    statusTemplate: |
      {{ $now := Now }}` + kwokNodeConditions

// kwokNodeStage starts a kwok Stage (its metadata follows); kwokNodeConditions ends a Node
// stage's statusTemplate: every condition kwok keeps, heartbeat and transition now.
const (
	kwokNodeStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: `
	kwokNodeConditions = `
      conditions:
      {{ range NodeConditions }}
      - {type: {{ .type | Quote }}, status: {{ .status | Quote }}, reason: {{ .reason | Quote }}, message: {{ .message | Quote }}, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
`
)

// Result is one fleet size's figures.
type Result struct {
	Nodes int `json:"nodes"`
	// Design is designPerNode or designResolveOnNode.
	Design string `json:"design"`
	// Seconds from the profile's create / its update to every node's agent holding its new
	// desired tuning: per node, its node state rendered (spec.tuning at the profile's
	// generation); resolving on the node, its agent's own resolution of that generation, from
	// the moment it starts acting on it (the last node's).
	CreateRenderedS float64 `json:"createRenderedSeconds"`
	UpdateRenderedS float64 `json:"updateRenderedSeconds"`
	// For the update that changes every node: the manager's writes (its own client metrics),
	// the node state status writes (the API server's count: the agents'), the agents' Node
	// patches (cordons, the tuning-pending taint).
	UpdateManagerWrites, UpdateStatusWrites, UpdateAgentNodePatches int64
	// Seconds from 5 % of the agents reporting Degraded to the profile's status counting them, and
	// from their recovery to the status counting none.
	DriftSeenS, DriftClearedS float64
	// The manager's writes (POST, PUT, PATCH, DELETE) per node changed by the update, and per node
	// for an update that changes no node's tuning.
	WritesPerChangedNode, WritesPerUnchangedNode float64
	// The manager's reads (GET, LIST) over the whole run.
	Reads, Writes int64
	// Peak RSS (MiB) and CPU seconds of the manager over the whole run.
	PeakRSSMiB, CPUSeconds float64
	// PeakRSSStep is the step of the run during which the manager's RSS reached its peak (the
	// first sample at the peak), where a memory saving has to come from.
	PeakRSSStep string `json:"peakRSSStep,omitempty"`
	// The rollout: the budget, the most slots held at once, seconds to every node rebooted.
	RolloutBudget, RolloutMaxHeld int
	RolloutS                      float64
	// The LatencyBenchmark: nodes measured, spec.maxParallel, the most Jobs measuring at once,
	// seconds from its create to every verdict in, the status's size and the nodes whose tables it
	// holds (the others' are in their results ConfigMaps).
	BenchNodes, BenchMaxParallel, BenchMaxAtOnce int
	BenchS, BenchStatusKiB                       float64
	BenchResultsInStatus                         int
	// BenchPodsS is the pods' own run: the waves (nodes / maxParallel, rounded up) times each
	// pod's measuring time; BenchS less this is the operator's share (issue 45: < 30 s).
	BenchPodsS float64
	// BenchStatusWrites is the benchmark's status writes during the step (the API server's
	// count): verdicts batched per reconcile are far fewer than the nodes.
	BenchStatusWrites int64
	// Only is -scale.only ("" for every step).
	Only string `json:"only,omitempty"`
	// Generator patches, for the record.
	AgentPatches int64
	// The API server's writes by resource during each update (everyone's: the generator's are
	// node state status and node patches).
	ChangedWrites, UnchangedWrites map[string]int64
}

func TestScale(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	if *kwokFlag == "" {
		t.Fatal("-scale.kwok is required: run make bench-scale (hack/bench-scale.sh builds kwok at the pinned version)")
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	if *srcFlag != "" {
		root = *srcFlag
	}
	if out, err := exec.Command("go", "build", "-C", root, "-o", bin, "./cmd/manager").CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v: %s", err, out)
	}
	var results []Result
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 20 {
			t.Fatalf("-scale.sizes: %q is not a fleet size of at least 20", s)
		}
		r := runFleet(t, bin, n)
		t.Logf("%d nodes: %+v", n, r)
		results = append(results, r)
	}
	if *outFlag != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*outFlag, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// process is a child whose RSS and CPU are sampled until it ends.
type process struct {
	cmd     *exec.Cmd
	peakKiB atomic.Int64
	// step is the run's current step (setStep); peakStep the step the peak was reached in.
	step, peakStep atomic.Pointer[string]
	stopOnce       sync.Once
	done           chan struct{}
}

func start(t *testing.T, name string, argv []string, env []string) *process {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				if kib := statusKiB(cmd.Process.Pid, "VmHWM"); kib > p.peakKiB.Load() {
					p.peakKiB.Store(kib)
					p.peakStep.Store(p.step.Load())
				}
			}
		}
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s's log ends:\n%s", name, b)
		}
	})
	return p
}

// setStep names the run's step from now on, for PeakRSSStep.
func (p *process) setStep(step string) { p.step.Store(&step) }

// peakRSSStep is the step during which the RSS reached its peak ("" before any step).
func (p *process) peakRSSStep() string {
	if s := p.peakStep.Load(); s != nil {
		return *s
	}
	return ""
}

func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		close(p.done)
	})
}

// cpuSeconds is the process's user and system time so far.
func (p *process) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func statusKiB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var apiMetric = regexp.MustCompile(`^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$`)

// apiWrites reads the API server's write counters by resource/subresource.
func apiWrites(t *testing.T, ctx context.Context, cs *kubernetes.Clientset) map[string]int64 {
	t.Helper()
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	out := map[string]int64{}
	label := func(labels, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(labels)
		if m == nil {
			return ""
		}
		return m[1]
	}
	for _, line := range strings.Split(string(raw), "\n") {
		m := apiMetric.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch label(m[1], "verb") {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY", "CREATE", "UPDATE":
		default:
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		k := label(m[1], "resource")
		if sub := label(m[1], "subresource"); sub != "" {
			k += "/" + sub
		}
		out[k+" "+label(m[1], "verb")] += int64(v)
	}
	return out
}

func diffWrites(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range b {
		if d := v - a[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

var restMetric = regexp.MustCompile(`^rest_client_requests_total\{([^}]*)\} ([0-9.e+]+)$`)

// requests reads the manager's client-go request counters: writes and reads.
func requests(t *testing.T, port int) (writes, reads int64) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("reading the manager's metrics: %v", err)
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		m := restMetric.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		switch {
		case strings.Contains(m[1], `method="GET"`):
			reads += int64(v)
		case strings.Contains(m[1], `method="POST"`), strings.Contains(m[1], `method="PUT"`),
			strings.Contains(m[1], `method="PATCH"`), strings.Contains(m[1], `method="DELETE"`):
			writes += int64(v)
		}
	}
	return writes, reads
}

func profile(n int) *tsv1.LatencyProfile {
	return &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: "trading"}},
			CPU:          &tsv1.CPUSpec{Reserved: "0-1,32-33"},
			Hugepages:    &tsv1.HugepagesSpec{Transparent: "never"},
			Sysctls:      map[string]tsv1.SysctlValue{"vm.stat_interval": "10", "kernel.timer_migration": "0"},
			NICs: []tsv1.NICSpec{{Name: "md", Selector: tsv1.NICSelector{Drivers: []string{"ice"}},
				Acceleration: tsv1.AccelerationBusyPoll}},
			Rollout: &tsv1.RolloutSpec{MaxUnavailable: ptrIntStr(intstr.FromString("5%"))},
		},
	}
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// rendered counts the node states whose spec.tuning is set for the profile's generation gen, and
// whose tuning passes check (nil: any).
func rendered(ctx context.Context, c client.Reader, gen int64, check func(*tsv1.NodeTuning) bool) (int, error) {
	var list tsv1.LatencyNodeStateList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		s := &list.Items[i]
		if s.Spec.Tuning != nil && s.Spec.Profile.Generation == gen && (check == nil || check(s.Spec.Tuning)) {
			n++
		}
	}
	return n, nil
}

// reached waits until every one of the n nodes' agents holds its desired tuning of profile at
// generation gen (passing check, nil: any) and returns the time from t0: per node, until its
// node state is rendered (as the watch shows it); resolving on the node, until the last agent
// started acting on its own resolution.
func reached(t *testing.T, ctx context.Context, gen *agents, c client.Reader, what string, t0 time.Time, profile string, g int64, n int, check func(*tsv1.NodeTuning) bool) time.Duration {
	t.Helper()
	if !gen.resolving {
		waitFor(t, 15*time.Minute, "every node state rendered after "+what, func() (bool, error) {
			k, err := rendered(ctx, c, g, check)
			return k == n, err
		})
		return time.Since(t0)
	}
	var last time.Time
	waitFor(t, 15*time.Minute, "every agent acting on its own resolution after "+what, func() (bool, error) {
		var k int
		k, last = gen.acted(profile, g, check)
		return k == n, nil
	})
	return last.Sub(t0)
}

// waitFor polls cond every 100 ms for up to limit; it returns the time it took.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	t0 := time.Now()
	for {
		ok, err := cond()
		if err == nil && ok {
			return time.Since(t0)
		}
		if time.Since(t0) > limit {
			t.Fatalf("%s: not within %s (last error %v)", what, limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runFleet(t *testing.T, managerBin string, n int) Result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := Result{Nodes: n, Design: design(strings.Fields(*argsFlag)), Only: *onlyFlag}
	resolving := r.Design == designResolveOnNode
	env, err := kubetest.Start(kubetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	admin, kubeconfig := env.AddAdmin(t, "scale-admin")
	// The test's own clients are not the thing measured: plenty of QPS.
	cfg := *admin.Config()
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(&cfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	// The fleet, kept alive by kwok.
	kwok := startKwokFleet(t, ctx, c, kubeconfig, n)
	defer kwok.stop()

	// The agents. Their cache is also where the test watches the fleet from: its waits read the
	// watched objects, so that measuring adds no reads to the API server (a list of every node
	// state every 100 ms would be most of its work at 5,000 nodes).
	// The generator plays every node's agent through one client. A real agent has a client of its
	// own (client-go's default limit, 5 requests a second), so a fleet's agents are limited only by
	// the API server: the generator's client has no client-side limit. With the test's 2,000 a
	// second, the 5,000 agents' requests of a profile's create (a Node read, a node state read, a
	// status patch each) queued behind each other in the test process (10.9 s; docs/scale.md, fix 24).
	agentCfg := cfg
	agentCfg.QPS = -1
	ac, err := client.New(&agentCfg, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	gen := newAgents(ac, 50*time.Millisecond, 2*time.Second)
	agentCache, err := cache.New(&cfg, cache.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := agentCache.GetInformer(ctx, &tsv1.LatencyNodeState{})
	if err != nil {
		t.Fatal(err)
	}
	// The benchmark pods.
	pods := newRunners(c, benchMeasure)
	jobInf, err := agentCache.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		t.Fatal(err)
	}
	if resolving {
		// The profiles, which the agents' hand-overs resolve from, and the Nodes, whose labels an
		// agent without a node state arbitrates with. A real agent watches its own Node only (a
		// field selector, as the kubelet does): one event per change of that node, which one watch
		// of every Node delivers as well.
		for _, o := range []client.Object{&tsv1.LatencyProfile{}, &corev1.Node{}} {
			if _, err := agentCache.GetInformer(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		gen.resolveOwn(agentCache)
	}
	go func() { _ = agentCache.Start(ctx) }()
	if resolving {
		wc, err := client.NewWithWatch(&cfg, client.Options{Scheme: kubetest.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if !agentCache.WaitForCacheSync(ctx) {
			t.Fatal("the test's cache did not sync")
		}
		gen.watchProfiles(ctx, wc, n)
	}
	if err := gen.run(ctx, inf, 64); err != nil {
		t.Fatal(err)
	}
	if err := pods.run(ctx, jobInf, 16); err != nil {
		t.Fatal(err)
	}

	// The manager, as in production.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tickstack-system"}}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	pprofPort := freePort(t)
	argv := []string{managerBin, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort), "--enable-webhooks=false", "--webhook-cert-mode=cert-manager", "--leader-elect=false",
		"--namespace=tickstack-system", "--uninstall-guard=", fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false",
		"--health-probe-bind-address=0", "--zap-log-level=error"}
	argv = append(argv, strings.Fields(*argsFlag)...)
	mgr := start(t, "manager", argv, append([]string{"KUBECONFIG=" + kubeconfig}, strings.Fields(*envFlag)...))
	mgr.setStep("start")
	defer mgr.stop()
	waitFor(t, time.Minute, "the manager serves its metrics", func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			return false, err
		}
		return true, resp.Body.Close()
	})

	// A profile created: every node state rendered.
	mgr.setStep("create")
	p := profile(n)
	t0 := time.Now()
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	r.CreateRenderedS = reached(t, ctx, gen, agentCache, "the create", t0, p.Name, p.Generation, n, nil).Seconds()
	// Everything settles: every node Applied, as the status counts.
	latest := p.Generation // the profile's generation as last written
	settle := func(what string, want func(*tsv1.LatencyProfileStatus) bool) time.Duration {
		return waitFor(t, 15*time.Minute, what, func() (bool, error) {
			cur := &tsv1.LatencyProfile{}
			if err := agentCache.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return false, err
			}
			// The watch may not have delivered the last update yet: its generation, observed.
			return cur.Generation >= latest && cur.Status.ObservedGeneration == cur.Generation && want(&cur.Status), nil
		})
	}
	settle("every node applied", func(s *tsv1.LatencyProfileStatus) bool { return int(s.AppliedNodes) == n })
	// The create's last writes (the node labels follow Applied) are not the update's.
	quiet(t, port)

	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if *onlyFlag != onlyBenchmark {
		// An update that changes every node's tuning.
		mgr.setStep("update")
		a0 := apiWrites(t, ctx, cs)
		w0, _ := requests(t, port)
		np0 := gen.nodePatches.Load()
		cur := &tsv1.LatencyProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Sysctls["vm.stat_interval"] = "20"
		t0 = time.Now()
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		latest = cur.Generation
		r.UpdateRenderedS = reached(t, ctx, gen, agentCache, "the update", t0, p.Name, cur.Generation, n,
			func(tu *tsv1.NodeTuning) bool { return tu.Sysctls["vm.stat_interval"] == "20" }).Seconds()
		settle("every node applied after the update", func(s *tsv1.LatencyProfileStatus) bool { return int(s.AppliedNodes) == n })
		quiet(t, port)
		w1, _ := requests(t, port)
		a1 := apiWrites(t, ctx, cs)
		r.WritesPerChangedNode = float64(w1-w0) / float64(n)
		r.ChangedWrites = diffWrites(a0, a1)
		r.UpdateManagerWrites = w1 - w0
		r.UpdateAgentNodePatches = gen.nodePatches.Load() - np0
		for k, v := range r.ChangedWrites {
			if strings.HasPrefix(k, "latencynodestates/status ") {
				r.UpdateStatusWrites += v
			}
		}

		// An update that changes no node's tuning (a priority nothing competes with).
		mgr.setStep("no-op update")
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Priority = 10
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		latest = cur.Generation
		settle("the no-op update observed", func(s *tsv1.LatencyProfileStatus) bool { return int(s.AppliedNodes) == n })
		quiet(t, port)
		w2, _ := requests(t, port)
		r.WritesPerUnchangedNode = float64(w2-w1) / float64(n)
		r.UnchangedWrites = diffWrites(a1, apiWrites(t, ctx, cs))

		// 5 % of the agents report drift they cannot correct, then recover.
		mgr.setStep("drift")
		var drifted []string
		for i := 0; i < n; i += 20 {
			drifted = append(drifted, nodeName(i))
		}
		gen.setDrift(drifted, true)
		r.DriftSeenS = settle("the degraded nodes counted", func(s *tsv1.LatencyProfileStatus) bool { return int(s.DegradedNodes) == len(drifted) }).Seconds()
		gen.setDrift(drifted, false)
		r.DriftClearedS = settle("the degraded nodes back", func(s *tsv1.LatencyProfileStatus) bool {
			return s.DegradedNodes == 0 && int(s.AppliedNodes) == n
		}).Seconds()

		// A reboot rollout of every node: kernel arguments for isolated CPUs.
		mgr.setStep("rollout")
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.CPU.Isolated = "2-31,34-63"
		r.RolloutBudget = max(1, n*5/100)
		// Slots held, counted on every node state event the watch delivers, so no peak is missed
		// between samples.
		slots := &heldSlots{held: map[string]bool{}}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { slots.see(obj) },
			UpdateFunc: func(_, obj any) { slots.see(obj) },
		})
		if err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		if *profFlag != "" && *profStep == "rollout" {
			go profileCPU(ctx, *profFlag, n, pprofPort, &cfg)
		}
		latest = cur.Generation
		settle("every node rebooted", func(s *tsv1.LatencyProfileStatus) bool {
			return int(s.AppliedNodes) == n && s.RebootPendingNodes == 0
		})
		r.RolloutS = time.Since(t0).Seconds()
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		r.RolloutMaxHeld = slots.peak()
	}

	// A LatencyBenchmark over the first 1,000 nodes (all of a smaller fleet) in waves of 5 %.
	mgr.setStep("benchmark")
	r.BenchNodes = min(n, benchNodes)
	r.BenchMaxParallel = max(1, r.BenchNodes*5/100)
	r.BenchPodsS = float64((r.BenchNodes+r.BenchMaxParallel-1)/r.BenchMaxParallel) * benchMeasure.Seconds()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		t.Fatal(err)
	}
	lb := &tsv1.LatencyBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "fleet"},
		Spec: tsv1.LatencyBenchmarkSpec{
			Target: tsv1.BenchmarkTarget{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				tsv1.ProfileLabel: p.Name, benchLabel: "in"}}},
			Suites:      tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{tsv1.ProtocolUDP, tsv1.ProtocolTCP}, MessageSizes: []int32{14, 64, 256, 1024, 1472}}},
			Thresholds:  tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "40us"}}},
			MaxParallel: ptrInt32(int32(r.BenchMaxParallel)),
		},
	}
	b0 := apiWrites(t, ctx, cs)
	t0 = time.Now()
	if err := c.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if *profFlag != "" && *profStep == "benchmark" {
		go profileCPU(ctx, *profFlag, n, pprofPort, &cfg)
	}
	waitFor(t, 30*time.Minute, "every benchmark verdict in", func() (bool, error) {
		cur := &tsv1.LatencyBenchmark{}
		if err := agentCache.Get(ctx, client.ObjectKeyFromObject(lb), cur); err != nil {
			return false, err
		}
		if cur.Status.Verdict == "" || int(cur.Status.NodesTotal) != r.BenchNodes {
			return false, nil
		}
		r.BenchS = time.Since(t0).Seconds()
		if cur.Status.Verdict != tsv1.VerdictPassed || int(cur.Status.NodesPassed) != r.BenchNodes {
			msg := ""
			if cond := meta.FindStatusCondition(cur.Status.Conditions, tsv1.BenchmarkPassed); cond != nil {
				msg = cond.Message
			}
			t.Fatalf("%d nodes: benchmark verdict %s with %d of %d nodes passed: %s", n, cur.Status.Verdict, cur.Status.NodesPassed, r.BenchNodes, msg)
		}
		raw, err := json.Marshal(cur.Status)
		if err != nil {
			return false, err
		}
		r.BenchStatusKiB = float64(len(raw)) / 1024
		for _, ns := range cur.Status.Nodes {
			if ns.Results != nil {
				r.BenchResultsInStatus++
			}
		}
		return true, nil
	})
	r.BenchStatusWrites = diffWrites(b0, apiWrites(t, ctx, cs))["latencybenchmarks/status PATCH"]
	if *profFlag != "" {
		// The manager's own metrics after the benchmark (reconcile times and counts, work queue
		// waits per controller), beside the profiles.
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); err == nil {
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			_ = os.WriteFile(filepath.Join(*profFlag, fmt.Sprintf("metrics-%d.txt", n)), raw, 0o644)
		}
	}
	r.BenchMaxAtOnce = int(pods.maxAtOnce.Load())
	if r.BenchMaxAtOnce > r.BenchMaxParallel {
		t.Errorf("%d nodes: %d benchmark Jobs measuring at once, above spec.maxParallel %d", n, r.BenchMaxAtOnce, r.BenchMaxParallel)
	}
	if n > tsv1.MaxBenchmarkNodes {
		// One benchmark over the whole fleet is refused, clearly and before any Job, not left
		// failing its status writes.
		all := lb.DeepCopy()
		all.ObjectMeta = metav1.ObjectMeta{Namespace: "bench", Name: "everything"}
		all.Spec.Target = tsv1.BenchmarkTarget{Profile: p.Name}
		if err := c.Create(ctx, all); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Minute, "the whole-fleet benchmark refused", func() (bool, error) {
			cur := &tsv1.LatencyBenchmark{}
			if err := agentCache.Get(ctx, client.ObjectKeyFromObject(all), cur); err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(cur.Status.Conditions, tsv1.BenchmarkValid)
			return cond != nil && cond.Status == metav1.ConditionFalse &&
				strings.Contains(cond.Message, fmt.Sprintf("selects %d nodes; one LatencyBenchmark measures at most %d", n, tsv1.MaxBenchmarkNodes)) &&
				cur.Status.Run == 0, nil
		})
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs, client.InNamespace("bench"), client.MatchingLabels{tsv1.BenchmarkLabel: all.Name}); err != nil || len(jobs.Items) != 0 {
			t.Errorf("the refused benchmark has %d Jobs (%v), want none", len(jobs.Items), err)
		}
	}

	r.Writes, r.Reads = requests(t, port)
	r.PeakRSSMiB = float64(max(mgr.peakKiB.Load(), statusKiB(mgr.cmd.Process.Pid, "VmHWM"))) / 1024
	r.PeakRSSStep = mgr.peakRSSStep()
	r.CPUSeconds = mgr.cpuSeconds()
	r.AgentPatches = gen.patches.Load()
	if r.RolloutMaxHeld > r.RolloutBudget {
		t.Errorf("%d nodes: %d reboot slots held at once, above the budget of %d (maxUnavailable 5%%)", n, r.RolloutMaxHeld, r.RolloutBudget)
	}
	return r
}

// quiet waits until the manager's writes stop for two seconds (its work for the last change is done).
func quiet(t *testing.T, port int) {
	t.Helper()
	last, _ := requests(t, port)
	stable := time.Now()
	for time.Since(stable) < 2*time.Second {
		time.Sleep(250 * time.Millisecond)
		w, _ := requests(t, port)
		if w != last {
			last, stable = w, time.Now()
		}
	}
}

// startKwokFleet starts kwok, creates n fake nodes for it to keep alive and waits until every one
// is Ready. kwok stops at the test's end, or earlier at the caller's stop.
func startKwokFleet(t *testing.T, ctx context.Context, c client.Client, kubeconfig string, n int) *process {
	t.Helper()
	stages := filepath.Join(t.TempDir(), "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		t.Fatal(err)
	}
	kwok := start(t, "kwok", []string{*kwokFlag, "--config=" + stages, "--kubeconfig=" + kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=fake", "--node-lease-duration-seconds=40"}, nil)
	createNodes(t, ctx, c, n)
	waitFor(t, 10*time.Minute, "kwok makes every node Ready", func() (bool, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			for _, cond := range nodes.Items[i].Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	return kwok
}

func createNodes(t *testing.T, ctx context.Context, c client.Client, n int) {
	t.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				node := fleetNode(i)
				st := node.Status
				if err := c.Create(ctx, node); err != nil {
					failed.Store(err)
					continue
				}
				// A patch, not an update: kwok may already have written the node's conditions.
				base := node.DeepCopy()
				node.Status = st
				if err := c.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("creating the fleet's nodes: %v", err)
	}
}

// profileCPU writes 30-second CPU profiles of the manager (its --pprof-bind-address) and of the
// API server (its /debug/pprof), taken together 20 s from now, and the manager's heap profiles at
// their start and end (heap, heap-end), to dir (-scale.profile).
func profileCPU(ctx context.Context, dir string, n, managerPort int, cfg *rest.Config) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(20 * time.Second):
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile: %v\n", err)
		return
	}
	var wg sync.WaitGroup
	for name, url := range map[string]string{
		"manager":   fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=30", managerPort),
		"apiserver": strings.TrimSuffix(cfg.Host, "/") + "/debug/pprof/profile?seconds=30",
		"heap":      fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", managerPort),
		// 30 s later: with -diff_base heap, what the manager allocated over the CPU profiles' window.
		"heap-end": fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?seconds=30", managerPort),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile %s: %v\n", name, err)
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile %s: %v\n", name, err)
				return
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %s", resp.Status, raw)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n)), raw, 0o644)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile %s: %v\n", name, err)
			}
		}()
	}
	wg.Wait()
}

// heldSlots counts the node states holding a reboot slot (granted, reboot still required) and the
// most at once.
type heldSlots struct {
	mu       sync.Mutex
	held     map[string]bool
	now, max int
}

func (h *heldSlots) see(obj any) {
	s, ok := obj.(*tsv1.LatencyNodeState)
	if !ok {
		return
	}
	holds := s.Spec.RebootGranted && meta.IsStatusConditionTrue(s.Status.Conditions, tsv1.NodeRebootRequired)
	h.mu.Lock()
	defer h.mu.Unlock()
	if holds == h.held[s.Name] {
		return
	}
	h.held[s.Name] = holds
	if holds {
		h.now++
		h.max = max(h.max, h.now)
	} else {
		h.now--
	}
}

func (h *heldSlots) peak() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}
