package chart

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

// The chart and config/default install the same product. TestChartAndKustomizeDeployTheSameObjects
// renders both and compares them object by object. The differences below are by design, each with its
// reason, and are the only ones allowed: anything else that one install has and the other lacks, or
// that differs in what it grants, runs or admits, fails the test. An entry that no longer matches
// anything fails it too, so that the list cannot outlive the difference it excuses.
//
// The chart is rendered as release "tickstack" in namespace tickstack-system: its objects are then
// named tickstack-<name>, as config/default's are (namePrefix tickstack-, namespace tickstack-system).
const (
	compareRelease = "tickstack"
	// what an object is called in the diff: kind, then namespace/name (name alone if cluster-scoped)
	keyFormat = "%s %s"
)

var (
	// chartName: the chart's name of an object config/default names otherwise. The chart names its
	// webhook configurations and Service after the release (<release>-mutating, -validating, -webhook),
	// config/default keeps controller-gen's names (mutating-webhook-configuration, ...) behind its
	// prefix, and the manager's flag defaults follow config/default. Neither is renamed: a helm upgrade
	// from a release with the old names would delete the live webhook configurations, whose caBundle the
	// operator had patched, and create new ones without one; with failurePolicy Fail every LatencyProfile
	// write and every profile pod's creation is then refused until the new manager pod has patched them.
	// A renamed Service likewise needs a new serving certificate (its DNS name changes) while the old
	// pod still serves the old one. The manager's flags name these objects in each install (mapped by
	// normalArgs), and TestOperatorManagedWebhookCertificate checks the chart's flags against its objects.
	chartName = map[string]string{
		"MutatingWebhookConfiguration tickstack-mutating-webhook-configuration":     "tickstack-mutating",
		"ValidatingWebhookConfiguration tickstack-validating-webhook-configuration": "tickstack-validating",
		"Service tickstack-system/tickstack-webhook-service":                        "tickstack-webhook",
	}
	// chartSecretName: the webhook certificate's Secret, as the chart names it (--webhook-secret-name)
	// and as config/default's manager names it. Not renamed either: the chart creates the Secret empty
	// and the operator fills it; under a new name an upgrade would make a new CA and patch it into the
	// webhook configurations while the old manager pod still serves a certificate of the old CA.
	chartSecretName = map[string]string{"tickstack-webhook-server-cert": "tickstack-webhook-cert"}
	// chartOnlyArgs: flags the chart passes and config/default leaves to the binary, with why.
	chartOnlyArgs = map[string]string{
		"--namespace": "config/default's manager takes it from POD_NAMESPACE, which follows an overlay's namespace",
	}
	// onlyInChart: objects the chart installs and config/default does not, with why.
	onlyInChart = map[string]string{
		"Service tickstack-system/tickstack-metrics": "metrics.enabled: the target of the chart's optional ServiceMonitor; " +
			"config/default installs no monitoring and so exposes no metrics Service",
		"Secret tickstack-system/tickstack-webhook-cert": "the chart creates the certificate's Secret empty so that helm uninstall " +
			"deletes it (the operator fills it); under config/default the manager creates it at its first start (internal/certs)",
		"ConfigMap tickstack-system/tickstack-uninstall-check": "helm uninstall's pre-delete hook, which the uninstall guard refuses; " +
			"kubectl delete -k has no hooks (docs/install.md, Uninstall)",
	}
	// onlyInKustomize: objects config/default installs and the chart does not, with why.
	onlyInKustomize = map[string]string{
		"Namespace tickstack-system": "helm install -n tickstack-system --create-namespace makes the release's namespace; " +
			"a chart that templated it could not be installed into an existing namespace",
	}
	// chartValues: the chart's defaults already install what config/default installs; these pin it,
	// so that a changed default cannot make the comparison skip a component.
	chartValues = []string{
		"crds.enabled=true", "agent.enabled=true", "agent.restrictToOwnNode=true", "xdpd.enabled=true",
		"uninstallGuard.enabled=true", "webhook.certs.mode=operator", "metrics.enabled=true",
	}
)

// clusterScoped: kinds with no namespace. kubectl kustomize sets config/default's namespace on the
// admission policies (its namespace transformer does not know them as cluster-scoped); the API
// server drops it, so the comparison does too.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// objectKey names an object by kind, the namespace it lands in (helm and kubectl put a namespaced
// object without one into the install's namespace) and name.
func objectKey(o *unstructured.Unstructured) string {
	return keyOf(o.GetKind(), o.GetNamespace(), o.GetName())
}

func keyOf(kind, ns, name string) string {
	if clusterScoped[kind] {
		return fmt.Sprintf(keyFormat, kind, name)
	}
	if ns == "" {
		ns = namespace
	}
	return fmt.Sprintf(keyFormat, kind, ns+"/"+name)
}

// TestChartAndKustomizeDeployTheSameObjects renders the chart (release tickstack, default values with
// config/default's components pinned on) and config/default and compares: the set of objects (kind,
// namespace, name); the rules of every Role and ClusterRole, as a set of single grants; the roleRef
// and subjects of every binding; every webhook of the webhook configurations (rules, failure policy,
// side effects, match policy, selectors, the Service's path, port and namespace); the manager's and
// the agents' pods (containers, full images, commands, arguments, ports, security contexts,
// resources, probes, volumes and mounts, service account, host namespaces, update strategy, replicas,
// affinity); the PodDisruptionBudgets; the
// CRDs' names, scope and versions with their schemas; the Services' ports and selectors; the
// admission policies and their bindings.
func TestChartAndKustomizeDeployTheSameObjects(t *testing.T) {
	args := []string{"template", compareRelease, chartDir(t), "-n", namespace, "--kube-version", "1.32.3"}
	for _, s := range chartValues {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm(t), args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helm template: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("helm template: %v", err)
	}
	chart := map[string]*unstructured.Unstructured{}
	for _, o := range kubetest.DecodeObjects(t, out) {
		chart[objectKey(o)] = o
	}
	kust := map[string]*unstructured.Unstructured{}
	for _, o := range kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default")) {
		kust[objectKey(o)] = o
	}
	for _, d := range compareInstalls(chart, kust) {
		t.Error(d)
	}
}

// compareInstalls lists every difference between the chart's and config/default's objects that the
// allowed differences above do not excuse.
func compareInstalls(chart, kust map[string]*unstructured.Unstructured) []string {
	var diff []string
	matched := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(kust)) {
		ko := kust[k]
		if why, ok := onlyInKustomize[k]; ok {
			if _, inChart := chart[k]; inChart {
				diff = append(diff, fmt.Sprintf("%s is listed as config/default's alone (%s), but the chart installs it too", k, why))
			}
			continue
		}
		ck := k
		if n, ok := chartName[k]; ok {
			ck = keyOf(ko.GetKind(), ko.GetNamespace(), n)
		}
		co, ok := chart[ck]
		if !ok {
			diff = append(diff, fmt.Sprintf("config/default installs %s; the chart does not (looked for %s)", k, ck))
			continue
		}
		matched[ck] = true
		for _, d := range compareObjects(co, ko) {
			diff = append(diff, fmt.Sprintf("%s: %s", k, d))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(chart)) {
		if matched[k] {
			continue
		}
		if _, ok := onlyInChart[k]; !ok {
			diff = append(diff, fmt.Sprintf("the chart installs %s; config/default does not", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(onlyInChart)) {
		if _, ok := chart[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s is listed as the chart's alone, but the chart does not install it", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(onlyInKustomize)) {
		if _, ok := kust[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s is listed as config/default's alone, but config/default does not install it", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(chartName)) {
		if _, ok := kust[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s is listed as named otherwise in the chart, but config/default does not install it", k))
		}
	}
	return diff
}

// maxDiffLines bounds what one field reports (a CRD's schema can differ in many places).
const maxDiffLines = 20

// compareObjects lists what differs between the chart's and config/default's object of one kind.
func compareObjects(c, k *unstructured.Unstructured) []string {
	field := func(o *unstructured.Unstructured, path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return v
	}
	var diff []string
	same := func(what string, a, b any) {
		var lines []string
		diffValues(what, a, b, &lines)
		if len(lines) > maxDiffLines {
			lines = append(lines[:maxDiffLines], fmt.Sprintf("... and %d more differences in %s", len(lines)-maxDiffLines, what))
		}
		diff = append(diff, lines...)
	}
	switch c.GetKind() {
	case "ClusterRole", "Role":
		diff = append(diff, setDiff("rules", grants(field(c, "rules")), chartNamedGrants(grants(field(k, "rules"))))...)
	case "ClusterRoleBinding", "RoleBinding":
		same("roleRef", field(c, "roleRef"), field(k, "roleRef"))
		diff = append(diff, setDiff("subjects", jsonSet(field(c, "subjects")), jsonSet(field(k, "subjects")))...)
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		wc, wk := webhooks(c, false), webhooks(k, true)
		for _, name := range unionKeys(wc, wk) {
			same("webhooks["+name+"]", wc[name], wk[name])
		}
	case "Deployment", "DaemonSet":
		same("spec.updateStrategy", field(c, "spec", "updateStrategy"), field(k, "spec", "updateStrategy"))
		same("spec.strategy", field(c, "spec", "strategy"), field(k, "spec", "strategy"))
		same("spec.replicas", field(c, "spec", "replicas"), field(k, "spec", "replicas"))
		same("pod affinity", withoutInstanceDeep(field(c, "spec", "template", "spec", "affinity")), field(k, "spec", "template", "spec", "affinity"))
		pc, pk := podSpec(c, true), podSpec(k, false)
		for _, f := range unionKeys(pc, pk) {
			sc, cok := pc[f].(stringSet)
			sk, kok := pk[f].(stringSet)
			if cok && kok {
				diff = append(diff, setDiff("pod "+f, sc, sk)...)
				continue
			}
			same("pod "+f, pc[f], pk[f])
		}
	case "CustomResourceDefinition":
		same("spec.group", field(c, "spec", "group"), field(k, "spec", "group"))
		same("spec.names", field(c, "spec", "names"), field(k, "spec", "names"))
		same("spec.scope", field(c, "spec", "scope"), field(k, "spec", "scope"))
		same("spec.versions", field(c, "spec", "versions"), field(k, "spec", "versions"))
	case "Service":
		same("spec.ports", field(c, "spec", "ports"), field(k, "spec", "ports"))
		same("spec.selector", withoutInstance(field(c, "spec", "selector")), withoutInstance(field(k, "spec", "selector")))
	case "PodDisruptionBudget":
		same("spec", withoutInstanceDeep(field(c, "spec")), field(k, "spec"))
	case "ServiceAccount":
	default:
		same("spec", field(c, "spec"), field(k, "spec"))
	}
	return diff
}

// grants expands RBAC rules into single grants ("verb group/resource[/name]", "verb URL"), so that
// rules compare as what they allow, whatever their order and however they are grouped.
func grants(v any) []string {
	strs := func(m map[string]any, f string) []string {
		l, _ := m[f].([]any)
		out := make([]string, 0, len(l))
		for _, x := range l {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	set := map[string]bool{}
	rules, _ := v.([]any)
	for _, ri := range rules {
		r, _ := ri.(map[string]any)
		for _, verb := range strs(r, "verbs") {
			for _, url := range strs(r, "nonResourceURLs") {
				set[verb+" "+url] = true
			}
			names := strs(r, "resourceNames")
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range strs(r, "apiGroups") {
				if g == "" {
					g = "core"
				}
				for _, res := range strs(r, "resources") {
					for _, n := range names {
						grant := verb + " " + g + "/" + res
						if n != "" {
							grant += "/" + n
						}
						set[grant] = true
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// chartNamedGrants renames the objects config/default's grants name (resourceNames) as the chart
// names them (chartName): the manager's role names its own webhook configurations.
func chartNamedGrants(gs []string) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		for key, chartN := range chartName {
			_, name, _ := strings.Cut(key, " ")
			if strings.HasSuffix(g, "/"+name) {
				g = strings.TrimSuffix(g, name) + chartN
			}
		}
		out = append(out, g)
	}
	return out
}

// stringSet is a podSpec field compared as a set (setDiff), not as a list.
type stringSet []string

// jsonSet is a list's members as JSON, for an order-insensitive comparison.
func jsonSet(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, js(x))
	}
	slices.Sort(out)
	return out
}

// setDiff reports the members only one side has.
func setDiff(what string, c, k []string) []string {
	var diff []string
	for _, x := range c {
		if !slices.Contains(k, x) {
			diff = append(diff, fmt.Sprintf("%s: only the chart has %s", what, x))
		}
	}
	for _, x := range k {
		if !slices.Contains(c, x) {
			diff = append(diff, fmt.Sprintf("%s: only config/default has %s", what, x))
		}
	}
	return diff
}

// webhooks keeps, per webhook name, what decides which requests it gets and where they go: the
// Service's name mapped to the chart's (config/default names it otherwise, see chartName).
func webhooks(o *unstructured.Unstructured, kustomize bool) map[string]any {
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	out := map[string]any{}
	for _, h := range hooks {
		m := h.(map[string]any)
		svc, _, _ := unstructured.NestedMap(m, "clientConfig", "service")
		if name, _ := svc["name"].(string); kustomize {
			ns, _ := svc["namespace"].(string)
			if n, ok := chartName[keyOf("Service", ns, name)]; ok {
				svc["name"] = n
			}
		}
		w := map[string]any{"clientConfig.service": svc}
		for _, f := range []string{"rules", "failurePolicy", "sideEffects", "matchPolicy", "namespaceSelector",
			"objectSelector", "admissionReviewVersions", "reinvocationPolicy", "timeoutSeconds", "matchConditions"} {
			w[f] = m[f]
		}
		out[fmt.Sprint(m["name"])] = w
	}
	return out
}

// podSpec keeps what a pod runs and may do: per container its image, command, arguments (a flag
// repeated, as the chart renders a list, joined into one value, as the binaries read it; names mapped
// to the chart's), ports, security context, resources, probes and mounts (mount path and what is mounted: volume names
// differ); the pod's volumes (by what they are), account, host namespaces and security context.
func podSpec(o *unstructured.Unstructured, chart bool) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	out := map[string]any{}
	for _, f := range []string{"serviceAccountName", "automountServiceAccountToken", "hostNetwork", "hostPID", "hostIPC",
		"dnsPolicy", "priorityClassName", "securityContext"} {
		out[f] = spec[f]
	}
	volumes := map[string]any{}
	var sources stringSet
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
		sources = append(sources, js(src))
	}
	slices.Sort(sources)
	out["volumes"] = sources
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, ci := range cs {
			c := ci.(map[string]any)
			name := list + "[" + fmt.Sprint(c["name"]) + "]"
			for _, f := range []string{"image", "command", "ports", "securityContext", "resources", "livenessProbe", "readinessProbe"} {
				out[name+"."+f] = c[f]
			}
			out[name+".args"] = normalArgs(c["args"], chart)
			var mounts stringSet
			ms, _ := c["volumeMounts"].([]any)
			for _, mi := range ms {
				m := map[string]any{}
				for k, x := range mi.(map[string]any) {
					m[k] = x
				}
				m["volume"] = volumes[fmt.Sprint(m["name"])]
				delete(m, "name")
				mounts = append(mounts, js(m))
			}
			slices.Sort(mounts)
			out[name+".volumeMounts"] = mounts
		}
	}
	return out
}

// normalArgs joins a repeated flag's values with blanks (--reboot-command=a --reboot-command=b is
// --reboot-command=a b to the binary), maps config/default's names of the webhook's objects to the
// chart's (chartName, chartSecretName) and drops the flags the chart alone passes (chartOnlyArgs).
func normalArgs(v any, chart bool) []any {
	rename := map[string]string{}
	for k, n := range chartName {
		_, nsName, _ := strings.Cut(k, " ")
		_, name, _ := strings.Cut(nsName, "/")
		if name == "" {
			name = nsName
		}
		rename[name] = n
	}
	for k, n := range chartSecretName {
		rename[k] = n
	}
	l, _ := v.([]any)
	var out []any
	last := ""
	for _, a := range l {
		s := fmt.Sprint(a)
		flag, val, hasVal := strings.Cut(s, "=")
		if _, ok := chartOnlyArgs[flag]; ok && chart {
			continue
		}
		if !chart && hasVal {
			if n, ok := rename[val]; ok {
				s = flag + "=" + n
			}
		}
		if hasVal && flag == last && len(out) > 0 {
			out[len(out)-1] = fmt.Sprint(out[len(out)-1]) + " " + val
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

// withoutInstanceDeep drops Helm's instance label from every label map below v (the chart's label
// selectors in affinity terms and budgets; config/default has no release).
func withoutInstanceDeep(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "app.kubernetes.io/instance" {
				out[k] = withoutInstanceDeep(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutInstanceDeep(e)
		}
		return out
	}
	return v
}

func unionKeys[V any](a, b map[string]V) []string {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return slices.Sorted(maps.Keys(u))
}

// diffValues reports where a (the chart's) and b (config/default's) differ, one line per differing
// leaf, named by its path below the field: maps key by key, lists of equal length member by member
// (an element named "name" is named by it), anything else as a whole.
func diffValues(path string, a, b any, out *[]string) {
	a, b = normalNumbers(a), normalNumbers(b)
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range unionKeys(am, bm) {
			diffValues(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			elem := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := al[i].(map[string]any); ok && m["name"] != nil {
				elem = fmt.Sprintf("%s[%v]", path, m["name"])
			}
			diffValues(elem, al[i], bl[i], out)
		}
		return
	}
	*out = append(*out, fmt.Sprintf("%s differs:\n    chart:          %s\n    config/default: %s", path, short(a), short(b)))
}

// normalNumbers makes the numbers of decoded YAML (int64, float64) comparable.
func normalNumbers(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return v
}

func short(v any) string {
	if v == nil {
		return "(none)"
	}
	s := js(v)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
