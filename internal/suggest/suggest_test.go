package suggest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/webhook"
)

// machine builds facts the way Linux numbers CPUs on x86: the first thread of every core (node 0's
// cores first), then the second threads in the same order, so core i is CPUs i and i+cores.
func machine(numa, coresPerNode int, smt bool, sizes []string, nics ...tsv1.InterfaceFacts) *tsv1.NodeFacts {
	total := numa * coresPerNode
	f := &tsv1.NodeFacts{ThreadsPerCore: 1, Sockets: int32(numa), KernelRelease: "6.18.0", Interfaces: nics}
	threads := 1
	if smt {
		f.ThreadsPerCore, threads = 2, 2
	}
	f.OnlineCPUs = tsv1.CPUSet(fmt.Sprintf("0-%d", total*threads-1))
	for n := range numa {
		nd := tsv1.NUMANode{ID: int32(n), HugepageSizes: sizes}
		cpus := cpuset.New()
		for c := n * coresPerNode; c < (n+1)*coresPerNode; c++ {
			core := cpuset.New(c)
			if smt {
				core = cpuset.New(c, c+total)
			}
			cpus = cpus.Union(core)
			nd.Cores = append(nd.Cores, tsv1.CPUSet(core.String()))
		}
		nd.CPUs = tsv1.CPUSet(cpus.String())
		f.NUMANodes = append(f.NUMANodes, nd)
	}
	return f
}

func nic(name, driver string, node *int32, vfs int32) tsv1.InterfaceFacts {
	return tsv1.InterfaceFacts{Name: name, Driver: driver, PCIAddress: "0000:3b:00." + name[len(name)-1:], NUMANode: node, SRIOVTotalVFs: vfs}
}

var both = []string{"2Mi", "1Gi"}

func TestShapes(t *testing.T) {
	for _, tt := range []struct {
		name               string
		facts              *tsv1.NodeFacts
		opts               Options
		reserved, isolated string
		numa               int32
		nics               string // names and drivers of the NIC group
		kubelet            bool
		hugepages          string // size x count, "" for none
		warning            string // a webhook warning the suggestion is expected to carry
	}{
		{name: "1 NUMA node, SMT off", facts: machine(1, 8, false, both, nic("ens1f0", "ice", ptr.To[int32](0), 64)),
			reserved: "0", isolated: "1-7", nics: "[ens1f0] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "1 NUMA node, SMT on", facts: machine(1, 8, true, both, nic("ens1f0", "ice", ptr.To[int32](0), 64)),
			reserved: "0,8", isolated: "1-7,9-15", nics: "[ens1f0] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "2 NUMA nodes, SMT on, NIC on node 1", facts: machine(2, 8, true, both, nic("ens1f0", "mlx5_core", ptr.To[int32](1), 8)),
			reserved: "8-9,24-25", isolated: "10-15,26-31", numa: 1, nics: "[ens1f0] [mlx5_core]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "2 NUMA nodes, SMT on, NIC on node 0", facts: machine(2, 8, true, both, nic("ens1f0", "mlx5_core", ptr.To[int32](0), 8)),
			reserved: "0-1,16-17", isolated: "2-7,18-23", nics: "[ens1f0] [mlx5_core]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "2 NUMA nodes, SMT off, NIC on node 1", facts: machine(2, 4, false, both, nic("ens1f0", "ice", ptr.To[int32](1), 0)),
			reserved: "4-5", isolated: "6-7", numa: 1, nics: "[ens1f0] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "dual-port card on node 1 chosen over the management NIC on node 0",
			facts:    machine(2, 8, false, both, nic("eno1", "igb", ptr.To[int32](0), 0), nic("ens2f0", "ice", ptr.To[int32](1), 128), nic("ens2f1", "ice", ptr.To[int32](1), 128)),
			reserved: "8-9", isolated: "10-15", numa: 1, nics: "[ens2f0 ens2f1] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "the NIC's node has two cores: one stays for latency pods", facts: machine(2, 2, true, both, nic("ens1f0", "ice", ptr.To[int32](1), 0)),
			reserved: "2,6", isolated: "3,7", numa: 1, nics: "[ens1f0] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "too small to split: one core with SMT", facts: machine(1, 1, true, both, nic("ens1f0", "ice", ptr.To[int32](0), 0)),
			reserved: "0-1", nics: "[ens1f0] [ice]", hugepages: "2Mi x 512"},
		{name: "too small to split: one CPU", facts: machine(1, 1, false, both), reserved: "0", hugepages: "2Mi x 512"},
		{name: "no NIC: the first NUMA node", facts: machine(2, 4, false, both), reserved: "0-1", isolated: "2-3", kubelet: true, hugepages: "2Mi x 512"},
		{name: "only veth (the test bed)", facts: machine(1, 2, false, both, tsv1.InterfaceFacts{Name: "md0", Driver: "veth"}, tsv1.InterfaceFacts{Name: "ifb0"}),
			reserved: "0", isolated: "1", nics: "[] [veth]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "a VM's virtio NIC (MMIO: no PCI address) without a NUMA node, beside veths", facts: machine(2, 4, false, both,
			tsv1.InterfaceFacts{Name: "eth0", Driver: "virtio_net"}, tsv1.InterfaceFacts{Name: "md0", Driver: "veth"}),
			reserved: "0-1", isolated: "2-3", nics: "[eth0] [virtio_net]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "VFs are never the NIC", facts: machine(2, 4, false, both, tsv1.InterfaceFacts{Name: "ens1f0v0", Driver: "iavf", PCIAddress: "0000:3b:01.0", NUMANode: ptr.To[int32](0), PhysicalFunction: "ens1f0"},
			nic("ens1f0", "ice", ptr.To[int32](1), 8)),
			reserved: "4-5", isolated: "6-7", numa: 1, nics: "[ens1f0] [ice]", kubelet: true, hugepages: "2Mi x 512"},
		{name: "only 1Gi pages offered", facts: machine(1, 4, false, []string{"1Gi"}, nic("ens1f0", "ice", ptr.To[int32](0), 0)), opts: Options{Hugepages: resource.MustParse("3Gi")},
			reserved: "0", isolated: "1-3", nics: "[ens1f0] [ice]", kubelet: true, hugepages: "1Gi x 3", warning: "1Gi pages on a given NUMA node"},
		{name: "no huge page sizes reported", facts: machine(1, 4, false, nil, nic("ens1f0", "ice", ptr.To[int32](0), 0)),
			reserved: "0", isolated: "1-3", nics: "[ens1f0] [ice]", kubelet: true},
		{name: "--nic and --reserved-cores", facts: machine(2, 8, true, both, nic("eno1", "igb", ptr.To[int32](0), 0), nic("ens2f0", "ice", ptr.To[int32](1), 8)),
			opts: Options{NICs: []string{"eno1"}, ReservedCores: 3}, reserved: "0-2,16-18", isolated: "3-7,19-23", nics: "[eno1] [igb]", kubelet: true, hugepages: "2Mi x 512"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Node = "worker-1"
			s, err := Suggest(tt.facts, o)
			if err != nil {
				t.Fatal(err)
			}
			spec := s.Profile.Spec
			if string(spec.CPU.Reserved) != tt.reserved || string(spec.CPU.Isolated) != tt.isolated || s.NUMANode != tt.numa {
				t.Errorf("reserved %q isolated %q on node %d, want %q %q on %d", spec.CPU.Reserved, spec.CPU.Isolated, s.NUMANode, tt.reserved, tt.isolated, tt.numa)
			}
			checkSplit(t, tt.facts, s)
			nics := ""
			if len(spec.NICs) == 1 {
				nics = fmt.Sprint(spec.NICs[0].Selector.InterfaceNames, spec.NICs[0].Selector.Drivers)
			}
			if nics != tt.nics {
				t.Errorf("NICs %v, want %v", nics, tt.nics)
			}
			if (spec.Kubelet != nil) != tt.kubelet {
				t.Errorf("kubelet section %v, want %v", spec.Kubelet != nil, tt.kubelet)
			}
			hp := ""
			if h := spec.Hugepages; h != nil {
				hp = fmt.Sprintf("%s x %d", h.Pages[0].Size, h.Pages[0].Count)
				if *h.Pages[0].Node != tt.numa {
					t.Errorf("huge pages on node %d, want the NIC's %d", *h.Pages[0].Node, tt.numa)
				}
			}
			if hp != tt.hugepages {
				t.Errorf("huge pages %q, want %q", hp, tt.hugepages)
			}
			if spec.NodeSelector.MatchLabels["kubernetes.io/hostname"] != "worker-1" || s.Profile.Name != "latency-worker-1" {
				t.Errorf("name %q selector %v", s.Profile.Name, spec.NodeSelector)
			}
			warnings, errs := webhook.ValidateProfileSpec(&spec, field.NewPath("spec"))
			if len(errs) > 0 {
				t.Errorf("the webhook refuses the suggestion: %v", errs.ToAggregate())
			}
			if w := strings.Join(warnings, "\n"); !strings.Contains(w, tt.warning) || (tt.warning == "" && w != "") {
				t.Errorf("webhook warnings %q, want %q", w, tt.warning)
			}
			checkYAML(t, s)
		})
	}
}

// checkSplit checks what every suggestion must hold: disjoint sets, whole cores on each side,
// reserved and isolated CPUs on the suggestion's NUMA node, and every CPU of that node in one of them.
func checkSplit(t *testing.T, f *tsv1.NodeFacts, s *Suggestion) {
	t.Helper()
	reserved := mustParse(t, string(s.Profile.Spec.CPU.Reserved))
	isolated := mustParse(t, string(s.Profile.Spec.CPU.Isolated))
	if reserved.IsEmpty() || !reserved.Intersection(isolated).IsEmpty() {
		t.Errorf("reserved %s and isolated %s: reserved empty or not disjoint", reserved, isolated)
	}
	for _, n := range f.NUMANodes {
		for _, c := range n.Cores {
			core := mustParse(t, string(c))
			for name, set := range map[string]cpuset.CPUSet{"reserved": reserved, "isolated": isolated} {
				if in := core.Intersection(set); !in.IsEmpty() && !in.Equals(core) {
					t.Errorf("core %s is split: %s %s", core, name, in)
				}
			}
		}
		if n.ID != s.NUMANode {
			continue
		}
		cpus := mustParse(t, string(n.CPUs))
		if !reserved.Union(isolated).Equals(cpus) {
			t.Errorf("reserved %s + isolated %s are not NUMA node %d's CPUs %s", reserved, isolated, n.ID, cpus)
		}
	}
}

// checkYAML checks that the printed YAML carries the header and the notes and reads back (strictly)
// as the same profile.
func checkYAML(t *testing.T, s *Suggestion) {
	t.Helper()
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{"# Suggested by tickstack profile suggest", "  # Housekeeping", "  # This node alone", "apiVersion: tickstack.io/v1alpha1"} {
		if !strings.Contains(text, want) && !(want == "  # Housekeeping" && strings.Contains(text, "# Too small to split")) {
			t.Errorf("YAML lacks %q:\n%s", want, text)
		}
	}
	var back tsv1.LatencyProfile
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		t.Fatalf("the YAML does not read back: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(back.Spec, s.Profile.Spec) || back.Name != s.Profile.Name {
		t.Errorf("read back %+v, want %+v", back.Spec, s.Profile.Spec)
	}
	j, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back = tsv1.LatencyProfile{}
	if err := yaml.UnmarshalStrict(j, &back); err != nil || !reflect.DeepEqual(back.Spec, s.Profile.Spec) {
		t.Errorf("JSON reads back as %+v (%v)", back.Spec, err)
	}
}

func TestRefusals(t *testing.T) {
	noCores := machine(1, 4, true, both)
	for i := range noCores.NUMANodes {
		noCores.NUMANodes[i].Cores = nil
	}
	for _, tt := range []struct {
		name  string
		facts *tsv1.NodeFacts
		opts  Options
		want  string
	}{
		{"no facts", nil, Options{Node: "n"}, "has not reported status.facts"},
		{"SMT without sibling facts", noCores, Options{Node: "n"}, "numaNodes[].cores"},
		{"no node name", machine(1, 4, false, both), Options{}, "--node"},
		{"unknown --nic", machine(1, 4, false, both, nic("ens1f0", "ice", nil, 0)), Options{Node: "n", NICs: []string{"ens9"}}, "--nic ens9: the node reports no such interface; it has ens1f0"},
		{"--nic on two NUMA nodes", machine(2, 4, false, both, nic("eno1", "igb", ptr.To[int32](0), 0), nic("ens1", "ice", ptr.To[int32](1), 0)),
			Options{Node: "n", NICs: []string{"eno1", "ens1"}}, "name NICs of one NUMA node"},
		{"bad onlineCPUs", &tsv1.NodeFacts{OnlineCPUs: "x"}, Options{Node: "n"}, "onlineCPUs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Suggest(tt.facts, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSelectorOption(t *testing.T) {
	s, err := Suggest(machine(1, 4, false, both), Options{Name: "fleet", Selector: map[string]string{"tickstack.io/role": "trading"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Profile.Name != "fleet" || !reflect.DeepEqual(s.Profile.Spec.NodeSelector.MatchLabels, map[string]string{"tickstack.io/role": "trading"}) {
		t.Errorf("profile %s selector %v", s.Profile.Name, s.Profile.Spec.NodeSelector)
	}
}

func mustParse(t *testing.T, s string) cpuset.CPUSet {
	t.Helper()
	cs, err := cpuset.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
