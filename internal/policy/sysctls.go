// Package policy holds the rules both the API server side (webhooks) and the node side (tuning)
// apply to a profile, so the manager never links host-tuning code: which sysctls a profile may set,
// and what values they take.
package policy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// ValueKind says what a sysctl accepts.
type ValueKind string

// Sysctl value kinds.
const (
	// Integer is one decimal integer within [Min, Max].
	Integer ValueKind = "integer"
	// CPUList is a CPU list ("0-1,4").
	CPUList ValueKind = "cpulist"
)

// SysctlInfo documents one allowed sysctl.
type SysctlInfo struct {
	// Why says what the setting does for latency and what value tuned nodes use.
	Why string
	// Kind is the value syntax.
	Kind ValueKind
	// Min and Max bound Integer values.
	Min, Max int64
}

// Check validates a value against the sysctl's kind and bounds.
func (s SysctlInfo) Check(v string) error {
	switch s.Kind {
	case Integer:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < s.Min || n > s.Max {
			return fmt.Errorf("%d is outside [%d, %d]", n, s.Min, s.Max)
		}
	case CPUList:
		if _, err := cpuset.Parse(v); err != nil {
			return err
		}
	}
	return nil
}

// AllowedSysctls returns the sysctls a profile may set, each with why it matters for latency.
// Nothing outside this list is ever written: the API's allow-list (CEL/enum) is generated from
// it, and Validate refuses other keys. The map is a fresh copy on each call.
func AllowedSysctls() map[string]SysctlInfo {
	const maxInt = 1<<31 - 1
	return map[string]SysctlInfo{
		"kernel.sched_rt_runtime_us": {Kind: Integer, Min: -1, Max: 1000000,
			Why: "RT throttling: by default real-time tasks may use 950 ms of every second and are then " +
				"stopped for 50 ms, a huge stall for a spinning SCHED_FIFO thread. -1 disables the " +
				"throttle (use only with housekeeping CPUs left for the system)."},
		"kernel.timer_migration": {Kind: Integer, Min: 0, Max: 1,
			Why: "0 keeps timers on the CPU that armed them instead of pulling them onto busy CPUs, so " +
				"isolated CPUs are not handed other CPUs' timers."},
		"kernel.numa_balancing": {Kind: Integer, Min: 0, Max: 3,
			Why: "0 stops automatic NUMA balancing, which unmaps pages to sample access patterns: the " +
				"resulting hinting page faults and migrations hit hot paths at random."},
		"kernel.nmi_watchdog": {Kind: Integer, Min: 0, Max: 1,
			Why: "0 stops the hard-lockup detector's periodic perf NMI on every CPU."},
		"kernel.watchdog": {Kind: Integer, Min: 0, Max: 1,
			Why: "0 stops the soft and hard lockup detectors (a per-CPU hrtimer and kthread wake-ups)."},
		"kernel.watchdog_cpumask": {Kind: CPUList,
			Why: "Restricts the lockup detectors to these CPUs (the housekeeping CPUs) when they stay on."},
		"vm.stat_interval": {Kind: Integer, Min: 1, Max: 3600,
			Why: "Seconds between per-CPU vmstat updates; a larger value (10) wakes isolated CPUs less " +
				"often for vmstat_update work."},
		"vm.swappiness": {Kind: Integer, Min: 0, Max: 200,
			Why: "Low values (0-10) keep anonymous memory of latency-critical processes out of swap; a " +
				"major fault on a hot page costs milliseconds."},
		"vm.compaction_proactiveness": {Kind: Integer, Min: 0, Max: 100,
			Why: "0 stops proactive memory compaction by kcompactd, which migrates pages (and stalls " +
				"their users) in the background."},
		"vm.zone_reclaim_mode": {Kind: Integer, Min: 0, Max: 7,
			Why: "0 allocates from a remote NUMA node rather than reclaiming locally in the allocation " +
				"path, avoiding reclaim stalls."},
		"vm.dirty_background_ratio": {Kind: Integer, Min: 0, Max: 100,
			Why: "A low value starts background writeback early and in small pieces, avoiding large " +
				"writeback bursts and throttling of writers."},
		"net.core.busy_poll": {Kind: Integer, Min: 0, Max: 1000000,
			Why: "Microseconds poll()/select()/epoll spin on the device queue before sleeping (global, " +
				"not per namespace); 50 is a common low-latency value. Costs CPU."},
		"net.core.busy_read": {Kind: Integer, Min: 0, Max: 1000000,
			Why: "Microseconds a blocking socket read spins on the device queue before sleeping; saves " +
				"the interrupt and wake-up latency (tens of microseconds). Costs CPU."},
		"net.core.netdev_budget": {Kind: Integer, Min: 1, Max: maxInt,
			Why: "Packets one NET_RX softirq may process before yielding; bounds how long a softirq " +
				"burst holds a CPU."},
		"net.core.netdev_budget_usecs": {Kind: Integer, Min: 1, Max: maxInt,
			Why: "Microseconds one NET_RX softirq may run; with netdev_budget it bounds softirq bursts."},
		"net.core.netdev_max_backlog": {Kind: Integer, Min: 1, Max: maxInt,
			Why: "Per-CPU input backlog for RPS and non-NAPI receive; too small drops packets in bursts " +
				"(a drop is a retransmit: the worst latency there is)."},
		"net.core.rmem_max": {Kind: Integer, Min: 4096, Max: maxInt,
			Why: "Largest receive buffer SO_RCVBUF may ask for; market-data bursts need room or they drop."},
		"net.core.wmem_max": {Kind: Integer, Min: 4096, Max: maxInt,
			Why: "Largest send buffer SO_SNDBUF may ask for; a full send buffer blocks or fails order entry."},
		"net.core.rps_sock_flow_entries": {Kind: Integer, Min: 0, Max: 1 << 30,
			Why: "Size of the RFS flow table; with per-queue rps_flow_cnt it steers a flow's packets to " +
				"the CPU its consumer runs on (0 disables RFS)."},
	}
}

// AllowedSysctlKeys returns the allowed sysctl keys, sorted.
func AllowedSysctlKeys() []string {
	return slices.Sorted(maps.Keys(AllowedSysctls()))
}
