package node

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
	"github.com/tickstack/tickstack/internal/resolve"
)

// PTPGateReconciler mirrors a node state's TimeSynced condition as the node condition
// tickstack.io/TimeSynced, so kubectl describe node and node-condition tooling see the clock's
// state. What a lost time sync does to the node's validation is NodeValidationReconciler's.
type PTPGateReconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch

// wantNodeCondition is the TimeSynced node condition a node state asks for (nil: none). It is
// pure; now stamps the heartbeat.
func wantNodeCondition(lns *tsv1.LatencyNodeState, now metav1.Time) *corev1.NodeCondition {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || resolve.DesiredTuning(lns) == nil || resolve.DesiredTuning(lns).PTP == nil {
		return nil
	}
	nc := &corev1.NodeCondition{Type: tsv1.NodeTimeSyncedCondition, Status: corev1.ConditionUnknown, Reason: "NotReported",
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
		if have[i].Type == tsv1.NodeTimeSyncedCondition {
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

// timeSyncLost says whether a node state (nil: none) reports TimeSynced=False for its ptp section,
// and returns the condition. A node state without a ptp section, being deleted, or whose agent has
// not reported TimeSynced yet is not out of sync.
func timeSyncLost(lns *tsv1.LatencyNodeState) (bool, *metav1.Condition) {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || resolve.DesiredTuning(lns) == nil || resolve.DesiredTuning(lns).PTP == nil {
		return false, nil
	}
	c := apimeta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeTimeSynced)
	return c != nil && c.Status == metav1.ConditionFalse, c
}

// readNode reads a node and its node state (nil when there is none); a node that is gone is
// (nil, nil, nil).
func readNode(ctx context.Context, c client.Reader, name string) (*corev1.Node, *tsv1.LatencyNodeState, error) {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	lns, err := readNodeState(ctx, c, node.Name)
	return node, lns, err
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

// Reconcile sets one node's TimeSynced condition.
func (r *PTPGateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node, lns, err := readNode(ctx, r.Client, req.Name)
	if err != nil || node == nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.reconcileNodeCondition(ctx, node, lns)
}

// reconcileNodeCondition keeps the node's tickstack.io/TimeSynced condition in step with its node
// state.
func (r *PTPGateReconciler) reconcileNodeCondition(ctx context.Context, node *corev1.Node, lns *tsv1.LatencyNodeState) error {
	want := wantNodeCondition(lns, metav1.Now())
	if _, changed := mergeNodeCondition(node.Status.Conditions, want); !changed {
		return nil
	}
	patch, err := timeSyncedPatch(want)
	if err == nil {
		err = r.Client.Status().Patch(ctx, node, patch)
	}
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting condition %s on node %s: %w", tsv1.NodeTimeSyncedCondition, node.Name, err)
	}
	return nil
}

// timeSyncedPatch is the strategic merge patch that puts want in place of the node's
// tickstack.io/TimeSynced condition, or deletes that condition when want is nil. It names only
// that condition (the list merges by type), so the kubelet's conditions, which the manager's cache
// does not hold (shared.NodeTransform), are left alone: a patch computed from the cached copy
// would, on the condition's removal, clear the whole list.
func timeSyncedPatch(want *corev1.NodeCondition) (client.Patch, error) {
	entry := any(map[string]any{"type": tsv1.NodeTimeSyncedCondition, "$patch": "delete"})
	if want != nil {
		entry = want
	}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{entry}}})
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.StrategicMergePatchType, raw), nil
}

// timeSyncChanged passes the node state changes the gate acts on: TimeSynced's status or reason,
// the ptp section coming or going, the deletion starting; status.ptp refreshes do not pass.
func timeSyncChanged(e event.TypedUpdateEvent[client.Object]) bool {
	o, ok1 := e.ObjectOld.(*tsv1.LatencyNodeState)
	n, ok2 := e.ObjectNew.(*tsv1.LatencyNodeState)
	if !ok1 || !ok2 {
		return true
	}
	co, cn := wantNodeCondition(o, metav1.Time{}), wantNodeCondition(n, metav1.Time{})
	condChanged := (co == nil) != (cn == nil) || (co != nil && (co.Status != cn.Status || co.Reason != cn.Reason))
	return condChanged || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// SetupWithManager watches nodes (labels and annotations) and node states (named after their node).
func (r *PTPGateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&tsv1.LatencyNodeState{}, shared.SameName, builder.WithPredicates(predicate.Funcs{UpdateFunc: timeSyncChanged})).
		Named("ptpgate").
		Complete(r)
}
