package suggest_test

import (
	"fmt"

	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/suggest"
)

// A two-socket node with SMT whose trading NIC (a dual-port E810) sits on NUMA node 1 and whose
// management NIC sits on node 0.
func ExampleSuggestion_YAML() {
	numa := func(id int32, cpus string, cores ...tsv1.CPUSet) tsv1.NUMANode {
		return tsv1.NUMANode{ID: id, CPUs: tsv1.CPUSet(cpus), Cores: cores, HugepageSizes: []string{"2Mi", "1Gi"}}
	}
	facts := &tsv1.NodeFacts{
		OnlineCPUs: "0-15", ThreadsPerCore: 2, Sockets: 2, KernelRelease: "6.18.0",
		NUMANodes: []tsv1.NUMANode{
			numa(0, "0-3,8-11", "0,8", "1,9", "2,10", "3,11"),
			numa(1, "4-7,12-15", "4,12", "5,13", "6,14", "7,15"),
		},
		Interfaces: []tsv1.InterfaceFacts{
			{Name: "eno1", Driver: "igb", PCIAddress: "0000:01:00.0", NUMANode: ptr.To[int32](0)},
			{Name: "ens2f0", Driver: "ice", PCIAddress: "0000:81:00.0", NUMANode: ptr.To[int32](1), SRIOVTotalVFs: 128},
			{Name: "ens2f1", Driver: "ice", PCIAddress: "0000:81:00.1", NUMANode: ptr.To[int32](1), SRIOVTotalVFs: 128},
		},
	}
	s, err := suggest.Suggest(facts, suggest.Options{Node: "trader-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := s.YAML()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// # Suggested by tickstack profile suggest from the node's facts: CPUs 0-15 (8 cores, SMT on (2
	// # threads per core)), 2 NUMA node(s), kernel 6.18.0.
	// # Check it with tickstack plan -f FILE before kubectl apply -f FILE: the CPU split changes kernel
	// # arguments, so the node reboots in its rollout slot.
	//
	// apiVersion: tickstack.io/v1alpha1
	// kind: LatencyProfile
	// metadata:
	//   name: latency-trader-1
	// spec:
	//   # This node alone, by its hostname label: the CPU lists fit its topology. For identical nodes,
	//   # select them by a label they share instead (--selector).
	//   nodeSelector:
	//     matchLabels:
	//       kubernetes.io/hostname: trader-1
	//   cpu:
	//     # Housekeeping (system, kubelet, IRQs) on NUMA node 1, the NIC's: 2 core(s) (one per NUMA node
	//     # of the machine) with their SMT siblings, the lowest-numbered ones there.
	//     reserved: 4-5,12-13
	//     # The rest of NUMA node 1, whole cores: no scheduler tick, RCU callbacks or movable IRQs there;
	//     # latency pods get exclusive CPUs from them. The other NUMA nodes stay ordinary CPUs for
	//     # everything else. SMT is on: give a latency thread a whole core (both siblings), or set
	//     # power.smt Disabled.
	//     isolated: 6-7,14-15
	//   hugepages:
	//     pages:
	//       # 1Gi of 2Mi pages on NUMA node 1, beside the NIC and the isolated CPUs (--hugepages sets the
	//       # amount: size it to the packet buffers and order books).
	//       - size: 2Mi
	//         count: 512
	//         node: 1
	//   irq:
	//     # Device IRQs and default_smp_affinity on the reserved CPUs; irqbalance bans the isolated ones.
	//     keepOffIsolated: true
	//   nics:
	//     # Device NICs with driver ice on NUMA node 1 (the ports of one card, usually); SR-IOV capable
	//     # (128 VFs): set numVfs, resourceName and network to give latency pods a VF each; 1 other device
	//     # NIC(s) left out (the management NIC, usually): choose with --nic. Selected by name and driver.
	//     # Acceleration kernel until you choose busyPoll or bypass.
	//     - name: trading
	//       selector:
	//         interfaceNames:
	//           - ens2f0
	//           - ens2f1
	//         drivers:
	//           - ice
	//   # The profile owns the kubelet's CPU, topology and memory managers: reservedSystemCPUs is
	//   # cpu.reserved, and a Guaranteed pod's CPUs, memory and huge pages come from one NUMA node. The
	//   # kubelet restarts in the node's rollout slot; remove this section to keep the kubelet as
	//   # configured by hand.
	//   kubelet:
	//     topologyManagerPolicy: single-numa-node
}
