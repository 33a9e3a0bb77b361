// Command manager runs the tickstack operator: the LatencyProfile controller and the admission webhooks.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	uberzap "go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/controllers/node"
	"github.com/tickstack/tickstack/controllers/profile"
	"github.com/tickstack/tickstack/internal/certs"
	"github.com/tickstack/tickstack/internal/metricsauth"
	"github.com/tickstack/tickstack/internal/render"
	"github.com/tickstack/tickstack/internal/version"
	tswebhook "github.com/tickstack/tickstack/internal/webhook"
)

// podFlags are the flags of the pod webhook, the network controller and the webhook certificate.
type podFlags struct {
	namespace, resourcePrefix, dataplaneImage, certMode, xdpRunDir, devicePluginDS string
	secretName, serviceName, mutatingConfig, validatingConfig                      string
	caLifetime, certLifetime                                                       time.Duration
}

func (f *podFlags) bind() {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "tickstack-system"
	}
	flag.StringVar(&f.namespace, "namespace", ns, "the operator's namespace: device plugin ConfigMap, default NAD namespace, webhook Secret (default $POD_NAMESPACE)")
	flag.StringVar(&f.resourcePrefix, "resource-prefix", tsv1.DefaultResourcePrefix, "SR-IOV device plugin resource prefix: VFs are <prefix>/<resourceName>")
	flag.StringVar(&f.devicePluginDS, "device-plugin-daemonset", "", "the SR-IOV network device plugin's DaemonSet in --namespace, when tickstack deploys it: rolled once whenever the rendered configuration changes (the plugin reads it only at start); empty: none")
	flag.StringVar(&f.dataplaneImage, "dataplane-image", defaultImage("agent"), "image holding "+tswebhook.DataplaneLibraryInImage+", copied into bypass pods by an init container")
	flag.StringVar(&f.xdpRunDir, "xdp-run-dir", render.DefaultXDPRunDir, "run directory of the node daemon tickstack-xdpd (the chart's xdpd.runDir): bypass attachments' tickstack-xdp plugin finds ctl.sock there (bypass pods get its socket from the device plugin, tickstack.io/xdpd)")
	flag.StringVar(&f.certMode, "webhook-cert-mode", "operator", "who manages the webhook serving certificate: operator (a CA and certificate in a Secret, caBundle patched, renewed) or cert-manager (files in --webhook-cert-dir)")
	flag.StringVar(&f.secretName, "webhook-secret-name", "tickstack-webhook-server-cert", "Secret holding the webhook CA and serving certificate (operator mode)")
	flag.StringVar(&f.serviceName, "webhook-service-name", "tickstack-webhook-service", "Service in front of the webhook server, named in the certificate (operator mode)")
	flag.StringVar(&f.mutatingConfig, "mutating-webhook-configuration", "tickstack-mutating-webhook-configuration", "MutatingWebhookConfiguration whose caBundle is kept (operator mode)")
	flag.StringVar(&f.validatingConfig, "validating-webhook-configuration", "tickstack-validating-webhook-configuration", "ValidatingWebhookConfiguration whose caBundle is kept (operator mode)")
	flag.DurationVar(&f.caLifetime, "webhook-ca-lifetime", 5*365*24*time.Hour, "lifetime of the webhook CA (operator mode); renewed with a third left")
	flag.DurationVar(&f.certLifetime, "webhook-cert-lifetime", 90*24*time.Hour, "lifetime of the webhook serving certificate (operator mode); renewed with a third left")
}

// defaultImage is the name the image build gives tickstack's image tickstack-NAME of this
// binary's release, in the chart's default registry: hack/images/build.sh tags the images with the
// chart's appVersion, which hack/ldflags.sh stamps into the binary as its version. The chart and
// config/default pass the names they install; this default serves a manager started by hand.
func defaultImage(name string) string {
	return "localhost/tickstack-" + name + ":" + version.Get().Version
}

// certManager returns the operator's certificate manager, or nil in cert-manager mode.
func (f *podFlags) certManager() (*certs.Manager, error) {
	switch f.certMode {
	case "cert-manager":
		return nil, nil
	case "operator":
	default:
		return nil, fmt.Errorf("--webhook-cert-mode=%q: use operator or cert-manager", f.certMode)
	}
	// A direct client: the manager's cached one would watch every Secret in the cluster.
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating the certificate client: %w", err)
	}
	return &certs.Manager{Client: c, Options: certs.Options{
		Namespace: f.namespace, SecretName: f.secretName, ServiceName: f.serviceName,
		MutatingWebhooks: []string{f.mutatingConfig}, ValidatingWebhooks: []string{f.validatingConfig},
		CALifetime: f.caLifetime, CertLifetime: f.certLifetime,
	}}, nil
}

func main() {
	var metricsAddr, probeAddr, pprofAddr, certDir, benchImage, benchmarkClusterRole string
	var leaderElect, enableWebhooks, allowInsecureBMC, metricsSecure, resolveOnNode bool
	var apiQPS float64
	var apiBurst int
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "serve the metrics over HTTPS to clients the API server authenticates and authorizes (get on the non-resource URL /metrics: the chart's metrics-reader ClusterRole); false: plain HTTP to anyone who reaches the port")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "address Go's pprof endpoints (/debug/pprof/) bind to, for profiling the manager's CPU and memory; empty: off")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader (a Lease in --namespace) so that only one replica reconciles; every replica serves the webhooks")
	flag.Float64Var(&apiQPS, "kube-api-qps", 500, "requests per second to the API server (client-side limit; the server's priority and fairness still apply): with --resolve-on-node=false (or for agents of an older release) a profile change writes one node state per node it changes, so a fleet of 5,000 nodes needs hundreds (docs/bench-scale.md)")
	flag.IntVar(&apiBurst, "kube-api-burst", 1000, "burst above --kube-api-qps")
	flag.BoolVar(&enableWebhooks, "enable-webhooks", true, "serve the admission webhooks")
	flag.BoolVar(&allowInsecureBMC, "allow-insecure-bmc", false, "accept BMC objects with spec.tls.insecureSkipVerify or spec.allowPlainHTTP (their credentials can be taken on the way); off: such objects are refused (condition Accepted False, InsecureTransportRefused)")
	flag.BoolVar(&resolveOnNode, "resolve-on-node", true, "let the agents that can (status.capabilities ResolveOnNode) resolve their own node's tuning from the profile: their node states get spec.profile.resolveOnNode and no spec.tuning, and a profile change costs no node state write (docs/architecture.md, \"Fleet scale\"; on by default, docs/bench-scale.md); a live node is handed over only when its agent has in effect what it would resolve. --resolve-on-node=false: every node gets spec.tuning, nodes handed over before get it back with the same values")
	flag.StringVar(&certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "folder with the webhook serving tls.crt and tls.key (cert-manager mode)")
	var pf podFlags
	pf.bind()
	flag.StringVar(&benchImage, "bench-image", defaultImage("bench"), "image of the LatencyBenchmark pods (sockperf, rt-tests, the dataplane, tickstack-bench, tickstack-bench-upload)")
	flag.StringVar(&benchmarkClusterRole, "benchmark-cluster-role", benchmark.DefaultBenchmarkClusterRole, "the ClusterRole an administrator binds to the manager's service account in a namespace to opt it in to benchmarks (the chart's <fullname>-benchmark-namespace); named in a LatencyBenchmark's NamespaceOptedIn condition")
	var uninstallGuard namesFlag
	flag.Var(&uninstallGuard, "uninstall-guard", "admission policies put back if they are deleted while a LatencyProfile or LatencyNodeState exists (comma-separated; each binding named as its policy): the uninstall guard's and the agent's own-node policy, which no admission policy can guard; empty keeps none")
	opts := zap.Options{ZapOpts: []uberzap.Option{lazyWith}}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tsv1.AddToScheme(scheme))
	utilruntime.Must(render.AddToScheme(scheme))

	certMgr, err := pf.certManager()
	if err != nil {
		log.Error(err, "setting up the webhook certificate")
		os.Exit(1)
	}
	whOpts := webhook.Options{CertDir: certDir}
	if certMgr != nil {
		whOpts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certMgr.GetCertificate }}
	}

	if apiQPS <= 0 || apiBurst <= 0 {
		log.Error(fmt.Errorf("--kube-api-qps=%v, --kube-api-burst=%d", apiQPS, apiBurst), "both must be above 0")
		os.Exit(1)
	}
	restCfg := ctrl.GetConfigOrDie()
	restCfg.QPS, restCfg.Burst = float32(apiQPS), apiBurst
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme: scheme,
		// What the caches keep of a fleet's objects: controllers/cache.go.
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsauth.Options(metricsAddr, metricsSecure),
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       pprofAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       leaderElectionID,
		// The Lease lives in the operator's namespace, which the namespaced leader election Role
		// covers (config/rbac/leader_election_role.yaml).
		LeaderElectionNamespace: pf.namespace,
		// A replica that stops (a rolling update, a drained node) hands the Lease over at once
		// instead of making the other wait out its duration; safe because the process ends as
		// soon as Start returns.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(whOpts),
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := controllers.SetupControllers(mgr, controllers.Options{
		Network:              network.NetworkOptions{Namespace: pf.namespace, ResourcePrefix: pf.resourcePrefix, XDPRunDir: pf.xdpRunDir, DevicePluginDaemonSet: pf.devicePluginDS},
		BenchImage:           benchImage,
		BenchmarkClusterRole: benchmarkClusterRole,
		BMC:                  bios.BMCPolicy{AllowInsecure: allowInsecureBMC, SecretNamespace: pf.namespace},
		UninstallGuard:       uninstallGuard.names,
		ProfileMetrics:       profile.NewProfileMetrics(metrics.Registry),
		BenchmarkMetrics:     benchmark.NewBenchmarkMetrics(metrics.Registry),
		NodeMetrics:          node.NewNodeMetrics(metrics.Registry),
		ResolveOnNode:        func() bool { return resolveOnNode },
	}); err != nil {
		log.Error(err, "setting up the controllers")
		os.Exit(1)
	}
	if enableWebhooks {
		if err := tswebhook.SetupLatencyProfileWebhook(mgr); err != nil {
			log.Error(err, "setting up the LatencyProfile webhook")
			os.Exit(1)
		}
		if err := tswebhook.SetupPodWebhook(mgr, tswebhook.PodOptions{
			ResourcePrefix: pf.resourcePrefix, DataplaneImage: pf.dataplaneImage, NetworkNamespace: pf.namespace,
			XDPRunDir: pf.xdpRunDir,
		}); err != nil {
			log.Error(err, "setting up the pod webhook")
			os.Exit(1)
		}
		tswebhook.SetupEvictionWebhook(mgr.GetWebhookServer(), mgr.GetAPIReader())
		if certMgr != nil {
			if err := mgr.Add(certMgr); err != nil {
				log.Error(err, "adding the webhook certificate manager")
				os.Exit(1)
			}
		}
	}
	if err := addChecks(mgr, enableWebhooks, certMgr); err != nil {
		log.Error(err, "adding the health and ready checks")
		os.Exit(1)
	}
	log.Info("starting the manager", version.Get().KeysAndValues()...)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

// addChecks adds the manager's health and ready checks. Every replica serves the webhooks, the
// leader and the others alike (controller-runtime starts the webhook server before, and whatever
// the outcome of, leader election): with webhooks, a replica is ready once its webhook server
// accepts TLS connections (and, with the operator's certificate, once that is issued), so the
// Service sends admission requests only to replicas that can answer them.
func addChecks(mgr ctrl.Manager, webhooks bool, certMgr *certs.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if webhooks {
		if certMgr != nil {
			if err := mgr.AddReadyzCheck("webhook-certificate", certMgr.Ready); err != nil {
				return err
			}
		}
		if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// leaderElectionID names the Lease the replicas elect their leader on; the leader election Role
// grants get and update on this name alone.
const leaderElectionID = "tickstack-manager.tickstack.io"

// namesFlag is a comma-separated list of names.
type namesFlag struct{ names []string }

func (f *namesFlag) String() string { return strings.Join(f.names, ",") }

func (f *namesFlag) Set(v string) error {
	f.names = nil
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	return nil
}
