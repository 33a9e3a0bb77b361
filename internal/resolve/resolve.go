// Package resolve turns a LatencyProfile into the concrete settings of one node, given the facts that
// node's agent reported. It is pure: the operator's controller and `tickstack plan` both call it.
package resolve

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// ErrNoFacts means the node's agent has not reported the host facts yet.
var ErrNoFacts = errors.New("the node's agent has not reported its host facts yet")

// defaultBusyPollMicros is what busyPoll acceleration sets net.core.busy_poll/busy_read to when the
// profile's sysctls do not say otherwise (the value the kernel documentation suggests for low latency).
const defaultBusyPollMicros = "50"

// ParseCPUSet parses a cpulist ("0-3,8"); field names the API field for the error message.
func ParseCPUSet(field string, s tsv1.CPUSet) (cpuset.CPUSet, error) {
	cs, err := cpuset.Parse(string(s))
	if err != nil {
		return cpuset.New(), fmt.Errorf("%s: %q is not a cpulist such as \"0-3,8\": %w", field, s, err)
	}
	return cs, nil
}

// Node resolves spec for one node from its facts. The result is deterministic: equal inputs give
// equal tuning, in a stable order, so the operator patches only real changes.
func Node(spec *tsv1.LatencyProfileSpec, facts *tsv1.NodeFacts) (*tsv1.NodeTuning, error) {
	if facts == nil || facts.OnlineCPUs == "" {
		return nil, ErrNoFacts
	}
	online, err := ParseCPUSet("status.facts.onlineCPUs", facts.OnlineCPUs)
	if err != nil {
		return nil, err
	}
	t := &tsv1.NodeTuning{}
	var reserved, isolated cpuset.CPUSet
	if spec.CPU != nil {
		if reserved, isolated, err = cpus(spec.CPU, online); err != nil {
			return nil, err
		}
		t.ReservedCPUs = tsv1.CPUSet(reserved.String())
		t.IsolatedCPUs = tsv1.CPUSet(isolated.String())
		offlined, err := offlinedCPUs(spec.CPU, facts)
		if err != nil {
			return nil, err
		}
		t.OfflinedCPUs = tsv1.CPUSet(offlined.String())
		shared, err := ParseCPUSet("spec.cpu.shared", spec.CPU.Shared)
		if err != nil {
			return nil, err
		}
		on := shared.Intersection(online)
		if shared.Size() > 0 && on.Size() == 0 {
			return nil, fmt.Errorf("spec.cpu.shared: none of CPUs %s exist on this node (online: %s): share CPUs the node has", shared, online)
		}
		t.SharedCPUs = tsv1.CPUSet(on.String())
	}
	keepIRQsOff := isolated.Size() > 0 && (spec.IRQ == nil || spec.IRQ.KeepOffIsolated == nil || *spec.IRQ.KeepOffIsolated)
	if keepIRQsOff {
		t.IRQ = &tsv1.IRQTuning{HousekeepingCPUs: t.ReservedCPUs, BannedCPUs: t.IsolatedCPUs}
	}
	if isolated.Size() > 0 {
		t.WorkqueueCPUs = t.ReservedCPUs
	}
	if p := spec.Power; p != nil {
		t.MaxCStateExitLatencyMicroseconds = p.MaxCStateExitLatencyMicroseconds
		t.Governor, t.Turbo, t.SMT = p.Governor, p.Turbo, p.SMT
	}
	if err := hugepages(spec.Hugepages, facts, t); err != nil {
		return nil, err
	}
	if t.NICs, err = nics(spec.NICs, facts, t); err != nil {
		return nil, err
	}
	if spec.Drift != nil && spec.Drift.Action == tsv1.DriftReport {
		t.DriftAction = tsv1.DriftReport
	}
	t.Sysctls = sysctls(spec)
	t.KernelArgs = kernelArgs(spec, reserved, isolated, keepIRQsOff, t.Hugepages)
	if spec.Rollout != nil && spec.Rollout.DrainTimeout != nil {
		t.DrainTimeout = spec.Rollout.DrainTimeout.DeepCopy()
	}
	if t.PTP, err = ptpTuning(spec.PTP, t.NICs); err != nil {
		return nil, err
	}
	if t.PTP != nil && reserved.Size() > 0 {
		// linuxptp on the reserved CPUs, never on the isolated ones the trading threads own.
		t.PTP.CPUs = string(t.ReservedCPUs)
	}
	if t.Kubelet, err = kubeletTuning(spec); err != nil {
		return nil, err
	}
	if spec.PodControls != nil && len(spec.PodControls.Allow) > 0 {
		t.PodControls = append([]tsv1.PodControl(nil), spec.PodControls.Allow...)
	}
	return t, nil
}

// Defaults of the profile's kubelet section.
var (
	DefaultSystemReservedMemory = resource.MustParse("1Gi")
	DefaultEvictionHardMemory   = resource.MustParse("100Mi")
)

// kubeletTuning resolves the profile's kubelet section, defaults filled in.
func kubeletTuning(spec *tsv1.LatencyProfileSpec) (*tsv1.KubeletTuning, error) {
	k := spec.Kubelet
	if k == nil {
		return nil, nil
	}
	if spec.CPU == nil {
		return nil, errors.New("kubelet: reservedSystemCPUs follows cpu.reserved, and the profile has no cpu section: add cpu.reserved or remove kubelet")
	}
	t := &tsv1.KubeletTuning{
		TopologyManagerPolicy: k.TopologyManagerPolicy, TopologyManagerScope: k.TopologyManagerScope,
		SystemReservedMemory: DefaultSystemReservedMemory.DeepCopy(), EvictionHardMemory: DefaultEvictionHardMemory.DeepCopy(),
	}
	if t.TopologyManagerPolicy == "" {
		t.TopologyManagerPolicy = tsv1.DefaultTopologyManagerPolicy
	}
	if t.TopologyManagerScope == "" {
		t.TopologyManagerScope = tsv1.DefaultTopologyManagerScope
	}
	if k.SystemReservedMemory != nil {
		t.SystemReservedMemory = k.SystemReservedMemory.DeepCopy()
	}
	if k.EvictionHardMemory != nil {
		t.EvictionHardMemory = k.EvictionHardMemory.DeepCopy()
	}
	if t.SystemReservedMemory.Sign() <= 0 {
		return nil, fmt.Errorf("kubelet.systemReservedMemory: %s must be above 0 (the Static memory manager needs a reservation)", t.SystemReservedMemory.String())
	}
	if t.EvictionHardMemory.Sign() <= 0 {
		return nil, fmt.Errorf("kubelet.evictionHardMemory: %s must be above 0 (the Static memory manager needs a reservation)", t.EvictionHardMemory.String())
	}
	return t, nil
}

// ptpTuning resolves the profile's ptp section for a node: nicGroup becomes the one interface that
// group selected there, and empty fields get the defaults the CRD would have given them.
func ptpTuning(p *tsv1.PTPSpec, nics []tsv1.NICTuning) (*tsv1.PTPTuning, error) {
	if p == nil {
		return nil, nil
	}
	t := &tsv1.PTPTuning{
		Role:              cmp.Or(p.Role, tsv1.DefaultPTPRole),
		Interface:         p.Interface,
		Domain:            p.Domain,
		Transport:         cmp.Or(p.Transport, tsv1.DefaultPTPTransport),
		Timestamping:      cmp.Or(p.Timestamping, tsv1.DefaultPTPTimestamping),
		MaxOffsetNs:       cmp.Or(p.MaxOffsetNs, tsv1.DefaultPTPMaxOffsetNs),
		MaxSystemOffsetNs: cmp.Or(p.MaxSystemOffsetNs, tsv1.DefaultPTPMaxSystemOffsetNs),
		Ptp4lOptions:      maps.Clone(p.Ptp4lOptions),
		Phc2sysOptions:    maps.Clone(p.Phc2sysOptions),
		HoldTime:          metav1.Duration{Duration: tsv1.DefaultPTPHoldTime},
		OwnsSystemClock:   p.OwnsSystemClock,
		SchedulingPolicy:  cmp.Or(p.SchedulingPolicy, tsv1.DefaultPTPSchedulingPolicy),
	}
	if p.HoldTime != nil {
		t.HoldTime = *p.HoldTime
	}
	if t.SchedulingPolicy == tsv1.PTPSchedulingFIFO {
		t.SchedulingPriority = tsv1.DefaultPTPSchedulingPriority
		if p.SchedulingPriority != nil {
			t.SchedulingPriority = *p.SchedulingPriority
		}
	}
	if len(p.Interfaces) > 0 {
		// A boundary clock: the ports as given, the first one Interface.
		t.Interfaces = slices.Clone(p.Interfaces)
		t.Interface = p.Interfaces[0]
		return t, nil
	}
	if p.NICGroup == "" {
		if p.Interface == "" {
			return nil, errors.New("spec.ptp: neither interface, nicGroup nor interfaces is set: name the interface ptp4l runs on, or a spec.nics[] group")
		}
		return t, nil
	}
	var found []string
	for _, n := range nics {
		if n.Group == p.NICGroup {
			found = append(found, n.Interface)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("spec.ptp.nicGroup: %q is not a spec.nics[] group with an interface on this node: name one of the profile's nics[] groups", p.NICGroup)
	case 1:
		t.Interface = found[0]
		return t, nil
	default:
		return nil, fmt.Errorf("spec.ptp.nicGroup: group %q selects %d interfaces on this node (%s) and ptp4l runs on one: narrow the group's selector or set ptp.interface", p.NICGroup, len(found), strings.Join(found, ", "))
	}
}

func cpus(c *tsv1.CPUSpec, online cpuset.CPUSet) (reserved, isolated cpuset.CPUSet, err error) {
	wantReserved, err := ParseCPUSet("spec.cpu.reserved", c.Reserved)
	if err != nil {
		return reserved, isolated, err
	}
	wantIsolated, err := ParseCPUSet("spec.cpu.isolated", c.Isolated)
	if err != nil {
		return reserved, isolated, err
	}
	if both := wantReserved.Intersection(wantIsolated); both.Size() > 0 {
		return reserved, isolated, fmt.Errorf("spec.cpu: CPUs %s are both reserved and isolated: give each CPU to one of them", both)
	}
	reserved = wantReserved.Intersection(online)
	if reserved.Size() == 0 {
		return reserved, isolated, fmt.Errorf("spec.cpu.reserved: none of CPUs %s exist on this node (online: %s): reserve at least one of its CPUs", wantReserved, online)
	}
	isolated = wantIsolated.Intersection(online)
	if wantIsolated.Size() > 0 && isolated.Size() == 0 {
		return reserved, isolated, fmt.Errorf("spec.cpu.isolated: none of CPUs %s exist on this node (online: %s)", wantIsolated, online)
	}
	return reserved, isolated, nil
}

// offlinedCPUs checks cpu.offlined against the node: every CPU must exist there (present, or
// online for an agent that reports no present CPUs) and have a cpuN/online file. An offlined CPU
// has left the online CPUs, so existence is judged by the present and hotpluggable CPUs.
func offlinedCPUs(c *tsv1.CPUSpec, facts *tsv1.NodeFacts) (cpuset.CPUSet, error) {
	want, err := ParseCPUSet("spec.cpu.offlined", c.Offlined)
	if err != nil || want.Size() == 0 {
		return want, err
	}
	present, err := ParseCPUSet("status.facts.presentCPUs", facts.PresentCPUs)
	if err != nil {
		return want, err
	}
	online, _ := ParseCPUSet("status.facts.onlineCPUs", facts.OnlineCPUs)
	hotplug, err := ParseCPUSet("status.facts.hotpluggableCPUs", facts.HotpluggableCPUs)
	if err != nil {
		return want, err
	}
	present = present.Union(online).Union(hotplug)
	if missing := want.Difference(present); missing.Size() > 0 {
		return want, fmt.Errorf("spec.cpu.offlined: CPUs %s do not exist on this node (present: %s): offline only CPUs the node has", missing, present)
	}
	if fixed := want.Difference(hotplug); fixed.Size() > 0 {
		return want, fmt.Errorf("spec.cpu.offlined: CPUs %s cannot be taken offline on this node (they have no /sys/devices/system/cpu/cpuN/online file; hotpluggable: %q): remove them from cpu.offlined", fixed, hotplug.String())
	}
	return want, nil
}

func hugepages(h *tsv1.HugepagesSpec, facts *tsv1.NodeFacts, t *tsv1.NodeTuning) error {
	if h == nil {
		return nil
	}
	t.TransparentHugepages = h.Transparent
	nodes := map[int32]bool{}
	for _, n := range facts.NUMANodes {
		nodes[n.ID] = true
	}
	for i, p := range h.Pages {
		if p.Node != nil && len(nodes) > 0 && !nodes[*p.Node] {
			return fmt.Errorf("spec.hugepages.pages[%d].node: NUMA node %d does not exist on this node (it has %d NUMA nodes)", i, *p.Node, len(nodes))
		}
		t.Hugepages = append(t.Hugepages, tsv1.HugepageAllocation{
			Size: p.Size, Count: p.Count, Node: p.Node,
			AtBoot: p.Size == tsv1.HugePageSize1Gi && p.Node == nil,
		})
	}
	return nil
}

// matches reports whether the selector picks the interface.
func matches(s tsv1.NICSelector, i tsv1.InterfaceFacts) bool {
	if len(s.InterfaceNames) > 0 && !slices.Contains(s.InterfaceNames, i.Name) {
		return false
	}
	if s.Vendor != "" && !strings.EqualFold(s.Vendor, i.Vendor) {
		return false
	}
	if s.Device != "" && !strings.EqualFold(s.Device, i.Device) {
		return false
	}
	if len(s.PFNames) > 0 {
		found := false
		for _, pf := range s.PFNames {
			// pfNames may carry a VF range as the SR-IOV device plugin writes it (ens1f0#0-3).
			if name, _, _ := strings.Cut(pf, "#"); name == i.Name {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	if len(s.Drivers) > 0 && !slices.Contains(s.Drivers, i.Driver) {
		return false
	}
	return true
}

func nics(specs []tsv1.NICSpec, facts *tsv1.NodeFacts, t *tsv1.NodeTuning) ([]tsv1.NICTuning, error) {
	var out []tsv1.NICTuning
	taken := map[string]string{}
	for _, n := range specs {
		found := 0
		for _, i := range facts.Interfaces {
			if i.PhysicalFunction != "" || !matches(n.Selector, i) {
				continue // VFs are created and handed out, never tuned as a group of their own
			}
			if other, ok := taken[i.Name]; ok {
				return nil, fmt.Errorf("spec.nics: interface %s is selected by both %q and %q: narrow one selector", i.Name, other, n.Name)
			}
			taken[i.Name] = n.Name
			found++
			if n.NumVFs != nil && *n.NumVFs > 0 && *n.NumVFs > i.SRIOVTotalVFs {
				if i.SRIOVTotalVFs == 0 {
					return nil, fmt.Errorf("spec.nics[%s].numVfs: interface %s (driver %s) is not SR-IOV capable: remove numVfs or select an SR-IOV NIC", n.Name, i.Name, i.Driver)
				}
				return nil, fmt.Errorf("spec.nics[%s].numVfs: interface %s supports at most %d VFs, %d asked", n.Name, i.Name, i.SRIOVTotalVFs, *n.NumVFs)
			}
			acc := n.Acceleration
			if acc == "" {
				acc = tsv1.AccelerationKernel
			}
			nt := tsv1.NICTuning{
				Group: n.Name, Interface: i.Name, PCIAddress: i.PCIAddress, Driver: i.Driver,
				NumVFs: n.NumVFs, ResourceName: n.ResourceName, Acceleration: acc,
				Coalescing: n.Coalescing, Rings: n.Rings, Channels: n.Channels,
			}
			if t.IsolatedCPUs != "" {
				nt.RPSCPUs = t.ReservedCPUs
			}
			out = append(out, nt)
		}
		if found == 0 {
			return nil, fmt.Errorf("spec.nics[%s].selector matches no interface on this node (it has %s): fix the selector or the profile's nodeSelector", n.Name, interfaceNames(facts))
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Interface < out[b].Interface })
	return out, nil
}

func interfaceNames(f *tsv1.NodeFacts) string {
	var names []string
	for _, i := range f.Interfaces {
		if i.PhysicalFunction == "" {
			names = append(names, i.Name)
		}
	}
	if len(names) == 0 {
		return "no interfaces"
	}
	return strings.Join(names, ", ")
}

func sysctls(spec *tsv1.LatencyProfileSpec) map[string]string {
	out := map[string]string{}
	for k, v := range spec.Sysctls {
		out[k] = string(v)
	}
	for _, n := range spec.NICs {
		if n.Acceleration == tsv1.AccelerationBusyPoll {
			for _, k := range []string{"net.core.busy_poll", "net.core.busy_read"} {
				if _, set := out[k]; !set {
					out[k] = defaultBusyPollMicros
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// hugepageArgSize is how the kernel command line writes a page size.
func hugepageArgSize(s tsv1.HugePageSize) string {
	return strings.TrimSuffix(string(s), "i")
}

// kernelArgs lists the wanted kernel arguments in a stable order: tickstack's own, then the user's.
func kernelArgs(spec *tsv1.LatencyProfileSpec, reserved, isolated cpuset.CPUSet, irqsOff bool, pages []tsv1.HugepageAllocation) []string {
	var args []string
	if isolated.Size() > 0 {
		flags := "managed_irq"
		if spec.CPU.IsolationMode == tsv1.IsolationStrict {
			flags += ",domain"
		}
		iso := isolated.String()
		args = append(args, "isolcpus="+flags+","+iso, "nohz_full="+iso, "rcu_nocbs="+iso)
		if irqsOff {
			args = append(args, "irqaffinity="+reserved.String())
		}
	}
	if h := spec.Hugepages; h != nil && h.DefaultSize != "" {
		args = append(args, "default_hugepagesz="+hugepageArgSize(h.DefaultSize))
	}
	for _, p := range pages {
		if p.AtBoot {
			args = append(args, "hugepagesz="+hugepageArgSize(p.Size), fmt.Sprintf("hugepages=%d", p.Count))
		}
	}
	if p := spec.Power; p != nil {
		if ptr.Deref(p.IdlePoll, false) {
			args = append(args, "idle=poll")
		}
		if p.SMT == tsv1.Disabled {
			args = append(args, "nosmt")
		}
	}
	if spec.Kernel != nil {
		args = append(args, spec.Kernel.AdditionalArgs...)
	}
	return args
}
