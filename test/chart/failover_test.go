package chart

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestManagerFailover: by default the operator runs two replicas with leader election, spread over
// nodes where it can (soft anti-affinity by hostname between the release's manager pods), with a
// PodDisruptionBudget keeping one through drains. One replica renders no budget (it would block
// every drain); replicas without leader election, a budget no eviction could satisfy and an unknown
// spreading mode are refused with the value to change.
func TestManagerFailover(t *testing.T) {
	managerOf := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		deps := ofKind(objs, "Deployment")
		if len(deps) != 1 {
			t.Fatalf("want one Deployment, got %d", len(deps))
		}
		return deps[0]
	}
	objs := mustRender(t)
	dep := managerOf(objs)
	if r, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("manager replicas %v, want 2", r)
	}
	term, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	want := map[string]any{
		"weight": int64(100),
		"podAffinityTerm": map[string]any{
			"topologyKey": "kubernetes.io/hostname",
			"labelSelector": map[string]any{"matchLabels": map[string]any{
				"app.kubernetes.io/name": "tickstack", "app.kubernetes.io/instance": "t", "app.kubernetes.io/component": "manager",
			}},
		},
	}
	if len(term) != 1 || fmt.Sprint(term[0]) != fmt.Sprint(want) {
		t.Errorf("manager anti-affinity %v, want %v", term, want)
	}
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	pdbs := ofKind(objs, "PodDisruptionBudget")
	if len(pdbs) != 1 {
		t.Fatalf("want one PodDisruptionBudget, got %d", len(pdbs))
	}
	if m, _, _ := unstructured.NestedFieldNoCopy(pdbs[0].Object, "spec", "minAvailable"); fmt.Sprint(m) != "1" {
		t.Errorf("budget minAvailable %v, want 1", m)
	}
	sel, _, _ := unstructured.NestedStringMap(pdbs[0].Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("the budget's selector %v does not select the manager pods (labels %v)", sel, podLabels)
		}
	}
	if len(sel) == 0 || sel["app.kubernetes.io/component"] != "manager" {
		t.Errorf("the budget's selector %v must select the manager pods alone", sel)
	}

	hard := managerOf(mustRender(t, "manager.podAntiAffinity=hard"))
	if req, _, _ := unstructured.NestedSlice(hard.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"); len(req) != 1 {
		t.Errorf("podAntiAffinity=hard: required terms %v", req)
	}
	if _, found, _ := unstructured.NestedMap(managerOf(mustRender(t, "manager.podAntiAffinity=none")).Object, "spec", "template", "spec", "affinity"); found {
		t.Error("podAntiAffinity=none still renders an affinity")
	}
	own := managerOf(mustRender(t, "manager.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey=zone",
		"manager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=role",
		"manager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"))
	aff, _, _ := unstructured.NestedMap(own.Object, "spec", "template", "spec", "affinity")
	if _, ok := aff["nodeAffinity"]; !ok {
		t.Errorf("manager.affinity's nodeAffinity dropped: %v", aff)
	}
	if pa, _, _ := unstructured.NestedMap(aff, "podAntiAffinity"); len(pa) != 1 || pa["requiredDuringSchedulingIgnoredDuringExecution"] == nil {
		t.Errorf("manager.affinity sets its own podAntiAffinity, want it alone: %v", pa)
	}

	if n := len(ofKind(mustRender(t, "manager.replicas=1"), "PodDisruptionBudget")); n != 0 {
		t.Errorf("one replica renders %d PodDisruptionBudgets, want none (it would block every drain)", n)
	}
	if n := len(ofKind(mustRender(t, "manager.podDisruptionBudget.enabled=false"), "PodDisruptionBudget")); n != 0 {
		t.Errorf("podDisruptionBudget.enabled=false renders %d budgets", n)
	}
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"manager.leaderElection=false"}, "manager.leaderElection=true"},
		{[]string{"manager.podDisruptionBudget.minAvailable=2"}, "minAvailable must be below manager.replicas"},
		{[]string{"manager.podAntiAffinity=always"}, "/manager/podAntiAffinity"},
		{[]string{"manager.podDisruptionBudget.minAvailable=0"}, "/manager/podDisruptionBudget/minAvailable"},
	} {
		_, err := render(t, c.sets...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: error %v, want one naming %q", c.sets, err, c.want)
		}
	}
	if _, err := render(t, "manager.leaderElection=false", "manager.replicas=1"); err != nil {
		t.Errorf("one replica without leader election: %v", err)
	}
}
