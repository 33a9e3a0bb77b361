package kubeletconf

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

var twoNodes = []tsv1.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}}

func TestRenderFollowsTheTuning(t *testing.T) {
	out, err := Render(Settings{ReservedCPUs: "5,4", NUMANodes: twoNodes,
		SystemMemory: resource.MustParse("1Gi"), EvictionMemory: resource.MustParse("100Mi")})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the drop-in is not JSON (hence not YAML either): %v\n%s", err, out)
	}
	for k, want := range map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"cpuManagerPolicy": "static", "reservedSystemCPUs": "4-5",
		"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "container",
		"memoryManagerPolicy": "Static",
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	// The Static memory manager's rule: the reservations add up to kubeReserved + systemReserved +
	// evictionHard memory.available, and they sit on the NUMA node of the reserved CPUs (node 1).
	rm := got["reservedMemory"].([]any)
	if len(rm) != 1 {
		t.Fatalf("reservedMemory %v: want one entry", rm)
	}
	entry := rm[0].(map[string]any)
	if entry["numaNode"].(float64) != 1 {
		t.Errorf("reservedMemory on NUMA node %v, want 1 (CPU 4's)", entry["numaNode"])
	}
	sum := resource.MustParse(got["systemReserved"].(map[string]any)["memory"].(string))
	sum.Add(resource.MustParse(got["kubeReserved"].(map[string]any)["memory"].(string)))
	sum.Add(resource.MustParse(got["evictionHard"].(map[string]any)["memory.available"].(string)))
	if reserved := resource.MustParse(entry["limits"].(map[string]any)["memory"].(string)); reserved.Cmp(sum) != 0 {
		t.Errorf("reservedMemory %s != kubeReserved + systemReserved + evictionHard %s", reserved.String(), sum.String())
	}
}

func TestRenderRefusesNamingTheInput(t *testing.T) {
	ok := Settings{ReservedCPUs: "0", NUMANodes: twoNodes, SystemMemory: resource.MustParse("1Gi"), EvictionMemory: resource.MustParse("100Mi")}
	for _, tt := range []struct {
		mutate func(*Settings)
		want   string
	}{
		{func(s *Settings) { s.ReservedCPUs = "" }, "reservedSystemCPUs:"},
		{func(s *Settings) { s.TopologyPolicy = "numa" }, "topologyManagerPolicy:"},
		{func(s *Settings) { s.TopologyScope = "node" }, "topologyManagerScope:"},
		{func(s *Settings) { s.ReservedCPUs = "9" }, "reservedMemory: reserved CPU 9 is on no NUMA node"},
		{func(s *Settings) { s.EvictionMemory = resource.Quantity{} }, "evictionHard memory must both be above 0"},
	} {
		s := ok
		tt.mutate(&s)
		if _, err := Render(s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("want an error containing %q, got %v", tt.want, err)
		}
	}
}

// TestRenderReservesTheSharedPool: the shared CPUs join reservedSystemCPUs (the kubelet never
// gives them out exclusively), and the memory reservation stays with the reserved CPUs' NUMA node
// although a shared CPU comes first.
func TestRenderReservesTheSharedPool(t *testing.T) {
	out, err := Render(Settings{ReservedCPUs: "4", SharedCPUs: "1-2", NUMANodes: twoNodes,
		SystemMemory: resource.MustParse("1Gi"), EvictionMemory: resource.MustParse("100Mi")})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ReservedSystemCPUs string `json:"reservedSystemCPUs"`
		ReservedMemory     []struct {
			NUMANode int32 `json:"numaNode"`
		} `json:"reservedMemory"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.ReservedSystemCPUs != "1-2,4" || len(got.ReservedMemory) != 1 || got.ReservedMemory[0].NUMANode != 1 {
		t.Errorf("reservedSystemCPUs %q, reservedMemory %+v; want 1-2,4 and NUMA node 1", got.ReservedSystemCPUs, got.ReservedMemory)
	}
	if _, err := Render(Settings{ReservedCPUs: "4", SharedCPUs: "x", NUMANodes: twoNodes,
		SystemMemory: resource.MustParse("1Gi"), EvictionMemory: resource.MustParse("100Mi")}); err == nil || !strings.Contains(err.Error(), "cpu.shared") {
		t.Errorf("a shared list that does not parse: %v, want an error naming cpu.shared", err)
	}
}
