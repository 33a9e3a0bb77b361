package bios

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/bmc"
	"github.com/tickstack/tickstack/internal/phase"
)

// Defaults of the BIOSReconciler's periods.
const (
	DefaultBIOSVerifyPeriod = 10 * time.Minute
	DefaultBIOSRetryPeriod  = time.Minute
	DefaultBIOSTimeout      = 30 * time.Second
	DefaultBIOSHoldTimeout  = 5 * time.Minute
)

// BIOSReconciler sets each node's BIOS attributes through its BMC over Redfish (docs/bios.md). It
// runs in the operator, never in the node agent: it alone reads the BMC credentials. Per node state
// it validates the profile's bios section against the node's attribute registry, stages the
// attributes (PATCH Bios/Settings), sets spec.firmware.pendingReboot so that the agent asks for a
// reboot slot (the same one as for its kernel arguments), and after the reboot verifies and reports
// each attribute in status.bios; later reconciles report drift.
type BIOSReconciler struct {
	// Client reads profiles, node states, nodes and BMC objects (cached) and patches node states.
	Client client.Client
	// APIReader reads the credential Secrets straight from the API server, so that the operator
	// caches no Secret.
	APIReader client.Reader
	// Recorder emits events on the node state; nil emits none. Events never carry credentials.
	Recorder events.EventRecorder
	// Now is the clock.
	Now func() time.Time
	// VerifyPeriod is how often attributes in effect are read again for drift.
	VerifyPeriod time.Duration
	// RetryPeriod is how soon a failed attempt (BMC unreachable, bad credentials, invalid
	// attributes) is tried again.
	RetryPeriod time.Duration
	// Timeout bounds each Redfish request.
	Timeout time.Duration
	// HoldTimeout is how long a node's reboot slot waits for a BMC that does not answer before its
	// kernel arguments go ahead without the BIOS settings (which then need a reboot of their own).
	HoldTimeout time.Duration
	// Policy is what the operator accepts in a BMC object; SetupControllers sets it from
	// Options.BMC.
	Policy BMCPolicy
}

// +kubebuilder:rbac:groups=tickstack.io,resources=bmcs,verbs=get;list;watch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates/status,verbs=get;patch
// Credentials Secrets only in the operator's namespace (a Role, not a ClusterRole): a BMC object
// naming a Secret elsewhere is refused (bmcRefusal).
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// biosScope is what one reconcile of one node state knows and decided.
type biosScope struct {
	lns     *tsv1.LatencyNodeState
	profile *tsv1.LatencyProfile
	node    *corev1.Node
	// hash is BIOSHash of the profile's bios section.
	hash string
	// firmware and status are what the reconcile wants spec.firmware and status.bios to be.
	firmware *tsv1.FirmwareSpec
	status   *tsv1.BIOSStatus
	client   *bmc.Client
	wanted   bmc.Attributes
	// facts is what the phases judged, from which the conditions are computed (setBIOSStatus).
	facts biosFacts
	// step is what this reconcile does with the BMC; zero while nothing is to be done.
	step    biosStep
	requeue time.Duration
}

// biosStep is what one reconcile does with the BMC.
type biosStep int

const (
	// stepStage: validate the wanted attributes and stage them.
	stepStage biosStep = iota + 1
	// stepVerifyReboot: the node rebooted since the staging; verify each attribute.
	stepVerifyReboot
	// stepVerifyDrift: read the attributes in effect again, for drift.
	stepVerifyDrift
)

// Reconcile is the house shape: get, one deferred patch of what this reconciler owns
// (spec.firmware and status.bios), then ordered phases (internal/phase).
func (r *BIOSReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	lns := &tsv1.LatencyNodeState{}
	if err := r.Client.Get(ctx, req.NamespacedName, lns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !lns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // BIOS settings stay as they are; docs/bios.md says why
	}
	s := &biosScope{lns: lns, firmware: lns.Spec.Firmware.DeepCopy(), status: lns.Status.BIOS.DeepCopy()}
	profile := &tsv1.LatencyProfile{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: lns.Spec.Profile.Name}, profile); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting profile %s: %w", lns.Spec.Profile.Name, err)
		}
		profile = nil
	}
	if profile == nil || profile.Spec.BIOS == nil {
		// No bios section (any more): nothing to stage, nothing to report.
		s.firmware, s.status = nil, nil
		return ctrl.Result{}, r.patch(ctx, s)
	}
	s.profile, s.hash = profile, shared.BIOSHash(profile.Spec.BIOS)
	if s.status == nil {
		s.status = &tsv1.BIOSStatus{}
	}
	defer func() {
		setBIOSStatus(s.status, &s.facts, lns.Generation)
		if err := r.patch(ctx, s); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
		if s.client != nil {
			s.client.Close()
		}
	}()

	if err := phase.Run(ctx, s, r.decide, r.connect, r.stage, r.verify); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// patch writes status.bios and then spec.firmware when they changed, each with a merge patch
// that carries only this reconciler's field (the agent writes the rest of the status). Status goes
// first: the spec change is what triggers the next reconcile, and its cache then holds both.
func (r *BIOSReconciler) patch(ctx context.Context, s *biosScope) error {
	orig := s.lns.DeepCopy()
	s.lns.Status.BIOS = s.status.DeepCopy()
	if err := phase.PatchStatus(ctx, r.Client, orig, s.lns, func(l *tsv1.LatencyNodeState) any { return l.Status.BIOS }); err != nil {
		return fmt.Errorf("node state %s, status.bios: %w", s.lns.Name, err)
	}
	if !apiequality.Semantic.DeepEqual(s.lns.Spec.Firmware, s.firmware) {
		orig := s.lns.DeepCopy()
		s.lns.Spec.Firmware = s.firmware.DeepCopy()
		if err := r.Client.Patch(ctx, s.lns, client.MergeFrom(orig)); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("node state %s: patching spec.firmware: %w", s.lns.Name, err))
		}
	}
	return nil
}

// SetupWithManager reconciles node states, and the node states of a profile, node or BMC that
// changed: a profile's bios section, a node's boot ID (the reboot) and a BMC's endpoint all matter.
func (r *BIOSReconciler) SetupWithManager(mgr ctrl.Manager) error {
	byProfile := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list tsv1.LatencyNodeStateList
		if err := r.Client.List(ctx, &list, client.MatchingLabels{tsv1.ProfileLabel: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, l := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: l.Name}})
		}
		if len(reqs) == 0 {
			// Node states created before they were labelled: look at them all (there are few).
			if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			for _, l := range list.Items {
				if l.Spec.Profile.Name == o.GetName() {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: l.Name}})
				}
			}
		}
		return reqs
	})
	byBMC := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		var nodes corev1.NodeList
		if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err == nil {
			for _, n := range nodes.Items {
				if n.Annotations[tsv1.BMCAnnotation] == o.GetName() {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
				}
			}
		}
		return reqs
	})
	// A node matters when it rebooted (the kubelet reports a new boot ID) or names another BMC;
	// not on every heartbeat.
	nodeChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || o.Status.NodeInfo.BootID != n.Status.NodeInfo.BootID ||
			o.Annotations[tsv1.BMCAnnotation] != n.Annotations[tsv1.BMCAnnotation]
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&tsv1.LatencyNodeState{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tsv1.LatencyProfile{}, byProfile, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, shared.SameName, builder.WithPredicates(nodeChanged)).
		Watches(&tsv1.BMC{}, byBMC).
		Named("bios").
		Complete(r)
}
