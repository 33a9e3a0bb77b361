// Package suggest turns one node's reported facts (a LatencyNodeState's status.facts) into a
// LatencyProfile for that node, with the reason for each choice: `tickstack profile suggest`. It
// is pure: no client, no host access; the caller reads the facts and checks the result with the
// webhook's rules.
//
// The rules (docs/cli.md "profile suggest"):
//   - the NIC: the node's device NICs (a PCI function that is not an SR-IOV VF, or a VM's virtio
//     NIC), SR-IOV capable ones first, then those that know their NUMA node, then by name; the
//     group is every device NIC with the first one's driver on its NUMA node, selected by name and
//     driver. Only a node without a device NIC gets a group of every veth (by driver: a test bed).
//     The NIC's NUMA node is where everything else goes (the first node when it reports none).
//   - reserved: one physical core per NUMA node of the machine, with all its SMT siblings, the
//     lowest-numbered cores of the NIC's NUMA node; at most all but one of that node's cores.
//   - isolated: the rest of the NIC's NUMA node, whole cores. Other NUMA nodes stay ordinary CPUs.
//   - huge pages: 1Gi worth on the NIC's NUMA node, in 2Mi pages where the node offers them.
//   - IRQs: kept off the isolated CPUs (on the reserved ones).
//   - kubelet: the profile owns reservedSystemCPUs and the single-numa-node topology manager.
package suggest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// NICGroup is the name of the suggested profile's NIC group.
const NICGroup = "trading"

// Options are the user's choices; the zero value follows the rules above.
type Options struct {
	// Node is the node's name: the profile's name (latency-<node>) and its hostname selector.
	Node string
	// Hostname is the node's kubernetes.io/hostname label, when it differs from its name.
	Hostname string
	// Name of the profile, instead of latency-<node>.
	Name string
	// Selector selects the nodes instead of the hostname label (for a fleet of identical nodes).
	Selector map[string]string
	// NICs are interface names to use instead of the rule's choice.
	NICs []string
	// ReservedCores is how many physical cores to reserve, instead of one per NUMA node.
	ReservedCores int
	// Hugepages is the amount of huge page memory on the NIC's NUMA node; zero: 1Gi.
	Hugepages resource.Quantity
}

// Suggestion is a profile with the reason for each choice.
type Suggestion struct {
	// Profile is the suggested profile.
	Profile *tsv1.LatencyProfile
	// Header says where the suggestion comes from and what applying it does.
	Header string
	// Notes hold the reason for each choice by field path: "spec.cpu.reserved", "spec.nics[0]".
	Notes map[string]string
	// Reserved, Isolated and NUMANode are the split, for callers and tests.
	Reserved, Isolated cpuset.CPUSet
	NUMANode           int32
	// also are notes on sections the suggestion leaves out, added to the header.
	also []string
}

// node is one NUMA node with its online CPUs grouped into physical cores.
type node struct {
	id    int32
	cpus  cpuset.CPUSet
	cores []cpuset.CPUSet
	sizes []string
}

// Suggest computes a profile for the node whose facts are f.
func Suggest(f *tsv1.NodeFacts, o Options) (*Suggestion, error) {
	if f == nil {
		return nil, fmt.Errorf("no facts: the node's agent has not reported status.facts yet (is it running there?)")
	}
	nodes, err := topology(f)
	if err != nil {
		return nil, err
	}
	s := &Suggestion{Notes: map[string]string{}}
	p := &tsv1.LatencyProfile{TypeMeta: metav1.TypeMeta{APIVersion: tsv1.GroupVersion.String(), Kind: "LatencyProfile"}}
	s.Profile = p
	if err := s.name(o); err != nil {
		return nil, err
	}
	nics, nicNote, byDriver, err := chooseNICs(f.Interfaces, o.NICs)
	if err != nil {
		return nil, err
	}
	t, numaNote := nicNode(nodes, nics)
	s.NUMANode = t.id
	s.split(nodes, t, o.ReservedCores, numaNote)
	if err := s.hugepages(t, o.Hugepages); err != nil {
		return nil, err
	}
	s.nics(nics, nicNote, byDriver)
	s.header(f, nodes)
	return s, nil
}

// topology groups the online CPUs into NUMA nodes and cores. Without NUMA facts the machine is one
// node 0; without core facts each CPU is a core, which is only right without SMT.
func topology(f *tsv1.NodeFacts) ([]node, error) {
	online, err := cpuset.Parse(string(f.OnlineCPUs))
	if err != nil || online.IsEmpty() {
		return nil, fmt.Errorf("facts: onlineCPUs %q is not a non-empty CPU list", f.OnlineCPUs)
	}
	in := f.NUMANodes
	if len(in) == 0 {
		in = []tsv1.NUMANode{{ID: 0, CPUs: f.OnlineCPUs}}
	}
	var out []node
	for i, n := range in {
		cpus, err := cpuset.Parse(string(n.CPUs))
		if err != nil {
			return nil, fmt.Errorf("facts: numaNodes[%d].cpus %q is not a CPU list", i, n.CPUs)
		}
		nd := node{id: n.ID, cpus: cpus.Intersection(online), sizes: n.HugepageSizes}
		if nd.cpus.IsEmpty() {
			continue // a memory-only node
		}
		covered := cpuset.New()
		for j, c := range n.Cores {
			core, err := cpuset.Parse(string(c))
			if err != nil {
				return nil, fmt.Errorf("facts: numaNodes[%d].cores[%d] %q is not a CPU list", i, j, c)
			}
			if core = core.Intersection(nd.cpus); !core.IsEmpty() {
				nd.cores = append(nd.cores, core)
				covered = covered.Union(core)
			}
		}
		rest := nd.cpus.Difference(covered)
		if !rest.IsEmpty() && f.ThreadsPerCore > 1 {
			return nil, fmt.Errorf("facts: threadsPerCore is %d but numaNodes[%d].cores does not place CPUs %s: "+
				"the agent that reported them predates numaNodes[].cores; upgrade it (with -f, add each core's SMT siblings as numaNodes[].cores)",
				f.ThreadsPerCore, i, rest)
		}
		for _, c := range rest.List() {
			nd.cores = append(nd.cores, cpuset.New(c))
		}
		slices.SortFunc(nd.cores, func(a, b cpuset.CPUSet) int { return a.List()[0] - b.List()[0] })
		out = append(out, nd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("facts: no NUMA node holds an online CPU (onlineCPUs %s)", online)
	}
	slices.SortFunc(out, func(a, b node) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

func (s *Suggestion) name(o Options) error {
	p := s.Profile
	p.Name = o.Name
	if p.Name == "" {
		if o.Node == "" {
			return fmt.Errorf("name the node (--node NAME) or the profile (--name)")
		}
		p.Name = "latency-" + o.Node
	}
	switch {
	case len(o.Selector) > 0:
		p.Spec.NodeSelector.MatchLabels = o.Selector
		s.Notes["spec.nodeSelector"] = "The nodes you selected: each must have this node's topology, or the CPU lists miss their CPUs."
	default:
		host := cmp.Or(o.Hostname, o.Node)
		if host == "" {
			return fmt.Errorf("name the node (--node NAME) or select the nodes (--selector KEY=VALUE)")
		}
		p.Spec.NodeSelector.MatchLabels = map[string]string{corev1.LabelHostname: host}
		s.Notes["spec.nodeSelector"] = "This node alone, by its hostname label: the CPU lists fit its topology. " +
			"For identical nodes, select them by a label they share instead (--selector)."
	}
	return nil
}

// chooseNICs picks the interfaces of the NIC group, says why, and whether the group is selected
// by driver alone.
func chooseNICs(ifs []tsv1.InterfaceFacts, named []string) ([]tsv1.InterfaceFacts, string, bool, error) {
	if len(named) > 0 {
		var out []tsv1.InterfaceFacts
		for _, n := range named {
			i := slices.IndexFunc(ifs, func(f tsv1.InterfaceFacts) bool { return f.Name == n })
			if i < 0 {
				return nil, "", false, fmt.Errorf("--nic %s: the node reports no such interface; it has %s", n, names(ifs))
			}
			if len(out) > 0 && numaOf(out[0]) != numaOf(ifs[i]) {
				return nil, "", false, fmt.Errorf("--nic %s is on NUMA node %s, %s on %s: name NICs of one NUMA node", n, numaOf(ifs[i]), out[0].Name, numaOf(out[0]))
			}
			out = append(out, ifs[i])
		}
		return out, "The interfaces you named (--nic).", false, nil
	}
	var devices, veths []tsv1.InterfaceFacts
	for _, i := range ifs {
		switch {
		case i.PhysicalFunction != "":
			// A VF is handed to a pod, never tuned as the node's NIC.
		case i.PCIAddress != "" || i.Driver == "virtio_net":
			devices = append(devices, i)
		case i.Driver == "veth":
			veths = append(veths, i)
		}
	}
	if len(devices) == 0 {
		if len(veths) == 0 {
			return nil, "", false, nil
		}
		return veths, fmt.Sprintf("The node has no device NIC (no PCI function, no virtio NIC), only veth interfaces (%d): a test bed. "+
			"Every veth is selected, by driver; name the one latency pods use with --nic.", len(veths)), true, nil
	}
	slices.SortStableFunc(devices, func(a, b tsv1.InterfaceFacts) int {
		return cmp.Or(boolCmp(b.SRIOVTotalVFs > 0, a.SRIOVTotalVFs > 0), boolCmp(b.NUMANode != nil, a.NUMANode != nil),
			strings.Compare(a.Name, b.Name))
	})
	best := devices[0]
	var group []tsv1.InterfaceFacts
	for _, d := range devices {
		if d.Driver == best.Driver && numaOf(d) == numaOf(best) {
			group = append(group, d)
		}
	}
	why := fmt.Sprintf("Device NICs with driver %s on NUMA node %s (the ports of one card, usually)", cmp.Or(best.Driver, "unknown"), numaOf(best))
	if best.NUMANode == nil {
		why = fmt.Sprintf("Device NICs with driver %s, reporting no NUMA node (a VM's, usually)", cmp.Or(best.Driver, "unknown"))
	}
	if best.SRIOVTotalVFs > 0 {
		why += fmt.Sprintf("; SR-IOV capable (%d VFs): set numVfs, resourceName and network to give latency pods a VF each", best.SRIOVTotalVFs)
	}
	if others := len(devices) - len(group); others > 0 {
		why += fmt.Sprintf("; %d other device NIC(s) left out (the management NIC, usually): choose with --nic", others)
	}
	return group, why + ".", len(group) > 32 && best.Driver != "", nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func numaOf(i tsv1.InterfaceFacts) string {
	if i.NUMANode == nil {
		return "unknown"
	}
	return fmt.Sprint(*i.NUMANode)
}

func names(ifs []tsv1.InterfaceFacts) string {
	var n []string
	for _, i := range ifs {
		n = append(n, i.Name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// nicNode is the NUMA node of the NICs, or the first node when they report none.
func nicNode(nodes []node, nics []tsv1.InterfaceFacts) (node, string) {
	if len(nics) == 0 {
		return nodes[0], fmt.Sprintf("the node reports no NIC, so NUMA node %d", nodes[0].id)
	}
	if n := nics[0].NUMANode; n != nil {
		if i := slices.IndexFunc(nodes, func(x node) bool { return x.id == *n }); i >= 0 {
			return nodes[i], fmt.Sprintf("NUMA node %d, the NIC's", *n)
		}
	}
	if len(nodes) == 1 {
		return nodes[0], fmt.Sprintf("NUMA node %d, the only one", nodes[0].id)
	}
	return nodes[0], fmt.Sprintf("NUMA node %d: %s reports no NUMA node", nodes[0].id, nics[0].Name)
}

// split reserves the first cores of t and isolates the rest of it.
func (s *Suggestion) split(nodes []node, t node, reservedCores int, where string) {
	want, rule := reservedCores, "--reserved-cores"
	if want <= 0 {
		want, rule = len(nodes), "one per NUMA node of the machine"
	}
	tooSmall := len(t.cores) < 2
	n := min(want, max(len(t.cores)-1, 1))
	reserved := cpuset.New()
	for _, c := range t.cores[:n] {
		reserved = reserved.Union(c)
	}
	isolated := t.cpus.Difference(reserved)
	s.Reserved, s.Isolated = reserved, isolated
	spec := &s.Profile.Spec
	spec.CPU = &tsv1.CPUSpec{Reserved: tsv1.CPUSet(reserved.String()), Isolated: tsv1.CPUSet(isolated.String())}
	note := fmt.Sprintf("Housekeeping (system, kubelet, IRQs) on %s: %d core(s) (%s) with their SMT siblings, the lowest-numbered ones there.", where, n, rule)
	if n < want {
		note += fmt.Sprintf(" Fewer than %d: the node has %d core(s) and keeps one for latency pods.", want, len(t.cores))
	}
	if tooSmall {
		note = fmt.Sprintf("Too small to split: %s has one core, so it is all reserved and nothing is isolated. Latency pods need a node with two cores or more.", where)
	}
	s.Notes["spec.cpu.reserved"] = note
	if !isolated.IsEmpty() {
		s.Notes["spec.cpu.isolated"] = fmt.Sprintf("The rest of NUMA node %d, whole cores: no scheduler tick, RCU callbacks or movable IRQs there; latency pods get exclusive CPUs from them.", t.id)
		if len(nodes) > 1 {
			s.Notes["spec.cpu.isolated"] += " The other NUMA nodes stay ordinary CPUs for everything else."
		}
		if len(t.cores[0].List()) > 1 {
			s.Notes["spec.cpu.isolated"] += " SMT is on: give a latency thread a whole core (both siblings), or set power.smt Disabled."
		}
		spec.IRQ = &tsv1.IRQSpec{KeepOffIsolated: ptr.To(true)}
		s.Notes["spec.irq.keepOffIsolated"] = "Device IRQs and default_smp_affinity on the reserved CPUs; irqbalance bans the isolated ones."
	}
	online := cpuset.New()
	for _, nd := range nodes {
		online = online.Union(nd.cpus)
	}
	if !online.Difference(reserved).IsEmpty() {
		spec.Kubelet = &tsv1.KubeletSpec{TopologyManagerPolicy: tsv1.DefaultTopologyManagerPolicy}
		s.Notes["spec.kubelet"] = "The profile owns the kubelet's CPU, topology and memory managers: reservedSystemCPUs is cpu.reserved, " +
			"and a Guaranteed pod's CPUs, memory and huge pages come from one NUMA node. The kubelet restarts in the node's rollout slot; remove this section to keep the kubelet as configured by hand."
	}
}

// hugepages reserves the amount on t in the smallest size t offers that a profile can name.
func (s *Suggestion) hugepages(t node, amount resource.Quantity) error {
	if amount.IsZero() {
		amount = resource.MustParse("1Gi")
	}
	if amount.Sign() < 0 {
		return fmt.Errorf("--hugepages %s: must be positive", amount.String())
	}
	for _, size := range []tsv1.HugePageSize{tsv1.HugePageSize2Mi, tsv1.HugePageSize1Gi} {
		if !slices.Contains(t.sizes, string(size)) {
			continue
		}
		page := resource.MustParse(string(size))
		count := (amount.Value() + page.Value() - 1) / page.Value()
		if count > 1048576 {
			return fmt.Errorf("--hugepages %s is %d pages of %s: at most 1048576", amount.String(), count, size)
		}
		s.Profile.Spec.Hugepages = &tsv1.HugepagesSpec{Pages: []tsv1.HugePages{{Size: size, Count: int32(count), Node: ptr.To(t.id)}}}
		s.Notes["spec.hugepages.pages[0]"] = fmt.Sprintf("%s of %s pages on NUMA node %d, beside the NIC and the isolated CPUs (--hugepages sets the amount: size it to the packet buffers and order books).",
			amount.String(), size, t.id)
		return nil
	}
	s.also = append(s.also, fmt.Sprintf("No huge pages: NUMA node %d reports no 2Mi or 1Gi page size (%v); add spec.hugepages by hand if the kernel offers them.", t.id, t.sizes))
	return nil
}

func (s *Suggestion) nics(nics []tsv1.InterfaceFacts, why string, byDriver bool) {
	if len(nics) == 0 {
		s.also = append(s.also, "The node reports no NIC: no nics section; the CPUs are split on its first NUMA node.")
		return
	}
	sel := tsv1.NICSelector{}
	var drivers []string
	for _, n := range nics {
		if !byDriver {
			sel.InterfaceNames = append(sel.InterfaceNames, n.Name)
		}
		if n.Driver != "" && !slices.Contains(drivers, n.Driver) {
			drivers = append(drivers, n.Driver)
		}
	}
	if allHaveDriver(nics) {
		sel.Drivers = drivers
	}
	s.Profile.Spec.NICs = []tsv1.NICSpec{{Name: NICGroup, Selector: sel}}
	if !byDriver {
		why += " Selected by name and driver."
	}
	s.Notes["spec.nics[0]"] = why + " Acceleration kernel until you choose busyPoll or bypass."
}

func allHaveDriver(nics []tsv1.InterfaceFacts) bool {
	return !slices.ContainsFunc(nics, func(n tsv1.InterfaceFacts) bool { return n.Driver == "" })
}

func (s *Suggestion) header(f *tsv1.NodeFacts, nodes []node) {
	smt := "SMT off"
	if f.ThreadsPerCore > 1 {
		smt = fmt.Sprintf("SMT on (%d threads per core)", f.ThreadsPerCore)
	}
	cores := 0
	for _, n := range nodes {
		cores += len(n.cores)
	}
	s.Header = fmt.Sprintf("Suggested by tickstack profile suggest from the node's facts: CPUs %s (%d cores, %s), %d NUMA node(s), kernel %s.\n"+
		"Check it with tickstack plan -f FILE before kubectl apply -f FILE: the CPU split changes kernel arguments, so the node reboots in its rollout slot.",
		f.OnlineCPUs, cores, smt, len(nodes), cmp.Or(f.KernelRelease, "unknown"))
	for _, a := range s.also {
		s.Header += "\n" + a
	}
}
