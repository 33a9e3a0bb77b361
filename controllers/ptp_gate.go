package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// Event reasons of the PTP readiness gate, recorded on the node.
const (
	// EventTimeSyncLost: the node lost tickstack.io/validated because TimeSynced is False; the
	// profile is kept in the tickstack.io/validated-held annotation.
	EventTimeSyncLost = "TimeSyncLost"
	// EventTimeSyncRestored: TimeSynced is True again and the held label is back.
	EventTimeSyncRestored = "TimeSyncRestored"
	// EventHeldValidationDropped: the node's profile changed (or its node state went) while its
	// validation was held; it needs a new benchmark.
	EventHeldValidationDropped = "HeldValidationDropped"
)

// PTPGateReconciler takes tickstack.io/validated away from a node while its LatencyNodeState
// reports TimeSynced=False for a ptp section, and gives it back when TimeSynced returns True,
// without a new benchmark, as long as the node still has the profile it was validated for. The
// profile is kept meanwhile in the tickstack.io/validated-held annotation, so it survives a restart
// of the operator. NodeValidationReconciler puts the profile's unvalidated taint back by itself.
type PTPGateReconciler struct {
	Client client.Client
	// Recorder emits events on the node; nil emits none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NodeTimeSyncedCondition is the node condition that mirrors the node state's TimeSynced, so
// kubectl describe node and node-condition tooling see the clock's state. Present only while the
// node's tuning has a ptp section; its message is the agent's at the last change of status or
// reason (the live offset is in the node state's status.ptp).
const NodeTimeSyncedCondition corev1.NodeConditionType = "tickstack.io/TimeSynced"

// wantNodeCondition is the TimeSynced node condition a node state asks for (nil: none). It is
// pure; now stamps the heartbeat.
func wantNodeCondition(lns *tsv1.LatencyNodeState, now metav1.Time) *corev1.NodeCondition {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || lns.Spec.Tuning == nil || lns.Spec.Tuning.PTP == nil {
		return nil
	}
	nc := &corev1.NodeCondition{Type: NodeTimeSyncedCondition, Status: corev1.ConditionUnknown, Reason: "NotReported",
		Message: "the agent has not reported TimeSynced yet", LastHeartbeatTime: now, LastTransitionTime: now}
	if c := apimeta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeTimeSynced); c != nil {
		nc.Status, nc.Reason, nc.Message, nc.LastTransitionTime = corev1.ConditionStatus(c.Status), c.Reason, c.Message, c.LastTransitionTime
	}
	return nc
}

// mergeNodeCondition returns the node's conditions with want in place of its TimeSynced one (or
// without it when want is nil), and whether that changes anything but the heartbeat.
func mergeNodeCondition(have []corev1.NodeCondition, want *corev1.NodeCondition) ([]corev1.NodeCondition, bool) {
	out := make([]corev1.NodeCondition, 0, len(have)+1)
	var old *corev1.NodeCondition
	for i := range have {
		if have[i].Type == NodeTimeSyncedCondition {
			old = &have[i]
			continue
		}
		out = append(out, have[i])
	}
	switch {
	case want == nil:
		return out, old != nil
	case old != nil && old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message:
		return have, false
	}
	return append(out, *want), true
}

// validationMarks is what a node carries about its validation: the value of the
// tickstack.io/validated label and of the tickstack.io/validated-held annotation ("" when absent).
type validationMarks struct {
	validated, held string
}

func marksOf(n *corev1.Node) validationMarks {
	return validationMarks{validated: n.Labels[tsv1.ValidatedLabel], held: n.Annotations[tsv1.ValidatedHeldAnnotation]}
}

// setMarks writes m onto the node's label and annotation.
func setMarks(n *corev1.Node, m validationMarks) {
	if m.validated == "" {
		delete(n.Labels, tsv1.ValidatedLabel)
	} else {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[tsv1.ValidatedLabel] = m.validated
	}
	if m.held == "" {
		delete(n.Annotations, tsv1.ValidatedHeldAnnotation)
	} else {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[tsv1.ValidatedHeldAnnotation] = m.held
	}
}

// timeSyncLost says whether a node state (nil: none) reports TimeSynced=False for its ptp section,
// and returns the condition. A node state without a ptp section, being deleted, or whose agent has
// not reported TimeSynced yet is not out of sync.
func timeSyncLost(lns *tsv1.LatencyNodeState) (bool, *metav1.Condition) {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || lns.Spec.Tuning == nil || lns.Spec.Tuning.PTP == nil {
		return false, nil
	}
	c := apimeta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeTimeSynced)
	return c != nil && c.Status == metav1.ConditionFalse, c
}

// hasProfile says whether the node still has profile p: its node state (not being deleted) is for
// p, and its tickstack.io/profile label, when set, names p too.
func hasProfile(node *corev1.Node, lns *tsv1.LatencyNodeState, p string) bool {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || lns.Spec.Profile.Name != p {
		return false
	}
	l := node.Labels[NodeProfileLabel]
	return l == "" || l == p
}

// gateMarks is what the PTP gate makes of a node's marks. It is pure. Out of sync, a validated
// label moves into the held annotation; in sync, a held profile becomes the label again (unless a
// label is already there). A held profile the node no longer has (hasProfile false) is dropped and
// returned as dropped.
func gateMarks(have validationMarks, lost bool, hasProfile func(string) bool) (out validationMarks, dropped string) {
	out = have
	if lost && out.validated != "" {
		out.held, out.validated = out.validated, ""
	}
	if out.held != "" && !hasProfile(out.held) {
		dropped, out.held = out.held, ""
	}
	if !lost && out.held != "" {
		if out.validated == "" {
			out.validated = out.held
		}
		out.held = ""
	}
	return out, dropped
}

// benchmarkMarks is what a judged node's marks become after a benchmark. It is pure. value is
// wantValidatedLabel's: the profile when the node passed, "" when it failed. A pass while the node
// is out of sync is held, not labelled; a failure drops a held validation too.
func benchmarkMarks(value string, lost bool) validationMarks {
	switch {
	case value == "":
		return validationMarks{}
	case lost:
		return validationMarks{held: value}
	}
	return validationMarks{validated: value}
}

// readNodeState reads the node state of a node; nil when there is none.
func readNodeState(ctx context.Context, c client.Reader, node string) (*tsv1.LatencyNodeState, error) {
	lns := &tsv1.LatencyNodeState{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, lns); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading the node state of %s: %w", node, err)
		}
		return nil, nil
	}
	return lns, nil
}

// Reconcile moves one node's validation between its label and the held annotation.
func (r *PTPGateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	lns, err := readNodeState(ctx, r.Client, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileNodeCondition(ctx, node, lns); err != nil {
		return ctrl.Result{}, err
	}
	lost, cond := timeSyncLost(lns)
	have := marksOf(node)
	want, dropped := gateMarks(have, lost, func(p string) bool { return hasProfile(node, lns, p) })
	if want == have {
		return ctrl.Result{}, nil
	}
	orig := node.DeepCopy()
	setMarks(node, want)
	// The decision rests on the label and the annotation together: refuse to patch over a change
	// made meanwhile (the benchmark controller's) and decide again.
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, fmt.Errorf("moving the validation of node %s (label %s, annotation %s): %w", node.Name, tsv1.ValidatedLabel, tsv1.ValidatedHeldAnnotation, err)
	}
	r.report(ctx, node, lns, have, want, dropped, cond)
	return ctrl.Result{}, nil
}

// reconcileNodeCondition keeps the node's tickstack.io/TimeSynced condition in step with its node
// state.
func (r *PTPGateReconciler) reconcileNodeCondition(ctx context.Context, node *corev1.Node, lns *tsv1.LatencyNodeState) error {
	conds, changed := mergeNodeCondition(node.Status.Conditions, wantNodeCondition(lns, metav1.Now()))
	if !changed {
		return nil
	}
	orig := node.DeepCopy()
	node.Status.Conditions = conds
	// A strategic merge patch touches only this condition (the list merges by type): the
	// kubelet's conditions, patched by it meanwhile, are left alone.
	if err := r.Client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		return fmt.Errorf("setting condition %s on node %s: %w", NodeTimeSyncedCondition, node.Name, err)
	}
	return nil
}

// report logs and records what one reconcile changed.
func (r *PTPGateReconciler) report(ctx context.Context, node *corev1.Node, lns *tsv1.LatencyNodeState, have, want validationMarks, dropped string, cond *metav1.Condition) {
	log := ctrl.LoggerFrom(ctx)
	var related runtime.Object
	if lns != nil {
		related = lns
	}
	switch {
	case have.validated != "" && want.held == have.validated:
		why := "TimeSynced is False"
		if cond != nil {
			why = fmt.Sprintf("TimeSynced is False (%s: %s)", cond.Reason, cond.Message)
		}
		log.Info("time sync lost: validation held", "node", node.Name, "profile", want.held, "reason", why)
		r.event(node, related, corev1.EventTypeWarning, EventTimeSyncLost, "Unlabel",
			"node %s lost %s=%s: %s; it is held in the %s annotation and returns when TimeSynced is True", node.Name, tsv1.ValidatedLabel, want.held, why, tsv1.ValidatedHeldAnnotation)
	case have.held != "" && want.validated == have.held && have.validated == "":
		log.Info("time sync restored: validation back", "node", node.Name, "profile", want.validated)
		r.event(node, related, corev1.EventTypeNormal, EventTimeSyncRestored, "Label",
			"node %s labelled %s=%s again: TimeSynced is True", node.Name, tsv1.ValidatedLabel, want.validated)
	}
	if dropped != "" {
		now := "it has no node state"
		if lns != nil {
			now = fmt.Sprintf("its profile is now %q", lns.Spec.Profile.Name)
		}
		log.Info("held validation dropped: the node's profile changed", "node", node.Name, "profile", dropped, "now", now)
		r.event(node, related, corev1.EventTypeWarning, EventHeldValidationDropped, "Unlabel",
			"node %s no longer holds its validation for profile %s: %s; a LatencyBenchmark must validate it again", node.Name, dropped, now)
	}
}

func (r *PTPGateReconciler) event(node *corev1.Node, related runtime.Object, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(node, related, kind, reason, action, note, args...)
	}
}

// timeSyncChanged passes the node state changes the gate acts on: TimeSynced's status or reason,
// the ptp section coming or going, another profile, the deletion starting; status.ptp refreshes
// do not pass.
func timeSyncChanged(e event.TypedUpdateEvent[client.Object]) bool {
	o, ok1 := e.ObjectOld.(*tsv1.LatencyNodeState)
	n, ok2 := e.ObjectNew.(*tsv1.LatencyNodeState)
	if !ok1 || !ok2 {
		return true
	}
	lostOld, _ := timeSyncLost(o)
	lostNew, _ := timeSyncLost(n)
	co, cn := wantNodeCondition(o, metav1.Time{}), wantNodeCondition(n, metav1.Time{})
	condChanged := (co == nil) != (cn == nil) || (co != nil && (co.Status != cn.Status || co.Reason != cn.Reason))
	return lostOld != lostNew || condChanged || o.Spec.Profile.Name != n.Spec.Profile.Name || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// SetupWithManager watches nodes (labels and annotations) and node states (named after their node).
func (r *PTPGateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	sameName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&tsv1.LatencyNodeState{}, sameName, builder.WithPredicates(predicate.Funcs{UpdateFunc: timeSyncChanged})).
		Named("ptpgate").
		Complete(r)
}
