// Package controllers wires the operator's controllers: SetupControllers builds every reconciler of
// the controller packages (profile, benchmark, bios, network, node) and the uninstall guard with
// their defaults and registers them with the manager. cmd/manager and the envtest suite of every
// controller use it; the packages themselves import no other controller package.
package controllers

import (
	"cmp"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/benchmark"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/controllers/guard"
	"github.com/tickstack/tickstack/controllers/network"
	"github.com/tickstack/tickstack/controllers/node"
	"github.com/tickstack/tickstack/controllers/profile"
	"github.com/tickstack/tickstack/internal/render"
)

// The manager's metrics are served behind controller-runtime's authentication and authorization
// filter (internal/metricsauth): it asks the API server who a scraper is and whether it may get
// /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure the operator's controllers. cmd/manager sets them from its flags; the tests
// set what they test. Zero values take the defaults (withDefaults): SetupControllers, where the
// reconcilers are built, is the one place that sets them.
type Options struct {
	// Network configures the network controller; its names default to tsv1.DefaultResourcePrefix,
	// network.DefaultDevicePluginConfigMap, network.DefaultNodeFeatureRule and
	// render.DefaultXDPRunDir.
	Network network.NetworkOptions
	// BenchImage is the image of the benchmark's runner and reflector pods (--bench-image); "" is
	// benchmark.DefaultBenchImage.
	BenchImage string
	// BenchmarkClusterRole is the ClusterRole that opts a namespace in to benchmarks
	// (--benchmark-cluster-role), named in the benchmark's NamespaceOptedIn condition; "" is
	// benchmark.DefaultBenchmarkClusterRole.
	BenchmarkClusterRole string
	// BenchmarkResultsBatch is how long a benchmark's results that came in wait for those of its
	// other measuring nodes, so that their verdicts go into one status write; zero is
	// benchmark.DefaultResultsBatch.
	BenchmarkResultsBatch time.Duration
	// ProfileMetrics, BenchmarkMetrics and NodeMetrics receive the controllers' metrics
	// (profile.NewProfileMetrics, benchmark.NewBenchmarkMetrics, node.NewNodeMetrics); nil exports
	// none (and, for NodeMetrics, sets up no node metrics controller).
	ProfileMetrics   *profile.ProfileMetrics
	BenchmarkMetrics *benchmark.BenchmarkMetrics
	NodeMetrics      *node.NodeMetrics
	// Now is the clock of the benchmark and BIOS controllers and of the maintenance windows; nil is
	// time.Now.
	Now func() time.Time
	// BIOS holds the BIOS controller's periods (VerifyPeriod, RetryPeriod, Timeout, HoldTimeout;
	// zero is bios.DefaultBIOS*); its clients and clock are set here.
	BIOS bios.BIOSReconciler
	// BMC is what the operator accepts in a BMC object (--allow-insecure-bmc, the operator's
	// namespace for credentials Secrets); the BIOS and BMC controllers apply it.
	BMC bios.BMCPolicy
	// UninstallGuard names the uninstall guard's policies (--uninstall-guard) the manager keeps in
	// place while nodes are tuned; empty keeps none. UninstallGuardPeriod: zero is
	// guard.DefaultUninstallGuardPeriod.
	UninstallGuard       []string
	UninstallGuardPeriod time.Duration
	// ResolveOnNode (--resolve-on-node) hands the nodes whose agent reports the ResolveOnNode
	// capability their own resolution (docs/architecture.md, "Fleet scale"); nil is off. A
	// function, read on every reconcile, so that the envtest suite turns it on and off on its one
	// running manager; cmd/manager's is fixed at start.
	ResolveOnNode func() bool
}

// SetupControllers registers every controller of the operator with mgr: the one wiring that
// cmd/manager ships and the envtest suites test.
func SetupControllers(mgr ctrl.Manager, o Options) error {
	o = o.withDefaults()
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	biosR := o.BIOS
	biosR.Client, biosR.APIReader, biosR.Recorder, biosR.Now, biosR.Policy = c, reader, mgr.GetEventRecorder("bios"), o.Now, o.BMC
	for _, s := range []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"LatencyProfile", (&profile.LatencyProfileReconciler{Client: c, Metrics: o.ProfileMetrics, Now: o.Now, ResolveOnNode: o.ResolveOnNode}).SetupWithManager},
		{"node label", (&node.NodeLabelReconciler{Client: c}).SetupWithManager},
		{"network", (&network.NetworkReconciler{Client: c, APIReader: reader, Options: o.Network}).SetupWithManager},
		{"LatencyBenchmark", (&benchmark.LatencyBenchmarkReconciler{Client: c, APIReader: reader, Image: o.BenchImage, Now: o.Now, ClusterRole: o.BenchmarkClusterRole,
			Recorder: mgr.GetEventRecorder("latencybenchmark"), Metrics: o.BenchmarkMetrics, ResultsBatch: o.BenchmarkResultsBatch}).SetupWithManager},
		{"BIOS", biosR.SetupWithManager},
		{"BMC", (&bios.BMCReconciler{Client: c, Policy: o.BMC}).SetupWithManager},
		{"node validation", (&node.NodeValidationReconciler{Client: c, Recorder: mgr.GetEventRecorder("nodevalidation")}).SetupWithManager},
		{"PTP gate", (&node.PTPGateReconciler{Client: c}).SetupWithManager},
	} {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	if o.NodeMetrics != nil {
		if err := (&node.NodeMetricsReconciler{Client: c, Metrics: o.NodeMetrics}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the node metrics controller: %w", err)
		}
	}
	if len(o.UninstallGuard) > 0 {
		g := &guard.UninstallGuard{Client: c, APIReader: reader, Names: o.UninstallGuard, Period: o.UninstallGuardPeriod}
		if err := mgr.Add(g); err != nil {
			return fmt.Errorf("setting up the uninstall guard: %w", err)
		}
	}
	return nil
}

// withDefaults returns o with every zero value that has a default set to it.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.BenchImage = cmp.Or(o.BenchImage, benchmark.DefaultBenchImage)
	o.BenchmarkClusterRole = cmp.Or(o.BenchmarkClusterRole, benchmark.DefaultBenchmarkClusterRole)
	o.BenchmarkResultsBatch = cmp.Or(o.BenchmarkResultsBatch, benchmark.DefaultResultsBatch)
	n := &o.Network
	for _, d := range []struct {
		field *string
		value string
	}{
		{&n.ResourcePrefix, tsv1.DefaultResourcePrefix},
		{&n.DevicePluginConfigMap, network.DefaultDevicePluginConfigMap},
		{&n.NodeFeatureRule, network.DefaultNodeFeatureRule},
		{&n.XDPRunDir, render.DefaultXDPRunDir},
	} {
		if *d.field == "" {
			*d.field = d.value
		}
	}
	b := &o.BIOS
	for _, d := range []struct {
		field *time.Duration
		value time.Duration
	}{
		{&b.VerifyPeriod, bios.DefaultBIOSVerifyPeriod},
		{&b.RetryPeriod, bios.DefaultBIOSRetryPeriod},
		{&b.Timeout, bios.DefaultBIOSTimeout},
		{&b.HoldTimeout, bios.DefaultBIOSHoldTimeout},
		{&o.UninstallGuardPeriod, guard.DefaultUninstallGuardPeriod},
	} {
		if *d.field <= 0 {
			*d.field = d.value
		}
	}
	return o
}
