package phase

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// TestPatchStatus runs the status patch against a real API server: nothing is sent when what the
// reconciler owns did not change, a change is written, a deleted object is not an error, and a
// strategic merge patch leaves another writer's condition alone.
func TestPatchStatus(t *testing.T) {
	env, k8s := kubetest.New(t, kubetest.Options{NoCRDs: true})
	ctx := context.Background()
	// The client under test is the real one; the interceptor only counts the status patches it sends.
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: kubetest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			sent++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	conditions := func(n *corev1.Node) any { return n.Status.Conditions }
	cond := func(typ string, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: s, Reason: "Test", LastTransitionTime: metav1.Now()}
	}
	get := func(name string) *corev1.Node {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "phase-status"}}
	if err := k8s.Create(ctx, node); err != nil {
		t.Fatal(err)
	}

	orig := node.DeepCopy()
	if err := PatchStatus(ctx, c, orig, node, conditions); err != nil || sent != 0 {
		t.Fatalf("unchanged status: err %v, %d patches sent, want none", err, sent)
	}

	node.Status.Conditions = []corev1.NodeCondition{cond("tickstack.test/A", corev1.ConditionTrue)}
	if err := PatchStatus(ctx, c, orig, node, conditions); err != nil || sent != 1 {
		t.Fatalf("changed status: err %v, %d patches sent, want 1", err, sent)
	}
	if got := get(node.Name).Status.Conditions; len(got) != 1 || got[0].Type != "tickstack.test/A" {
		t.Fatalf("conditions after the patch: %+v", got)
	}

	// Another writer adds its condition; this reconciler, working from its older copy, changes its
	// own: the strategic merge patch carries only that one.
	other := get(node.Name)
	orig = other.DeepCopy()
	other.Status.Conditions = append(other.Status.Conditions, cond("tickstack.test/Other", corev1.ConditionTrue))
	if err := k8s.Status().Patch(ctx, other, client.StrategicMergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	orig = node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{cond("tickstack.test/A", corev1.ConditionFalse)}
	if err := PatchStatus(ctx, c, orig, node, conditions, StrategicMerge); err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.ConditionStatus{}
	for _, c := range get(node.Name).Status.Conditions {
		got[string(c.Type)] = c.Status
	}
	if len(got) != 2 || got["tickstack.test/A"] != corev1.ConditionFalse || got["tickstack.test/Other"] != corev1.ConditionTrue {
		t.Fatalf("after the strategic merge patch: %v, want A False and Other True", got)
	}

	if err := k8s.Delete(ctx, get(node.Name)); err != nil {
		t.Fatal(err)
	}
	orig = node.DeepCopy()
	node.Status.Conditions = nil
	if err := PatchStatus(ctx, c, orig, node, conditions); err != nil {
		t.Fatalf("a deleted object: %v, want nil", err)
	}

	// Any other error is returned, saying what failed.
	live := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "phase-status-2"}}
	if err := k8s.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	orig = live.DeepCopy()
	live.Status.Conditions = []corev1.NodeCondition{cond("tickstack.test/A", corev1.ConditionTrue)}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := PatchStatus(cancelled, c, orig, live, conditions); err == nil || !strings.Contains(err.Error(), "patching status") {
		t.Fatalf("a cancelled request: %v, want the patch's error", err)
	}
}

func TestJoin(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	err := a
	Join(&err, nil)
	if err != a {
		t.Fatalf("joining nil changed the error: %v", err)
	}
	Join(&err, b)
	if !errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("joined %v, want both a and b", err)
	}
	var none error
	Join(&none, b)
	if !errors.Is(none, b) {
		t.Fatalf("joined into nil: %v, want b", none)
	}
}
