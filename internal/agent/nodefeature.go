package agent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeatures,verbs=get;create;patch;delete

// nodeFeature is the agent's NodeFeature object for node-feature-discovery (api keys.go,
// TuningFeature), in the agent's namespace.
func (r *Reconciler) nodeFeature() *nfdv1alpha1.NodeFeature {
	return &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{
		Name: tsv1.NodeFeaturePrefix + r.NodeName, Namespace: r.Namespace,
		Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: r.NodeName},
	}}
}

// publishFeature tells node-feature-discovery which profile tunes this node and whether its
// tuning is in effect (the Applied condition of the status this reconcile wrote, for the current
// generation), so that its rule labels the node. Without the NodeFeature CRD (no
// node-feature-discovery) or without a namespace (--namespace) it does nothing. While what it
// publishes is unchanged it makes no request, except a read back every FeatureRecheck (which
// makes a NodeFeature deleted behind its back again).
func (r *Reconciler) publishFeature(ctx context.Context, s *scope) error {
	if r.Namespace == "" || r.noNFD {
		return nil
	}
	st := &s.lns.Status
	applied := s.tuning != nil && meta.IsStatusConditionTrue(st.Conditions, tsv1.NodeApplied) &&
		st.ObservedGeneration == s.lns.Generation
	want := r.nodeFeature()
	want.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: tsv1.GroupVersion.String(), Kind: "LatencyNodeState", Name: s.lns.Name, UID: s.lns.UID,
	}}
	want.Spec.Features.Attributes = map[string]nfdv1alpha1.AttributeFeatureSet{tsv1.TuningFeature: {Elements: map[string]string{
		"profile": s.lns.Labels[tsv1.ProfileLabel], "applied": fmt.Sprint(applied),
	}}}
	// Unchanged since it was last written or read back, and read back recently: no request.
	if p := r.published; p != nil && r.Clock.Since(r.publishedAt) < r.FeatureRecheck &&
		equality.Semantic.DeepEqual(p.Spec, want.Spec) && equality.Semantic.DeepEqual(p.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(p.OwnerReferences, want.OwnerReferences) {
		return nil
	}
	r.published = nil
	if err := r.writeFeature(ctx, want); err != nil || r.noNFD {
		return err
	}
	r.published, r.publishedAt = want, r.Clock.Now()
	return nil
}

// writeFeature makes the NodeFeature what want says, reading it first.
func (r *Reconciler) writeFeature(ctx context.Context, want *nfdv1alpha1.NodeFeature) error {
	got := &nfdv1alpha1.NodeFeature{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case meta.IsNoMatchError(err):
		r.noNFD = true
		ctrl.LoggerFrom(ctx).Info("no NodeFeature CRD (node-feature-discovery is not installed): the tuning is not published as a node feature")
		return nil
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating NodeFeature %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading NodeFeature %s/%s: %w", want.Namespace, want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Spec, want.Spec) && equality.Semantic.DeepEqual(got.Labels, want.Labels) {
		return nil
	}
	orig := got.DeepCopy()
	got.Labels, got.Spec, got.OwnerReferences = want.Labels, want.Spec, want.OwnerReferences
	if err := r.Client.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("updating NodeFeature %s/%s: %w", got.Namespace, got.Name, err)
	}
	return nil
}

// withdrawFeature deletes the agent's NodeFeature when the node state goes, so that
// node-feature-discovery takes its labels off the node.
func (r *Reconciler) withdrawFeature(ctx context.Context) error {
	if r.Namespace == "" || r.noNFD {
		return nil
	}
	r.published = nil
	err := r.Client.Delete(ctx, r.nodeFeature())
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return fmt.Errorf("deleting NodeFeature %s/%s%s: %w", r.Namespace, tsv1.NodeFeaturePrefix, r.NodeName, err)
}
