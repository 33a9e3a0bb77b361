package agent_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/agent/agenttest"
)

// TestDrainEvictsOwnNamespaceLast: on a real API server, the drain evicts the node's pods of other
// namespaces first and those of the agent's own namespace (the manager, which serves the eviction
// check, among them) only once the others are gone; another node's pods are never touched.
func TestDrainEvictsOwnNamespaceLast(t *testing.T) {
	ctx := context.Background()
	node := agenttest.Name("drain")
	createNode(t, node)
	ownNS, appNS := agenttest.Name("tsagt-own"), agenttest.Name("tsagt-app")
	for _, ns := range []string{ownNS, appNS} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := k8s.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	}
	pod := func(ns, name, on string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: on, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	manager := pod(ownNS, "manager", node)
	app := pod(appNS, "app", node)
	elsewhere := pod(appNS, "elsewhere", node+"-other")

	a := agenttest.NewTreeAgent(t, node)
	a.R.Namespace = ownNS
	a.R.Client, a.R.APIReader = k8s, k8s
	gone := func(p *corev1.Pod) bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}))
	}

	left, _, err := a.R.EvictPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !gone(app) || gone(manager) || !slices.Contains(left, ownNS+"/manager") {
		t.Fatalf("first pass: app gone %v, manager gone %v, left %v: want the app evicted and the manager waiting", gone(app), gone(manager), left)
	}
	if _, _, err := a.R.EvictPods(ctx); err != nil {
		t.Fatal(err)
	}
	if !gone(manager) {
		t.Error("second pass: the manager's pod is still there")
	}
	if gone(elsewhere) {
		t.Error("a pod of another node was evicted")
	}
}
