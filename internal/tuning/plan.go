package tuning

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// item is one planned setting: its name, the desired value in canonical form and the Desired
// field it comes from (for error messages). unsupported, when set, says why this host has no
// such knob (cpufreq in a VM, rings on veth): the item is reported, never read or written.
type item struct {
	name, desired, field string
	unsupported          string
}

// Phases: structural settings first (SMT, which takes sibling CPUs offline; VF counts, channels,
// rings and coalescing, which create or remove queues), so that the second phase (per-CPU and
// per-queue settings and the rest) is planned on the CPUs and queues that exist afterwards.
const (
	phaseStructure = iota
	phaseRest
	phaseCount
)

// plan expands d into concrete settings for the host's current shape (its IRQs, CPUs, idle
// states, queues). It reports, as field errors, everything in d this host cannot do.
func plan(h *host.Host, d *Desired, phase int) ([]item, error) {
	var items []item
	var errs []error
	add := func(field, name, v string) { items = append(items, item{name: name, desired: v, field: field}) }
	unsupported := func(field, name, v, why string) {
		items = append(items, item{name: name, desired: v, field: field, unsupported: why})
	}
	online, err := h.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	checkCPUs := func(field string, s cpuset.Set) bool {
		if !s.IsSubsetOf(online) {
			errs = append(errs, fieldErr(field, "CPUs %s are not online on this node (online: %s)", "name online CPUs only", s.Difference(online), online))
			return false
		}
		return true
	}
	if phase == phaseStructure {
		if d.SMT != nil {
			ctl, err := h.SMTControl()
			if err != nil {
				return nil, err
			}
			v := map[bool]string{true: host.SMTOn, false: host.SMTOff}[*d.SMT]
			switch {
			case ctl == host.SMTNotSupported:
				unsupported("smt", "smt/control", v, "this node has no SMT sibling threads")
			case ctl == host.SMTNotImplemented:
				unsupported("smt", "smt/control", v, "this kernel has no runtime SMT control (use the nosmt kernel argument)")
			case ctl == host.SMTForceOff && *d.SMT:
				errs = append(errs, fieldErr("smt", "SMT is forced off at boot (nosmt=force)", "remove nosmt=force from the kernel arguments, or ask for SMT off"))
			default:
				add("smt", "smt/control", v)
			}
		}
		for _, ifc := range d.Interfaces {
			f := "interfaces[" + ifc.Name + "]"
			if !h.Exists("/sys/class/net/" + ifc.Name) {
				errs = append(errs, fieldErr(f+".name", "no interface %q on this node", "fix the name or remove the entry", ifc.Name))
				continue
			}
			if ifc.SRIOVNumVFs != nil {
				pci, err := h.PCIAddress(ifc.Name)
				if err != nil {
					return nil, err
				}
				total, terr := h.SRIOVTotalVFs(pci)
				switch {
				case pci == "" || terr != nil:
					errs = append(errs, fieldErr(f+".sriovNumVFs", "%s has no SR-IOV capable PCI function", "remove sriovNumVFs for this interface", ifc.Name))
				case *ifc.SRIOVNumVFs > total:
					errs = append(errs, fieldErr(f+".sriovNumVFs", "%d is more than the %d VFs the device supports", "ask for at most "+strconv.Itoa(total), *ifc.SRIOVNumVFs, total))
				default:
					add(f+".sriovNumVFs", "sriov/"+pci+"/numvfs", strconv.Itoa(*ifc.SRIOVNumVFs))
				}
			}
			for _, g := range []struct {
				group  host.NICGroup
				params map[string]uint32
			}{{host.Channels, ifc.Channels}, {host.Rings, ifc.Rings}, {host.Coalesce, ifc.Coalesce}} {
				if len(g.params) == 0 {
					continue
				}
				cur, err := h.NICParams(ifc.Name, g.group)
				if err != nil && !errors.Is(err, host.ErrUnsupported) {
					errs = append(errs, fieldErr(fmt.Sprintf("%s.%s", f, g.group), "cannot be read: %v", "check the interface", err))
					continue
				}
				for _, p := range slices.Sorted(maps.Keys(g.params)) {
					field := fmt.Sprintf("%s.%s[%s]", f, g.group, p)
					name := fmt.Sprintf("%s/%s/%s", g.group, ifc.Name, p)
					v := strconv.FormatUint(uint64(g.params[p]), 10)
					if err != nil {
						unsupported(field, name, v, err.Error())
						continue
					}
					if _, ok := cur[p]; !ok {
						unsupported(field, name, v, fmt.Sprintf("the driver of %s does not report %s %s", ifc.Name, g.group, p))
						continue
					}
					if max, ok := cur["max-"+p]; ok && g.params[p] > max {
						errs = append(errs, fieldErr(field, "%d is above the driver's maximum %d", "use at most "+strconv.Itoa(int(max)), g.params[p], max))
						continue
					}
					add(field, name, v)
				}
			}
		}
		return items, errors.Join(errs...)
	}

	for _, k := range slices.Sorted(maps.Keys(d.Sysctls)) {
		f := "sysctls[" + k + "]"
		if _, err := h.Sysctl(k); errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fieldErr(f, "this kernel has no such sysctl", "remove it from the profile for this node"))
			continue
		}
		add(f, "sysctl/"+k, d.Sysctls[k])
	}
	if a := d.IRQAffinity; a != nil && checkCPUs("irqAffinity.cpus", a.CPUs) {
		irqs, err := h.IRQs()
		if err != nil {
			return nil, err
		}
		for _, irq := range irqs {
			if irq.Movable {
				add("irqAffinity.cpus", "irq/"+strconv.Itoa(irq.Number), a.CPUs.String())
			}
		}
		add("irqAffinity.cpus", "irq/default_smp_affinity", a.CPUs.String())
	}
	if b := d.IrqbalanceBannedCPUs; b != nil && checkCPUs("irqbalanceBannedCPUs", *b) {
		add("irqbalanceBannedCPUs", "irqbalance/banned-cpus", b.String())
	}
	if c := d.CPUIdle; c != nil {
		cpus := c.CPUs
		if cpus.IsEmpty() {
			cpus = online
		}
		if checkCPUs("cpuIdle.cpus", cpus) {
			for _, cpu := range cpus.CPUs() {
				states, err := h.IdleStates(cpu)
				if err != nil {
					return nil, err
				}
				if len(states) == 0 {
					errs = append(errs, fieldErr("cpuIdle", "CPU %d has no cpuidle states", "remove cpuIdle for this node", cpu))
					break
				}
				for _, st := range states {
					if st.LatencyUs > c.MaxLatencyUs {
						add("cpuIdle.maxLatencyUs", fmt.Sprintf("cpuidle/cpu%d/state%d", cpu, st.Index), "1")
					}
				}
			}
		}
	}
	if c := d.CPUFreq; c != nil {
		cpus := c.CPUs
		if cpus.IsEmpty() {
			cpus = online
		}
		if c.Governor != "" && checkCPUs("cpuFreq.cpus", cpus) {
			for _, cpu := range cpus.CPUs() {
				name := fmt.Sprintf("cpufreq/cpu%d/governor", cpu)
				if !h.HasCPUFreq(cpu) {
					unsupported("cpuFreq.governor", name, c.Governor, "no cpufreq on this CPU (a VM, or no cpufreq driver)")
					continue
				}
				if avail, err := h.AvailableGovernors(cpu); err == nil && !slices.Contains(avail, c.Governor) {
					errs = append(errs, fieldErr("cpuFreq.governor", "CPU %d does not offer %q (it offers %v)", "pick an offered governor", cpu, c.Governor, avail))
					break
				}
				add("cpuFreq.governor", name, c.Governor)
			}
		}
		if c.Turbo != nil {
			v := map[bool]string{true: "enabled", false: "disabled"}[*c.Turbo]
			switch _, err := h.Turbo(); {
			case errors.Is(err, host.ErrUnsupported):
				unsupported("cpuFreq.turbo", "cpufreq/turbo", v, err.Error())
			case err != nil:
				errs = append(errs, fieldErr("cpuFreq.turbo", "%v", "check the host's cpufreq sysfs", err))
			default:
				add("cpuFreq.turbo", "cpufreq/turbo", v)
			}
		}
	}
	if t := d.THP; t != nil {
		for _, x := range []struct{ file, mode string }{{host.THPEnabled, t.Enabled}, {host.THPDefrag, t.Defrag}} {
			if x.mode == "" {
				continue
			}
			_, modes, err := h.THP(x.file)
			if errors.Is(err, os.ErrNotExist) {
				unsupported("thp."+x.file, "thp/"+x.file, x.mode, "this kernel has no transparent hugepages")
				continue
			}
			if err != nil {
				errs = append(errs, fieldErr("thp."+x.file, "%v", "check the host's sysfs", err))
				continue
			}
			if !slices.Contains(modes, x.mode) {
				errs = append(errs, fieldErr("thp."+x.file, "this kernel offers %v, not %q", "pick an offered mode", modes, x.mode))
				continue
			}
			add("thp."+x.file, "thp/"+x.file, x.mode)
		}
	}
	if w := d.WorkqueueCPUs; w != nil && checkCPUs("workqueueCPUs", *w) {
		add("workqueueCPUs", "workqueue/cpumask", w.String())
	}
	for _, ifc := range d.Interfaces {
		f := "interfaces[" + ifc.Name + "]"
		for _, q := range []struct {
			kind, prefix string
			cpus         *cpuset.Set
		}{{host.RXQueue, "rps", ifc.RPSCPUs}, {host.TXQueue, "xps", ifc.XPSCPUs}} {
			if q.cpus == nil || !checkCPUs(f+"."+q.prefix+"CPUs", *q.cpus) {
				continue
			}
			queues, err := h.Queues(ifc.Name, q.kind)
			if err != nil {
				return nil, err
			}
			if len(queues) == 0 {
				errs = append(errs, fieldErr(f+"."+q.prefix+"CPUs", "%s has no %s queues in sysfs", "remove "+q.prefix+"CPUs for this interface", ifc.Name, q.kind))
			}
			for _, n := range queues {
				add(f+"."+q.prefix+"CPUs", fmt.Sprintf("%s/%s/%s-%d", q.prefix, ifc.Name, q.kind, n), q.cpus.String())
			}
		}
	}
	for i, hp := range d.Hugepages {
		f := fmt.Sprintf("hugepages[%d]", i)
		if _, err := h.Hugepages(hp.Node, hp.SizeKB); err != nil {
			if hp.Node == host.AnyNode {
				errs = append(errs, fieldErr(f, "this kernel has no %d kB hugepage pool", "use a size from the node's facts", hp.SizeKB))
			} else {
				errs = append(errs, fieldErr(f, "node %d has no %d kB hugepage pool", "use a node and size from the node's facts", hp.Node, hp.SizeKB))
			}
			continue
		}
		node := "all"
		if hp.Node != host.AnyNode {
			node = "node" + strconv.Itoa(hp.Node)
		}
		add(f+".count", fmt.Sprintf("hugepages/%s/%dkB", node, hp.SizeKB), strconv.Itoa(hp.Count))
	}
	return items, errors.Join(errs...)
}
