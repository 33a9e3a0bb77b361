// Package chart tests the Helm chart: lint, rendering with different values, the values schema, the
// webhook certificate it makes, and that a real kube-apiserver accepts everything it renders.
package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/testutil"
	"github.com/tickstack/tickstack/internal/testutil/kubetest"
)

const namespace = "tickstack-system"

func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("TICKSTACK_HELM"); h != "" {
		return h
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	h := filepath.Join(root, "bin", "helm-v3.22.0")
	if _, err := os.Stat(h); err != nil {
		testutil.Unavailable(t, "helm not built: run make helm (or set TICKSTACK_HELM)")
	}
	return h
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "tickstack")
}

// render runs helm template with --set values and returns the objects, or helm's error output.
func render(t *testing.T, sets ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := []string{"template", "t", chartDir(t), "-n", namespace, "--kube-version", "1.32.3"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(stderr.String())
	}
	return kubetest.DecodeObjects(t, out), nil
}

func mustRender(t *testing.T, sets ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, sets...)
	if err != nil {
		t.Fatalf("helm template %v: %v", sets, err)
	}
	return objs
}

func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// plumbingOn deploys all the upstream plumbing the chart can deploy (each is off by default).
var plumbingOn = []string{"multus.enabled=true", "nfd.enabled=true"}

// allOn is plumbingOn and the SR-IOV device plugin, whose objects bind the operator's account.
var allOn = append(slices.Clone(plumbingOn), "sriovDevicePlugin.enabled=true")

func TestLintStrict(t *testing.T) {
	for _, sets := range [][]string{nil, allOn} {
		args := []string{"lint", "--strict", chartDir(t)}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helm(t), args...).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", sets, err, out)
		}
	}
}

func TestCRDsTemplatedAndKept(t *testing.T) {
	crds := ofKind(mustRender(t), "CustomResourceDefinition")
	if len(crds) != 4 {
		t.Fatalf("want 4 CRDs by default (LatencyProfile, LatencyNodeState, LatencyBenchmark, BMC), got %d", len(crds))
	}
	for _, c := range crds {
		if c.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks helm.sh/resource-policy: keep", c.GetName())
		}
	}
	if n := len(ofKind(mustRender(t, "crds.enabled=false"), "CustomResourceDefinition")); n != 0 {
		t.Errorf("crds.enabled=false still renders %d CRDs", n)
	}
	for _, c := range ofKind(mustRender(t, "crds.keep=false"), "CustomResourceDefinition") {
		if _, ok := c.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("crds.keep=false still keeps CRD %s", c.GetName())
		}
	}
}

func TestManagerIsLockedDown(t *testing.T) {
	deps := ofKind(mustRender(t), "Deployment")
	if len(deps) != 1 {
		t.Fatalf("want one Deployment, got %d", len(deps))
	}
	spec, _, _ := unstructured.NestedMap(deps[0].Object, "spec", "template", "spec")
	if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
		t.Error("manager pod must run as non-root")
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	c := containers[0].(map[string]any)
	if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
		t.Error("manager container must have a read-only root filesystem")
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if _, ok := c[probe]; !ok {
			t.Errorf("manager container lacks a %s", probe)
		}
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if !slices.Contains(args, "--leader-elect=true") {
		t.Errorf("leader election not passed: %v", args)
	}
}

// The operator manages the webhook certificate by default: the flags it gets must name the very
// Service and webhook configurations the chart renders, or caBundle patching and the certificate's
// names miss.
func TestOperatorManagedWebhookCertificate(t *testing.T) {
	objs := mustRender(t)
	args := managerArgs(t, objs)
	// The chart owns the certificate Secret (so that uninstall removes it) but writes no data: the
	// operator fills it, and an upgrade must not touch what it wrote.
	if secrets := ofKind(objs, "Secret"); len(secrets) != 1 {
		t.Errorf("operator mode renders %d Secrets, want the certificate's", len(secrets))
	} else if name := secrets[0].GetName(); name != args["--webhook-secret-name"] {
		t.Errorf("the chart's Secret is %q, the operator writes %q", name, args["--webhook-secret-name"])
	} else if _, has := secrets[0].Object["data"]; has {
		t.Errorf("the certificate Secret renders data; an upgrade would overwrite the operator's certificate")
	}
	want := map[string]string{"--webhook-cert-mode": "operator", "--namespace": namespace}
	for _, s := range ofKind(objs, "Service") {
		if strings.HasSuffix(s.GetName(), "-webhook") {
			want["--webhook-service-name"] = s.GetName()
		}
	}
	for kind, flag := range map[string]string{"ValidatingWebhookConfiguration": "--validating-webhook-configuration", "MutatingWebhookConfiguration": "--mutating-webhook-configuration"} {
		wcs := ofKind(objs, kind)
		if len(wcs) != 1 {
			t.Fatalf("want one %s, got %d", kind, len(wcs))
		}
		want[flag] = wcs[0].GetName()
		hooks, _, _ := unstructured.NestedSlice(wcs[0].Object, "webhooks")
		for _, h := range hooks {
			name, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "name")
			if name != want["--webhook-service-name"] {
				t.Errorf("%s webhook calls service %q, want %q", kind, name, want["--webhook-service-name"])
			}
		}
	}
	for flag, value := range want {
		if args[flag] != value {
			t.Errorf("manager flag %s = %q, want %q", flag, args[flag], value)
		}
	}
	// The namespaced Role for the certificate Secret is bound to the manager.
	roles, bindings := ofKind(objs, "Role"), ofKind(objs, "RoleBinding")
	bound := false
	for _, b := range bindings {
		ref, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		for _, r := range roles {
			if r.GetName() == ref && strings.HasSuffix(ref, "-manager") {
				bound = true
			}
		}
	}
	if !bound {
		t.Error("the manager's namespaced Role (webhook certificate Secret) is not bound")
	}

	cm := mustRender(t, "webhook.certs.mode=certManager")
	if len(ofKind(cm, "Certificate")) != 1 || len(ofKind(cm, "Issuer")) != 1 {
		t.Error("certManager mode must render a Certificate and a self-signed Issuer")
	}
	if got := managerArgs(t, cm)["--webhook-cert-mode"]; got != "cert-manager" {
		t.Errorf("certManager mode passes --webhook-cert-mode=%q", got)
	}
}

// TestResolveOnNode: the chart passes --resolve-on-node explicitly either way, to the manager and to
// the agents (which then act on a profile's create before their node state exists), on by default
// (as the kustomize install, which test/chart compares, and the binaries), so that a user's
// manager.resolveOnNode=false turns it off.
func TestResolveOnNode(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"", "true"},
		{"manager.resolveOnNode=true", "true"},
		{"manager.resolveOnNode=false", "false"},
	} {
		var sets []string
		if c.set != "" {
			sets = []string{c.set}
		}
		objs := mustRender(t, sets...)
		if got, ok := managerArgs(t, objs)["--resolve-on-node"]; !ok || got != c.want {
			t.Errorf("--set %q: the manager's --resolve-on-node=%q (passed: %v), want --resolve-on-node=%s", c.set, got, ok, c.want)
		}
		if want := "--resolve-on-node=" + c.want; !slices.Contains(agentArgs(t, objs), want) {
			t.Errorf("--set %q: the agents' arguments %v lack %s", c.set, agentArgs(t, objs), want)
		}
	}
}

// agentDS is the agent DaemonSet of a rendering.
func agentDS(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, o := range ofKind(objs, "DaemonSet") {
		if o.GetName() == "t-tickstack-agent" {
			return o
		}
	}
	t.Fatal("no agent DaemonSet rendered")
	return nil
}

// agentArgs is the agent container's command line.
func agentArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(agentDS(t, objs).Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	deps := ofKind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("want one Deployment, got %d", len(deps))
	}
	containers, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

func TestOptionalMonitoring(t *testing.T) {
	if n := len(ofKind(mustRender(t), "ServiceMonitor")) + len(ofKind(mustRender(t), "PrometheusRule")); n != 0 {
		t.Errorf("monitoring objects rendered without being asked: %d", n)
	}
	objs := mustRender(t, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true")
	if len(ofKind(objs, "ServiceMonitor")) != 1 || len(ofKind(objs, "PrometheusRule")) != 1 {
		t.Error("ServiceMonitor and PrometheusRule must render when enabled")
	}
	if n := len(ofKind(mustRender(t, "metrics.enabled=false"), "Service")); n != 1 {
		t.Errorf("metrics.enabled=false must leave only the webhook Service, got %d services", n)
	}
}

func TestAgentOnlyWhenEnabled(t *testing.T) {
	ownNode := func(objs []*unstructured.Unstructured) int {
		n := 0
		for _, o := range ofKind(objs, "ValidatingAdmissionPolicy") {
			if strings.HasSuffix(o.GetName(), "-agent-own-node") {
				n++
			}
		}
		return n
	}
	if len(ofKind(mustRender(t, "xdpd.enabled=false"), "DaemonSet")) != 1 || ownNode(mustRender(t)) != 1 {
		t.Error("the agent DaemonSet and its own-node policy render by default")
	}
	if ownNode(mustRender(t, "agent.enabled=false")) != 0 {
		t.Error("agent.enabled=false still renders the own-node policy")
	}
	if len(ofKind(mustRender(t, "agent.enabled=false"), "DaemonSet")) != 0 {
		t.Error("agent.enabled=false still renders the DaemonSet")
	}
}

// An upgrade replaces one agent at a time unless agent.maxUnavailable says otherwise, and extra
// arguments reach the agent's command line.
func TestAgentRollout(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{nil, "1"},
		{[]string{"agent.maxUnavailable=3"}, "3"},
		{[]string{"agent.maxUnavailable=25%"}, "25%"},
	} {
		ds := agentDS(t, mustRender(t, c.sets...))
		got, _, _ := unstructured.NestedFieldNoCopy(ds.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
		typ, _, _ := unstructured.NestedString(ds.Object, "spec", "updateStrategy", "type")
		if typ != "RollingUpdate" || fmt.Sprint(got) != c.want {
			t.Errorf("--set %v: updateStrategy %s maxUnavailable %v, want RollingUpdate %s", c.sets, typ, got, c.want)
		}
	}
	args := agentArgs(t, mustRender(t, "agent.extraArgs={--failpoint-file=/tse2e/failpoint}"))
	if !slices.Contains(args, "--failpoint-file=/tse2e/failpoint") {
		t.Errorf("agent.extraArgs not on the agent's command line: %v", args)
	}
}

// tickstack-xdpd runs on the agent's nodes by default, in its own DaemonSet updated RollingUpdate one node
// at a time and never two on a node (a restarted daemon takes its pods over from the run directory), installs the CNI plugin into the node's CNI directory, and
// the manager is told the same run directory the daemon uses.
func TestXDPDaemonOnTheAgentsNodes(t *testing.T) {
	byName := func(objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
		for _, o := range ofKind(objs, "DaemonSet") {
			if o.GetName() == name {
				return o
			}
		}
		return nil
	}
	objs := mustRender(t, "xdpd.runDir=/var/run/tsx", "xdpd.cniBinDir=/usr/lib/cni")
	ds := byName(objs, "t-tickstack-xdpd")
	if ds == nil {
		t.Fatalf("no DaemonSet t-tickstack-xdpd")
	}
	u, _, _ := unstructured.NestedString(ds.Object, "spec", "updateStrategy", "type")
	mu, _, _ := unstructured.NestedFieldNoCopy(ds.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	ms, _, _ := unstructured.NestedFieldNoCopy(ds.Object, "spec", "updateStrategy", "rollingUpdate", "maxSurge")
	if u != "RollingUpdate" || fmt.Sprint(mu) != "1" || fmt.Sprint(ms) != "0" {
		t.Errorf("updateStrategy %q maxUnavailable %v maxSurge %v, want RollingUpdate 1 0: one daemon per node at a time", u, mu, ms)
	}
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	if hp, _, _ := unstructured.NestedBool(spec, "hostPID"); !hp {
		t.Error("tickstack-xdpd needs the host's PID namespace (/proc/<pid>/ns/net of pod processes)")
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	x := containers[0].(map[string]any)
	if cmd, _, _ := unstructured.NestedStringSlice(x, "command"); !slices.Equal(cmd, []string{"/opt/tickstack/dataplane/tickstack-xdpd", "--run-dir", "/var/run/tsx"}) {
		t.Errorf("xdpd command %v", cmd)
	}
	if priv, _, _ := unstructured.NestedBool(x, "securityContext", "privileged"); !priv {
		t.Error("tickstack-xdpd must be privileged (setns, BPF, netlink)")
	}
	// xdpd.rxHardwareTimestamps: the device-bound program (docs/dataplane.md, "Timestamps")
	hw := byName(mustRender(t, "xdpd.rxHardwareTimestamps=true"), "t-tickstack-xdpd")
	hc, _, _ := unstructured.NestedSlice(hw.Object, "spec", "template", "spec", "containers")
	if cmd, _, _ := unstructured.NestedStringSlice(hc[0].(map[string]any), "command"); !slices.Equal(cmd,
		[]string{"/opt/tickstack/dataplane/tickstack-xdpd", "--run-dir", "/run/tickstack/xdp", "--rx-hwtstamp"}) {
		t.Errorf("xdpd command with rxHardwareTimestamps %v", cmd)
	}
	hostPaths := map[string]string{}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range vols {
		if hp, ok, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); ok {
			hostPaths[v.(map[string]any)["name"].(string)] = hp
		}
	}
	if hostPaths["run"] != "/var/run/tsx" || hostPaths["cni-bin"] != "/usr/lib/cni" || hostPaths["node-socket"] != "/var/run/tsx/node" ||
		hostPaths["device-plugins"] != "/var/lib/kubelet/device-plugins" || len(hostPaths) != 4 {
		t.Errorf("host paths %v: want run /var/run/tsx, cni-bin /usr/lib/cni, node-socket /var/run/tsx/node and device-plugins /var/lib/kubelet/device-plugins, no other", hostPaths)
	}
	// The device plugin of the daemon's socket: beside the daemon, no capability, its own socket
	// directory read-only, the kubelet's device plugin directory; the mount it hands out is the
	// daemon's node directory.
	if len(containers) != 2 {
		t.Fatalf("%d containers, want xdpd and device-plugin", len(containers))
	}
	dp := containers[1].(map[string]any)
	if cmd, _, _ := unstructured.NestedStringSlice(dp, "command"); !slices.Equal(cmd, []string{"/usr/local/bin/tickstack-xdpd-plugin", "--socket-dir=/var/run/tsx/node", "--units=1000"}) {
		t.Errorf("device-plugin command %v", cmd)
	}
	if drop, _, _ := unstructured.NestedStringSlice(dp, "securityContext", "capabilities", "drop"); !slices.Equal(drop, []string{"ALL"}) {
		t.Errorf("device-plugin drops %v, want ALL", drop)
	}
	if esc, ok, _ := unstructured.NestedBool(dp, "securityContext", "allowPrivilegeEscalation"); !ok || esc {
		t.Error("device-plugin must set allowPrivilegeEscalation false")
	}
	if priv, _, _ := unstructured.NestedBool(dp, "securityContext", "privileged"); priv {
		t.Error("device-plugin must not be privileged")
	}
	mounts, _, _ := unstructured.NestedSlice(dp, "volumeMounts")
	got := map[string]bool{}
	for _, m := range mounts {
		m := m.(map[string]any)
		ro, _ := m["readOnly"].(bool)
		got[fmt.Sprintf("%s %s %v", m["name"], m["mountPath"], ro)] = true
	}
	if !got["node-socket /var/run/tsx/node true"] || !got["device-plugins /var/lib/kubelet/device-plugins false"] || len(got) != 2 {
		t.Errorf("device-plugin mounts %v: want the node socket directory read-only and the kubelet's device-plugins", got)
	}
	inits, _, _ := unstructured.NestedSlice(spec, "initContainers")
	if cmd, _, _ := unstructured.NestedStringSlice(inits[0].(map[string]any), "command"); !strings.Contains(strings.Join(cmd, " "), "/host/cni-bin/tickstack-xdp") {
		t.Errorf("install-cni command %v", cmd)
	}
	mc, _, _ := unstructured.NestedSlice(ofKind(objs, "Deployment")[0].Object, "spec", "template", "spec", "containers")
	if args, _, _ := unstructured.NestedStringSlice(mc[0].(map[string]any), "args"); !slices.Contains(args, "--xdp-run-dir=/var/run/tsx") {
		t.Errorf("manager args %v lack --xdp-run-dir=/var/run/tsx", args)
	}
	for _, set := range []string{"xdpd.enabled=false", "agent.enabled=false"} {
		if byName(mustRender(t, set), "t-tickstack-xdpd") != nil {
			t.Errorf("%s still renders tickstack-xdpd", set)
		}
	}
}

// images lists every container image of the rendered objects (init containers too) by workload,
// and the manager's --dataplane-image and --bench-image.
func images(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
			for _, c := range cs {
				c := c.(map[string]any)
				out[o.GetKind()+"/"+o.GetName()+"/"+c["name"].(string)] = c["image"].(string)
			}
		}
	}
	args := managerArgs(t, objs)
	out["--dataplane-image"], out["--bench-image"] = args["--dataplane-image"], args["--bench-image"]
	return out
}

// Every tickstack image is <imageRegistry>/tickstack-<component>, by the chart's appVersion, by
// imageTag, or by the digest `make push` printed (the tag then left out); the agent's digest covers
// tickstack-xdpd, which runs from the agent's image.
func TestImageReferences(t *testing.T) {
	chart, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := regexp.MustCompile(`(?m)^appVersion: "([^"]+)"`).FindSubmatch(chart)
	if app == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	dm, da, db := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64), "sha256:"+strings.Repeat("3", 64)
	for _, tc := range []struct {
		sets                  []string
		manager, agent, bench string
	}{
		{nil, "localhost/tickstack-manager:" + string(app[1]), "localhost/tickstack-agent:" + string(app[1]), "localhost/tickstack-bench:" + string(app[1])},
		{[]string{"imageRegistry=127.0.0.1:5050/team/", "imageTag=0.2.0-dev.gabc"},
			"127.0.0.1:5050/team/tickstack-manager:0.2.0-dev.gabc", "127.0.0.1:5050/team/tickstack-agent:0.2.0-dev.gabc", "127.0.0.1:5050/team/tickstack-bench:0.2.0-dev.gabc"},
		{[]string{"imageRegistry=r.example/t", "imageTag=1.0.0", "manager.imageDigest=" + dm, "agent.imageDigest=" + da, "bench.imageDigest=" + db},
			"r.example/t/tickstack-manager@" + dm, "r.example/t/tickstack-agent@" + da, "r.example/t/tickstack-bench@" + db},
		{[]string{"imageRegistry=", "agent.imageDigest=" + da}, "tickstack-manager:" + string(app[1]), "tickstack-agent@" + da, "tickstack-bench:" + string(app[1])},
	} {
		got := images(t, mustRender(t, tc.sets...))
		want := map[string]string{
			"Deployment/t-tickstack-manager/manager": tc.manager,
			"DaemonSet/t-tickstack-agent/agent":      tc.agent,
			"--dataplane-image":                      tc.agent,
			"--bench-image":                          tc.bench,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("--set %v: %s is %q, want %q", tc.sets, k, got[k], v)
			}
		}
		for k, v := range got {
			if strings.Contains(k, "xdpd") && v != tc.agent {
				t.Errorf("--set %v: %s is %q, want the agent's image %q", tc.sets, k, v, tc.agent)
			}
		}
	}
}

func TestValuesSchemaRefusesBadValues(t *testing.T) {
	for set, want := range map[string]string{
		"manager.replicas=0":                           "/manager/replicas",
		"webhook.failurePolicy=Maybe":                  "/webhook/failurePolicy",
		"imagePullPolicy=Sometimes":                    "/imagePullPolicy",
		"agent.checkPeriod=soon":                       "/agent/checkPeriod",
		"webhook.certs.mode=helm":                      "/webhook/certs/mode",
		"manager.replica=2":                            "additional properties 'replica' not allowed",
		"xdpd.runDir=run/xdp":                          "/xdpd/runDir",
		"agent.maxUnavailable=0":                       "/agent/maxUnavailable",
		"agent.maxUnavailable=all":                     "/agent/maxUnavailable",
		"agent.extraArgs={-v}":                         "/agent/extraArgs/0",
		"multus.image.tag=":                            "/multus/image/tag",
		"multus.cniConfDir=etc/cni":                    "/multus/cniConfDir",
		"nfd.image.repository=":                        "/nfd/image/repository",
		"nfd.enable=true":                              "additional properties 'enable' not allowed",
		"agent.metrics.port=0":                         "/agent/metrics/port",
		"manager.imageDigest=sha256:abc":               "/manager/imageDigest",
		"bench.imageDigest=0.2.0":                      "/bench/imageDigest",
		"agent.metrics.enable=true":                    "additional properties 'enable' not allowed",
		"metrics.prometheusRule.rebootGrace=soon":      "/metrics/prometheusRule/rebootGrace",
		"metrics.prometheusRule.maxSystemOffsetNs=0":   "/metrics/prometheusRule/maxSystemOffsetNs",
		"metrics.dashboard.labels.grafana_dashboard=1": "/metrics/dashboard/labels/grafana_dashboard",
		"manager.resolveOnNode=yes":                    "/manager/resolveOnNode",
	} {
		_, err := render(t, set)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: error %v, want one naming %q", set, err, want)
		}
	}
}

// TestRenderedObjectsAcceptedByAPIServer creates the CRDs and namespace for real and sends every other
// rendered object to a real kube-apiserver as a dry run. The upstream plumbing is on: the default
// objects and those it adds; so are the agents' metrics port and the dashboard ConfigMap (the
// prometheus-operator objects need its CRDs, which are not here).
func TestRenderedObjectsAcceptedByAPIServer(t *testing.T) {
	objs := mustRender(t, append(slices.Clone(allOn), "agent.metrics.enabled=true", "metrics.dashboard.enabled=true")...)
	if len(objs) <= len(mustRender(t)) {
		t.Fatal("the upstream plumbing adds no objects")
	}
	_, c := kubetest.New(t, kubetest.Options{NoCRDs: true})
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, o := range ofKind(objs, "CustomResourceDefinition") {
		if err := c.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("CRD %s: %v", o.GetName(), err)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// The agent's own-node policy is the same from the chart (release tickstack) and from config/default,
// where test/manifests proves it enforced on a real API server: the two cannot drift apart.
func TestOwnNodePolicyAsInKustomize(t *testing.T) {
	out, err := exec.Command(helm(t), "template", "tickstack", chartDir(t), "-n", namespace, "--kube-version", "1.32.3").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	chart := kubetest.DecodeObjects(t, out)
	kust := kubetest.Kustomize(t, filepath.Join("..", "..", "config", "default"))
	// the own-node policy, the uninstall guard's two policies and the latency pod policy, each with
	// its binding
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		h, k := ofKind(chart, kind), ofKind(kust, kind)
		if len(h) != 4 || len(k) != 4 {
			t.Fatalf("%s: %d in the chart, %d in config/default; want four each", kind, len(h), len(k))
		}
		byName := map[string]map[string]any{}
		for _, o := range k {
			byName[o.GetName()], _, _ = unstructured.NestedMap(o.Object, "spec")
		}
		for _, o := range h {
			ks, ok := byName[o.GetName()]
			if !ok {
				t.Errorf("%s %s of the chart is not in config/default", kind, o.GetName())
				continue
			}
			hs, _, _ := unstructured.NestedMap(o.Object, "spec")
			if !reflect.DeepEqual(hs, ks) {
				t.Errorf("%s %s spec differs:\nchart:        %v\nconfig/default: %v", kind, o.GetName(), hs, ks)
			}
		}
	}
}

// Every object the chart installs carries the uninstall guard's label, and helm uninstall first
// creates the check ConfigMap the guard refuses while a profile or node state exists (a pre-delete
// hook); uninstallGuard.enabled=false drops both policies and the hook.
func TestUninstallGuard(t *testing.T) {
	objs := mustRender(t)
	var hooks int
	for _, o := range objs {
		label := o.GetLabels()["tickstack.io/uninstall-guard"]
		if o.GetAnnotations()["helm.sh/hook"] == "pre-delete" {
			hooks++
			if o.GetKind() != "ConfigMap" || label != "check" {
				t.Errorf("the pre-delete hook is %s %s labelled %q, want the ConfigMap labelled check", o.GetKind(), o.GetName(), label)
			}
			continue
		}
		if label != "protected" {
			t.Errorf("%s %s lacks tickstack.io/uninstall-guard=protected", o.GetKind(), o.GetName())
		}
	}
	if hooks != 1 {
		t.Errorf("%d pre-delete hooks, want the uninstall check", hooks)
	}
	off := mustRender(t, "uninstallGuard.enabled=false")
	if n := len(ofKind(off, "ValidatingAdmissionPolicy")); n != 2 {
		t.Errorf("uninstallGuard.enabled=false: %d admission policies, want the own-node and latency pod policies alone", n)
	}
	for _, o := range off {
		if o.GetAnnotations()["helm.sh/hook"] != "" {
			t.Errorf("uninstallGuard.enabled=false still renders the hook %s %s", o.GetKind(), o.GetName())
		}
	}
}
