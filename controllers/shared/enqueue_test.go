package shared

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestEnqueueMappers: SameName reconciles the object of the changed one's name; AllNodes every node
// the API server holds (and none when the list fails).
func TestEnqueueMappers(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	SameName.Update(ctx, event.UpdateEvent{ObjectOld: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		ObjectNew: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, q)
	if q.Len() != 1 {
		t.Fatalf("SameName queued %d requests, want 1", q.Len())
	}
	if req, _ := q.Get(); req.Name != "n1" || req.Namespace != "" {
		t.Fatalf("SameName queued %v, want n1", req)
	}

	_, k8s := kubetest.New(t, kubetest.Options{NoCRDs: true})
	for _, n := range []string{"a", "b", "c"} {
		if err := k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range AllNodes(k8s)(ctx, nil) {
		got = append(got, r.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("AllNodes: %v, want a b c", got)
	}
	// The kind is not installed: no request, no panic.
	if reqs := AllProfiles(k8s)(ctx, nil); len(reqs) != 0 {
		t.Fatalf("AllProfiles without the CRD: %v, want none", reqs)
	}
}
