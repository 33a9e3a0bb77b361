package profile

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestNodeStateOwnersEnqueue: an agent's report on its node state reconciles the profile that owns
// it alone; a node state moving between profiles reconciles both; one going away reconciles every
// profile, as the node it frees may go to another.
func TestNodeStateOwnersEnqueue(t *testing.T) {
	all := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "a"}}, {NamespacedName: types.NamespacedName{Name: "b"}}, {NamespacedName: types.NamespacedName{Name: "c"}}}
	}
	h := nodeStateOwners{all: all}
	lns := func(owner string) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: tsv1.LatencyNodeStateSpec{NodeName: "n1", Profile: tsv1.ProfileReference{Name: owner}}}
	}
	drain := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
		var out []string
		for q.Len() > 0 {
			r, _ := q.Get()
			out = append(out, r.Name)
			q.Done(r)
		}
		slices.Sort(out)
		return out
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		send func(workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []string
	}{
		{"create", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: lns("b")}, q)
		}, []string{"b"}},
		{"status report", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: lns("b"), ObjectNew: lns("b")}, q)
		}, []string{"b"}},
		{"owner changes", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: lns("a"), ObjectNew: lns("c")}, q)
		}, []string{"a", "c"}},
		{"no owner", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, event.GenericEvent{Object: lns("")}, q)
		}, nil},
		{"delete", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: lns("b")}, q)
		}, []string{"a", "b", "c"}},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		tc.send(q)
		if got := drain(q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: enqueued %v, want %v", tc.name, got, tc.want)
		}
		q.ShutDown()
	}
}
