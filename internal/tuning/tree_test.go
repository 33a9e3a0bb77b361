package tuning

import (
	"fmt"
	"testing"

	"github.com/tickstack/tickstack/internal/host"
	"github.com/tickstack/tickstack/internal/host/cpuset"
	"github.com/tickstack/tickstack/internal/host/hosttest"
)

// buildTree creates a host-root directory tree for what this VM cannot change itself: four CPUs
// with cpuidle, cpufreq (governor, intel_pstate turbo) and hotplug (cpu1-3/online), IRQs, a NUMA
// node with 2M and 1G hugepage pools, an SR-IOV capable PCI NIC (ice, 8 VFs) with two queues, sysctls and an
// irqbalance file. realSysctls makes /proc/sys a link to the real one.
func buildTree(t testing.TB, dir string, realSysctls bool) {
	t.Helper()
	files := map[string]string{
		"sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages":    "0",
		"sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages": "0",
		"proc/irq/default_smp_affinity":                                            "f",
		"sys/devices/system/cpu/smt/control":                                       "on",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":                    "0",
		"proc/cmdline":           "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet",
		"etc/default/irqbalance": "#IRQBALANCE_ONESHOT=\nIRQBALANCE_ARGS=\"--policyscript=/x\"\n",
	}
	if !realSysctls {
		for k, v := range map[string]string{
			"vm/stat_interval": "1", "kernel/timer_migration": "1", "net/core/busy_read": "0",
			"kernel/watchdog_cpumask": "0-3",
		} {
			files["proc/sys/"+k] = v
		}
	}
	hosttest.AddCPUs(files, 4, true)
	for _, irq := range []int{0, 1, 24, 25} {
		files[fmt.Sprintf("proc/irq/%d/smp_affinity_list", irq)] = "0-3"
		files[fmt.Sprintf("proc/irq/%d/effective_affinity_list", irq)] = "0"
	}
	links := map[string]string{}
	hosttest.AddNIC(files, links)
	if realSysctls {
		links["proc/sys"] = "/proc/sys"
	}
	hosttest.WriteTree(t, dir, files, links)
}

func setp(s string) *cpuset.Set {
	c := cpuset.MustParse(s)
	return &c
}

func intp(i int) *int { return &i }

func boolp(b bool) *bool { return &b }

// treeDesired is a profile for the tree of buildTree.
func treeDesired() *Desired {
	return &Desired{
		Sysctls:              map[string]string{"vm.stat_interval": "10", "kernel.timer_migration": "0"},
		IRQAffinity:          &IRQAffinity{CPUs: cpuset.MustParse("0-1")},
		IrqbalanceBannedCPUs: setp("2-3"),
		CPUIdle:              &CPUIdle{CPUs: cpuset.MustParse("2-3"), MaxLatencyUs: 2},
		CPUFreq:              &CPUFreq{Governor: "performance", Turbo: boolp(false)},
		WorkqueueCPUs:        setp("0-1"),
		SMT:                  boolp(false),
		Interfaces: []InterfaceTuning{{
			Name: "ens1f0", RPSCPUs: setp("0-1"), XPSCPUs: setp("0"), SRIOVNumVFs: intp(4),
			Coalesce: map[string]uint32{"rx-usecs": 0},
		}},
		Hugepages: []HugepageAllocation{{Node: 0, SizeKB: 1048576, Count: 4}, {Node: 0, SizeKB: 2048, Count: 128}, {Node: host.AnyNode, SizeKB: 2048, Count: 64}},
	}
}

func treeEngine(dir string) *Engine {
	return &Engine{Host: &host.Host{Root: dir}}
}

// newTree is a host-root tree as buildTree makes it (no real sysctls), its snapshot before
// anything ran, and an engine over it.
func newTree(t *testing.T) (dir string, before map[string]string, e *Engine) {
	t.Helper()
	dir = hosttest.TempDir(t)
	buildTree(t, dir, false)
	return dir, hosttest.Snapshot(t, dir), treeEngine(dir)
}
