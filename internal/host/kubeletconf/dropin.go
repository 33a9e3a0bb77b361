// Package kubeletconf renders the kubelet drop-in tickstack owns in the kubelet's --config-dir
// (issue #18, item 1): the CPU, topology and memory managers' settings that follow from a node's
// resolved tuning. It never touches the kubelet's main configuration file: the drop-in overrides
// the fields it names and removing it gives the main file's values back.
//
// The agent (internal/agent, kubelet.go) writes it inside the node's rollout slot, restarts the
// kubelet and checks Checked through configz (docs/agent.md, "Kubelet settings").
package kubeletconf

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// FileName is the drop-in's name in the --config-dir: the kubelet reads *.conf files there in
// lexical order, later ones overriding earlier ones.
const FileName = "50-tickstack.conf"

// Checked are the fields of the drop-in that the running kubelet's configz must show once it
// restarted with it, as paths into the configuration ("evictionHard/memory.available").
var Checked = []string{
	"reservedSystemCPUs", "cpuManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
	"memoryManagerPolicy", "systemReserved/memory", "kubeReserved/memory", "evictionHard/memory.available",
}

// Settings are the inputs of the drop-in.
type Settings struct {
	// ReservedCPUs is the resolved cpu.reserved and SharedCPUs the resolved cpu.shared: together
	// the kubelet's reservedSystemCPUs (the shared pool is never allocated exclusively, as
	// OpenShift's mixed CPUs are reserved). The memory reservation follows ReservedCPUs alone.
	ReservedCPUs, SharedCPUs string
	// TopologyPolicy and TopologyScope are the topology manager's; empty: single-numa-node, container.
	TopologyPolicy, TopologyScope string
	// NUMANodes are the host's NUMA nodes (the agent's facts): the memory reservation goes to the
	// node of the first reserved CPU.
	NUMANodes []tsv1.NUMANode
	// SystemMemory is the memory kept from pods (systemReserved), EvictionMemory the kubelet's hard
	// eviction threshold memory.available. The Static memory manager refuses to start unless the
	// reservedMemory entries add up to exactly their sum (kubeReserved is set to 0 here).
	SystemMemory, EvictionMemory resource.Quantity
}

type memoryReservation struct {
	NUMANode int32             `json:"numaNode"`
	Limits   map[string]string `json:"limits"`
}

type dropIn struct {
	APIVersion            string              `json:"apiVersion"`
	Kind                  string              `json:"kind"`
	CPUManagerPolicy      string              `json:"cpuManagerPolicy"`
	ReservedSystemCPUs    string              `json:"reservedSystemCPUs"`
	TopologyManagerPolicy string              `json:"topologyManagerPolicy"`
	TopologyManagerScope  string              `json:"topologyManagerScope"`
	MemoryManagerPolicy   string              `json:"memoryManagerPolicy"`
	SystemReserved        map[string]string   `json:"systemReserved"`
	KubeReserved          map[string]string   `json:"kubeReserved"`
	EvictionHard          map[string]string   `json:"evictionHard"`
	ReservedMemory        []memoryReservation `json:"reservedMemory"`
	RegisterWithTaints    []taint             `json:"registerWithTaints"`
}

type taint struct {
	Key    string `json:"key"`
	Effect string `json:"effect"`
}

var (
	policies = []string{"none", "best-effort", "restricted", "single-numa-node"}
	scopes   = []string{"container", "pod"}
)

// Render returns the drop-in's content, or an error naming the input that cannot be used.
func Render(s Settings) ([]byte, error) {
	reserved, err := cpuset.Parse(s.ReservedCPUs)
	if err != nil || reserved.IsEmpty() {
		return nil, fmt.Errorf("reservedSystemCPUs: %q is not a non-empty CPU list (cpu.reserved)", s.ReservedCPUs)
	}
	shared, err := cpuset.Parse(s.SharedCPUs)
	if err != nil {
		return nil, fmt.Errorf("reservedSystemCPUs: shared CPUs %q are not a CPU list (cpu.shared)", s.SharedCPUs)
	}
	policy, scope := s.TopologyPolicy, s.TopologyScope
	if policy == "" {
		policy = "single-numa-node"
	}
	if scope == "" {
		scope = "container"
	}
	if !slices.Contains(policies, policy) {
		return nil, fmt.Errorf("topologyManagerPolicy: %q is not one of %v", policy, policies)
	}
	if !slices.Contains(scopes, scope) {
		return nil, fmt.Errorf("topologyManagerScope: %q is not one of %v", scope, scopes)
	}
	first := reserved.CPUs()[0]
	numa := int32(-1)
	for _, n := range s.NUMANodes {
		if cpus, err := cpuset.Parse(string(n.CPUs)); err == nil && cpus.Contains(first) {
			numa = n.ID
		}
	}
	if numa < 0 {
		return nil, fmt.Errorf("reservedMemory: reserved CPU %d is on no NUMA node the agent reported", first)
	}
	if s.SystemMemory.Sign() <= 0 || s.EvictionMemory.Sign() <= 0 {
		return nil, fmt.Errorf("systemReserved and evictionHard memory must both be above 0 (got %s, %s)", s.SystemMemory.String(), s.EvictionMemory.String())
	}
	total := s.SystemMemory.DeepCopy()
	total.Add(s.EvictionMemory)
	d := dropIn{
		APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration",
		CPUManagerPolicy: "static", ReservedSystemCPUs: reserved.Union(shared).String(),
		TopologyManagerPolicy: policy, TopologyManagerScope: scope,
		MemoryManagerPolicy: "Static",
		SystemReserved:      map[string]string{"memory": s.SystemMemory.String()},
		KubeReserved:        map[string]string{"memory": "0"},
		EvictionHard:        map[string]string{"memory.available": s.EvictionMemory.String()},
		ReservedMemory:      []memoryReservation{{NUMANode: numa, Limits: map[string]string{"memory": total.String()}}},
		// A node that (re)joins waits for its tuning: the agent takes the taint off once Applied.
		RegisterWithTaints: []taint{{Key: tsv1.TuningPendingTaint, Effect: "NoSchedule"}},
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
