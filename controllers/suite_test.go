package controllers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/controllers/node"
	"github.com/tickstack/tickstack/controllers/profile"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

// These suites run against a real kube-apiserver and etcd (envtest): watches, patches, finalizers,
// CEL rules and the admission webhook all behave as in a cluster.
// operatorNS is the operator's namespace: the network controller's ConfigMap and default NADs go
// there.
const operatorNS = "tspw-system"

// devicePluginDS is the SR-IOV device plugin's DaemonSet in operatorNS (the network controller's
// --device-plugin-daemonset).
const devicePluginDS = "tspw-sriovdp"

func devicePluginDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": "tspw-sriovdp"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: devicePluginDS},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "sriovdp", Image: "tspw.test/sriovdp:1"}}},
			},
		},
	}
}

var (
	k8s client.Client
	// mgrClient is the manager's own client: it reads through the manager's cache.
	mgrClient client.Client
	cfg       *rest.Config
	testEnv   *kubetest.Env
	scheme    = runtime.NewScheme()
	ctx       context.Context
	cancel    context.CancelFunc
	// profileMetricsReg holds the LatencyProfile controller's gauges.
	profileMetricsReg = prometheus.NewRegistry()
	// benchClock is the LatencyBenchmark controller's clock; tests move it to reach a schedule.
	benchClock = &testClock{}
	// benchMetricsReg holds the LatencyBenchmark controller's metrics.
	benchMetricsReg = prometheus.NewRegistry()
	// nodeMetricsReg holds the node metrics controller's series.
	nodeMetricsReg = prometheus.NewRegistry()
	// resolveOnNode is the manager's --resolve-on-node; off but in the tests that turn it on
	// (resolveonnode_test.go). The manager's default is on; off, the suite's other tests drive
	// the spec.tuning path, which --resolve-on-node=false and agents without the capability take.
	resolveOnNode atomic.Bool
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))

	utilruntime.Must(render.AddToScheme(scheme))
	env, err := kubetest.Start(kubetest.Options{Webhooks: true})
	Expect(err).NotTo(HaveOccurred())
	testEnv = env
	cfg = env.Config
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}})).To(Succeed())
	// The device plugin's DaemonSet, as the chart deploys it, for the network controller to roll.
	Expect(k8s.Create(ctx, devicePluginDaemonSet())).To(Succeed())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The caches cmd/manager runs with (lean Nodes and node states): every spec reads
		// through them.
		Cache:         CacheOptions(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: env.WebhookServer(),
	})
	Expect(err).NotTo(HaveOccurred())
	// The wiring cmd/manager ships, with the test's clock, image and namespace.
	mgrClient = mgr.GetClient()
	Expect(SetupControllers(mgr, Options{
		Network:    network.NetworkOptions{Namespace: operatorNS, DevicePluginDaemonSet: devicePluginDS},
		BMC:        bios.BMCPolicy{SecretNamespace: operatorNS},
		BenchImage: "tslb.test/bench:1",
		// Long enough that results uploaded a few hundred milliseconds apart, on a loaded
		// machine, are judged in one batch (the batching spec).
		BenchmarkResultsBatch: 3 * time.Second,
		Now:                   benchClock.Now,
		ProfileMetrics:        profile.NewProfileMetrics(profileMetricsReg),
		BenchmarkMetrics:      benchmark.NewBenchmarkMetrics(benchMetricsReg),
		NodeMetrics:           node.NewNodeMetrics(nodeMetricsReg),
		UninstallGuard:        []string{guardName},
		UninstallGuardPeriod:  200 * time.Millisecond,
		ResolveOnNode:         resolveOnNode.Load,
	})).To(Succeed())
	Expect(tswebhook.SetupLatencyProfileWebhook(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	// Wait for the webhook server to serve before any test creates a profile.
	Expect(env.WaitForWebhooks(20 * time.Second)).To(Succeed())
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// testClock is a settable clock for the controllers.
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the wall clock moved by Advance.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}
