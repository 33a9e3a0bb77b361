package webhook

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// webhookEnv is a real kube-apiserver that calls this package's webhooks as config/webhook
// configures them (objectSelector, failurePolicy), served by a manager as cmd/manager serves them.
type webhookEnv struct {
	c client.Client
	// cfg reaches the API server as its administrator (for impersonation).
	cfg *rest.Config
	// serving is nil while the webhook server accepts TLS connections.
	serving func() error
	stopMgr func()
	done    chan error
	once    sync.Once
}

// stop stops the manager and its webhook server.
func (w *webhookEnv) stop(t *testing.T) {
	w.once.Do(func() {
		w.stopMgr()
		if err := <-w.done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// serveWebhooks starts the API server and the LatencyProfile and pod webhooks, and waits until
// they serve. Everything stops when the test ends.
func serveWebhooks(t *testing.T) *webhookEnv {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))
	env, k8s := kubetest.New(t, kubetest.Options{Webhooks: true})
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:        scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: env.WebhookServer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupLatencyProfileWebhook(mgr); err != nil {
		t.Fatal(err)
	}
	if err := SetupPodWebhook(mgr, PodOptions{DataplaneImage: tspwImage, NetworkNamespace: tspwNetNS}); err != nil {
		t.Fatal(err)
	}
	SetupEvictionWebhook(mgr.GetWebhookServer(), mgr.GetAPIReader())
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhookEnv{c: k8s, cfg: env.Config, stopMgr: cancel, done: make(chan error, 1)}
	go func() { w.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { w.stop(t) })
	addr := env.WebhookAddress()
	w.serving = func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // local test server
		if err != nil {
			return err
		}
		return conn.Close()
	}
	testutil.Poll(t, 20*time.Second, "webhook server serving", w.serving)
	return w
}
