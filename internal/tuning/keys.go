package tuning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host"
)

// settingKind is what a host setting is.
type settingKind int

const (
	kindSysctl settingKind = iota + 1
	kindIRQ
	kindDefaultIRQAffinity
	kindIrqbalanceBanned
	kindCPUIdle
	kindGovernor
	kindTurbo
	kindTHP
	kindWorkqueue
	kindQueueCPUs
	kindSMT
	kindHugepages
	kindNICParam
	kindSRIOVNumVFs
	kindTimeService
	kindCPUOnline
)

// settingKey names one host setting as typed values. Its String form ("sysctl/vm.stat_interval",
// "cpuidle/cpu3/state2") is what results, fingerprints and the journal carry; parseSettingKey reads
// a journaled name back (the journal outlives the agent that wrote it).
type settingKey struct {
	kind settingKind
	// name is the sysctl key, the THP file, the interface, or the PCI address.
	name string
	// queue is rx or tx (kindQueueCPUs); group the ethtool group (kindNICParam); param its parameter.
	queue string
	group host.NICGroup
	param string
	// n is the IRQ, the CPU, the queue number or the NUMA node (host.AnyNode: all).
	n int
	// index is the idle state (kindCPUIdle; -1: the CPU's idle states as a whole) or the hugepage
	// size in kB (kindHugepages).
	index int
}

func sysctlKey(key string) settingKey { return settingKey{kind: kindSysctl, name: key} }
func irqKey(irq int) settingKey       { return settingKey{kind: kindIRQ, n: irq} }
func cpuIdleKey(cpu, state int) settingKey {
	return settingKey{kind: kindCPUIdle, n: cpu, index: state}
}

// cpuIdleNoStatesKey names a CPU's idle states as a whole, for a CPU that has none to set (no cpuidle
// driver): reported Unsupported, never changed.
func cpuIdleNoStatesKey(cpu int) settingKey {
	return settingKey{kind: kindCPUIdle, n: cpu, index: -1}
}
func governorKey(cpu int) settingKey  { return settingKey{kind: kindGovernor, n: cpu} }
func cpuOnlineKey(cpu int) settingKey { return settingKey{kind: kindCPUOnline, n: cpu} }
func thpKey(file string) settingKey   { return settingKey{kind: kindTHP, name: file} }
func sriovKey(pci string) settingKey  { return settingKey{kind: kindSRIOVNumVFs, name: pci} }
func timeServiceKey(unit string) settingKey {
	return settingKey{kind: kindTimeService, name: unit}
}
func hugepagesKey(node, sizeKB int) settingKey {
	return settingKey{kind: kindHugepages, n: node, index: sizeKB}
}
func queueCPUsKey(ifname, queue string, n int) settingKey {
	return settingKey{kind: kindQueueCPUs, name: ifname, queue: queue, n: n}
}
func nicParamKey(group host.NICGroup, ifname, param string) settingKey {
	return settingKey{kind: kindNICParam, group: group, name: ifname, param: param}
}

var (
	defaultIRQAffinityKey = settingKey{kind: kindDefaultIRQAffinity}
	irqbalanceBannedKey   = settingKey{kind: kindIrqbalanceBanned}
	turboKey              = settingKey{kind: kindTurbo}
	workqueueKey          = settingKey{kind: kindWorkqueue}
	smtKey                = settingKey{kind: kindSMT}
)

func (k settingKey) String() string {
	switch k.kind {
	case kindSysctl:
		return "sysctl/" + k.name
	case kindIRQ:
		return "irq/" + strconv.Itoa(k.n)
	case kindDefaultIRQAffinity:
		return "irq/default_smp_affinity"
	case kindIrqbalanceBanned:
		return "irqbalance/banned-cpus"
	case kindCPUIdle:
		if k.index < 0 {
			return fmt.Sprintf("cpuidle/cpu%d", k.n)
		}
		return fmt.Sprintf("cpuidle/cpu%d/state%d", k.n, k.index)
	case kindGovernor:
		return fmt.Sprintf("cpufreq/cpu%d/governor", k.n)
	case kindTurbo:
		return "cpufreq/turbo"
	case kindTHP:
		return "thp/" + k.name
	case kindWorkqueue:
		return "workqueue/cpumask"
	case kindQueueCPUs:
		prefix := map[string]string{host.RXQueue: "rps", host.TXQueue: "xps"}[k.queue]
		return fmt.Sprintf("%s/%s/%s-%d", prefix, k.name, k.queue, k.n)
	case kindSMT:
		return "smt/control"
	case kindHugepages:
		node := "all"
		if k.n != host.AnyNode {
			node = "node" + strconv.Itoa(k.n)
		}
		return fmt.Sprintf("hugepages/%s/%dkB", node, k.index)
	case kindNICParam:
		return fmt.Sprintf("%s/%s/%s", k.group, k.name, k.param)
	case kindSRIOVNumVFs:
		return "sriov/" + k.name + "/numvfs"
	case kindTimeService:
		return "timeservice/" + k.name
	case kindCPUOnline:
		return fmt.Sprintf("hotplug/cpu%d/online", k.n)
	}
	return fmt.Sprintf("unknown setting kind %d", k.kind)
}

// parseSettingKey reads a setting name back (from the journal). Names are kind/key:
// sysctl/<key>, irq/<n>, irq/default_smp_affinity, irqbalance/banned-cpus,
// cpuidle/cpu<N>/state<M>, cpuidle/cpu<N>, cpufreq/cpu<N>/governor, cpufreq/turbo, thp/enabled, thp/defrag,
// workqueue/cpumask, rps/<if>/rx-<q>, xps/<if>/tx-<q>, hugepages/node<N>|all/<size>kB, smt/control,
// channels|rings|coalesce/<if>/<param>, sriov/<pci>/numvfs, timeservice/<unit>, hotplug/cpu<N>/online.
func parseSettingKey(name string) (settingKey, error) {
	bad := fmt.Errorf("setting name %q is not one this agent knows", name)
	parts := strings.Split(name, "/")
	num := func(s, prefix string) (int, bool) {
		if !strings.HasPrefix(s, prefix) {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s, prefix))
		return n, err == nil && n >= 0
	}
	var k settingKey
	ok := true
	switch {
	case parts[0] == "sysctl" && len(parts) == 2:
		k = sysctlKey(parts[1])
	case name == defaultIRQAffinityKey.String():
		k = defaultIRQAffinityKey
	case parts[0] == "irq" && len(parts) == 2:
		k.kind = kindIRQ
		k.n, ok = num(parts[1], "")
	case name == irqbalanceBannedKey.String():
		k = irqbalanceBannedKey
	case parts[0] == "cpuidle" && len(parts) == 3:
		cpu, ok1 := num(parts[1], "cpu")
		st, ok2 := num(parts[2], "state")
		k, ok = cpuIdleKey(cpu, st), ok1 && ok2
	case parts[0] == "cpuidle" && len(parts) == 2:
		var cpu int
		cpu, ok = num(parts[1], "cpu")
		k = cpuIdleNoStatesKey(cpu)
	case parts[0] == "cpufreq" && len(parts) == 3 && parts[2] == "governor":
		k.kind = kindGovernor
		k.n, ok = num(parts[1], "cpu")
	case name == turboKey.String():
		k = turboKey
	case parts[0] == "thp" && len(parts) == 2 && (parts[1] == host.THPEnabled || parts[1] == host.THPDefrag):
		k = thpKey(parts[1])
	case name == workqueueKey.String():
		k = workqueueKey
	case (parts[0] == "rps" || parts[0] == "xps") && len(parts) == 3:
		queue := map[string]string{"rps": host.RXQueue, "xps": host.TXQueue}[parts[0]]
		var q int
		q, ok = num(parts[2], queue+"-")
		k = queueCPUsKey(parts[1], queue, q)
	case name == smtKey.String():
		k = smtKey
	case parts[0] == "hugepages" && len(parts) == 3 && strings.HasSuffix(parts[2], "kB"):
		node, ok1 := host.AnyNode, true
		if parts[1] != "all" {
			node, ok1 = num(parts[1], "node")
		}
		size, err := strconv.Atoi(strings.TrimSuffix(parts[2], "kB"))
		k, ok = hugepagesKey(node, size), ok1 && err == nil
	case (parts[0] == string(host.Channels) || parts[0] == string(host.Rings) || parts[0] == string(host.Coalesce)) && len(parts) == 3:
		k = nicParamKey(host.NICGroup(parts[0]), parts[1], parts[2])
	case parts[0] == "sriov" && len(parts) == 3 && parts[2] == "numvfs":
		k = sriovKey(parts[1])
	case parts[0] == "hotplug" && len(parts) == 3 && parts[2] == "online":
		var cpu int
		cpu, ok = num(parts[1], "cpu")
		k = cpuOnlineKey(cpu)
	case parts[0] == "timeservice" && len(parts) == 2 && strings.HasSuffix(parts[1], ".service"):
		k = timeServiceKey(parts[1])
	default:
		ok = false
	}
	if !ok {
		return settingKey{}, bad
	}
	return k, nil
}
