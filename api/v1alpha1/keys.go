package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Every label, annotation, taint, finalizer and node condition key tickstack reads or writes, once.
// Each says who writes it; docs/architecture.md has the owners in one table.

// Finalizers.
const (
	// ProfileFinalizer keeps a profile until all its node states are gone (their hosts restored).
	// Written by the LatencyProfile controller.
	ProfileFinalizer = "tickstack.io/node-states"
	// RestoreFinalizer is put on a node state by its agent before it changes anything on the host,
	// and removed once the host's original values are restored.
	RestoreFinalizer = "tickstack.io/restore"
)

// Labels and annotations of nodes, node states and rendered objects.
const (
	// ProfileLabel names a LatencyProfile. On a node state and on the objects rendered from a
	// profile (NetworkAttachmentDefinitions) it names their profile (for listing by label); on a
	// node, the NodeLabel controller sets it to the profile whose tuning is in effect there; on a
	// pod, it opts the pod in: the pod webhook gives it required node affinity to that node label.
	ProfileLabel = "tickstack.io/profile"
	// FingerprintLabel on a node is the tuning fingerprint in effect (status.fingerprint), written
	// by the node agent.
	FingerprintLabel = "tickstack.io/fingerprint"
	// CordonedAnnotation on a node records that the agent cordoned it, so that it uncordons only
	// nodes it cordoned itself.
	CordonedAnnotation = "tickstack.io/cordoned-by-agent"
	// RebootedForAnnotation on a LatencyNodeState holds a hash of the kernel arguments and the
	// spec.firmware.hash the node last rebooted for, written by the agent. If the arguments are
	// still missing after that reboot, the agent does not reboot for them again (one profile change
	// costs at most one reboot); removing the annotation allows one more attempt.
	RebootedForAnnotation = "tickstack.io/rebooted-for"
	// KubeletRestartedForAnnotation on a LatencyNodeState holds a hash of the kubelet drop-in the
	// agent last restarted the kubelet for, written by the agent. If that kubelet did not come back
	// with the drop-in's values, the agent put the previous drop-in back and does not try the same
	// one again; removing the annotation allows one more attempt.
	KubeletRestartedForAnnotation = "tickstack.io/kubelet-restarted-for"
	// TuningPendingTaint (NoSchedule) on a node keeps latency pods off it until its tuning is
	// confirmed for the running boot: registered by the kubelet drop-in (a node joining), put on by
	// the agent before a reboot it runs and when it finds a boot it has not applied yet, removed by
	// the agent once the node state is Applied for the running boot (status.appliedBootID). System
	// DaemonSets tolerate it.
	TuningPendingTaint = "tickstack.io/tuning-pending"
	// DevicePluginConfigAnnotation on the SR-IOV network device plugin's DaemonSet pod template
	// holds a hash of the configuration the operator rendered for it (ConfigMap sriovdp-config).
	// Written by the network controller when it is given the DaemonSet (--device-plugin-daemonset):
	// the plugin reads its configuration only at start, so a new hash rolls its pods once.
	DevicePluginConfigAnnotation = "tickstack.io/device-plugin-config"
	// BMCAnnotation on a node names its BMC object when that object is not named after the node.
	// Written by the cluster's administrator.
	BMCAnnotation = "tickstack.io/bmc"
)

// Install: the uninstall guard.
const (
	// UninstallGuardLabel marks the installed objects a restore needs. The chart and config/default
	// write it: "protected" on every object they install (the uninstall guard's admission policies
	// refuse deleting the namespace, the manager, the agent, tickstack-xdpd, their service accounts
	// and RBAC, and the CRDs so labelled while a LatencyProfile or LatencyNodeState exists), "check"
	// on the ConfigMap the chart's pre-delete hook creates (refused likewise, so that helm uninstall
	// stops before it deletes anything).
	UninstallGuardLabel = "tickstack.io/uninstall-guard"
)

// Validation: the benchmark's verdict on a node, and what it gates.
const (
	// BenchmarkPassedAnnotation on a node names the profile the node last passed a LatencyBenchmark
	// for. The benchmark controller alone writes it: set on a pass, removed on a failure.
	BenchmarkPassedAnnotation = "tickstack.io/benchmark-passed"
	// ValidatedLabel on a node names the profile it is validated for. The node validation
	// controller alone writes it: the profile of BenchmarkPassedAnnotation while the node still has
	// that profile and its node state does not report TimeSynced=False; removed otherwise.
	ValidatedLabel = "tickstack.io/validated"
	// UnvalidatedTaint (effect NoSchedule) is kept by the node validation controller on the nodes
	// of a profile with spec.validation.taintUntilValidated until they carry
	// tickstack.io/validated=<profile>.
	UnvalidatedTaint = "tickstack.io/unvalidated"
	// NodeTimeSyncedCondition is the node condition that mirrors the node state's TimeSynced, so
	// kubectl describe node and node-condition tooling see the clock's state. Written by the PTP
	// gate; present only while the node's tuning has a ptp section.
	NodeTimeSyncedCondition corev1.NodeConditionType = "tickstack.io/TimeSynced"
)

// Labels and annotations of the benchmark's objects.
const (
	// RerunAnnotation on a LatencyBenchmark starts a new run whenever its value changes (any
	// value; `tickstack bench` writes a timestamp). The status echoes the value it acted on.
	RerunAnnotation = "tickstack.io/rerun"
	// BenchmarkLabel on Jobs, Pods and ConfigMaps names their LatencyBenchmark.
	BenchmarkLabel = "tickstack.io/benchmark"
	// BenchmarkRunLabel on Jobs and ConfigMaps is the run number.
	BenchmarkRunLabel = "tickstack.io/benchmark-run"
	// BenchmarkNodeAnnotation on Jobs and ConfigMaps names the node they measure (node names can be
	// longer than a label value).
	BenchmarkNodeAnnotation = "tickstack.io/node"
	// ReflectorLabel on a TwoPods reflector pod names its runner's Job; the reflector Service
	// selects it.
	ReflectorLabel = "tickstack.io/reflector"
)

// Labels and annotations of latency pods and their profile (docs/pod-webhook.md). The pod webhook
// reads them, except MutatedAnnotation, which it writes.
const (
	// RequireValidatedAnnotation on a LatencyProfile ("true") makes latency pods also require nodes
	// labelled tickstack.io/validated=<profile>. Off by default until the benchmark labels nodes.
	RequireValidatedAnnotation = "tickstack.io/require-validated"
	// ContainerAnnotation names the latency container; default the first container.
	ContainerAnnotation = "tickstack.io/container"
	// InterfacesAnnotation is how many interfaces (VFs) of each of the profile's networks the pod
	// gets; default 1.
	InterfacesAnnotation = "tickstack.io/interfaces"
	// ExclusiveCPUsAnnotation "false" lets a pod that needs the profile's network and bypass stack
	// but no exclusive CPUs (a benchmark reflector, a capture or test-traffic pod) run on the
	// node's shared CPUs: the webhook then neither requires Guaranteed QoS and whole CPUs nor gives
	// its init container a CPU request. Default "true".
	ExclusiveCPUsAnnotation = "tickstack.io/exclusive-cpus"
	// HugepagesAnnotation asks for huge pages for the latency container, as a quantity (1Gi).
	HugepagesAnnotation = "tickstack.io/hugepages"
	// HugepageSizeAnnotation picks the page size (2Mi or 1Gi) when the profile reserves both and
	// sets no default size.
	HugepageSizeAnnotation = "tickstack.io/hugepage-size"
	// MutatedAnnotation records that the webhook set the pod up, and for which profile.
	MutatedAnnotation = "tickstack.io/mutated"
)

// Per-pod runtime controls (docs/agent.md "Per-pod controls"): annotations of a latency pod with
// the CRI-O annotations' values, read by the pod webhook (which admits them only for Guaranteed pods
// with whole CPUs whose profile's spec.podControls.allow names the control) and by the node's NRI
// plugin, which applies them to the pod's exclusive CPUs before its container starts.
const (
	// IRQLoadBalancingAnnotation "disable" or "housekeeping" steers device interrupts off the pod's
	// exclusive CPUs (PodControlIRQLoadBalancing).
	IRQLoadBalancingAnnotation = "tickstack.io/irq-load-balancing"
	// CPUCStatesAnnotation "enable", "disable" or "max_latency:N" (microseconds) limits the idle
	// states of the pod's exclusive CPUs (PodControlCPUCStates).
	CPUCStatesAnnotation = "tickstack.io/cpu-c-states"
	// CPUFreqGovernorAnnotation names the cpufreq governor of the pod's exclusive CPUs
	// (PodControlCPUFreqGovernor).
	CPUFreqGovernorAnnotation = "tickstack.io/cpu-freq-governor"
	// CPUQuotaAnnotation "disable" takes the CFS quota off the pod's containers (PodControlCPUQuota).
	CPUQuotaAnnotation = "tickstack.io/cpu-quota"
	// NRIPluginName is the name the node's NRI plugin registers with the runtime under.
	NRIPluginName = "tickstack"
	// NRIRequiredPluginsAnnotation (NRI's own key, read by containerd's default NRI validator) lists
	// the NRI plugins that must have seen a container's creation: the pod webhook adds
	// NRIPluginName to it on a pod asking for a per-pod control, so that a container created while
	// the plugin is not connected (a node just rebooted) fails instead of running without its
	// controls. Written by the pod webhook.
	NRIRequiredPluginsAnnotation = "required-plugins.noderesource.dev/pod"
)

// PodControls lists every per-pod control, in the order they are applied.
func PodControls() []PodControl {
	return []PodControl{PodControlIRQLoadBalancing, PodControlCPUCStates, PodControlCPUFreqGovernor, PodControlCPUQuota}
}

// Annotation is the pod annotation that asks for the control.
func (c PodControl) Annotation() string {
	switch c {
	case PodControlIRQLoadBalancing:
		return IRQLoadBalancingAnnotation
	case PodControlCPUCStates:
		return CPUCStatesAnnotation
	case PodControlCPUFreqGovernor:
		return CPUFreqGovernorAnnotation
	case PodControlCPUQuota:
		return CPUQuotaAnnotation
	}
	return ""
}

// SharedCPUsResource is the extended resource of a node's shared CPU pool (spec.cpu.shared), one
// unit per shared CPU: written by the node agent into its Node's status (capacity and
// allocatable), requested by pods that use the pool.
const SharedCPUsResource corev1.ResourceName = "tickstack.io/shared-cpus"

// XDPDResource is the extended resource of tickstack-xdpd's node socket, many units per node,
// advertised by the xdpd DaemonSet's device plugin (cmd/tickstack-xdpd-plugin) while the daemon
// serves: a container that requests one unit gets the daemon's socket directory mounted read-only
// at /run/tickstack by the kubelet, with no volume in the pod spec. The pod webhook requests it for
// bypass containers.
const XDPDResource corev1.ResourceName = "tickstack.io/xdpd"

// DefaultResourcePrefix is the SR-IOV device plugin's resource prefix unless the manager is told
// otherwise (--resource-prefix): VFs are <prefix>/<resourceName>. The network controller renders
// the device plugin's configuration with it and the pod webhook requests VFs by it.
const DefaultResourcePrefix = "tickstack.io"

// The node agent's contribution to node-feature-discovery: the NodeFeature object NodeFeaturePrefix
// + <node> in the agent's namespace, with the attribute feature TuningFeature: elements "profile"
// (the profile's name) and "applied" ("true" when the node state is Applied for its generation).
// The operator's NodeFeatureRule turns it into the node label
// feature.node.kubernetes.io/tickstack-tuning.applied.
const (
	TuningFeature     = "tickstack.tuning"
	NodeFeaturePrefix = "tickstack-"
)
