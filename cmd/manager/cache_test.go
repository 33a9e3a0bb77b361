package main

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestCacheKeepsNoSettings: the manager's cache holds a node state without its status.settings
// and status.tuning (and without managedFields), keeps everything the manager reads, one copy of
// facts two nodes report alike, and a patch the manager makes from that cached copy leaves the
// agent's settings and tuning on the API server as they were.
func TestCacheKeepsNoSettings(t *testing.T) {
	env, c := kubetest.New(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	lns := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{tsv1.ProfileLabel: "p"}},
		Spec:       tsv1.LatencyNodeStateSpec{NodeName: "node-a", Profile: tsv1.ProfileReference{Name: "p", Generation: 1}},
	}
	createWithStatus(ctx, t, c, lns, func(lns *tsv1.LatencyNodeState) {
		lns.Status = tsv1.LatencyNodeStateStatus{
			ObservedGeneration: lns.Generation,
			Facts:              &tsv1.NodeFacts{OnlineCPUs: "0-7", Sockets: 1, ThreadsPerCore: 1},
			Settings: []tsv1.SettingStatus{
				{Name: "sysctl/vm.stat_interval", Desired: "10", Observed: "10", State: tsv1.SettingInSync},
				{Name: "sysctl/kernel.timer_migration", Desired: "0", Observed: "0", State: tsv1.SettingInSync},
			},
			Tuning:     &tsv1.NodeTuning{Sysctls: map[string]string{"vm.stat_interval": "10"}},
			Conditions: []metav1.Condition{{Type: tsv1.NodeApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "2 settings in effect", LastTransitionTime: metav1.Now()}},
		}
	})
	// A second node reporting the same facts.
	twin := &tsv1.LatencyNodeState{
		ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{tsv1.ProfileLabel: "p"}},
		Spec:       tsv1.LatencyNodeStateSpec{NodeName: "node-b", Profile: tsv1.ProfileReference{Name: "p", Generation: 1}},
	}
	createWithStatus(ctx, t, c, twin, func(twin *tsv1.LatencyNodeState) {
		twin.Status = tsv1.LatencyNodeStateStatus{Facts: &tsv1.NodeFacts{OnlineCPUs: "0-7", Sockets: 1, ThreadsPerCore: 1}}
	})

	ca := startCache(ctx, t, env.Config, &tsv1.LatencyNodeState{})
	cached := &tsv1.LatencyNodeState{}
	if err := ca.Get(ctx, client.ObjectKeyFromObject(lns), cached); err != nil {
		t.Fatal(err)
	}
	cachedTwin := &tsv1.LatencyNodeState{}
	if err := ca.Get(ctx, client.ObjectKeyFromObject(twin), cachedTwin, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	shared := &tsv1.LatencyNodeState{}
	if err := ca.Get(ctx, client.ObjectKeyFromObject(lns), shared, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	switch {
	case shared.Status.Facts != cachedTwin.Status.Facts:
		t.Error("two node states with the same facts hold two copies: the cache does not intern them")
	case cached.Status.Tuning != nil:
		t.Errorf("the cache holds status.tuning: %+v", cached.Status.Tuning)
	case cached.Status.Settings != nil:
		t.Errorf("the cache holds status.settings: %+v", cached.Status.Settings)
	case len(cached.ManagedFields) != 0:
		t.Errorf("the cache holds managedFields: %d entries", len(cached.ManagedFields))
	case cached.Status.Facts == nil || cached.Status.Facts.OnlineCPUs != "0-7":
		t.Errorf("the cache lost status.facts, which the profile controller resolves from: %+v", cached.Status.Facts)
	case len(cached.Status.Conditions) != 1 || cached.Status.ObservedGeneration != lns.Generation:
		t.Errorf("the cache lost the conditions or observedGeneration the roll-ups read: %+v", cached.Status)
	case cached.Spec.Profile.Name != "p":
		t.Errorf("the cache lost the spec: %+v", cached.Spec)
	}

	// The manager's kinds of writes from the cached copy: a spec patch and a status patch.
	orig := cached.DeepCopy()
	cached.Spec.RebootGranted = true
	if err := c.Patch(ctx, cached, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	orig = cached.DeepCopy()
	cached.Status.BIOS = &tsv1.BIOSStatus{}
	cached.Status.BIOS.StagedHash = "h1"
	if err := c.Status().Patch(ctx, cached, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	got := &tsv1.LatencyNodeState{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(lns), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Settings) != 2 || got.Status.Tuning == nil || !got.Spec.RebootGranted || got.Status.BIOS == nil || got.Status.BIOS.StagedHash != "h1" {
		t.Errorf("after the manager's patches from its cache: settings %+v, tuning %+v, rebootGranted %v, bios %+v; want the agent's 2 settings and tuning kept and both patches in",
			got.Status.Settings, got.Status.Tuning, got.Spec.RebootGranted, got.Status.BIOS)
	}
}

// TestCacheLeanNodes: the manager's cache holds a Node with what its controllers read and
// without the rest (images, capacity, kubelet conditions, other components' annotations), and the
// manager's Node writes from that cached copy (a merge patch of labels, annotations and the taint
// list) leave everything the cache dropped as it was on the API server. (The PTP gate's condition
// patch, which names its one condition, is checked against the kubelet's Ready in the controllers'
// envtest, "PTP readiness gate".)
func TestCacheLeanNodes(t *testing.T) {
	env, c := kubetest.New(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "lean-node", Labels: map[string]string{"rack": "r1"},
			Annotations: map[string]string{tsv1.BMCAnnotation: "bmc-1", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "other.example/t", Effect: corev1.TaintEffectNoSchedule}}},
	}
	createWithStatus(ctx, t, c, n, func(n *corev1.Node) {
		n.Status = corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")},
			Images:   []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 20}},
			NodeInfo: corev1.NodeSystemInfo{BootID: "boot-1", KernelVersion: "6.1.0"},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
			},
		}
	})

	ca := startCache(ctx, t, env.Config, &corev1.Node{})
	got := &corev1.Node{}
	if err := ca.Get(ctx, client.ObjectKeyFromObject(n), got); err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Status.Images != nil || got.Status.Capacity != nil || got.Status.NodeInfo.KernelVersion != "" || len(got.Status.Conditions) != 0:
		t.Errorf("the cache holds status the manager never reads: %+v", got.Status)
	case got.Annotations["node.alpha.kubernetes.io/ttl"] != "" || len(got.ManagedFields) != 0:
		t.Errorf("the cache holds another component's annotation or managedFields: %v, %d", got.Annotations, len(got.ManagedFields))
	case got.Labels["rack"] != "r1" || got.Annotations[tsv1.BMCAnnotation] != "bmc-1":
		t.Errorf("the cache lost the labels or tickstack.io/ annotations: %v %v", got.Labels, got.Annotations)
	case !got.Spec.Unschedulable || !slices.ContainsFunc(got.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "other.example/t" }) || got.Status.NodeInfo.BootID != "boot-1":
		t.Errorf("the cache lost spec.unschedulable, the taints or the boot ID: %+v %+v", got.Spec, got.Status.NodeInfo)
	}

	// The manager's writes, each from the cached copy as its controllers make them.
	orig := got.DeepCopy()
	got.Labels[tsv1.ProfileLabel] = "p"
	got.Annotations[tsv1.BenchmarkPassedAnnotation] = "p"
	got.Spec.Taints = append(got.Spec.Taints, corev1.Taint{Key: tsv1.UnvalidatedTaint, Value: "p", Effect: corev1.TaintEffectNoSchedule})
	if err := c.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	live := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), live); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, cond := range live.Status.Conditions {
		types = append(types, string(cond.Type))
	}
	switch {
	case len(live.Status.Images) != 1 || live.Status.Capacity.Cpu().String() != "64" || live.Status.NodeInfo.KernelVersion != "6.1.0":
		t.Errorf("the manager's patches lost the status it does not cache: %+v", live.Status)
	case !slices.Equal(types, []string{string(corev1.NodeReady), string(corev1.NodeMemoryPressure)}):
		t.Errorf("conditions after the manager's patch: %v, want the kubelet's Ready and MemoryPressure only", types)
	case live.Annotations["node.alpha.kubernetes.io/ttl"] != "0" || live.Annotations[tsv1.BenchmarkPassedAnnotation] != "p" || live.Labels[tsv1.ProfileLabel] != "p":
		t.Errorf("annotations and labels after the manager's patch: %v %v", live.Annotations, live.Labels)
	case len(live.Spec.Taints) != len(got.Spec.Taints) || live.Spec.Taints[0].Key != "other.example/t" || !live.Spec.Unschedulable:
		t.Errorf("spec after the manager's patch: %+v", live.Spec)
	}
}

// startCache starts a cache with the manager's options (controllers.CacheOptions) and an
// informer for obj's kind, and waits for it to sync.
// createWithStatus creates obj, then writes the status setStatus gives it (a create drops it).
func createWithStatus[T client.Object](ctx context.Context, t *testing.T, c client.Client, obj T, setStatus func(T)) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	setStatus(obj)
	if err := c.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func startCache(ctx context.Context, t *testing.T, cfg *rest.Config, obj client.Object) cache.Cache {
	t.Helper()
	opts := controllers.CacheOptions()
	opts.Scheme = kubetest.Scheme()
	ca, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GetInformer(ctx, obj); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !ca.WaitForCacheSync(syncCtx) {
		t.Fatal("the cache did not sync within a minute")
	}
	return ca
}

// TestCacheOwnConfigMaps: the manager's cache holds the ConfigMaps the operator makes (the device
// plugin's, as internal/render makes it, and any other labelled app.kubernetes.io/managed-by=
// tickstack, as the benchmarks' results ConfigMaps are) and none of the cluster's others (a
// namespace's kube-root-ca.crt, an application's configuration), including one made after the
// cache started.
func TestCacheOwnConfigMaps(t *testing.T) {
	env, c := kubetest.New(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dp, err := render.DevicePluginConfigMap(nil, "tickstack.io", "sriovdp-config", "default")
	if err != nil || dp == nil {
		t.Fatalf("rendering the device plugin's ConfigMap: %v", err)
	}
	theirs := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "x"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-config", Labels: map[string]string{"app.kubernetes.io/managed-by": "helm"}},
			Data: map[string]string{"config.yaml": "big: true"}},
	}
	for _, cm := range append([]*corev1.ConfigMap{dp}, theirs...) {
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}

	ca := startCache(ctx, t, env.Config, &corev1.ConfigMap{})
	if err := ca.Get(ctx, client.ObjectKeyFromObject(dp), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the device plugin's ConfigMap is not in the manager's cache: %v", err)
	}
	for _, cm := range theirs {
		if err := ca.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s, not the operator's, read from the manager's cache: %v, want NotFound", cm.Name, err)
		}
	}

	// One of the operator's made after the start (a results ConfigMap) comes in by the watch; one
	// of another's made then does not.
	later := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench-1-node-a",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "tickstack", tsv1.BenchmarkLabel: "bench"}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other-later"}}
	for _, cm := range []*corev1.ConfigMap{other, later} {
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Poll(t, 30*time.Second, "a labelled ConfigMap made after the cache started reaches it", func() error {
		return ca.Get(ctx, client.ObjectKeyFromObject(later), &corev1.ConfigMap{})
	})
	var list corev1.ConfigMapList
	if err := ca.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	if want := []string{"bench-1-node-a", "sriovdp-config"}; !slices.Equal(names, want) {
		t.Errorf("the manager's cache lists ConfigMaps %v, want %v", names, want)
	}
}
