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

// item is one concrete setting of a Desired: its key and name (key.String()), the desired value in canonical form and the
// Desired field it comes from (for error messages). unsupported, when set, says why this host has
// no such knob (cpufreq in a VM, rings on veth): the item is reported, never read or written.
type item struct {
	key                  settingKey
	name, desired, field string
	unsupported          string
}

// Phases: structural settings first (SMT and offlined CPUs, which take CPUs offline; VF counts, channels,
// rings and coalescing, which create or remove queues), so that the second phase (per-CPU and
// per-queue settings and the rest) is expanded on the CPUs and queues that exist afterwards.
const (
	phaseStructure = iota
	phaseRest
	phaseCount
)

// expansion collects the items of one phase and the field errors of what the host cannot do.
type expansion struct {
	h      *host.Host
	online cpuset.Set
	items  []item
	errs   []error
}

func (x *expansion) add(field string, k settingKey, v string) {
	x.items = append(x.items, item{key: k, name: k.String(), desired: v, field: field})
}

func (x *expansion) unsupported(field string, k settingKey, v, why string) {
	x.items = append(x.items, item{key: k, name: k.String(), desired: v, field: field, unsupported: why})
}

func (x *expansion) fail(err error) { x.errs = append(x.errs, err) }

// orOnline is s, or every online CPU when s is empty.
func (x *expansion) orOnline(s cpuset.Set) cpuset.Set {
	if s.IsEmpty() {
		return x.online
	}
	return s
}

// checkCPUs reports CPUs that are not online as a field error.
func (x *expansion) checkCPUs(field string, s cpuset.Set) bool {
	if !s.IsSubsetOf(x.online) {
		x.fail(fieldErr(field, "CPUs %s are not online on this node (online: %s)", "name online CPUs only", s.Difference(x.online), x.online))
		return false
	}
	return true
}

// expand turns d into the concrete settings of one phase for the host's current shape (its IRQs,
// CPUs, idle states, queues). Everything in d this host cannot do is a field error; an error
// reading the host ends the expansion.
func expand(h *host.Host, d *Desired, phase int) ([]item, error) {
	online, err := h.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	x := &expansion{h: h, online: online}
	steps := []func(*Desired) error{x.smt, x.offline, x.nicStructure}
	if phase != phaseStructure {
		steps = []func(*Desired) error{x.sysctls, x.irqs, x.cpuIdle, x.cpuFreq, x.thp, x.workqueue, x.queues, x.hugepages, x.timeServices}
	}
	for _, step := range steps {
		if err := step(d); err != nil {
			return nil, err
		}
	}
	return x.items, errors.Join(x.errs...)
}

// timeServices stops and masks the host's clock daemons among d.TimeServices.
func (x *expansion) timeServices(d *Desired) error {
	for _, u := range x.h.InstalledUnits(d.TimeServices) {
		x.add("timeServices", timeServiceKey(u), host.UnitMaskedInactive)
	}
	return nil
}

// smt is SMT on or off (sibling CPUs online or offline).
func (x *expansion) smt(d *Desired) error {
	if d.SMT != nil {
		ctl, err := x.h.SMTControl()
		if err != nil {
			return err
		}
		v := map[bool]string{true: host.SMTOn, false: host.SMTOff}[*d.SMT]
		switch {
		case ctl == host.SMTNotSupported:
			x.unsupported("smt", smtKey, v, "this node has no SMT sibling threads")
		case ctl == host.SMTNotImplemented:
			x.unsupported("smt", smtKey, v, "this kernel has no runtime SMT control (use the nosmt kernel argument)")
		case ctl == host.SMTForceOff && *d.SMT:
			x.fail(fieldErr("smt", "SMT is forced off at boot (nosmt=force)", "remove nosmt=force from the kernel arguments, or ask for SMT off"))
		default:
			x.add("smt", smtKey, v)
		}
	}
	return nil
}

// offline takes CPUs offline (CPU hotplug). A CPU without an online file cannot be.
func (x *expansion) offline(d *Desired) error {
	if d.OfflineCPUs == nil {
		return nil
	}
	var missing []int
	for _, cpu := range d.OfflineCPUs.CPUs() {
		if !x.h.HasCPUOnline(cpu) {
			missing = append(missing, cpu)
			continue
		}
		x.add("offlineCPUs", cpuOnlineKey(cpu), "0")
	}
	if len(missing) > 0 {
		x.fail(fieldErr("offlineCPUs", "CPUs %s cannot be taken offline on this node (no cpuN/online file: absent, or not hotpluggable)", "remove them from cpu.offlined", cpuset.New(missing...)))
	}
	return nil
}

// nicStructure is what creates or removes queues: VF counts, channels, rings and coalescing.
func (x *expansion) nicStructure(d *Desired) error {
	for _, ifc := range d.Interfaces {
		f := "interfaces[" + ifc.Name + "]"
		if !x.h.Exists("/sys/class/net/" + ifc.Name) {
			x.fail(fieldErr(f+".name", "no interface %q on this node", "fix the name or remove the entry", ifc.Name))
			continue
		}
		if ifc.SRIOVNumVFs != nil {
			pci, err := x.h.PCIAddress(ifc.Name)
			if err != nil {
				return err
			}
			total, terr := x.h.SRIOVTotalVFs(pci)
			switch {
			case pci == "" || terr != nil:
				x.fail(fieldErr(f+".sriovNumVFs", "%s has no SR-IOV capable PCI function", "remove sriovNumVFs for this interface", ifc.Name))
			case *ifc.SRIOVNumVFs > total:
				x.fail(fieldErr(f+".sriovNumVFs", "%d is more than the %d VFs the device supports", "ask for at most "+strconv.Itoa(total), *ifc.SRIOVNumVFs, total))
			default:
				x.add(f+".sriovNumVFs", sriovKey(pci), strconv.Itoa(*ifc.SRIOVNumVFs))
			}
		}
		for _, g := range []struct {
			group  host.NICGroup
			params map[string]uint32
		}{{host.Channels, ifc.Channels}, {host.Rings, ifc.Rings}, {host.Coalesce, ifc.Coalesce}} {
			if len(g.params) == 0 {
				continue
			}
			cur, err := x.h.NICParams(ifc.Name, g.group)
			if err != nil && !errors.Is(err, host.ErrUnsupported) {
				x.fail(fieldErr(fmt.Sprintf("%s.%s", f, g.group), "cannot be read: %v", "check the interface", err))
				continue
			}
			for _, p := range slices.Sorted(maps.Keys(g.params)) {
				field := fmt.Sprintf("%s.%s[%s]", f, g.group, p)
				name := nicParamKey(g.group, ifc.Name, p)
				v := strconv.FormatUint(uint64(g.params[p]), 10)
				if err != nil {
					x.unsupported(field, name, v, err.Error())
					continue
				}
				if _, ok := cur[p]; !ok {
					x.unsupported(field, name, v, fmt.Sprintf("the driver of %s does not report %s %s", ifc.Name, g.group, p))
					continue
				}
				if max, ok := cur["max-"+p]; ok && g.params[p] > max {
					x.fail(fieldErr(field, "%d is above the driver's maximum %d", "use at most "+strconv.Itoa(int(max)), g.params[p], max))
					continue
				}
				x.add(field, name, v)
			}
		}
	}
	return nil
}

// sysctls are the allowed sysctls the kernel has.
func (x *expansion) sysctls(d *Desired) error {
	for _, k := range slices.Sorted(maps.Keys(d.Sysctls)) {
		f := "sysctls[" + k + "]"
		if _, err := x.h.Sysctl(k); errors.Is(err, os.ErrNotExist) {
			x.fail(fieldErr(f, "this kernel has no such sysctl", "remove it from the profile for this node"))
			continue
		}
		x.add(f, sysctlKey(k), d.Sysctls[k])
	}
	return nil
}

// irqs are the movable IRQs' affinity, the default affinity and irqbalance's banned CPUs.
func (x *expansion) irqs(d *Desired) error {
	if a := d.IRQAffinity; a != nil && x.checkCPUs("irqAffinity.cpus", a.CPUs) {
		irqs, err := x.h.IRQs()
		if err != nil {
			return err
		}
		for _, irq := range irqs {
			if irq.Movable {
				x.add("irqAffinity.cpus", irqKey(irq.Number), a.CPUs.String())
			}
		}
		x.add("irqAffinity.cpus", defaultIRQAffinityKey, a.CPUs.String())
	}
	if b := d.IrqbalanceBannedCPUs; b != nil && x.checkCPUs("irqbalanceBannedCPUs", *b) {
		x.add("irqbalanceBannedCPUs", irqbalanceBannedKey, b.String())
	}
	return nil
}

// cpuIdle disables the idle states deeper than the allowed exit latency.
func (x *expansion) cpuIdle(d *Desired) error {
	if c := d.CPUIdle; c != nil {
		cpus := x.orOnline(c.CPUs)
		if x.checkCPUs("cpuIdle.cpus", cpus) {
			for _, cpu := range cpus.CPUs() {
				states, err := x.h.IdleStates(cpu)
				if err != nil {
					return err
				}
				if len(states) == 0 {
					// No cpuidle driver (some VMs): nothing to disable here; the kernel idles
					// with its default (HLT), which only the idle=poll kernel argument avoids.
					x.unsupported("cpuIdle.maxLatencyUs", cpuIdleNoStatesKey(cpu), fmt.Sprintf("no idle state deeper than %d us", c.MaxLatencyUs),
						"this CPU has no cpuidle states (no cpuidle driver): the kernel idles with its default halt, which no cpuidle setting changes; the idle=poll kernel argument keeps it from halting")
					continue
				}
				for _, st := range states {
					if st.LatencyUs > c.MaxLatencyUs {
						x.add("cpuIdle.maxLatencyUs", cpuIdleKey(cpu, st.Index), "1")
					}
				}
			}
		}
	}
	return nil
}

// cpuFreq is the governor and turbo.
func (x *expansion) cpuFreq(d *Desired) error {
	if c := d.CPUFreq; c != nil {
		cpus := x.orOnline(c.CPUs)
		if c.Governor != "" && x.checkCPUs("cpuFreq.cpus", cpus) {
			for _, cpu := range cpus.CPUs() {
				name := governorKey(cpu)
				if !x.h.HasCPUFreq(cpu) {
					x.unsupported("cpuFreq.governor", name, c.Governor, "no cpufreq on this CPU (a VM, or no cpufreq driver)")
					continue
				}
				if avail, err := x.h.AvailableGovernors(cpu); err == nil && !slices.Contains(avail, c.Governor) {
					x.fail(fieldErr("cpuFreq.governor", "CPU %d does not offer %q (it offers %v)", "pick an offered governor", cpu, c.Governor, avail))
					break
				}
				x.add("cpuFreq.governor", name, c.Governor)
			}
		}
		if c.Turbo != nil {
			v := map[bool]string{true: "enabled", false: "disabled"}[*c.Turbo]
			switch _, err := x.h.Turbo(); {
			case errors.Is(err, host.ErrUnsupported):
				x.unsupported("cpuFreq.turbo", turboKey, v, err.Error())
			case err != nil:
				x.fail(fieldErr("cpuFreq.turbo", "%v", "check the host's cpufreq sysfs", err))
			default:
				x.add("cpuFreq.turbo", turboKey, v)
			}
		}
	}
	return nil
}

// thp is transparent hugepages' enabled and defrag modes.
func (x *expansion) thp(d *Desired) error {
	if t := d.THP; t != nil {
		for _, m := range []struct{ file, mode string }{{host.THPEnabled, t.Enabled}, {host.THPDefrag, t.Defrag}} {
			if m.mode == "" {
				continue
			}
			_, modes, err := x.h.THP(m.file)
			if errors.Is(err, os.ErrNotExist) {
				x.unsupported("thp."+m.file, thpKey(m.file), m.mode, "this kernel has no transparent hugepages")
				continue
			}
			if err != nil {
				x.fail(fieldErr("thp."+m.file, "%v", "check the host's sysfs", err))
				continue
			}
			if !slices.Contains(modes, m.mode) {
				x.fail(fieldErr("thp."+m.file, "this kernel offers %v, not %q", "pick an offered mode", modes, m.mode))
				continue
			}
			x.add("thp."+m.file, thpKey(m.file), m.mode)
		}
	}
	return nil
}

// workqueue is the unbound workqueues' CPU mask.
func (x *expansion) workqueue(d *Desired) error {
	if w := d.WorkqueueCPUs; w != nil && x.checkCPUs("workqueueCPUs", *w) {
		x.add("workqueueCPUs", workqueueKey, w.String())
	}
	return nil
}

// queues are the interfaces' RPS and XPS CPUs, per queue.
func (x *expansion) queues(d *Desired) error {
	for _, ifc := range d.Interfaces {
		f := "interfaces[" + ifc.Name + "]"
		for _, q := range []struct {
			kind, prefix string
			cpus         *cpuset.Set
		}{{host.RXQueue, "rps", ifc.RPSCPUs}, {host.TXQueue, "xps", ifc.XPSCPUs}} {
			if q.cpus == nil || !x.checkCPUs(f+"."+q.prefix+"CPUs", *q.cpus) {
				continue
			}
			queues, err := x.h.Queues(ifc.Name, q.kind)
			if err != nil {
				return err
			}
			if len(queues) == 0 {
				x.fail(fieldErr(f+"."+q.prefix+"CPUs", "%s has no %s queues in sysfs", "remove "+q.prefix+"CPUs for this interface", ifc.Name, q.kind))
			}
			for _, n := range queues {
				x.add(f+"."+q.prefix+"CPUs", queueCPUsKey(ifc.Name, q.kind, n), q.cpus.String())
			}
		}
	}
	return nil
}

// hugepages are the hugepage pools' sizes.
func (x *expansion) hugepages(d *Desired) error {
	for i, hp := range d.Hugepages {
		f := fmt.Sprintf("hugepages[%d]", i)
		if _, err := x.h.Hugepages(hp.Node, hp.SizeKB); err != nil {
			if hp.Node == host.AnyNode {
				x.fail(fieldErr(f, "this kernel has no %d kB hugepage pool", "use a size from the node's facts", hp.SizeKB))
			} else {
				x.fail(fieldErr(f, "node %d has no %d kB hugepage pool", "use a node and size from the node's facts", hp.Node, hp.SizeKB))
			}
			continue
		}
		x.add(f+".count", hugepagesKey(hp.Node, hp.SizeKB), strconv.Itoa(hp.Count))
	}
	return nil
}
