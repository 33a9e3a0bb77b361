package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

// These suites run against a real kube-apiserver and etcd (envtest): watches, patches, finalizers,
// CEL rules and the admission webhook all behave as in a cluster.
var (
	k8s     client.Client
	cfg     *rest.Config
	testEnv *envtest.Environment
	scheme  = runtime.NewScheme()
	ctx     context.Context
	cancel  context.CancelFunc
	metrics *ProfileMetrics
	// benchClock is the LatencyBenchmark controller's clock; tests move it to reach a schedule.
	benchClock = &testClock{}
	// benchMetricsReg holds the LatencyBenchmark controller's metrics.
	benchMetricsReg = prometheus.NewRegistry()
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

	_, err := testutil.EnvtestAssets()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("..", "config", "webhook")}},
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	wh := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	metrics = NewProfileMetrics(prometheus.NewRegistry())
	Expect((&LatencyProfileReconciler{Client: mgr.GetClient(), Metrics: metrics}).SetupWithManager(mgr)).To(Succeed())
	Expect((&LatencyBenchmarkReconciler{Client: mgr.GetClient(), Image: "tslb.test/bench:1", Now: benchClock.Now,
		Recorder: mgr.GetEventRecorder("latencybenchmark"), Metrics: NewBenchmarkMetrics(benchMetricsReg)}).SetupWithManager(mgr)).To(Succeed())
	Expect((&NodeValidationReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("nodevalidation")}).SetupWithManager(mgr)).To(Succeed())
	Expect((&PTPGateReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)).To(Succeed())
	Expect(tswebhook.SetupLatencyProfileWebhook(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	// Wait for the webhook server to serve before any test creates a profile.
	addr := net.JoinHostPort(wh.LocalServingHost, fmt.Sprint(wh.LocalServingPort))
	Eventually(func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // local test server
		if err != nil {
			return err
		}
		return conn.Close()
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
