package chart

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestBenchmarkNamespaces: the chart opts the release's namespace in to benchmarks, and each of
// bench.namespaces once, each by a RoleBinding of the benchmark-namespace ClusterRole to the
// manager's service account; a namespace that is not a DNS label is refused by the schema.
func TestBenchmarkNamespaces(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"", []string{namespace}},
		{"bench.namespaces={team-a,team-b," + namespace + "}", []string{"team-a", "team-b", namespace}},
	} {
		var sets []string
		if tc.set != "" {
			sets = append(sets, tc.set)
		}
		var got []string
		for _, o := range ofKind(mustRender(t, sets...), "RoleBinding") {
			var rb rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &rb); err != nil {
				t.Fatal(err)
			}
			if rb.RoleRef.Name != "t-tickstack-benchmark-namespace" {
				continue
			}
			if rb.RoleRef.Kind != "ClusterRole" || len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind ||
				rb.Subjects[0].Name != "t-tickstack-manager" || rb.Subjects[0].Namespace != namespace {
				t.Errorf("%s: RoleBinding %s/%s binds %+v to %+v, want the manager's service account", tc.set, rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects)
			}
			got = append(got, rb.Namespace)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("--set %q: benchmark namespaces %v, want %v", tc.set, got, tc.want)
		}
	}
	if _, err := render(t, "bench.namespaces={Team_A}"); err == nil || !strings.Contains(err.Error(), "/bench/namespaces/0") {
		t.Errorf("bench.namespaces={Team_A}: %v, want the schema to refuse /bench/namespaces/0", err)
	}
}
