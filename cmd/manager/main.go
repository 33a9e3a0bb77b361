// Command manager runs the tickstack operator: the LatencyProfile controller and the admission webhooks.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

func main() {
	var metricsAddr, probeAddr, certDir string
	var leaderElect, enableWebhooks bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so only one replica reconciles")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "serve the admission webhooks")
	flag.StringVar(&certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "folder with the webhook serving tls.crt and tls.key")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "tickstack-manager.tickstack.io",
		WebhookServer:          webhook.NewServer(webhook.Options{CertDir: certDir}),
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := (&controllers.LatencyProfileReconciler{Client: mgr.GetClient(), Metrics: controllers.NewProfileMetrics(metrics.Registry)}).SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the LatencyProfile controller")
		os.Exit(1)
	}
	if enableWebhooks {
		if err := tswebhook.SetupLatencyProfileWebhook(mgr); err != nil {
			log.Error(err, "setting up the LatencyProfile webhook")
			os.Exit(1)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the ready check")
		os.Exit(1)
	}
	log.Info("starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}
