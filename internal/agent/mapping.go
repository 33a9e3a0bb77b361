package agent

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/tuning"
)

// Desired maps a node state's resolved tuning onto what the host layer applies. Kernel arguments
// and 1Gi pools reserved at boot are not part of it (they go through the boot loader). CPU sets
// that do not parse are reported as field errors naming the spec.tuning field, all at once, like
// tuning.Validate does, so the caller can put them in one Degraded message.
func Desired(t *tsv1.NodeTuning) (*tuning.Desired, error) {
	d := &tuning.Desired{}
	if t == nil {
		return d, nil
	}
	var errs []error
	set := func(field string, s tsv1.CPUSet) *cpuset.Set {
		cs, err := cpuset.Parse(string(s))
		if err != nil {
			errs = append(errs, &tuning.FieldError{Field: "spec.tuning." + field, Problem: fmt.Sprintf("%q is not a CPU list: %v", s, err), Fix: "write CPUs as a list such as \"0-3,8\""})
			return nil
		}
		return &cs
	}
	if p := t.PTP; p != nil && p.OwnsSystemClock && p.Role != tsv1.PTPRoleGrandmaster {
		// PTP alone steers the system clock: the host's clock daemons are stopped and masked.
		d.TimeServices = slices.Clone(host.TimeServiceUnits)
	}
	if len(t.Sysctls) > 0 {
		d.Sysctls = make(map[string]string, len(t.Sysctls))
		for k, v := range t.Sysctls {
			d.Sysctls[k] = v
		}
	}
	if t.IRQ != nil {
		if cs := set("irq.housekeepingCPUs", t.IRQ.HousekeepingCPUs); cs != nil {
			d.IRQAffinity = &tuning.IRQAffinity{CPUs: *cs}
		}
		if t.IRQ.BannedCPUs != "" {
			d.IrqbalanceBannedCPUs = set("irq.bannedCPUs", t.IRQ.BannedCPUs)
		}
	}
	if t.MaxCStateExitLatencyMicroseconds != nil {
		d.CPUIdle = &tuning.CPUIdle{MaxLatencyUs: int(*t.MaxCStateExitLatencyMicroseconds)}
	}
	if t.Governor != "" || t.Turbo != "" {
		d.CPUFreq = &tuning.CPUFreq{Governor: string(t.Governor), Turbo: toggle(t.Turbo)}
	}
	d.SMT = toggle(t.SMT)
	if t.OfflinedCPUs != "" {
		d.OfflineCPUs = set("offlinedCPUs", t.OfflinedCPUs)
	}
	if t.WorkqueueCPUs != "" {
		d.WorkqueueCPUs = set("workqueueCPUs", t.WorkqueueCPUs)
	}
	if t.TransparentHugepages != "" {
		d.THP = &tuning.THP{Enabled: string(t.TransparentHugepages)}
	}
	for i, hp := range t.Hugepages {
		if hp.AtBoot {
			continue
		}
		size, err := hugepageKB(hp.Size)
		if err != nil {
			errs = append(errs, &tuning.FieldError{Field: fmt.Sprintf("spec.tuning.hugepages[%d].size", i), Problem: err.Error(), Fix: "use 2Mi or 1Gi"})
			continue
		}
		node := host.AnyNode
		if hp.Node != nil {
			node = int(*hp.Node)
		}
		d.Hugepages = append(d.Hugepages, tuning.HugepageAllocation{Node: node, SizeKB: size, Count: int(hp.Count)})
	}
	for _, n := range t.NICs {
		it := tuning.InterfaceTuning{Name: n.Interface}
		if n.RPSCPUs != "" {
			it.RPSCPUs = set("nics["+n.Interface+"].rpsCPUs", n.RPSCPUs)
		}
		if c := n.Channels; c != nil {
			it.Channels = params(map[string]*int32{"combined": c.Combined, "rx": c.RX, "tx": c.TX})
		}
		if r := n.Rings; r != nil {
			it.Rings = params(map[string]*int32{"rx": r.RX, "tx": r.TX})
		}
		if c := n.Coalescing; c != nil {
			it.Coalesce = params(map[string]*int32{"rx-usecs": c.RxUsecs, "tx-usecs": c.TxUsecs, "rx-frames": c.RxFrames,
				"adaptive-rx": boolParam(c.AdaptiveRx), "adaptive-tx": boolParam(c.AdaptiveTx)})
		}
		if n.NumVFs != nil {
			v := int(*n.NumVFs)
			it.SRIOVNumVFs = &v
		}
		d.Interfaces = append(d.Interfaces, it)
	}
	sort.SliceStable(d.Interfaces, func(a, b int) bool { return d.Interfaces[a].Name < d.Interfaces[b].Name })
	return d, errors.Join(errs...)
}

func toggle(m tsv1.ToggleMode) *bool {
	switch m {
	case tsv1.Enabled:
		v := true
		return &v
	case tsv1.Disabled:
		v := false
		return &v
	}
	return nil
}

func boolParam(b *bool) *int32 {
	if b == nil {
		return nil
	}
	var v int32
	if *b {
		v = 1
	}
	return &v
}

// params keeps the set parameters (nil when none is).
func params(in map[string]*int32) map[string]uint32 {
	var out map[string]uint32
	for k, v := range in {
		if v == nil {
			continue
		}
		if out == nil {
			out = map[string]uint32{}
		}
		out[k] = uint32(*v)
	}
	return out
}

func hugepageKB(s tsv1.HugePageSize) (int, error) {
	switch s {
	case tsv1.HugePageSize2Mi:
		return 2048, nil
	case tsv1.HugePageSize1Gi:
		return 1048576, nil
	}
	return 0, fmt.Errorf("%q is not a hugepage size", s)
}

// NodeFacts maps what the host layer discovered onto the facts the operator's resolution reads.
func NodeFacts(f *host.Facts) *tsv1.NodeFacts {
	out := &tsv1.NodeFacts{
		OnlineCPUs:       tsv1.CPUSet(f.OnlineCPUs.String()),
		PresentCPUs:      tsv1.CPUSet(f.PresentCPUs.String()),
		HotpluggableCPUs: tsv1.CPUSet(f.HotpluggableCPUs.String()),
		ThreadsPerCore:   int32(f.ThreadsPerCore),
		Sockets:          int32(f.Sockets),
		KernelCmdline:    f.KernelCmdline,
		KernelRelease:    f.KernelRelease,
	}
	// Each core once, on the node of its lowest CPU, in the order of that CPU (f.CPUs is by id).
	cores := map[int][]tsv1.CPUSet{}
	seen := map[string]bool{}
	for _, c := range f.CPUs {
		if s := c.Siblings.Intersection(f.OnlineCPUs).String(); s != "" && !seen[s] {
			seen[s] = true
			cores[c.Node] = append(cores[c.Node], tsv1.CPUSet(s))
		}
	}
	for _, n := range f.NUMANodes {
		numa := tsv1.NUMANode{ID: int32(n.ID), CPUs: tsv1.CPUSet(n.CPUs.String()), Cores: cores[n.ID]}
		if len(numa.Cores) > 4096 {
			numa.Cores = numa.Cores[:4096]
		}
		for _, kb := range n.HugepageSizesKB {
			numa.HugepageSizes = append(numa.HugepageSizes, resource.NewQuantity(int64(kb)*1024, resource.BinarySI).String())
		}
		if len(numa.HugepageSizes) > 8 {
			numa.HugepageSizes = numa.HugepageSizes[:8]
		}
		out.NUMANodes = append(out.NUMANodes, numa)
	}
	for _, i := range f.Interfaces {
		ifc := tsv1.InterfaceFacts{
			Name: i.Name, Driver: i.Driver, PCIAddress: i.PCIAddress, Vendor: i.Vendor, Device: i.Device,
			SRIOVTotalVFs: int32(i.SRIOVTotalVFs), PhysicalFunction: i.PhysicalFunction,
		}
		if i.NUMANode != nil {
			n := int32(*i.NUMANode)
			ifc.NUMANode = &n
		}
		out.Interfaces = append(out.Interfaces, ifc)
	}
	// The API caps the lists; a host with more keeps the first ones in name order.
	sort.SliceStable(out.Interfaces, func(a, b int) bool { return out.Interfaces[a].Name < out.Interfaces[b].Name })
	if len(out.Interfaces) > 512 {
		out.Interfaces = out.Interfaces[:512]
	}
	if len(out.NUMANodes) > 64 {
		out.NUMANodes = out.NUMANodes[:64]
	}
	return out
}
