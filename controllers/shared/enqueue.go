package shared

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The enqueue mappers of the controllers: which objects an event on a watched object reconciles.

// SameName reconciles the object named like the one that changed: a Node for its node state and
// the other way round (both cluster-scoped, named after the node).
var SameName = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
})

// AllProfiles reconciles every LatencyProfile (there are few): for a change that can concern any
// of them, such as a node's labels.
func AllProfiles(c client.Reader) handler.MapFunc {
	return all(c, func() client.ObjectList { return &tsv1.LatencyProfileList{} })
}

// AllBenchmarks reconciles every LatencyBenchmark (there are few).
func AllBenchmarks(c client.Reader) handler.MapFunc {
	return all(c, func() client.ObjectList { return &tsv1.LatencyBenchmarkList{} })
}

// AllNodes reconciles every Node.
func AllNodes(c client.Reader) handler.MapFunc {
	return all(c, func() client.ObjectList { return &corev1.NodeList{} })
}

// all lists the kind of newList from c (the cache's own objects, not copied: only their names are
// read) and reconciles each. A list that fails reconciles none.
func all(c client.Reader, newList func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, meta.LenList(list))
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
