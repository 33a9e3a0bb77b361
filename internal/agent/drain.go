package agent

import (
	"context"
	"fmt"
	"sort"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mirrorPodAnnotation marks static pods' mirror pods, which the API cannot evict.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// cordon marks the node unschedulable, remembering that the agent did it. A node someone else
// cordoned is left as it is (and is not uncordoned later).
func (r *Reconciler) cordon(ctx context.Context) error {
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	if node.Spec.Unschedulable {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Unschedulable = true
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[tsv1.CordonedAnnotation] = "true"
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("cordoning node %s: %w", r.NodeName, err)
	}
	return nil
}

// uncordon makes the node schedulable again if the agent cordoned it.
func (r *Reconciler) uncordon(ctx context.Context) error {
	node, err := r.getNode(ctx)
	if err != nil {
		return err
	}
	if _, ours := node.Annotations[tsv1.CordonedAnnotation]; !ours {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Unschedulable = false
	delete(node.Annotations, tsv1.CordonedAnnotation)
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("uncordoning node %s: %w", r.NodeName, err)
	}
	return nil
}

// evictable reports whether a drain must move the pod: DaemonSet pods (they would come back and
// tolerate the cordon), mirror pods (the API cannot evict them) and finished pods stay.
func evictable(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[mirrorPodAnnotation]; mirror {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return false
	}
	return true
}

// evictPods asks the eviction API (which enforces PodDisruptionBudgets) to evict every pod of
// the node that must leave. It returns the pods still there (namespace/name) and the last one
// whose eviction a budget refused.
//
// The pods of the agent's own namespace go last, once every other pod is gone: the manager among
// them serves the webhook that admits the agent's evictions (internal/webhook/eviction.go), so
// evicting it first would leave the rest of the drain waiting for it to come back, for good on a
// node where it can only come back here.
func (r *Reconciler) evictPods(ctx context.Context) (left []string, blocking string, err error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.MatchingFields{"spec.nodeName": r.NodeName}); err != nil {
		return nil, "", fmt.Errorf("listing pods of node %s: %w", r.NodeName, err)
	}
	own := func(p *corev1.Pod) bool { return r.Namespace != "" && p.Namespace == r.Namespace }
	sort.Slice(pods.Items, func(i, j int) bool {
		a, b := &pods.Items[i], &pods.Items[j]
		if own(a) != own(b) {
			return !own(a)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for i := range pods.Items {
		p := &pods.Items[i]
		if !evictable(p) {
			continue
		}
		name := p.Namespace + "/" + p.Name
		if own(p) && len(left) > 0 {
			left = append(left, name) // after the others
			continue
		}
		if p.DeletionTimestamp != nil {
			left = append(left, name) // terminating
			continue
		}
		ev := &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: r.EvictionGracePeriod}}
		err := r.Client.SubResource("eviction").Create(ctx, p, ev)
		switch {
		case err == nil:
			// Deleted at once (grace period 0) or terminating: look again.
			left = append(left, name)
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			left = append(left, name)
			blocking = name
		default:
			return nil, "", fmt.Errorf("evicting pod %s: %w", name, err)
		}
	}
	return left, blocking, nil
}
