package v1alpha1

import "sort"

// Condition types of a LatencyProfile.
const (
	// ProfileReady is True when every node the profile owns has its tuning applied and in sync.
	ProfileReady = "Ready"
	// ProfileProgressing is True while nodes are still being resolved, applied or rebooted.
	ProfileProgressing = "Progressing"
	// ProfileDegraded is True when a node's tuning could not be resolved or applied.
	ProfileDegraded = "Degraded"
	// ProfileConflict is True when another profile of equal priority selects some of the same nodes;
	// those nodes are left as they are until the priorities differ.
	ProfileConflict = "Conflict"
)

// Condition types of a LatencyNodeState, written by the node agent.
const (
	// NodeApplied is True when every setting of the spec is in effect on the host.
	NodeApplied = "Applied"
	// NodeDegraded is True when a setting could not be applied.
	NodeDegraded = "Degraded"
	// NodeRebootRequired is True when kernel arguments were written and wait for a reboot.
	NodeRebootRequired = "RebootRequired"
	// NodeDrifted is True when a setting was changed on the host after it was applied.
	NodeDrifted = "Drifted"
)

// Condition reasons.
const (
	// ReasonAllApplied: every owned node has its tuning in effect.
	ReasonAllApplied = "AllApplied"
	// ReasonNoNodes: the selector matches no node.
	ReasonNoNodes = "NoNodesMatched"
	// ReasonWaitingForFacts: a node's agent has not reported the host facts the resolution needs.
	ReasonWaitingForFacts = "WaitingForNodeFacts"
	// ReasonApplying: agents are applying the tuning.
	ReasonApplying = "Applying"
	// ReasonRebootPending: nodes wait for a reboot.
	ReasonRebootPending = "RebootPending"
	// ReasonResolutionFailed: the profile cannot be resolved for a node (for example none of its
	// isolated CPUs exist there, or reserved CPUs are missing).
	ReasonResolutionFailed = "ResolutionFailed"
	// ReasonNodeDegraded: a node's agent reports Degraded.
	ReasonNodeDegraded = "NodeDegraded"
	// ReasonPriorityTie: another profile with the same priority selects the same nodes.
	ReasonPriorityTie = "PriorityTie"
	// ReasonNoConflict: no other profile of equal priority selects these nodes.
	ReasonNoConflict = "NoConflict"
	// ReasonReleasing: a node is still held by another profile whose agent is restoring it.
	ReasonReleasing = "WaitingForRelease"
	// ReasonDeleting: the profile is being deleted and its nodes are being restored.
	ReasonDeleting = "Deleting"
	// ReasonStable: nothing is in progress.
	ReasonStable = "Stable"
)

// Labels, annotations and finalizers.
const (
	// ProfileFinalizer keeps a profile until all its node states are gone (their hosts restored).
	ProfileFinalizer = "tickstack.io/node-states"
	// RestoreFinalizer is put on a node state by its agent before it changes anything on the host,
	// and removed once the host's original values are restored.
	RestoreFinalizer = "tickstack.io/restore"
	// ProfileLabel on a node state names its profile (for listing by label).
	ProfileLabel = "tickstack.io/profile"
)

// allowedSysctls are the kernel parameters a profile may set, each with why it matters for latency.
// The list is also enforced by the CRD's CEL rule on spec.sysctls; a test keeps the two equal.
var allowedSysctls = map[string]string{
	"net.core.busy_poll":           "microseconds poll/select spin on the device queue before sleeping",
	"net.core.busy_read":           "microseconds a blocking socket read spins on the device queue",
	"net.core.netdev_budget":       "packets one NAPI softirq round may process",
	"net.core.netdev_budget_usecs": "microseconds one NAPI softirq round may run",
	"net.core.netdev_max_backlog":  "packets queued per CPU before drops when the stack lags",
	"net.core.rmem_max":            "largest socket receive buffer an application may ask for",
	"net.core.wmem_max":            "largest socket send buffer an application may ask for",
	"net.core.rmem_default":        "default socket receive buffer (absorbs microbursts)",
	"net.core.wmem_default":        "default socket send buffer",
	"kernel.timer_migration":       "0 keeps timers on the CPU that armed them instead of moving them",
	"kernel.numa_balancing":        "0 stops automatic NUMA page migration and its page faults",
	"kernel.sched_rt_runtime_us":   "-1 lets real-time threads run without the throttling window",
	"kernel.nmi_watchdog":          "0 stops the periodic NMI watchdog interrupt",
	"vm.stat_interval":             "seconds between per-CPU VM statistics updates (a source of jitter)",
	"vm.swappiness":                "how eagerly anonymous memory is swapped",
}

// AllowedSysctl reports whether a profile may set the sysctl key, and why it matters for latency.
func AllowedSysctl(key string) (why string, ok bool) {
	why, ok = allowedSysctls[key]
	return why, ok
}

// AllowedSysctlKeys returns the keys a profile may set, sorted.
func AllowedSysctlKeys() []string {
	keys := make([]string, 0, len(allowedSysctls))
	for k := range allowedSysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
