package nriplugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/nriplugin"
)

// A pod's controls apply only to its containers that hold exclusive CPUs (whole CPUs): a container
// of the same pod with a fraction of a CPU (the init container the pod webhook adds on a bypass
// profile) runs on the shared pool and starts untouched, not refused; a container with whole CPUs
// whose cpuset still holds a shared CPU (no static CPU manager) is refused.
func TestPluginOnlyExclusiveContainers(t *testing.T) {
	h, read := engineTree(t)
	dir := t.TempDir()
	policyPath := filepath.Join(dir, "pod-controls.json")
	if err := nriplugin.WriteNodePolicy(policyPath, nriplugin.NodePolicy{
		Allow:            []tsv1.PodControl{tsv1.PodControlIRQLoadBalancing, tsv1.PodControlCPUCStates},
		NotExclusiveCPUs: "0-1",
	}); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.json")
	p := &nriplugin.Plugin{
		Engine:     &nriplugin.Engine{Host: h, JournalPath: journal},
		PolicyPath: policyPath,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	pod := &api.PodSandbox{Name: "quiet", Namespace: "ns", Annotations: map[string]string{
		tsv1.IRQLoadBalancingAnnotation: "disable",
		tsv1.CPUCStatesAnnotation:       "disable",
	}}
	ctr := func(id string, shares uint64, cpus string) *api.Container {
		return &api.Container{Id: id, Name: id, Linux: &api.LinuxContainer{Resources: &api.LinuxResources{
			Cpu: &api.LinuxCPU{Shares: api.UInt64(shares), Cpus: cpus},
		}}}
	}
	ctx := context.Background()

	// The init container: 100m (shares 102), the shared pool 0-1 (the kubelet gives a container
	// without exclusive CPUs every CPU not held exclusively).
	if _, _, err := p.CreateContainer(ctx, pod, ctr("init", 102, "0-1")); err != nil {
		t.Fatalf("a container with a fraction of a CPU is refused: %v", err)
	}
	if err := p.StartContainer(ctx, pod, ctr("init", 102, "0-1")); err != nil {
		t.Fatalf("starting a container with a fraction of a CPU: %v", err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("a container with a fraction of a CPU left a journal: %v", err)
	}
	untouched := map[string]string{
		"proc/irq/10/smp_affinity_list":                              "0-3",
		"sys/devices/system/cpu/cpu0/power/pm_qos_resume_latency_us": "0",
		"sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us": "0",
	}
	for f, v := range untouched {
		if got := read(f); got != v {
			t.Errorf("after the fractional container %s is %q, want %q", f, got, v)
		}
	}

	// The app container: two whole CPUs (shares 2048), exclusive 2-3.
	if _, _, err := p.CreateContainer(ctx, pod, ctr("app", 2048, "2-3")); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{
		"proc/irq/10/smp_affinity_list":                              "0-1",
		"sys/devices/system/cpu/cpu2/power/pm_qos_resume_latency_us": "n/a",
		"sys/devices/system/cpu/cpu3/power/pm_qos_resume_latency_us": "n/a",
		"sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us": "0",
	} {
		if got := read(f); got != v {
			t.Errorf("with the app container %s is %q, want %q", f, got, v)
		}
	}
	claims, err := p.Engine.Claims()
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Container != "app" {
		t.Errorf("claims %+v, want the app container's only", claims)
	}

	// Whole CPUs on the shared pool: the node's CPU manager gave it no exclusive CPU.
	_, _, err = p.CreateContainer(ctx, pod, ctr("side", 1024, "0-1"))
	if err == nil || !strings.Contains(err.Error(), "holds the node's reserved or shared CPUs 0-1") {
		t.Errorf("a whole-CPU container on shared CPUs: %v", err)
	}

	if _, err := p.StopContainer(ctx, pod, ctr("app", 2048, "2-3")); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{
		"proc/irq/10/smp_affinity_list":                              "0-3",
		"sys/devices/system/cpu/cpu2/power/pm_qos_resume_latency_us": "0",
	} {
		if got := read(f); got != v {
			t.Errorf("after the app container stopped %s is %q, want %q", f, got, v)
		}
	}
}
