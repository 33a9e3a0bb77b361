package profile

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestNodeStateOwnersEnqueue: an agent's report on its node state reconciles the profile that owns
// it alone, after the roll-up window, once for every report of the window; a node state moving
// between profiles reconciles both at once; one going away reconciles every profile at once, as the
// node it frees may go to another. Nodes that join or change labels reconcile every profile, once
// a window.
func TestNodeStateOwnersEnqueue(t *testing.T) {
	all := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "a"}}, {NamespacedName: types.NamespacedName{Name: "b"}}, {NamespacedName: types.NamespacedName{Name: "c"}}}
	}
	const rollup = 200 * time.Millisecond
	h := nodeStateOwners{all: all, rollup: func(string) time.Duration { return rollup }}
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
		// later: the requests come after the roll-up window, not at once.
		later bool
	}{
		{"create", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: lns("b")}, q)
		}, []string{"b"}, false},
		{"status reports", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for range 100 {
				h.Update(ctx, event.UpdateEvent{ObjectOld: lns("b"), ObjectNew: lns("b")}, q)
			}
		}, []string{"b"}, true},
		{"owner changes", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: lns("a"), ObjectNew: lns("c")}, q)
		}, []string{"a", "c"}, false},
		{"no owner", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, event.GenericEvent{Object: lns("")}, q)
		}, nil, false},
		{"delete", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: lns("b")}, q)
		}, []string{"a", "b", "c"}, false},
		{"nodes joining or relabelled", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			nodes := allAfterRollup{all: all, rollup: h.rollup}
			for i := range 50 {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}}
				nodes.Create(ctx, event.CreateEvent{Object: n}, q)
				nodes.Update(ctx, event.UpdateEvent{ObjectOld: n, ObjectNew: n}, q)
			}
		}, []string{"a", "b", "c"}, true},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		sent := time.Now()
		tc.send(q)
		got := drain(q)
		if tc.later {
			if len(got) != 0 {
				t.Errorf("%s: %v enqueued at once, want none before the roll-up window", tc.name, got)
			}
			// Get blocks until a request is due; the queue's shutdown ends a wait for one that
			// never comes.
			stop := time.AfterFunc(10*rollup, q.ShutDown)
			for len(got) < len(tc.want) {
				r, shutdown := q.Get()
				if shutdown {
					break
				}
				if waited := time.Since(sent); waited < rollup {
					t.Errorf("%s: %s enqueued after %v, before the roll-up window %v", tc.name, r.Name, waited, rollup)
				}
				got = append(got, r.Name)
				q.Done(r)
			}
			stop.Stop()
			got = append(got, drain(q)...) // none more: one request a profile
			slices.Sort(got)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: enqueued %v, want %v", tc.name, got, tc.want)
		}
		q.ShutDown()
	}
}

// TestRollupWindows: a profile's roll-up window grows with the nodes it owns, between StatusRollup
// and MaxStatusRollup, and is StatusRollup again once the profile is gone.
func TestRollupWindows(t *testing.T) {
	var w rollupWindows
	if got := w.of("p"); got != StatusRollup {
		t.Errorf("before any reconcile: %v, want %v", got, StatusRollup)
	}
	for _, tc := range []struct {
		owned int
		want  time.Duration
	}{{0, StatusRollup}, {100, StatusRollup}, {3000, 3 * time.Second}, {5000, 5 * time.Second}, {50000, MaxStatusRollup}} {
		w.size("p", tc.owned)
		if got := w.of("p"); got != tc.want {
			t.Errorf("%d nodes owned: %v, want %v", tc.owned, got, tc.want)
		}
	}
	w.forget("p")
	if got := w.of("p"); got != StatusRollup {
		t.Errorf("after the profile went: %v, want %v", got, StatusRollup)
	}
}

// TestNotStatusOnly: the profile's own status write does not reconcile it again; a spec change,
// a finalizer added and a deletion do.
func TestNotStatusOnly(t *testing.T) {
	base := &tsv1.LatencyProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3, ResourceVersion: "10"}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*tsv1.LatencyProfile)
		want   bool
	}{
		{"status", func(p *tsv1.LatencyProfile) { p.Status.AppliedNodes = 7; p.ResourceVersion = "11" }, false},
		{"spec", func(p *tsv1.LatencyProfile) { p.Generation = 4 }, true},
		{"finalizer", func(p *tsv1.LatencyProfile) { p.Finalizers = []string{tsv1.ProfileFinalizer} }, true},
		{"deletion", func(p *tsv1.LatencyProfile) { p.DeletionTimestamp = &now }, true},
	} {
		n := base.DeepCopy()
		tc.change(n)
		if got := notStatusOnly(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
