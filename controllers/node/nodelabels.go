package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/shared"
)

// NodeLabelReconciler labels each node with the profile its agent reports Applied, and removes the
// label when the node state goes, changes profile or stops being Applied: a latency pod never
// schedules onto a node whose tuning is not (or no longer) in effect. A node whose agent resolves
// its own tuning keeps the label while it re-tunes (NodeProfileLabelValue).
type NodeLabelReconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tickstack.io,resources=latencynodestates,verbs=get;list;watch

// NodeProfileLabelValue is the value the node's profile label should have given its node state
// (nil when there is none) and the label's value now (have): the profile's name when the agent
// reports the current spec Applied, else "" (no label).
//
// A node whose agent resolves its own tuning (spec.profile.resolveOnNode) keeps the label it has
// while it re-tunes for a profile change: its agent puts the tuning-pending taint on before it
// changes the host, which keeps new latency pods off, so the manager writes nothing per node
// (docs/architecture.md, "The profile label while a node re-tunes"). It still loses the label when
// it leaves the profile or reports Degraded, and gets it first only once Applied.
func NodeProfileLabelValue(lns *tsv1.LatencyNodeState, have string) string {
	if lns == nil || !lns.DeletionTimestamp.IsZero() || lns.Spec.Profile.Name == "" {
		return ""
	}
	if lns.Spec.Profile.ResolveOnNode && have == lns.Spec.Profile.Name {
		if apimeta.IsStatusConditionTrue(lns.Status.Conditions, tsv1.NodeDegraded) {
			return ""
		}
		return have
	}
	c := apimeta.FindStatusCondition(lns.Status.Conditions, tsv1.NodeApplied)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	if c.ObservedGeneration != 0 && c.ObservedGeneration != lns.Generation {
		return "" // Applied describes an older spec
	}
	return lns.Spec.Profile.Name
}

// Reconcile sets or removes one node's profile label.
func (r *NodeLabelReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Both are the cache's objects (every node state report of a fleet comes here): read-only,
	// the node copied before it is changed.
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	lns := &tsv1.LatencyNodeState{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: node.Name}, lns, client.UnsafeDisableDeepCopy); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("reading the node state of %s: %w", node.Name, err)
		}
		lns = nil
	}
	have, labelled := node.Labels[tsv1.ProfileLabel]
	want := NodeProfileLabelValue(lns, have)
	if have == want && (labelled || want == "") {
		return ctrl.Result{}, nil
	}
	orig := node
	node = node.DeepCopy()
	node.Labels = shared.SetKey(node.Labels, tsv1.ProfileLabel, want)
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("labelling node %s: %w", node.Name, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches nodes (their labels) and node states (named after their node).
func (r *NodeLabelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&tsv1.LatencyNodeState{}, shared.SameName).
		Named("nodelabels").
		Complete(r)
}
