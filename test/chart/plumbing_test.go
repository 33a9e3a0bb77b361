package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/testutil"
)

// The upstream plumbing the chart can deploy (docs/third-party.md, "In the chart"): what each value
// adds to the default render, and nothing else. The chart is rendered as release "t".
var plumbing = map[string][]string{
	"multus.enabled=true": {
		"CustomResourceDefinition network-attachment-definitions.k8s.cni.cncf.io",
		"ServiceAccount t-tickstack-multus", "ClusterRole t-tickstack-multus", "ClusterRoleBinding t-tickstack-multus",
		"DaemonSet t-tickstack-multus",
	},
	"nfd.enabled=true": {
		"CustomResourceDefinition nodefeatures.nfd.k8s-sigs.io",
		"CustomResourceDefinition nodefeaturerules.nfd.k8s-sigs.io",
		"CustomResourceDefinition nodefeaturegroups.nfd.k8s-sigs.io",
		"ServiceAccount t-tickstack-nfd-master", "ServiceAccount t-tickstack-nfd-worker", "ServiceAccount t-tickstack-nfd-gc",
		"ClusterRole t-tickstack-nfd-master", "ClusterRoleBinding t-tickstack-nfd-master",
		"ClusterRole t-tickstack-nfd-gc", "ClusterRoleBinding t-tickstack-nfd-gc",
		"Role t-tickstack-nfd-worker", "RoleBinding t-tickstack-nfd-worker",
		"ConfigMap t-tickstack-nfd-worker-conf",
		"Deployment t-tickstack-nfd-master", "DaemonSet t-tickstack-nfd-worker", "Deployment t-tickstack-nfd-gc",
	},
}

func key(o *unstructured.Unstructured) string { return o.GetKind() + " " + o.GetName() }

// added: the objects of objs that the default render does not have.
func added(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	def := map[string]bool{}
	for _, o := range mustRender(t) {
		def[key(o)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if !def[key(o)] {
			out = append(out, o)
		}
	}
	return out
}

func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range ofKind(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// templateSpec and containers of a workload, init containers first.
func templateSpec(o *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	return spec
}

func containers(o *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(templateSpec(o), field)
		for _, c := range cs {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

// Each value adds exactly its component's objects, in the release namespace, with the chart's labels
// but not the uninstall guard's (a restore needs none of them, and switching one off must work while
// profiles exist); the CRDs are kept on uninstall as the chart's own are.
func TestUpstreamPlumbingOnlyWhenEnabled(t *testing.T) {
	var all []string
	for set, want := range plumbing {
		all = append(all, set)
		var got []string
		for _, o := range added(t, mustRender(t, set)) {
			got = append(got, key(o))
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("--set %s adds\n  %v\nwant\n  %v", set, got, want)
		}
	}
	objs := added(t, mustRender(t, all...))
	if len(objs) != len(plumbing["multus.enabled=true"])+len(plumbing["nfd.enabled=true"]) {
		t.Errorf("both on add %d objects, want the sum of each alone", len(objs))
	}
	for _, o := range objs {
		labels := o.GetLabels()
		if labels["app.kubernetes.io/instance"] != "t" || labels["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s lacks the chart's labels: %v", key(o), labels)
		}
		if g, ok := labels["tickstack.io/uninstall-guard"]; ok {
			t.Errorf("%s carries tickstack.io/uninstall-guard=%s: the guard would refuse switching it off", key(o), g)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
				t.Errorf("%s lacks helm.sh/resource-policy: keep (crds.keep is true by default)", key(o))
			}
		} else if ns := o.GetNamespace(); ns != namespace && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			t.Errorf("%s is in namespace %q, want the release's", key(o), ns)
		}
	}
	for _, o := range ofKind(mustRender(t, append([]string{"crds.keep=false"}, all...)...), "CustomResourceDefinition") {
		if _, ok := o.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("crds.keep=false still keeps %s", key(o))
		}
	}
}

// Every workload runs under an account the chart makes, bound to a role it makes; every binding names
// an account and a role that are rendered.
func TestUpstreamPlumbingAccountsAndBindings(t *testing.T) {
	objs := added(t, mustRender(t, plumbingOn...))
	has := map[string]bool{}
	for _, o := range objs {
		has[key(o)] = true
	}
	bound := map[string]bool{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range ofKind(objs, kind) {
			ref, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
			if !has[ref+" "+name] {
				t.Errorf("%s binds %s %s, which is not rendered", key(b), ref, name)
			}
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] != "ServiceAccount" || s["namespace"] != namespace || !has["ServiceAccount "+fmt.Sprint(s["name"])] {
					t.Errorf("%s binds %v, not a rendered ServiceAccount of the release namespace", key(b), s)
				}
				bound[fmt.Sprint(s["name"])] = true
			}
		}
	}
	for _, kind := range []string{"DaemonSet", "Deployment"} {
		for _, w := range ofKind(objs, kind) {
			sa, _, _ := unstructured.NestedString(templateSpec(w), "serviceAccountName")
			if !has["ServiceAccount "+sa] || !bound[sa] {
				t.Errorf("%s runs as %q: want a rendered, bound ServiceAccount", key(w), sa)
			}
		}
	}
}

// Multus runs the configured image on every node (tainted or not) as the node's CNI, with the
// configured CNI directories of the node.
func TestMultusDaemonSet(t *testing.T) {
	objs := mustRender(t, "multus.enabled=true", "multus.image.repository=images.example/multus", "multus.image.tag=v9.9.9",
		"multus.cniConfDir=/var/lib/cni/net.d", "multus.cniBinDir=/usr/libexec/cni")
	ds := named(t, objs, "DaemonSet", "t-tickstack-multus")
	spec := templateSpec(ds)
	cs := containers(ds)
	if len(cs) != 2 {
		t.Fatalf("want the install init container and kube-multus, got %d containers", len(cs))
	}
	for _, c := range cs {
		if c["image"] != "images.example/multus:v9.9.9" {
			t.Errorf("container %s runs %v, want the configured image", c["name"], c["image"])
		}
	}
	if cmd, _, _ := unstructured.NestedStringSlice(cs[0], "command"); !slices.Equal(cmd, []string{"/install_multus", "--type", "thin"}) {
		t.Errorf("init container command %v, want the thin plugin's installer", cmd)
	}
	if cmd, _, _ := unstructured.NestedStringSlice(cs[1], "command"); !slices.Equal(cmd, []string{"/thin_entrypoint"}) {
		t.Errorf("kube-multus command %v, want /thin_entrypoint", cmd)
	}
	args, _, _ := unstructured.NestedStringSlice(cs[1], "args")
	for _, want := range []string{"--multus-conf-file=auto", "--multus-kubeconfig-file-host=/var/lib/cni/net.d/multus.d/multus.kubeconfig"} {
		if !slices.Contains(args, want) {
			t.Errorf("kube-multus args %v lack %s", args, want)
		}
	}
	hostPaths := map[string]string{}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range vols {
		if hp, ok, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); ok {
			hostPaths[v.(map[string]any)["name"].(string)] = hp
		}
	}
	if hostPaths["cni"] != "/var/lib/cni/net.d" || hostPaths["cnibin"] != "/usr/libexec/cni" {
		t.Errorf("host paths %v: want cni /var/lib/cni/net.d and cnibin /usr/libexec/cni", hostPaths)
	}
	if hn, _, _ := unstructured.NestedBool(spec, "hostNetwork"); !hn {
		t.Error("Multus must run in the host's network (it is the node's CNI)")
	}
	if pc, _, _ := unstructured.NestedString(spec, "priorityClassName"); pc != "system-node-critical" {
		t.Errorf("priorityClassName %q, want system-node-critical", pc)
	}
	tolerations, _, _ := unstructured.NestedSlice(spec, "tolerations")
	effects := map[string]bool{}
	for _, tol := range tolerations {
		tol := tol.(map[string]any)
		if tol["operator"] == "Exists" && tol["key"] == nil {
			effects[fmt.Sprint(tol["effect"])] = true
		}
	}
	if !effects["NoSchedule"] || !effects["NoExecute"] {
		t.Errorf("tolerations %v: the CNI must run on every node, tainted or not", tolerations)
	}
}

// node-feature-discovery runs the configured image; nfd-worker runs on every Linux node, those
// tickstack's taints keep latency pods off too (the NodeFeatureRule needs its features to label them).
func TestNodeFeatureDiscovery(t *testing.T) {
	objs := mustRender(t, "nfd.enabled=true", "nfd.image.repository=images.example/nfd", "nfd.image.tag=v9.9.9")
	for _, w := range []struct{ kind, component string }{{"Deployment", "master"}, {"DaemonSet", "worker"}, {"Deployment", "gc"}} {
		o := named(t, objs, w.kind, "t-tickstack-nfd-"+w.component)
		cs := containers(o)
		if len(cs) != 1 {
			t.Fatalf("%s: %d containers, want 1", key(o), len(cs))
		}
		if cs[0]["image"] != "images.example/nfd:v9.9.9" {
			t.Errorf("%s runs %v, want the configured image", key(o), cs[0]["image"])
		}
		if cmd, _, _ := unstructured.NestedStringSlice(cs[0], "command"); !slices.Equal(cmd, []string{"nfd-" + w.component}) {
			t.Errorf("%s command %v, want nfd-%s (in the image's /usr/bin)", key(o), cmd, w.component)
		}
		if nonRoot, _, _ := unstructured.NestedBool(cs[0], "securityContext", "runAsNonRoot"); !nonRoot {
			t.Errorf("%s must run as non-root, as upstream's does", key(o))
		}
	}
	worker := templateSpec(named(t, objs, "DaemonSet", "t-tickstack-nfd-worker"))
	if sel, _, _ := unstructured.NestedString(worker, "nodeSelector", "kubernetes.io/os"); sel != "linux" {
		t.Errorf("nfd-worker nodeSelector kubernetes.io/os=%q, want linux", sel)
	}
	tolerations, _, _ := unstructured.NestedSlice(worker, "tolerations")
	for _, taint := range []string{tsv1.TuningPendingTaint, tsv1.UnvalidatedTaint} {
		if !slices.ContainsFunc(tolerations, func(tol any) bool {
			m := tol.(map[string]any)
			return m["key"] == taint && m["operator"] == "Exists" && m["effect"] == "NoSchedule"
		}) {
			t.Errorf("nfd-worker does not tolerate %s:NoSchedule: %v", taint, tolerations)
		}
	}
	vols, _, _ := unstructured.NestedSlice(worker, "volumes")
	conf := ""
	for _, v := range vols {
		if name, ok, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name"); ok {
			conf = name
		}
	}
	cm := named(t, objs, "ConfigMap", conf)
	if _, ok, _ := unstructured.NestedString(cm.Object, "data", "nfd-worker.conf"); !ok {
		t.Errorf("%s has no nfd-worker.conf", key(cm))
	}
}

// The CRD templates are what hack/plumbing-crds.py writes from the sources pinned in
// hack/third-party.lock (testutil.ThirdParty gets those sources).
func TestPlumbingCRDsAsGenerated(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"multus-cni", "node-feature-discovery"} {
		testutil.ThirdParty(t, c)
	}
	dir := t.TempDir()
	if out, err := exec.Command(filepath.Join(root, "hack", "plumbing-crds.py"), dir).CombinedOutput(); err != nil {
		t.Fatalf("hack/plumbing-crds.py: %v\n%s", err, out)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("hack/plumbing-crds.py wrote nothing")
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir(t), "templates", f.Name()))
		if err != nil {
			t.Errorf("hack/plumbing-crds.py writes %s, which the chart lacks: %v", f.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/tickstack/templates/%s is not what hack/plumbing-crds.py writes from the pinned source "+
				"(run it and commit the result): %s", f.Name(), firstDiff(string(got), string(want)))
		}
	}
}

// firstDiff: the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: %q, want %q", i+1, gl, wl)
		}
	}
	return "same lines"
}
