package chart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// permissionsFile is the checked-in list of every permission tickstack's installs grant, each with
// its reason: TestPermissionsAsListed fails on any difference, so a change of permissions needs a
// change of the list (and its reason) in the same commit.
const permissionsFile = "testdata/permissions.yaml"

// permissionList is permissionsFile: per install ("chart", the chart with every component on, as
// release tickstack; "config/default"), per holder (a ServiceAccount "serviceaccount NS/NAME", or a
// ClusterRole bound to nobody in the install, "clusterrole NAME": the roles for people), per grant
// ("cluster core/nodes", "namespace NS core/secrets", with "/NAME" when limited by resourceNames):
// the verbs, then the reason after " # ".
type permissionList map[string]map[string]map[string]string

// TestPermissionsAsListed renders the chart and config/default, computes what every ServiceAccount
// may do through the Roles, ClusterRoles (aggregation included) and bindings they install, and what
// each unbound ClusterRole grants, and compares it with testdata/permissions.yaml.
func TestPermissionsAsListed(t *testing.T) {
	raw, err := os.ReadFile(permissionsFile)
	if err != nil {
		t.Fatal(err)
	}
	var want permissionList
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		t.Fatalf("%s: %v", permissionsFile, err)
	}
	args := []string{"template", compareRelease, chartDir(t), "-n", namespace, "--kube-version", "1.32.3"}
	for _, s := range allOn {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm(t), args...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	got := map[string]map[string]map[string]string{
		"chart":          effectivePermissions(kubetest.DecodeObjects(t, out)),
		"config/default": effectivePermissions(kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default"))),
	}
	if path := os.Getenv("TICKSTACK_PERMISSIONS_OUT"); path != "" {
		b, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var diff []string
	for _, install := range unionKeys(got, want) {
		for _, holder := range unionKeys(got[install], want[install]) {
			g, w := got[install][holder], want[install][holder]
			for _, grant := range unionKeys(g, w) {
				verbs, listed := g[grant], w[grant]
				listedVerbs, reason, _ := strings.Cut(listed, " # ")
				switch {
				case listed == "":
					diff = append(diff, fmt.Sprintf("%s: %s has %s: %s, which the list lacks: add it with its reason (\"%s # why\")", install, holder, grant, verbs, verbs))
				case verbs == "":
					diff = append(diff, fmt.Sprintf("%s: %s no longer has %s: remove it from the list", install, holder, grant))
				case strings.TrimSpace(listedVerbs) != verbs:
					diff = append(diff, fmt.Sprintf("%s: %s has %s: %s, the list says %s: change the list and its reason", install, holder, grant, verbs, listedVerbs))
				case strings.TrimSpace(reason) == "":
					diff = append(diff, fmt.Sprintf("%s: %s %s has no reason in the list (\"%s # why\")", install, holder, grant, verbs))
				}
			}
		}
	}
	if len(diff) > 0 {
		t.Errorf("permissions differ from %s (TICKSTACK_PERMISSIONS_OUT=FILE writes what the installs grant, without reasons):\n%s", permissionsFile, strings.Join(diff, "\n"))
	}
}

// effectivePermissions is, per holder and grant, the sorted verbs (see permissionList).
func effectivePermissions(objs []*unstructured.Unstructured) map[string]map[string]string {
	type role struct {
		obj   *unstructured.Unstructured
		rules []any
	}
	cluster := map[string]*role{}
	namespaced := map[string]*role{} // NS/NAME
	for _, o := range objs {
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		switch o.GetKind() {
		case "ClusterRole":
			cluster[o.GetName()] = &role{o, rules}
		case "Role":
			namespaced[o.GetNamespace()+"/"+o.GetName()] = &role{o, rules}
		}
	}
	// aggregation: a ClusterRole with an aggregationRule holds the rules of the ClusterRoles its
	// selectors match (as the controller manager fills them in)
	for _, r := range cluster {
		sels, found, _ := unstructured.NestedSlice(r.obj.Object, "aggregationRule", "clusterRoleSelectors")
		if !found {
			continue
		}
		for _, s := range sels {
			ml, _, _ := unstructured.NestedStringMap(s.(map[string]any), "matchLabels")
			sel := labels.SelectorFromSet(ml)
			for _, other := range cluster {
				if other != r && sel.Matches(labels.Set(other.obj.GetLabels())) {
					r.rules = append(r.rules, other.rules...)
				}
			}
		}
	}
	verbs := map[string]map[string][]string{} // holder -> grant -> verbs
	add := func(holder, scope string, rules []any) {
		if verbs[holder] == nil {
			verbs[holder] = map[string][]string{}
		}
		for _, g := range grants(rules) {
			verb, what, _ := strings.Cut(g, " ")
			key := scope + " " + what
			if !slices.Contains(verbs[holder][key], verb) {
				verbs[holder][key] = append(verbs[holder][key], verb)
			}
		}
	}
	bound := map[string]bool{}
	for _, b := range objs {
		if b.GetKind() != "ClusterRoleBinding" && b.GetKind() != "RoleBinding" {
			continue
		}
		refKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		refName, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		var r *role
		if refKind == "ClusterRole" {
			r, bound[refName] = cluster[refName], true
		} else {
			r = namespaced[b.GetNamespace()+"/"+refName]
		}
		scope := "cluster"
		if b.GetKind() == "RoleBinding" {
			scope = "namespace " + b.GetNamespace()
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			sm := s.(map[string]any)
			if sm["kind"] != "ServiceAccount" {
				continue
			}
			ns, _ := sm["namespace"].(string)
			if ns == "" {
				ns = b.GetNamespace()
			}
			holder := fmt.Sprintf("serviceaccount %s/%s", ns, sm["name"])
			if r == nil {
				add(holder, scope, []any{map[string]any{"verbs": []any{"missing"}, "apiGroups": []any{"role " + refKind + " " + refName}, "resources": []any{"not installed"}}})
				continue
			}
			add(holder, scope, r.rules)
		}
	}
	for name, r := range cluster {
		if !bound[name] && len(r.rules) > 0 {
			add("clusterrole "+name, "any", r.rules)
		}
	}
	out := map[string]map[string]string{}
	for holder, gs := range verbs {
		out[holder] = map[string]string{}
		for g, v := range gs {
			sort.Strings(v)
			out[holder][g] = strings.Join(v, " ")
		}
	}
	return out
}

// TestEffectivePermissionsAggregatesAndScopes: the computation the list is checked with follows
// aggregation, RoleBindings of ClusterRoles (namespace scope) and resourceNames.
func TestEffectivePermissionsAggregatesAndScopes(t *testing.T) {
	objs := kubetest.DecodeObjects(t, []byte(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: agg}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {x: "1"}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: part, labels: {x: "1"}}
rules: [{apiGroups: [""], resources: [secrets], resourceNames: [s], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b1}
roleRef: {kind: ClusterRole, name: agg}
subjects: [{kind: ServiceAccount, name: a, namespace: ns1}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b2, namespace: m}
roleRef: {kind: ClusterRole, name: part}
subjects: [{kind: ServiceAccount, name: a, namespace: ns1}]
`))
	got := effectivePermissions(objs)
	want := map[string]map[string]string{"serviceaccount ns1/a": {"cluster core/secrets/s": "get", "namespace m core/secrets/s": "get"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
