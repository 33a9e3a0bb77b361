// Package agent is the node agent's reconciler: it reports its host's facts on the node's
// LatencyNodeState, applies the resolved tuning through internal/tuning and the kernel arguments
// through internal/bootloader, verifies what is in effect, corrects drift, publishes a tuning
// fingerprint, runs the reboot protocol the operator coordinates (cordon, drain through the
// eviction API, reboot, verify, uncordon) and restores the host's originals when the node state
// is deleted. docs/agent.md describes it for users.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bootloader"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/phase"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Failpoints the reconciler passes to Reconciler.Failpoint.
const (
	// FailpointAfterKernelArgs fires after the boot loader was reconciled (possibly written) and
	// before the status records that a reboot is needed.
	FailpointAfterKernelArgs = "after-kernel-args"
	// FailpointBeforeRebootCommand fires after the status says Rebooting and before the reboot
	// command runs.
	FailpointBeforeRebootCommand = "before-reboot-command"
)

func (r *Reconciler) failpoint(p string) {
	if r.Failpoint != nil {
		r.Failpoint(p)
	}
}

// Defaults of the Reconciler's tunables.
const (
	DefaultCheckPeriod       = time.Minute
	DefaultDrainTimeout      = 10 * time.Minute
	DefaultDrainRetryBackoff = 5 * time.Minute
	DefaultDrainPoll         = 2 * time.Second
	DefaultRebootTimeout     = 30 * time.Minute
	// DefaultFeatureRecheck is how often the agent reads its NodeFeature back while what it
	// publishes is unchanged (one read per reconcile cost 170 requests a second at 5,000 nodes).
	DefaultFeatureRecheck = 5 * time.Minute
	// BootIDPath is the kernel's boot ID, below the host root; another value means a reboot.
	BootIDPath = "/proc/sys/kernel/random/boot_id"
)

// Reconciler reconciles the LatencyNodeState of one node (named after it) on that node's host.
// Nothing is global: the node name, host root, clock and commands are fields.
type Reconciler struct {
	// Client reads the node state (from a cache that only holds this node's) and patches it,
	// the Node, and creates evictions.
	Client client.Client
	// APIReader reads the Node and lists the node's pods directly from the API server.
	APIReader client.Reader
	// Recorder emits events on the node state.
	Recorder events.EventRecorder
	// NodeName is this node.
	NodeName string
	// Namespace is the agent's: its NodeFeature for node-feature-discovery goes there (empty: none).
	Namespace string
	// FeatureRecheck is how often the published NodeFeature is read back while unchanged (a
	// deleted one is made again then); DefaultFeatureRecheck when zero.
	FeatureRecheck time.Duration
	// published is the NodeFeature as last written or found current, and when (publishFeature).
	published   *nfdv1alpha1.NodeFeature
	publishedAt time.Time
	// ResourcePrefix is the SR-IOV device plugin resource prefix (the operator's
	// --resource-prefix): the Node's resources under it are reported in status.devices.
	ResourcePrefix string
	// noNFD: the NodeFeature CRD was not there (node-feature-discovery is not installed).
	noNFD bool
	// Host is the machine (its Root is "/" on the host, "/host" in the DaemonSet).
	Host *host.Host
	// Engine applies, verifies and restores runtime settings on Host.
	Engine *tuning.Engine
	// Boot keeps the kernel arguments; nil means the agent manages no boot loader (a tuning with
	// kernel arguments is then Degraded with reason NoBootLoader).
	Boot *bootloader.Manager
	// Clock is the time source (a fake one in tests).
	Clock clock.PassiveClock
	// CheckPeriod is how often the host is verified for drift (NIC changes are seen at once).
	CheckPeriod time.Duration
	// RebootCommand reboots the host (for example nsenter -t 1 -m -- systemctl reboot). It runs
	// with TICKSTACK_NODE_NAME and TICKSTACK_HOST_ROOT in its environment.
	RebootCommand []string
	// IrqbalanceRestartCommand restarts irqbalance if it runs (systemctl try-restart), after its
	// banned-CPU list changed. Empty runs nothing.
	IrqbalanceRestartCommand []string
	// DrainTimeout is the drain's limit when spec.tuning.drainTimeout is unset.
	DrainTimeout time.Duration
	// DrainRetryBackoff is how long a DrainFailed node waits before asking for a slot again.
	DrainRetryBackoff time.Duration
	// RebootTimeout is how long after the reboot command the node may still run the same boot
	// ID before the agent reports it (Degraded, RebootCommandFailed) and runs the command again.
	RebootTimeout time.Duration
	// DrainPoll is how often a running drain is looked at again.
	DrainPoll time.Duration
	// EvictionGracePeriod overrides the evicted pods' termination grace period (nil: theirs).
	// Tests use 0, since no kubelet runs there to finish a graceful deletion.
	EvictionGracePeriod *int64

	// PTP are the host-side settings of the linuxptp daemon run for spec.tuning.ptp.
	PTP PTPOptions

	// Kubelet says where the kubelet's drop-in and checkpoints are and how to restart it
	// (spec.tuning.kubelet; kubelet.go).
	Kubelet KubeletOptions
	// BootUnit says where the boot unit that applies the last tuning before the kubelet goes
	// (boot.go).
	BootUnit BootOptions

	// ConfineSelf keeps every thread of this process on spec.tuning.reservedCPUs while a tuning
	// is in force, and gives them back the affinity the process started with when it goes. The
	// agent binary sets it; tests that run the reconciler in their own process leave it off.
	ConfineSelf bool

	// ResolveOnNode lets the agent act on the profile that wins its node before the manager's
	// node state names it (unnamed.go): the agent's --resolve-on-node, set with the manager's.
	ResolveOnNode bool

	// Failpoint, when set, is called at the named points (Failpoint* constants); the crash test
	// kills the agent there. Production leaves it nil.
	Failpoint func(point string)

	// ptpRun runs the node's linuxptp daemon.
	ptpRun *ptpRunner

	mu sync.Mutex
	// applied holds, per node state UID, the generation (and, for a resolution of the agent's
	// own, the tuning's hash) this process last applied completely: the cache may not show the
	// status patch of the previous reconcile yet.
	applied map[types.UID]appliedTuning
	// early is what applies before the node state existed changed (unnamed.go, appliedEarly).
	early *earlyApply
	// confirmLive is set by a finalizer's restore: the next apply before a node state confirms
	// its winner from the API server first (unnamed.go, liveWinner).
	confirmLive bool
	// rebootIssued holds, per boot ID, when this process first and last ran the reboot command.
	rebootIssued map[string][2]time.Time
	// selfOrig is the CPU affinity this process started with (ConfineSelf).
	selfOrig *cpuset.Set
	// configz is the kubelet's configuration last read at configzAt (kubelet.go).
	configz   map[string]string
	configzAt time.Time
	// configzRead is how the kubelet's configuration was last read (status.kubeletConfig).
	configzRead *tsv1.KubeletConfigStatus
}

// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates/status,verbs=get;patch
// nodes list and watch: only a cache of its own Node's labels (field selector metadata.name, as the
// kubelet and kube-proxy watch their own), from which an agent whose node has no node state yet
// decides which profile wins it on a profile's create without a read per event (unnamed.go). RBAC
// cannot restrict a list to one object; the agent could already get any Node.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// nodes/status: only to advertise the shared CPU pool (tickstack.io/shared-cpus) in its own Node's
// capacity and allocatable; the own-node admission policy refuses any other change of a Node's
// status and any other Node (config/agent/own_node_policy.yaml).
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// nodes/configz: the kubelet's /configz on its own node, read directly from the kubelet, which
// authorizes it so when it has fine-grained authorization (KubeletFineGrainedAuthz); no
// nodes/proxy, which would allow exec into any pod through any kubelet (kubeletread.go).
// +kubebuilder:rbac:groups="",resources=nodes/configz,verbs=get
// pods list: the drain lists its node's pods (a field selector, which RBAC cannot enforce).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// pods/eviction: the manager's eviction webhook admits only pods of the agent's own node
// (internal/webhook/eviction.go).
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// latencyprofiles, read-only: a node whose state says spec.profile.resolveOnNode resolves its own
// tuning from the profile it names (resolution.go). A profile holds no secret (BMC credentials are
// in Secrets, which the agent never reads); the agent writes no profile.
// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch

// appliedTuning identifies a tuning applied completely: the node state's generation and, when the
// agent resolved it, its TuningHash (a profile change moves it without a new generation).
type appliedTuning struct {
	generation int64
	hash       string
}

// scope is what one reconcile knows and found.
type scope struct {
	lns *tsv1.LatencyNodeState
	// base is the object as read, for the status patch.
	base *tsv1.LatencyNodeState
	obs  observation
	// requeue is when to look again.
	requeue time.Duration
	desired *tuning.Desired
	// tuning is the tuning this reconcile applies: spec.tuning, or the agent's own resolution
	// (resolution.go); nil when there is none.
	tuning *tsv1.NodeTuning
	// hash is the TuningHash of the agent's own resolution ("" for spec.tuning); retune says it
	// differs from the tuning in effect, so the node is tainted while it moves.
	hash   string
	retune bool
	// resolvedGeneration is the profile generation that moved the node to that resolution.
	resolvedGeneration int64
	resolution         resolution
	bootID             string
	// node is the Node as read in this reconcile, when a phase read it.
	node *corev1.Node
	// labelled is the Node from the cache, its labels only (reconcileUnnamed): enough to decide
	// whether a taint is needed, never the base of a patch.
	labelled *corev1.Node
}

// Scheme has the types the agent reads and writes: the core ones, tickstack's and
// node-feature-discovery's NodeFeature.
func Scheme() *k8sruntime.Scheme {
	s, b := k8sruntime.NewScheme(), k8sruntime.NewSchemeBuilder(clientgoscheme.AddToScheme, tsv1.AddToScheme, nfdv1alpha1.AddToScheme)
	utilruntime.Must(b.AddToScheme(s))
	return s
}

// CacheOptions restricts the manager's cache to this node's LatencyNodeState: an agent never
// sees another node's state. LatencyProfiles, which a resolving agent reads, are few: the cache
// holds them all, without their status (the manager's roll-ups) and managed fields. Of Nodes it
// holds its own, and of it only the name and labels (nodeLabelsOnly): every other read of the Node
// goes to the API server (getNode), and a patch is never computed from the cached one.
func CacheOptions(nodeName string) cache.Options {
	own := fields.OneTermEqualSelector("metadata.name", nodeName)
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&tsv1.LatencyNodeState{}: {Field: own},
		&tsv1.LatencyProfile{}:   {Transform: profileSpecOnly},
		// Watched only with ResolveOnNode (SetupWithManager): without it, no Node informer starts.
		&corev1.Node{}: {Field: own, Transform: nodeLabelsOnly},
	}}
}

// nodeLabelsOnly is the Node cache's transform: its name, resourceVersion and labels, all a
// profile's arbitration reads (a real Node's status, its images above all, is kilobytes).
func nodeLabelsOnly(o any) (any, error) {
	if n, ok := o.(*corev1.Node); ok {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels}}, nil
	}
	return o, nil
}

// profileSpecOnly is the profile cache's transform: the agent reads a profile's name, generation
// and spec only.
func profileSpecOnly(o any) (any, error) {
	if p, ok := o.(*tsv1.LatencyProfile); ok {
		p.ManagedFields = nil
		p.Status = tsv1.LatencyProfileStatus{}
	}
	return o, nil
}

func (r *Reconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.CheckPeriod = positiveOr(r.CheckPeriod, DefaultCheckPeriod)
	r.DrainTimeout = positiveOr(r.DrainTimeout, DefaultDrainTimeout)
	r.DrainRetryBackoff = positiveOr(r.DrainRetryBackoff, DefaultDrainRetryBackoff)
	r.RebootTimeout = positiveOr(r.RebootTimeout, DefaultRebootTimeout)
	r.DrainPoll = positiveOr(r.DrainPoll, DefaultDrainPoll)
	r.FeatureRecheck = positiveOr(r.FeatureRecheck, DefaultFeatureRecheck)
	r.ResourcePrefix = cmp.Or(r.ResourcePrefix, tsv1.DefaultResourcePrefix)
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	if r.ptpRun == nil {
		r.ptpRun = newPTPRunner(r.PTP.Metrics)
	}
	r.BootUnit.Binary = cmp.Or(r.BootUnit.Binary, DefaultBootBinary)
	r.Kubelet.RootDir = cmp.Or(r.Kubelet.RootDir, DefaultKubeletRootDir)
	r.Kubelet.StartTimeout = positiveOr(r.Kubelet.StartTimeout, DefaultKubeletStartTimeout)
	r.PTP.StatusPeriod = positiveOr(r.PTP.StatusPeriod, DefaultPTPStatusPeriod)
}

// positiveOr is v, or d where v is not positive (a period or timeout left unset).
func positiveOr(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}

// Reconcile is the house shape: get, one deferred status patch, deletion, then ordered phases
// (internal/phase).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	r.defaults()
	if req.Name != r.NodeName {
		return ctrl.Result{}, nil
	}
	if r.ResolveOnNode {
		// No node state in the cache (which holds only this node's): act before it exists, with
		// no read of the API server. A profile's create wakes every agent of a fleet at once, and a
		// read each (5,000 at once, each a 404) queued behind the manager's node state creates. A
		// node state the cache has not shown yet gets its own event when it does.
		if err := r.Client.Get(ctx, req.NamespacedName, &tsv1.LatencyNodeState{}); apierrors.IsNotFound(err) {
			r.ptpRun.stop()
			return r.reconcileUnnamed(ctx)
		}
	}
	// Read from the API server, not the cache: a reconcile triggered by this agent's own
	// annotation patch must not see the status from before its last status patch (a reboot or
	// kubelet restart step would run twice).
	lns := &tsv1.LatencyNodeState{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, lns); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.ptpRun.stop()
		if r.ResolveOnNode {
			return r.reconcileUnnamed(ctx)
		}
		return ctrl.Result{}, nil
	}
	s := &scope{lns: lns, base: lns.DeepCopy(), requeue: r.CheckPeriod}
	s.obs.generation = lns.Generation
	s.obs.reboot = lns.Status.Reboot.DeepCopy()
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
		// After the status, whatever the phases did: a reconcile cut short must not leave an
		// earlier "applied" published.
		if lns.DeletionTimestamp.IsZero() {
			if err := r.publishFeature(ctx, s); err != nil {
				reterr = errors.Join(reterr, err)
			}
		}
	}()

	r.reportFacts(s)
	if !lns.DeletionTimestamp.IsZero() {
		r.ptpRun.stop()
		return r.reconcileDelete(ctx, s)
	}
	if stop, err := r.desiredTuning(ctx, s); err != nil || stop {
		if s.obs.noTuning {
			r.ptpRun.stop()
			r.releaseSelf(lns)
			return ctrl.Result{}, err
		}
		// A resolution error keeps what is in effect (linuxptp too); the facts may change.
		return ctrl.Result{RequeueAfter: s.requeue}, err
	}
	if err := phase.Run(ctx, s,
		r.taintUnconfirmedBoot,
		r.taintRetune,
		r.reconcilePTP,
		r.validate,
		r.confineSelf,
		r.ensureFinalizer,
		r.applyRuntime,
		r.reconcileKernelArgs,
		r.reconcileKubelet,
		r.reconcileReboot,
		r.reconcileBootUnit,
		r.publishFingerprint,
		r.confirmBoot,
		r.advertiseSharedCPUs,
		r.reportDevices,
	); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// patchStatus computes the status from what the reconcile observed and patches it when it
// changed. A node state deleted meanwhile (finalizer removed) is not an error.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	reportResolution(s)
	applyStatus(&s.lns.Status, &s.obs)
	// The patch is from the object as it is now (its metadata moved with the phases' own patches)
	// with the status as last written; MergeFrom only reads it.
	base := *s.lns
	base.Status = s.base.Status
	if err := phase.PatchStatus(ctx, r.Client, &base, s.lns, func(l *tsv1.LatencyNodeState) any { return l.Status }); err != nil {
		return fmt.Errorf("node state %s: %w", s.lns.Name, err)
	}
	s.base.Status = *s.lns.Status.DeepCopy()
	return nil
}

// recordReboot writes status.reboot alone, now, before the step it starts is done: a transition
// whose record failed is retried by the next reconcile, never done twice (and announce says it
// once). The rest of the status follows in the reconcile's one patch.
func (r *Reconciler) recordReboot(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.base.Status.Reboot, s.obs.reboot) {
		return nil
	}
	base := s.lns.DeepCopy()
	base.Status = *s.base.Status.DeepCopy()
	obj := base.DeepCopy()
	obj.Status.Reboot = s.obs.reboot.DeepCopy()
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("recording status.reboot of node state %s: %w", s.lns.Name, err)
	}
	s.base.Status.Reboot = s.obs.reboot.DeepCopy()
	return nil
}

// reportFacts publishes the host's facts (also before spec.tuning is set: the operator needs
// them to resolve it).
func (r *Reconciler) reportFacts(s *scope) {
	f, err := r.Host.Discover()
	if err != nil {
		s.obs.factsErr = err
		return
	}
	s.lns.Status.Facts = NodeFacts(f)
	s.obs.cmdline = f.KernelCmdline
}

// ensureFinalizer puts the restore finalizer on before the first change of the host, so that a
// deletion always gives the agent the chance to restore the originals.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.lns, tsv1.RestoreFinalizer) {
		return nil
	}
	orig := s.lns.DeepCopy()
	controllerutil.AddFinalizer(s.lns, tsv1.RestoreFinalizer)
	if err := r.Client.Patch(ctx, s.lns, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("adding finalizer %s before changing the host: %w", tsv1.RestoreFinalizer, err)
	}
	return nil
}

// SetupWithManager watches this node's state, with one reconcile at a time, and the profile it
// names (a resolving agent's input), and reconciles at once on every NIC change the kernel
// announces (nicChanges, may be nil).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, nicChanges <-chan string) error {
	r.defaults()
	profiles, profileChanged := r.profileEvents(mgr.GetClient())
	b := ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyNodeState{}, builder.WithPredicates(specOrMetaChanged())).
		Watches(&tsv1.LatencyProfile{}, profiles, builder.WithPredicates(profileChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Named("latencynodestate-agent")
	if r.ResolveOnNode {
		// Its labels decide which profile wins the node when it has no node state (unnamed.go).
		b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: r.nodeKey()}}
		}), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	ptpChanges, err := r.setupPTP(mgr)
	if err != nil {
		return err
	}
	b = b.WatchesRawSource(ptpChanges)
	if nicChanges != nil {
		// A burst of NIC notifications makes one reconcile: the send never blocks, and a pending
		// event already covers the ones that follow it.
		ch := make(chan event.TypedGenericEvent[*tsv1.LatencyNodeState], 1)
		go func() {
			defer close(ch)
			for range nicChanges {
				lns := &tsv1.LatencyNodeState{}
				lns.Name = r.NodeName
				select {
				case ch <- event.TypedGenericEvent[*tsv1.LatencyNodeState]{Object: lns}:
				default:
				}
			}
		}()
		b = b.WatchesRawSource(source.Channel(ch, &handler.TypedEnqueueRequestForObject[*tsv1.LatencyNodeState]{}))
	}
	return b.Complete(r)
}

// nodeKey is this node's key.
func (r *Reconciler) nodeKey() types.NamespacedName { return types.NamespacedName{Name: r.NodeName} }

// getNode reads the Node directly from the API server.
func (r *Reconciler) getNode(ctx context.Context) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := r.APIReader.Get(ctx, r.nodeKey(), n); err != nil {
		return nil, fmt.Errorf("reading node %s: %w", r.NodeName, err)
	}
	return n, nil
}

// event records an event on the node state; none before the node state exists (unnamed.go: the
// reconcile logs what it did instead).
func (r *Reconciler) event(lns *tsv1.LatencyNodeState, typ, reason, action, msg string, args ...any) {
	if r.Recorder != nil && lns.UID != "" {
		r.Recorder.Eventf(lns, nil, typ, reason, action, msg, args...)
	}
}

// specOrMetaChanged lets through every change except the agent's own status patches: a new spec
// (generation), a deletion, annotations or finalizers. The periodic check covers the rest.
func specOrMetaChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers())
	}}
}
