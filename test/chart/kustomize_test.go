package chart

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// The chart and config/default install the same product. These objects differ by design and only
// these; anything else that one has and the other lacks, or that differs in what it grants, runs or
// admits, fails TestChartAndKustomizeDeployTheSameObjects.
var (
	// chartName: the chart's name of an object config/default names differently.
	chartName = map[string]string{
		"MutatingWebhookConfiguration/tickstack-mutating-webhook-configuration":     "tickstack-mutating",
		"ValidatingWebhookConfiguration/tickstack-validating-webhook-configuration": "tickstack-validating",
		"Service/tickstack-webhook-service":                                         "tickstack-webhook",
	}
	// chartArgName: in the manager's arguments, the chart's name of what config/default names otherwise.
	chartArgName = map[string]string{
		"tickstack-webhook-service":                  "tickstack-webhook",
		"tickstack-validating-webhook-configuration": "tickstack-validating",
		"tickstack-mutating-webhook-configuration":   "tickstack-mutating",
		"tickstack-webhook-server-cert":              "tickstack-webhook-cert",
	}
	// chartOnlyArgs: flags the chart passes and config/default leaves to the binary, with why.
	chartOnlyArgs = map[string]string{
		"--namespace": "config/default's manager takes it from POD_NAMESPACE, which follows an overlay's namespace",
	}
	// onlyInChart: objects the chart installs and config/default does not, with why.
	onlyInChart = map[string]string{
		// helm install -n NS --create-namespace makes the namespace; config/default carries it.
		"Service/tickstack-metrics": "metrics.enabled (a ServiceMonitor's target); config/default exposes no metrics Service",
		// the chart pre-creates the webhook certificate's Secret (webhook.certs); under config/default
		// the manager creates it at its first start (internal/certs)
		"Secret/tickstack-webhook-cert": "the chart's webhook certificate Secret",
		// a pre-delete hook: kubectl delete -k has no hooks (docs/install.md, Uninstall)
		"ConfigMap/tickstack-uninstall-check": "helm uninstall's check",
	}
	onlyInKustomize = map[string]string{
		"Namespace/tickstack-system": "helm install --create-namespace makes it",
	}
)

func kindName(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// TestChartAndKustomizeDeployTheSameObjects renders the chart (release tickstack, default values) and
// config/default and compares every object: the set of kinds and names, RBAC rules and bindings,
// webhook rules, and the manager's and agents' pods (containers, images, commands, arguments, ports,
// security contexts, volumes, accounts, update strategies), so that the two install paths cannot
// drift apart.
func TestChartAndKustomizeDeployTheSameObjects(t *testing.T) {
	out, err := exec.Command(helm(t), "template", "tickstack", chartDir(t), "-n", namespace, "--kube-version", "1.32.3").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	chart := map[string]*unstructured.Unstructured{}
	for _, o := range kubetest.DecodeObjects(t, out) {
		chart[kindName(o)] = o
	}
	kust := map[string]*unstructured.Unstructured{}
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		kust[kindName(o)] = o
	}
	matched := map[string]bool{}
	for _, k := range sortedKeys(kust) {
		ko := kust[k]
		if why, ok := onlyInKustomize[k]; ok {
			if _, inChart := chart[k]; inChart {
				t.Errorf("%s is listed as config/default's alone (%s) but the chart has it too", k, why)
			}
			continue
		}
		ck := k
		if n, ok := chartName[k]; ok {
			ck = ko.GetKind() + "/" + n
		}
		co, ok := chart[ck]
		if !ok {
			t.Errorf("config/default installs %s; the chart does not (as %s)", k, ck)
			continue
		}
		matched[ck] = true
		for _, d := range compareObjects(co, ko) {
			t.Errorf("%s: %s", k, d)
		}
	}
	for _, k := range sortedKeys(chart) {
		if matched[k] {
			continue
		}
		if _, ok := onlyInChart[k]; !ok {
			t.Errorf("the chart installs %s; config/default does not", k)
		}
	}
	for k := range onlyInChart {
		if _, ok := chart[k]; !ok {
			t.Errorf("%s is listed as the chart's alone but the chart does not render it", k)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareObjects lists what differs between the chart's and config/default's object of one kind.
func compareObjects(c, k *unstructured.Unstructured) []string {
	field := func(o *unstructured.Unstructured, path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return v
	}
	var diff []string
	same := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			diff = append(diff, fmt.Sprintf("%s differs:\n  chart:          %s\n  config/default: %s", what, js(a), js(b)))
		}
	}
	if c.GetNamespace() != k.GetNamespace() && c.GetNamespace() != "" && k.GetNamespace() != "" {
		same("namespace", c.GetNamespace(), k.GetNamespace())
	}
	switch c.GetKind() {
	case "ClusterRole", "Role":
		same("rules", sortedJSON(field(c, "rules")), sortedJSON(field(k, "rules")))
	case "ClusterRoleBinding", "RoleBinding":
		same("roleRef", field(c, "roleRef"), field(k, "roleRef"))
		same("subjects", sortedJSON(field(c, "subjects")), sortedJSON(field(k, "subjects")))
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		same("webhooks", webhooks(c), webhooks(k))
	case "Deployment", "DaemonSet":
		same("updateStrategy", field(c, "spec", "updateStrategy"), field(k, "spec", "updateStrategy"))
		same("strategy", field(c, "spec", "strategy"), field(k, "spec", "strategy"))
		pc, pk := podSpec(c, true), podSpec(k, false)
		for _, f := range sortedKeys(pc) {
			same("pod "+f, pc[f], pk[f])
		}
	case "CustomResourceDefinition":
		same("versions", field(c, "spec", "versions"), field(k, "spec", "versions"))
		same("scope", field(c, "spec", "scope"), field(k, "spec", "scope"))
	case "Service":
		same("ports", field(c, "spec", "ports"), field(k, "spec", "ports"))
		same("selector", withoutInstance(field(c, "spec", "selector")), withoutInstance(field(k, "spec", "selector")))
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		same("spec", field(c, "spec"), field(k, "spec"))
	case "ServiceAccount":
	default:
		same("spec", field(c, "spec"), field(k, "spec"))
	}
	return diff
}

// webhooks keeps what decides which requests a webhook gets and where they go, with the Service's
// name left out (named differently, compared as an object of its own).
func webhooks(o *unstructured.Unstructured) []map[string]any {
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	var out []map[string]any
	for _, h := range hooks {
		m := h.(map[string]any)
		path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
		w := map[string]any{"path": path}
		for _, f := range []string{"name", "rules", "failurePolicy", "sideEffects", "matchPolicy", "namespaceSelector",
			"objectSelector", "admissionReviewVersions", "reinvocationPolicy", "timeoutSeconds", "matchConditions"} {
			w[f] = m[f]
		}
		out = append(out, w)
	}
	return out
}

// podSpec keeps what a pod runs and may do: per container its image repository, command, arguments
// (a flag repeated, as the chart renders a list, joined into one value, as the binaries read it;
// names mapped to the chart's), ports, security context and host paths (mount path, host path and
// type, propagation: volume names differ); the pod's account and host namespaces.
func podSpec(o *unstructured.Unstructured, chart bool) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	out := map[string]any{}
	for _, f := range []string{"serviceAccountName", "hostNetwork", "hostPID", "dnsPolicy", "priorityClassName", "securityContext"} {
		out[f] = spec[f]
	}
	volumes := map[string]any{}
	vl, _ := spec["volumes"].([]any)
	for _, v := range vl {
		m := v.(map[string]any)
		src := map[string]any{}
		for k, x := range m {
			if k != "name" {
				src[k] = x
			}
		}
		volumes[fmt.Sprint(m["name"])] = src
	}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, ci := range cs {
			c := ci.(map[string]any)
			name := list + "/" + fmt.Sprint(c["name"])
			image, _ := c["image"].(string)
			repo, _, _ := strings.Cut(image, ":")
			out[name+" image"] = repo
			for _, f := range []string{"command", "ports", "securityContext"} {
				out[name+" "+f] = c[f]
			}
			out[name+" args"] = normalArgs(c["args"], chart)
			var mounts []string
			ms, _ := c["volumeMounts"].([]any)
			for _, mi := range ms {
				m := mi.(map[string]any)
				mounts = append(mounts, js(map[string]any{"mountPath": m["mountPath"], "readOnly": m["readOnly"], "subPath": m["subPath"],
					"mountPropagation": m["mountPropagation"], "volume": volumes[fmt.Sprint(m["name"])]}))
			}
			slices.Sort(mounts)
			out[name+" mounts"] = mounts
		}
	}
	return out
}

// normalArgs joins a repeated flag's values with blanks (--reboot-command=a --reboot-command=b is
// --reboot-command=a b to the binary), maps config/default's names to the chart's and drops the
// flags the chart alone passes.
func normalArgs(v any, chart bool) []string {
	l, _ := v.([]any)
	var out []string
	last := ""
	for _, a := range l {
		s := fmt.Sprint(a)
		flag, val, hasVal := strings.Cut(s, "=")
		if _, ok := chartOnlyArgs[flag]; ok && chart {
			continue
		}
		if !chart && hasVal {
			if n, ok := chartArgName[val]; ok {
				s = flag + "=" + n
			}
		}
		if hasVal && flag == last && len(out) > 0 {
			out[len(out)-1] += " " + val
			continue
		}
		out = append(out, s)
		last = flag
	}
	return out
}

// withoutInstance drops Helm's instance label from a selector (config/default has no release).
func withoutInstance(v any) any {
	m, _ := v.(map[string]any)
	out := map[string]any{}
	for k, x := range m {
		if k != "app.kubernetes.io/instance" {
			out[k] = x
		}
	}
	return out
}

// sortedJSON turns a list into its members' JSON, sorted, for an order-insensitive comparison.
func sortedJSON(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, js(x))
	}
	slices.Sort(out)
	return out
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
