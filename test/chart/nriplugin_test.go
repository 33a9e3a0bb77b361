package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The per-pod controls' NRI plugin is off by default; on, it is a container of the agent's pods
// with less than the agent: not privileged, no capability, a read-only root, and host paths only
// for the runtime's NRI socket, /proc/irq, /sys/devices/system/cpu and /var/lib/tickstack
// (docs/security.md).
func TestNRIPluginContainerLeastPrivilege(t *testing.T) {
	agentDS := func(sets ...string) *appsv1.DaemonSet {
		for _, o := range ofKind(mustRender(t, sets...), "DaemonSet") {
			if strings.HasSuffix(o.GetName(), "-agent") {
				ds := &appsv1.DaemonSet{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ds); err != nil {
					t.Fatal(err)
				}
				return ds
			}
		}
		t.Fatal("no agent DaemonSet")
		return nil
	}
	for _, c := range agentDS().Spec.Template.Spec.Containers {
		if c.Name == "nri-plugin" {
			t.Error("the NRI plugin renders by default")
		}
	}
	ds := agentDS("agent.nriPlugin.enabled=true")
	i := slices.IndexFunc(ds.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "nri-plugin" })
	if i < 0 {
		t.Fatal("agent.nriPlugin.enabled=true renders no nri-plugin container")
	}
	c := ds.Spec.Template.Spec.Containers[i]
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("nri-plugin security context %+v: want not privileged, no escalation, drop ALL, read-only root", sc)
	}
	if !slices.Equal(c.Command[:2], []string{"/usr/local/bin/agent", "nri-plugin"}) {
		t.Errorf("command %v", c.Command)
	}
	paths := map[string]string{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			paths[v.Name] = v.HostPath.Path
		}
	}
	var got []string
	for _, m := range c.VolumeMounts {
		got = append(got, paths[m.Name]+"->"+m.MountPath)
	}
	want := []string{"/var/run/nri->/var/run/nri", "/proc/irq->/host/proc/irq", "/sys/devices/system/cpu->/host/sys/devices/system/cpu", "/var/lib/tickstack->/host/var/lib/tickstack"}
	if !slices.Equal(got, want) {
		t.Errorf("nri-plugin mounts %v, want exactly %v", got, want)
	}
}
