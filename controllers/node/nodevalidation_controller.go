package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/resolve"
)

// Event reasons of the node validation controller, recorded on the node.
const (
	// EventTimeSyncLost: the node lost tickstack.io/validated because TimeSynced is False; its
	// benchmark pass (tickstack.io/benchmark-passed) is kept.
	EventTimeSyncLost = "TimeSyncLost"
	// EventTimeSyncRestored: TimeSynced is True again and the label is back.
	EventTimeSyncRestored = "TimeSyncRestored"
	// EventValidationDropped: the node's profile is no longer the one it passed its benchmark for;
	// it needs a new benchmark.
	EventValidationDropped = "ValidationDropped"
)

// NodeValidationReconciler is the one writer of a node's tickstack.io/validated label and of its
// tickstack.io/unvalidated taint. Both follow from facts other controllers own: the profile the
// node passed its benchmark for (tickstack.io/benchmark-passed, the benchmark controller's), the
// node's profile (its tickstack.io/profile label, else its node state's), and the node state's
// TimeSynced condition (the agent's). The label names the passed profile while the node still has
// that profile and TimeSynced is not False; the taint is on while a profile with
// spec.validation.taintUntilValidated lacks the label.
type NodeValidationReconciler struct {
	Client client.Client
	// Recorder emits events on the node; nil emits none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencyprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// nodeProfile is the profile a node has: its tickstack.io/profile label, else the profile of its
// node state (nil: none; being deleted: none).
func nodeProfile(node *corev1.Node, lns *tsv1.LatencyNodeState) string {
	if p := node.Labels[tsv1.ProfileLabel]; p != "" {
		return p
	}
	if lns != nil && lns.DeletionTimestamp.IsZero() {
		return lns.Spec.Profile.Name
	}
	return ""
}

// wantValidated is the node's tickstack.io/validated label ("" none). It is pure: passed is the
// profile of the node's benchmark pass, profile the node's profile, lost whether its time sync is
// lost.
func wantValidated(passed, profile string, lost bool) string {
	if passed == "" || passed != profile || lost {
		return ""
	}
	return passed
}

// Reconcile sets one node's validated label and unvalidated taint.
func (r *NodeValidationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node, lns, err := readNode(ctx, r.Client, req.Name)
	if err != nil || node == nil {
		return ctrl.Result{}, err
	}
	profileName := nodeProfile(node, lns)
	var profile *tsv1.LatencyProfile
	if profileName != "" {
		p := &tsv1.LatencyProfile{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: profileName}, p); err == nil {
			profile = p
		} else if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("reading profile %s: %w", profileName, err)
		}
	}
	lost, _ := timeSyncLost(lns)
	passed := node.Annotations[tsv1.BenchmarkPassedAnnotation]
	have, want := node.Labels[tsv1.ValidatedLabel], wantValidated(passed, profileName, lost)
	orig := node.DeepCopy()
	node.Labels = shared.SetKey(node.Labels, tsv1.ValidatedLabel, want)
	taints, taintChanged := setTaint(node.Spec.Taints, WantUnvalidatedTaint(node, profile))
	node.Spec.Taints = taints
	if have == want && !taintChanged {
		return ctrl.Result{}, nil
	}
	// A merge patch replaces spec.taints whole: one computed from a cached Node older than the
	// agent's last taint change would take the agent's tuning-pending taint off. So a taint change
	// is patched over the version it was computed from; a conflict comes back with the new Node.
	patch := client.MergeFrom(orig)
	if taintChanged {
		patch = client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	}
	if err := r.Client.Patch(ctx, node, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching the validation label and taint of node %s: %w", node.Name, err)
	}
	if have != want {
		r.report(ctx, node, lns, have, want, passed, profileName, lost)
	}
	return ctrl.Result{}, nil
}

// report logs and records a change of the validated label.
func (r *NodeValidationReconciler) report(ctx context.Context, node *corev1.Node, lns *tsv1.LatencyNodeState, have, want, passed, profile string, lost bool) {
	log := ctrl.LoggerFrom(ctx)
	var related runtime.Object
	if lns != nil {
		related = lns
	}
	switch {
	case want != "":
		log.Info("node validated", "node", node.Name, "profile", want)
		if lns != nil && resolve.DesiredTuning(lns) != nil && resolve.DesiredTuning(lns).PTP != nil {
			r.event(node, related, corev1.EventTypeNormal, EventTimeSyncRestored, "Label",
				"node %s labelled %s=%s: it passed its benchmark and TimeSynced is True", node.Name, tsv1.ValidatedLabel, want)
		}
	case lost && passed == profile:
		_, cond := timeSyncLost(lns)
		why := "TimeSynced is False"
		if cond != nil {
			why = fmt.Sprintf("TimeSynced is False (%s: %s)", cond.Reason, cond.Message)
		}
		log.Info("time sync lost: validation withdrawn", "node", node.Name, "profile", have, "reason", why)
		r.event(node, related, corev1.EventTypeWarning, EventTimeSyncLost, "Unlabel",
			"node %s lost %s=%s: %s; its benchmark pass is kept in the %s annotation and the label returns when TimeSynced is True",
			node.Name, tsv1.ValidatedLabel, have, why, tsv1.BenchmarkPassedAnnotation)
	case passed != "" && passed != profile:
		log.Info("validation dropped: the node's profile changed", "node", node.Name, "passed", passed, "now", profile)
		r.event(node, related, corev1.EventTypeWarning, EventValidationDropped, "Unlabel",
			"node %s lost %s=%s: its profile is now %q; a LatencyBenchmark must validate it again", node.Name, tsv1.ValidatedLabel, have, profile)
	}
}

func (r *NodeValidationReconciler) event(node *corev1.Node, related runtime.Object, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(node, related, kind, reason, action, note, args...)
	}
}

// WantUnvalidatedTaint says whether a node should carry the tickstack.io/unvalidated taint: its
// profile (nil: none) asks for it and the node is not labelled validated for that profile.
func WantUnvalidatedTaint(node *corev1.Node, profile *tsv1.LatencyProfile) bool {
	if profile == nil || !profile.DeletionTimestamp.IsZero() || profile.Spec.Validation == nil || !profile.Spec.Validation.TaintUntilValidated {
		return false
	}
	return node.Labels[tsv1.ValidatedLabel] != profile.Name
}

func setTaint(taints []corev1.Taint, want bool) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	had := false
	for _, t := range taints {
		if t.Key == tsv1.UnvalidatedTaint && t.Effect == corev1.TaintEffectNoSchedule {
			had = true
			continue
		}
		out = append(out, t)
	}
	if want {
		out = append(out, corev1.Taint{Key: tsv1.UnvalidatedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	return out, had != want
}

// validationFactsChanged passes the node state changes the label depends on: the time sync being
// lost or regained, another profile, the deletion starting.
func validationFactsChanged(e event.TypedUpdateEvent[client.Object]) bool {
	o, ok1 := e.ObjectOld.(*tsv1.LatencyNodeState)
	n, ok2 := e.ObjectNew.(*tsv1.LatencyNodeState)
	if !ok1 || !ok2 {
		return true
	}
	lostOld, _ := timeSyncLost(o)
	lostNew, _ := timeSyncLost(n)
	return lostOld != lostNew || o.Spec.Profile.Name != n.Spec.Profile.Name || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// SetupWithManager watches nodes (labels and annotations), profiles and node states.
func (r *NodeValidationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&tsv1.LatencyProfile{}, handler.EnqueueRequestsFromMapFunc(shared.AllNodes(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tsv1.LatencyNodeState{}, shared.SameName, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{UpdateFunc: validationFactsChanged}))).
		Named("nodevalidation").
		Complete(r)
}
