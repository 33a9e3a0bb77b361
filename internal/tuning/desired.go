// Package tuning is the node agent's engine: it turns a Desired description of a node's host
// tuning into writes on the real machine, journals every original value durably before changing
// it, verifies what is really in effect, detects drift, restores exactly the originals and
// computes a fingerprint of the tuning in effect.
//
// Apply, Verify and Restore are idempotent and crash-safe: a kill -9 at any point followed by a
// rerun converges and loses no original (see Engine).
package tuning

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/policy"
)

// Desired is everything the agent sets on one node, fully resolved (CPU sets are concrete, no
// defaults left to guess). A nil pointer or empty map means "leave as is".
type Desired struct {
	// Sysctls maps allowed sysctl keys (AllowedSysctls) to values.
	Sysctls map[string]string
	// IRQAffinity moves every movable IRQ, and the default affinity of new IRQs, onto CPUs.
	IRQAffinity *IRQAffinity
	// IrqbalanceBannedCPUs is written as IRQBALANCE_BANNED_CPULIST into irqbalance's
	// environment file (irqbalance must be restarted to read it).
	IrqbalanceBannedCPUs *cpuset.Set
	// CPUIdle disables, per CPU, the idle states whose exit latency is above a bound.
	CPUIdle *CPUIdle
	// CPUFreq sets the scaling governor and turbo where the host has cpufreq.
	CPUFreq *CPUFreq
	// THP selects transparent hugepage modes.
	THP *THP
	// WorkqueueCPUs restricts unbound kernel workqueues to these CPUs.
	WorkqueueCPUs *cpuset.Set
	// TimeServices are systemd units to stop and mask (host.TimeServiceUnits when PTP owns the
	// system clock); those the host does not have are left out. Restoring unmasks each and starts
	// it again if it ran.
	TimeServices []string
	// SMT turns simultaneous multithreading on or off at runtime (off takes every sibling thread
	// offline). A node without SMT has nothing to switch.
	SMT *bool
	// OfflineCPUs are taken offline (CPU hotplug: cpuN/online set to 0); restoring brings each
	// back to its journaled state. Every one must have an online file on the host.
	OfflineCPUs *cpuset.Set
	// Interfaces tunes network interfaces.
	Interfaces []InterfaceTuning
	// Hugepages allocates runtime hugepages per NUMA node.
	Hugepages []HugepageAllocation
}

// IRQAffinity places interrupts on housekeeping CPUs.
type IRQAffinity struct {
	// CPUs are the housekeeping CPUs every movable IRQ may fire on. An IRQ whose affinity is
	// already a subset of CPUs is left alone (irqbalance may still spread IRQs among them).
	CPUs cpuset.Set
}

// CPUIdle bounds C-state exit latency.
type CPUIdle struct {
	// CPUs are the CPUs to act on; empty means every online CPU.
	CPUs cpuset.Set
	// MaxLatencyUs is the largest exit latency allowed: deeper states are disabled. 0 leaves
	// only polling states (and states the driver reports with 0 latency).
	MaxLatencyUs int
}

// CPUFreq sets frequency scaling.
type CPUFreq struct {
	// CPUs are the CPUs whose governor is set; empty means every online CPU.
	CPUs cpuset.Set
	// Governor is the scaling governor ("performance"); empty leaves it.
	Governor string
	// Turbo enables or disables turbo/boost; nil leaves it.
	Turbo *bool
}

// THP selects transparent hugepage modes; an empty field is left as is.
type THP struct {
	// Enabled is one of always, madvise, never.
	Enabled string
	// Defrag is one of always, defer, defer+madvise, madvise, never.
	Defrag string
}

// InterfaceTuning tunes one network interface.
type InterfaceTuning struct {
	// Name is the interface name on the node.
	Name string
	// RPSCPUs, when set, is written to every RX queue's rps_cpus (empty set: RPS off).
	RPSCPUs *cpuset.Set
	// XPSCPUs, when set, is written to every TX queue's xps_cpus.
	XPSCPUs *cpuset.Set
	// Channels, Rings and Coalesce set ethtool parameters by their ethtool names
	// (host.NICParamNames lists them).
	Channels, Rings, Coalesce map[string]uint32
	// SRIOVNumVFs, when set, is the number of VFs to enable on the interface's PCI function.
	SRIOVNumVFs *int
}

// HugepageAllocation is a runtime hugepage pool on one NUMA node.
type HugepageAllocation struct {
	// Node is the NUMA node, or host.AnyNode for the system-wide pool the kernel spreads.
	Node   int
	SizeKB int
	Count  int
}

// FieldError is a validation failure that names the field, what is wrong and how to fix it.
type FieldError struct {
	Field, Problem, Fix string
}

// Error formats "field: problem; fix".
func (e *FieldError) Error() string {
	if e.Fix == "" {
		return e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem + "; " + e.Fix
}

func fieldErr(field, problem, fix string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(problem, args...), Fix: fix}
}

var (
	thpEnabledModes = []string{"always", "madvise", "never"}
	thpDefragModes  = []string{"always", "defer", "defer+madvise", "madvise", "never"}
	governors       = []string{"performance", "powersave", "schedutil", "ondemand", "conservative", "userspace"}
	hugepageSizesKB = []int{64, 2048, 32768, 524288, 1048576, 16777216}
)

// Validate checks d without looking at the host: allowed sysctl keys and their values, CPU
// sets, modes, interface names, NIC parameter names and hugepage sizes. It returns every problem
// at once (errors.Join of *FieldError), before anything changes. Apply also checks d against the
// host (CPUs online, interfaces present, driver limits).
func Validate(d *Desired) error {
	if d == nil {
		return fieldErr("desired", "is nil", "pass an empty Desired to change nothing")
	}
	var errs []error
	allowed := policy.AllowedSysctls()
	for _, k := range slices.Sorted(maps.Keys(d.Sysctls)) {
		f := fmt.Sprintf("sysctls[%s]", k)
		info, ok := allowed[k]
		if !ok {
			errs = append(errs, fieldErr(f, "is not an allowed sysctl", "use one of: "+strings.Join(policy.AllowedSysctlKeys(), ", ")))
			continue
		}
		if err := info.Check(d.Sysctls[k]); err != nil {
			errs = append(errs, fieldErr(f, "value %v", "give a value the kernel accepts for "+k, err))
		}
	}
	if d.IRQAffinity != nil && d.IRQAffinity.CPUs.IsEmpty() {
		errs = append(errs, fieldErr("irqAffinity.cpus", "is empty", "name the housekeeping CPUs IRQs may run on, e.g. \"0-1\""))
	}
	if d.CPUIdle != nil && d.CPUIdle.MaxLatencyUs < 0 {
		errs = append(errs, fieldErr("cpuIdle.maxLatencyUs", "is negative (%d)", "use 0 to allow only polling idle, or a bound in microseconds", d.CPUIdle.MaxLatencyUs))
	}
	if d.CPUFreq != nil {
		if d.CPUFreq.Governor != "" && !slices.Contains(governors, d.CPUFreq.Governor) {
			errs = append(errs, fieldErr("cpuFreq.governor", "%q is not a cpufreq governor", "use one of "+strings.Join(governors, ", "), d.CPUFreq.Governor))
		}
		if d.CPUFreq.Governor == "" && d.CPUFreq.Turbo == nil {
			errs = append(errs, fieldErr("cpuFreq", "sets nothing", "set governor and/or turbo, or remove cpuFreq"))
		}
	}
	if d.THP != nil {
		if d.THP.Enabled != "" && !slices.Contains(thpEnabledModes, d.THP.Enabled) {
			errs = append(errs, fieldErr("thp.enabled", "%q is not a THP mode", "use one of "+strings.Join(thpEnabledModes, ", "), d.THP.Enabled))
		}
		if d.THP.Defrag != "" && !slices.Contains(thpDefragModes, d.THP.Defrag) {
			errs = append(errs, fieldErr("thp.defrag", "%q is not a THP defrag mode", "use one of "+strings.Join(thpDefragModes, ", "), d.THP.Defrag))
		}
	}
	if d.OfflineCPUs != nil && d.OfflineCPUs.Contains(0) {
		errs = append(errs, fieldErr("offlineCPUs", "names CPU 0", "keep CPU 0 (the boot CPU) online: remove it from the list"))
	}
	if d.WorkqueueCPUs != nil && d.WorkqueueCPUs.IsEmpty() {
		errs = append(errs, fieldErr("workqueueCPUs", "is empty", "name the housekeeping CPUs, e.g. \"0-1\""))
	}
	seen := map[string]bool{}
	for i, ifc := range d.Interfaces {
		f := fmt.Sprintf("interfaces[%d]", i)
		if ifc.Name != "" {
			f = fmt.Sprintf("interfaces[%s]", ifc.Name)
		}
		if err := validIfname(ifc.Name); err != nil {
			errs = append(errs, fieldErr(f+".name", "%v", "use the interface's name as `ip link` shows it", err))
		}
		if seen[ifc.Name] {
			errs = append(errs, fieldErr(f+".name", "appears twice", "merge the two entries"))
		}
		seen[ifc.Name] = true
		for _, g := range []struct {
			group  host.NICGroup
			params map[string]uint32
		}{{host.Channels, ifc.Channels}, {host.Rings, ifc.Rings}, {host.Coalesce, ifc.Coalesce}} {
			names := host.NICParamNames(g.group)
			for _, p := range slices.Sorted(maps.Keys(g.params)) {
				if !slices.Contains(names, p) {
					errs = append(errs, fieldErr(fmt.Sprintf("%s.%s[%s]", f, g.group, p), "is not an ethtool %s parameter", "use one of "+strings.Join(names, ", "), g.group))
				}
				if strings.HasPrefix(p, "adaptive-") && g.params[p] > 1 {
					errs = append(errs, fieldErr(fmt.Sprintf("%s.%s[%s]", f, g.group, p), "is %d", "use 0 (off) or 1 (on)", g.params[p]))
				}
			}
		}
		if ifc.SRIOVNumVFs != nil && *ifc.SRIOVNumVFs < 0 {
			errs = append(errs, fieldErr(f+".sriovNumVFs", "is negative", "use 0 to disable VFs"))
		}
	}
	seenHP := map[[2]int]bool{}
	for i, hp := range d.Hugepages {
		f := fmt.Sprintf("hugepages[%d]", i)
		if hp.Node < host.AnyNode {
			errs = append(errs, fieldErr(f+".node", "is negative", "use a NUMA node number from the node's facts, or host.AnyNode (-1) for the kernel's choice"))
		}
		if !slices.Contains(hugepageSizesKB, hp.SizeKB) {
			errs = append(errs, fieldErr(f+".sizeKB", "%d kB is not a hugepage size", "use 2048 (2M) or 1048576 (1G)", hp.SizeKB))
		}
		if hp.Count < 0 {
			errs = append(errs, fieldErr(f+".count", "is negative", "use 0 to free the pool"))
		}
		if seenHP[[2]int{hp.Node, hp.SizeKB}] {
			errs = append(errs, fieldErr(f, "node %d size %d kB appears twice", "keep one entry per node and size", hp.Node, hp.SizeKB))
		}
		seenHP[[2]int{hp.Node, hp.SizeKB}] = true
	}
	return errors.Join(errs...)
}

func validIfname(n string) error {
	if n == "" || len(n) > 15 || strings.ContainsAny(n, "/ \t\n:") || n == "." || n == ".." {
		return fmt.Errorf("%q is not a valid interface name (1-15 characters, no '/', ':' or blanks)", n)
	}
	return nil
}
