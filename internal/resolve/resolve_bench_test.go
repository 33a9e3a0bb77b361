package resolve

import (
	"fmt"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// bigHost is a large trading server: 2 sockets, 256 CPUs, 64 interfaces (PFs and their VFs).
func bigHost() *tsv1.NodeFacts {
	f := &tsv1.NodeFacts{OnlineCPUs: "0-255", Sockets: 2, ThreadsPerCore: 2,
		NUMANodes: []tsv1.NUMANode{{ID: 0, CPUs: "0-63,128-191"}, {ID: 1, CPUs: "64-127,192-255"}}}
	for i := 0; i < 16; i++ {
		pf := fmt.Sprintf("ens%df0", i)
		f.Interfaces = append(f.Interfaces, tsv1.InterfaceFacts{Name: pf, Driver: "ice", Vendor: "8086", Device: "1592",
			PCIAddress: fmt.Sprintf("0000:%02x:00.0", i), SRIOVTotalVFs: 64})
		for v := 0; v < 3; v++ {
			f.Interfaces = append(f.Interfaces, tsv1.InterfaceFacts{Name: fmt.Sprintf("%sv%d", pf, v), Driver: "iavf",
				Vendor: "8086", Device: "1889", PhysicalFunction: pf})
		}
	}
	return f
}

func bigProfile() *tsv1.LatencyProfileSpec {
	spec := &tsv1.LatencyProfileSpec{
		CPU:       &tsv1.CPUSpec{Reserved: "0-1,128-129", Isolated: "2-127,130-255"},
		Hugepages: &tsv1.HugepagesSpec{DefaultSize: "1Gi", Pages: []tsv1.HugePages{{Size: "1Gi", Count: 64}}},
		Sysctls:   map[string]tsv1.SysctlValue{"kernel.timer_migration": "0", "vm.stat_interval": "10"},
	}
	for g := 0; g < 4; g++ {
		var names []string
		for i := g * 4; i < g*4+4; i++ {
			names = append(names, fmt.Sprintf("ens%df0", i))
		}
		spec.NICs = append(spec.NICs, tsv1.NICSpec{Name: fmt.Sprintf("g%d", g), Selector: tsv1.NICSelector{InterfaceNames: names}, Acceleration: tsv1.AccelerationBusyPoll})
	}
	return spec
}

// BenchmarkResolveNode is the operator's per-node work on every reconcile.
func BenchmarkResolveNode(b *testing.B) {
	spec, facts := bigProfile(), bigHost()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Node(spec, facts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineCopyFacts is the floor ResolveNode is measured against: copying the node's facts
// once, which any reconcile that reads them from the cache already pays.
func BenchmarkBaselineCopyFacts(b *testing.B) {
	facts := bigHost()
	b.ReportAllocs()
	for b.Loop() {
		_ = facts.DeepCopy()
	}
}
