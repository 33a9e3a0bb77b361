package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// restCfg reaches the envtest API server the tests of this package share.
var restCfg *rest.Config

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	env, err := kubetest.Start(kubetest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	restCfg = env.Config
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// operatorNS is the operator's namespace in these tests.
const operatorNS = "tsint-operator"

// operatorScheme is the scheme of the operator's manager: the built-ins, tickstack's API and the
// third-party kinds it renders.
func operatorScheme() *runtime.Scheme {
	s := agenttest.Scheme()
	utilruntime.Must(render.AddToScheme(s))
	return s
}

// newOperator is the operator's manager as cmd/manager makes it (every controller through
// SetupControllers, the BIOS controller's periods from b) on the envtest API server, with no
// metrics or health endpoint; opts adds to that (leader election, a logger). It creates the
// operator's namespace; the caller starts the manager.
func newOperator(t *testing.T, c client.Client, opts ctrl.Options, b bios.BIOSReconciler) ctrl.Manager {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}
	if err := c.Create(context.Background(), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	opts.Scheme, opts.Metrics, opts.HealthProbeBindAddress = operatorScheme(), metricsserver.Options{BindAddress: "0"}, "0"
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = controllers.SetupControllers(mgr, controllers.Options{Network: network.NetworkOptions{Namespace: operatorNS}, BIOS: b})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// profileReady says why profile is not Ready (nil once it is), for Eventually.
func profileReady(ctx context.Context, c client.Client, profile *tsv1.LatencyProfile) func() error {
	return func() error {
		p := &tsv1.LatencyProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), p); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, tsv1.ProfileReady) {
			return fmt.Errorf("profile conditions %+v", p.Status.Conditions)
		}
		return nil
	}
}
