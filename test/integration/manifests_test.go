package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tickstack/tickstack/internal/agent/agenttest"
	"github.com/tickstack/tickstack/internal/testutil"
)

func kustomizeAgent(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	assets, err := testutil.EnvtestAssets()
	if err != nil {
		t.Fatal(err)
	}
	// config/agent is a base of config/default, which names and places it
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join("..", "..", "config", "default")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize config/default: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if n := u.GetName(); len(u.Object) > 0 && (strings.HasPrefix(n, "tickstack-agent") || n == "tickstack-xdpd") {
			objs = append(objs, u)
		}
	}
	return objs
}

// TestAgentInstall checks the node side of config/default (config/agent): privileged with the host's
// network and PID namespaces, the host paths below /host, NODE_NAME from the downward API, and
// least-privilege RBAC; a real API server accepts every object (server-side dry run).
func TestAgentInstall(t *testing.T) {
	objs := kustomizeAgent(t)
	var ds, xdpd appsv1.DaemonSet
	var role rbacv1.ClusterRole
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		switch o.GetKind() {
		case "DaemonSet":
			target := &ds
			if o.GetName() == "tickstack-xdpd" {
				target = &xdpd
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, target); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k, n := range map[string]int{"DaemonSet": 2, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1} {
		if kinds[k] != n {
			t.Errorf("config/agent has %d %s, want %d", kinds[k], k, n)
		}
	}
	// tickstack-xdpd: its own DaemonSet, updated RollingUpdate one node at a time and never two on a
	// node (a restarted daemon takes its pods over from its run directory, which two would share),
	// privileged in the host's PID namespace, and the tickstack-xdp CNI plugin installed on the node.
	xs := xdpd.Spec.Template.Spec
	if ru := xdpd.Spec.UpdateStrategy.RollingUpdate; xdpd.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil ||
		ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("tickstack-xdpd DaemonSet: update %+v, want RollingUpdate maxUnavailable 1 maxSurge 0", xdpd.Spec.UpdateStrategy)
	}
	if !xs.HostPID || len(xs.Containers) != 2 ||
		!slices.Equal(xs.Containers[0].Command, []string{"/opt/tickstack/dataplane/tickstack-xdpd", "--run-dir", "/run/tickstack/xdp"}) ||
		xs.Containers[0].SecurityContext == nil || xs.Containers[0].SecurityContext.Privileged == nil || !*xs.Containers[0].SecurityContext.Privileged {
		t.Errorf("tickstack-xdpd DaemonSet: update %s, hostPID %v, containers %+v", xdpd.Spec.UpdateStrategy.Type, xs.HostPID, xs.Containers)
	}
	// and beside it the device plugin of its node socket: no capability, no escalation.
	if dp := xs.Containers[1]; dp.Name != "device-plugin" || !slices.Contains(dp.Command, "--socket-dir=/run/tickstack/xdp/node") ||
		dp.SecurityContext == nil || dp.SecurityContext.AllowPrivilegeEscalation == nil || *dp.SecurityContext.AllowPrivilegeEscalation ||
		dp.SecurityContext.Capabilities == nil || !slices.Equal(dp.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("tickstack-xdpd's device plugin %+v", dp)
	}
	if len(xs.InitContainers) != 1 || !strings.Contains(strings.Join(xs.InitContainers[0].Command, " "), "/host/cni-bin/tickstack-xdp") {
		t.Errorf("tickstack-xdpd init containers %+v, want install-cni", xs.InitContainers)
	}
	spec := ds.Spec.Template.Spec
	if ds.Namespace != "tickstack-system" || !spec.HostNetwork || !spec.HostPID || spec.ServiceAccountName != "tickstack-agent" {
		t.Errorf("DaemonSet %s/%s: hostNetwork %v hostPID %v serviceAccount %q", ds.Namespace, ds.Name, spec.HostNetwork, spec.HostPID, spec.ServiceAccountName)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	ctr := spec.Containers[0]
	if ctr.SecurityContext == nil || ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged {
		t.Error("the agent container is not privileged")
	}
	// The image (Dockerfile, target agent) installs the binary there.
	if len(ctr.Command) != 1 || ctr.Command[0] != "/usr/local/bin/agent" {
		t.Errorf("command %v, want [/usr/local/bin/agent]", ctr.Command)
	}
	if !slicesContain(ctr.Args, "--host-root=/host") {
		t.Errorf("args %v lack --host-root=/host", ctr.Args)
	}
	nodeName := false
	for _, e := range ctr.Env {
		if e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			nodeName = true
		}
	}
	if !nodeName {
		t.Error("NODE_NAME does not come from the downward API (spec.nodeName)")
	}
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		if m.ReadOnly {
			t.Errorf("mount %s is read-only; the agent writes the host", m.MountPath)
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				mounts[m.MountPath] = v.HostPath.Path
			}
		}
	}
	want := map[string]string{"/host/proc": "/proc", "/host/sys": "/sys", "/host/etc": "/etc", "/host/boot": "/boot",
		"/host/var/lib/tickstack": "/var/lib/tickstack", "/host/run": "/run"}
	if !reflect.DeepEqual(mounts, want) {
		t.Errorf("host mounts %v, want %v", mounts, want)
	}

	// Least privilege: exactly these verbs.
	got := map[string]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				verbs := append([]string(nil), r.Verbs...)
				sort.Strings(verbs)
				got[g+"/"+res] = strings.Join(verbs, ",")
			}
		}
	}
	wantRules := map[string]string{
		"tickstack.io/latencynodestates":        "get,list,patch,watch",
		"tickstack.io/latencynodestates/status": "get,patch",
		"tickstack.io/latencyprofiles":          "get,list,watch",       // read-only: a node with spec.profile.resolveOnNode resolves itself
		"/nodes":                                "get,list,patch,watch", // list, watch: a cache of its own Node's labels (a field selector)
		"/nodes/configz":                        "get",                  // the kubelet's effective configuration, through its fine-grained authorization
		"/nodes/status":                         "patch",
		"/pods":                                 "list",
		"/pods/eviction":                        "create",
		"events.k8s.io/events":                  "create,patch",
		"nfd.k8s-sigs.io/nodefeatures":          "create,delete,get,patch",
		// the metrics endpoint's authentication and authorization filter (internal/metricsauth)
		"authentication.k8s.io/tokenreviews":        "create",
		"authorization.k8s.io/subjectaccessreviews": "create",
	}
	if !reflect.DeepEqual(got, wantRules) {
		t.Errorf("agent ClusterRole %v, want %v", got, wantRules)
	}

	c, err := client.New(restCfg, client.Options{Scheme: agenttest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("tickstack-system")
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
