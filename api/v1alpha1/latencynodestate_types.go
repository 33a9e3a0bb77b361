package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileReference names the profile a node state was resolved from.
type ProfileReference struct {
	// Name of the LatencyProfile.
	Name string `json:"name"`
	// Generation of the profile whose resolution last changed this node's tuning. A profile change
	// that leaves the node's tuning as it is does not touch the node state (no write, no new
	// generation for the agent), so it may be older than the profile's generation.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// ResolveOnNode is set by the operator when the node's agent resolves its own tuning from the
	// named profile and its own facts (docs/architecture.md, "Fleet scale"): spec.tuning is then
	// unset, and a profile change costs no write here. The operator sets it only for an agent that
	// reports the ResolveOnNode capability.
	// +optional
	ResolveOnNode bool `json:"resolveOnNode,omitempty"`
}

// IRQTuning places device interrupts.
type IRQTuning struct {
	// HousekeepingCPUs receive every movable IRQ and are the default_smp_affinity.
	HousekeepingCPUs CPUSet `json:"housekeepingCPUs"`
	// BannedCPUs are excluded from irqbalance.
	// +optional
	BannedCPUs CPUSet `json:"bannedCPUs,omitempty"`
}

// HugepageAllocation is one resolved huge page reservation.
type HugepageAllocation struct {
	// Size of each page.
	Size HugePageSize `json:"size"`
	// Count of pages.
	Count int32 `json:"count"`
	// Node is the NUMA node, or unset for the kernel's choice.
	// +optional
	Node *int32 `json:"node,omitempty"`
	// AtBoot is true when the pages are reserved by a kernel argument rather than at runtime.
	// +optional
	AtBoot bool `json:"atBoot,omitempty"`
}

// NICTuning is one resolved interface of the node.
type NICTuning struct {
	// Group is the name of the profile's nics[] entry that selected this interface.
	Group string `json:"group"`
	// Interface is the kernel interface name.
	Interface string `json:"interface"`
	// PCIAddress of the interface, when it is a PCI device.
	// +optional
	PCIAddress string `json:"pciAddress,omitempty"`
	// Driver of the interface.
	// +optional
	Driver string `json:"driver,omitempty"`
	// NumVFs to create when set.
	// +optional
	NumVFs *int32 `json:"numVfs,omitempty"`
	// ResourceName of the VFs, when set.
	// +optional
	ResourceName string `json:"resourceName,omitempty"`
	// Acceleration for latency pods on this interface.
	Acceleration AccelerationMode `json:"acceleration"`
	// Coalescing to set.
	// +optional
	Coalescing *Coalescing `json:"coalescing,omitempty"`
	// Rings to set.
	// +optional
	Rings *Rings `json:"rings,omitempty"`
	// Channels to set.
	// +optional
	Channels *Channels `json:"channels,omitempty"`
	// RPSCPUs receive receive-packet-steering work from this interface's queues (the housekeeping CPUs).
	// +optional
	RPSCPUs CPUSet `json:"rpsCPUs,omitempty"`
}

// NodeTuning is everything to set on one node, in concrete values.
type NodeTuning struct {
	// ReservedCPUs are the node's housekeeping CPUs.
	// +optional
	ReservedCPUs CPUSet `json:"reservedCPUs,omitempty"`
	// IsolatedCPUs are the node's isolated CPUs.
	// +optional
	IsolatedCPUs CPUSet `json:"isolatedCPUs,omitempty"`
	// SharedCPUs are the shared pool (spec.cpu.shared) on this node: in the kubelet's
	// reservedSystemCPUs, advertised as tickstack.io/shared-cpus.
	// +optional
	SharedCPUs CPUSet `json:"sharedCPUs,omitempty"`
	// OfflinedCPUs are taken offline at runtime (CPU hotplug, cpuN/online), no reboot.
	// +optional
	OfflinedCPUs CPUSet `json:"offlinedCPUs,omitempty"`
	// KernelArgs are the arguments tickstack wants on the kernel command line, in a stable order.
	// +optional
	// +listType=atomic
	KernelArgs []string `json:"kernelArgs,omitempty"`
	// Sysctls to set.
	// +optional
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// IRQ placement.
	// +optional
	IRQ *IRQTuning `json:"irq,omitempty"`
	// MaxCStateExitLatencyMicroseconds disables idle states with a larger exit latency on every CPU.
	// +optional
	MaxCStateExitLatencyMicroseconds *int32 `json:"maxCStateExitLatencyMicroseconds,omitempty"`
	// Governor is the cpufreq governor.
	// +optional
	Governor Governor `json:"governor,omitempty"`
	// Turbo on or off.
	// +optional
	Turbo ToggleMode `json:"turbo,omitempty"`
	// SMT on or off.
	// +optional
	SMT ToggleMode `json:"smt,omitempty"`
	// WorkqueueCPUs is the unbound workqueue cpumask (the housekeeping CPUs).
	// +optional
	WorkqueueCPUs CPUSet `json:"workqueueCPUs,omitempty"`
	// Hugepages to reserve.
	// +optional
	// +listType=atomic
	Hugepages []HugepageAllocation `json:"hugepages,omitempty"`
	// TransparentHugepages policy.
	// +optional
	TransparentHugepages TransparentHugepageMode `json:"transparentHugepages,omitempty"`
	// NICs are the selected interfaces with their settings.
	// +optional
	// +listType=atomic
	NICs []NICTuning `json:"nics,omitempty"`
	// DrainTimeout is the profile's rollout.drainTimeout: how long the agent's drain may wait for
	// evictions before it uncordons the node and reports the blocking pod. Unset: the agent's
	// --drain-timeout flag (default 10m).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// PTP is the profile's ptp section with the interface resolved for this node.
	// +optional
	PTP *PTPTuning `json:"ptp,omitempty"`
	// Kubelet is the profile's kubelet section resolved (reservedSystemCPUs is ReservedCPUs with
	// SharedCPUs): the agent's kubelet drop-in.
	// +optional
	Kubelet *KubeletTuning `json:"kubelet,omitempty"`
	// DriftAction is what the agent does about drift: Correct (the default when empty) or Report.
	// +optional
	DriftAction DriftAction `json:"driftAction,omitempty"`
	// PodControls are the per-pod runtime controls the profile allows on this node
	// (spec.podControls.allow): the agent hands them to the node's NRI plugin.
	// +optional
	// +listType=set
	PodControls []PodControl `json:"podControls,omitempty"`
}

// KubeletTuning is the kubelet drop-in's inputs besides the reserved CPUs, defaults filled in.
type KubeletTuning struct {
	// TopologyManagerPolicy of the topology manager.
	TopologyManagerPolicy TopologyManagerPolicy `json:"topologyManagerPolicy"`
	// TopologyManagerScope of the topology manager.
	TopologyManagerScope TopologyManagerScope `json:"topologyManagerScope"`
	// SystemReservedMemory is systemReserved memory.
	SystemReservedMemory resource.Quantity `json:"systemReservedMemory"`
	// EvictionHardMemory is evictionHard memory.available.
	EvictionHardMemory resource.Quantity `json:"evictionHardMemory"`
}

// PTPTuning is what the agent runs for PTP on this node.
type PTPTuning struct {
	// Role is slave or grandmaster.
	Role PTPRole `json:"role"`
	// Interface is the interface ptp4l runs on, a boundary clock's first port.
	Interface string `json:"interface"`
	// Interfaces are a boundary clock's ports, in order.
	// +optional
	// +listType=atomic
	Interfaces []string `json:"interfaces,omitempty"`
	// Domain is the PTP domain number.
	// +optional
	Domain int32 `json:"domain,omitempty"`
	// Transport is L2 or UDPv4.
	Transport PTPTransport `json:"transport"`
	// Timestamping is hardware or software.
	Timestamping PTPTimestamping `json:"timestamping"`
	// Ptp4lOptions are extra ptp4l options.
	// +optional
	Ptp4lOptions map[string]string `json:"ptp4lOptions,omitempty"`
	// Phc2sysOptions are extra phc2sys options.
	// +optional
	Phc2sysOptions map[string]string `json:"phc2sysOptions,omitempty"`
	// MaxOffsetNs is the in-sync threshold in nanoseconds.
	MaxOffsetNs int64 `json:"maxOffsetNs"`
	// MaxSystemOffsetNs is the system clock's in-sync threshold in nanoseconds (hardware time
	// stamping). Unset in node states written before it existed: the agent's default applies.
	// +optional
	MaxSystemOffsetNs int64 `json:"maxSystemOffsetNs,omitempty"`
	// SchedulingPolicy and SchedulingPriority (SCHED_FIFO only) of ptp4l and phc2sys. Unset in
	// node states written before they existed: the agent's defaults apply.
	// +optional
	SchedulingPolicy PTPSchedulingPolicy `json:"schedulingPolicy,omitempty"`
	// +optional
	SchedulingPriority int32 `json:"schedulingPriority,omitempty"`
	// OwnsSystemClock: the agent stops and masks the host's clock daemons.
	// +optional
	OwnsSystemClock bool `json:"ownsSystemClock,omitempty"`
	// CPUs is where ptp4l and phc2sys run: the node's reserved CPUs.
	// +optional
	CPUs string `json:"cpus,omitempty"`
	// HoldTime is how long the node may be out of sync before TimeSynced turns False.
	// +kubebuilder:validation:Type=string
	HoldTime metav1.Duration `json:"holdTime"`
}

// PTPPortStatus is one port of a boundary clock.
type PTPPortStatus struct {
	// Interface is the port's network interface.
	Interface string `json:"interface"`
	// PortState is its state (SLAVE, MASTER, PASSIVE, LISTENING, FAULTY, ...).
	// +optional
	PortState string `json:"portState,omitempty"`
}

// KubeletConfigSource says where the agent read the running kubelet's configuration.
// +kubebuilder:validation:Enum=Configz;Files;Unavailable
type KubeletConfigSource string

const (
	// KubeletConfigFromConfigz: the kubelet's own /configz on its node, with the agent's token,
	// which the kubelet authorizes as nodes/configz (fine-grained kubelet authorization,
	// KubeletFineGrainedAuthz). The agent holds no nodes/proxy.
	KubeletConfigFromConfigz KubeletConfigSource = "Configz"
	// KubeletConfigFromFiles: configz was refused or did not answer; the kubelet's --config file
	// and --config-dir drop-ins on the host, read through the process that listens on the
	// kubelet's port, and only when that process started after the files last changed.
	KubeletConfigFromFiles KubeletConfigSource = "Files"
	// KubeletConfigUnavailable: neither answered (Message says why).
	KubeletConfigUnavailable KubeletConfigSource = "Unavailable"
)

// KubeletConfigStatus says how the agent last read the running kubelet's configuration, which the
// kubelet entries of settings show (docs/agent.md "Kubelet settings").
type KubeletConfigStatus struct {
	// Source of the last reading.
	Source KubeletConfigSource `json:"source"`
	// Message says why configz was not used, and which files were read, when it was not.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// PTPStatus is the agent's last reading of ptp4l on this node.
type PTPStatus struct {
	// PortState is ptp4l's port state (SLAVE, MASTER, LISTENING, FAULTY, ...).
	// +optional
	PortState string `json:"portState,omitempty"`
	// OffsetNs is the last offset from master in nanoseconds.
	// +optional
	OffsetNs *int64 `json:"offsetNs,omitempty"`
	// MeanPathDelayNs is the measured one-way path delay to the master in nanoseconds.
	// +optional
	MeanPathDelayNs *int64 `json:"meanPathDelayNs,omitempty"`
	// SystemOffsetNs is the last offset of the system clock (CLOCK_REALTIME, the clock
	// applications and trade records read) in nanoseconds: from the NIC's clock as phc2sys reports
	// it with hardware time stamping, from the master with software time stamping (ptp4l steers
	// the system clock itself then). Absent on a grandmaster and while none is read.
	// +optional
	SystemOffsetNs *int64 `json:"systemOffsetNs,omitempty"`
	// Ports are a boundary clock's ports with their states (ptp4l's port order).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Ports []PTPPortStatus `json:"ports,omitempty"`
	// ClockConflicts are other daemons found steering the system clock a slave's linuxptp
	// steers ("chronyd (pid 812)"): TimeSynced is False (ClockConflict) while any runs.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ClockConflicts []string `json:"clockConflicts,omitempty"`
	// Restarts counts how often the agent restarted ptp4l or phc2sys.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// LastSample is when the state was read.
	// +optional
	LastSample *metav1.Time `json:"lastSample,omitempty"`
}

// LatencyNodeStateSpec is written by the operator: the profile's settings resolved for this node.
type LatencyNodeStateSpec struct {
	// NodeName is the node this state is for (also the object's name).
	// +required
	NodeName string `json:"nodeName"`
	// Profile is the profile the tuning was resolved from.
	// +required
	Profile ProfileReference `json:"profile"`
	// Tuning is the resolved settings. Unset until the node's agent has reported the facts the
	// resolution needs; the agent applies nothing while it is unset.
	// +optional
	Tuning *NodeTuning `json:"tuning,omitempty"`
	// RebootGranted is set by the operator when this node may cordon, drain and reboot now. At most
	// the profile's rollout.maxUnavailable nodes hold it at once; the operator takes it back when the
	// node reports the reboot done (RebootRequired no longer True) or the drain failed.
	// +optional
	RebootGranted bool `json:"rebootGranted,omitempty"`
	// Firmware is written by the operator's BIOS reconciler: whether BIOS settings staged on the
	// node's BMC wait for a reboot. The agent treats PendingReboot as a reason to request a reboot
	// slot, the same one as for its kernel arguments.
	// +optional
	Firmware *FirmwareSpec `json:"firmware,omitempty"`
}

// FirmwareSpec tells the node agent about BIOS settings the operator staged through the BMC.
type FirmwareSpec struct {
	// Hash of the profile's bios section the operator has handled for this node (staged, found in
	// effect, or refused). The operator grants no reboot slot while it differs from the profile's,
	// so a reboot never runs before the BIOS settings are staged.
	// +optional
	Hash string `json:"hash,omitempty"`
	// PendingReboot is true when BIOS settings are staged and take effect at the next reboot.
	// +optional
	PendingReboot bool `json:"pendingReboot,omitempty"`
	// BootID is the node's boot ID when the settings were staged. The agent needs a reboot for
	// them only while its host still runs that boot; any other boot ID means the reboot happened.
	// +optional
	BootID string `json:"bootID,omitempty"`
}

// NUMANode is one NUMA node of the host.
type NUMANode struct {
	// ID of the node.
	ID int32 `json:"id"`
	// CPUs on the node.
	CPUs CPUSet `json:"cpus"`
	// Cores are the node's physical cores, each the cpulist of its SMT threads ("0,64"; one CPU
	// per core without SMT), in the order of their lowest CPU: what keeps siblings together when
	// CPUs are split (tickstack profile suggest).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4096
	Cores []CPUSet `json:"cores,omitempty"`
	// HugepageSizes are the huge page sizes the node offers, as quantities ("2Mi", "1Gi").
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=16
	HugepageSizes []string `json:"hugepageSizes,omitempty"`
}

// InterfaceFacts describes one network interface of the host.
type InterfaceFacts struct {
	// Name is the kernel interface name.
	Name string `json:"name"`
	// Driver is the kernel driver.
	// +optional
	Driver string `json:"driver,omitempty"`
	// PCIAddress, for PCI devices.
	// +optional
	PCIAddress string `json:"pciAddress,omitempty"`
	// Vendor is the PCI vendor id in hex.
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// Device is the PCI device id in hex.
	// +optional
	Device string `json:"device,omitempty"`
	// NUMANode the device is attached to, when known.
	// +optional
	NUMANode *int32 `json:"numaNode,omitempty"`
	// SRIOVTotalVFs is how many VFs the device can create; 0 when it is not SR-IOV capable.
	// +optional
	SRIOVTotalVFs int32 `json:"sriovTotalVFs,omitempty"`
	// PhysicalFunction names the PF when this interface is a VF.
	// +optional
	PhysicalFunction string `json:"physicalFunction,omitempty"`
}

// NodeFacts is what the agent found on the host: what the operator's resolution needs.
type NodeFacts struct {
	// OnlineCPUs are the CPUs the kernel runs.
	OnlineCPUs CPUSet `json:"onlineCPUs"`
	// PresentCPUs are the CPUs the machine has, online or offline (/sys/devices/system/cpu/present).
	// +optional
	PresentCPUs CPUSet `json:"presentCPUs,omitempty"`
	// HotpluggableCPUs are the CPUs with a cpuN/online file, online or offline: the ones that can
	// be taken offline (spec.cpu.offlined). CPU 0 often has none.
	// +optional
	HotpluggableCPUs CPUSet `json:"hotpluggableCPUs,omitempty"`
	// ThreadsPerCore is 2 with SMT on, 1 without.
	// +optional
	ThreadsPerCore int32 `json:"threadsPerCore,omitempty"`
	// Sockets is the number of CPU packages.
	// +optional
	Sockets int32 `json:"sockets,omitempty"`
	// NUMANodes with their CPUs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	NUMANodes []NUMANode `json:"numaNodes,omitempty"`
	// Interfaces of the host (physical and VF; virtual ones such as veth too).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Interfaces []InterfaceFacts `json:"interfaces,omitempty"`
	// KernelCmdline is /proc/cmdline.
	// +optional
	KernelCmdline string `json:"kernelCmdline,omitempty"`
	// KernelRelease is uname -r.
	// +optional
	KernelRelease string `json:"kernelRelease,omitempty"`
}

// SettingState is how one setting stands on the host.
// +kubebuilder:validation:Enum=InSync;Drifted;PendingReboot;PendingRestart;Failed;Unsupported
type SettingState string

const (
	// SettingInSync: the observed value is the desired one.
	SettingInSync SettingState = "InSync"
	// SettingDrifted: the value was applied and then changed by someone else.
	SettingDrifted SettingState = "Drifted"
	// SettingPendingReboot: written to the boot configuration, in effect after the next reboot.
	SettingPendingReboot SettingState = "PendingReboot"
	// SettingPendingRestart: a kubelet setting the kubelet takes up when it restarts in the node's
	// rollout slot.
	SettingPendingRestart SettingState = "PendingRestart"
	// SettingFailed: the agent could not apply it; the message says why.
	SettingFailed SettingState = "Failed"
	// SettingUnsupported: the host has no such knob (for example cpufreq in a VM).
	SettingUnsupported SettingState = "Unsupported"
)

// SettingStatus is one setting's desired and observed value.
type SettingStatus struct {
	// Name of the setting, for example sysctl/net.core.busy_poll or irq/default_smp_affinity.
	Name string `json:"name"`
	// Desired value.
	// +optional
	Desired string `json:"desired,omitempty"`
	// Observed value read back from the host.
	// +optional
	Observed string `json:"observed,omitempty"`
	// State of the setting.
	State SettingState `json:"state"`
	// Message says what went wrong, when something did.
	// +optional
	Message string `json:"message,omitempty"`
}

// RebootPhase is where a node is in its reboot (or kubelet restart).
// +kubebuilder:validation:Enum=Requested;Draining;Rebooting;RestartingKubelet;Verifying;DrainFailed
type RebootPhase string

const (
	// RebootRequested: the agent wrote new kernel arguments and waits for the operator's grant.
	RebootRequested RebootPhase = "Requested"
	// RebootDraining: granted; the node is cordoned and its pods are being evicted.
	RebootDraining RebootPhase = "Draining"
	// RebootRebooting: drained; the reboot command ran.
	RebootRebooting RebootPhase = "Rebooting"
	// RebootRestartingKubelet: drained; the agent stops the kubelet, gives it new CPU and memory
	// manager state and its drop-in, and starts it (action KubeletRestart).
	RebootRestartingKubelet RebootPhase = "RestartingKubelet"
	// RebootVerifying: the node is back with a new boot ID; the agent checks /proc/cmdline (after a
	// kubelet restart: the kubelet is back and the agent checks its configz).
	RebootVerifying RebootPhase = "Verifying"
	// RebootDrainFailed: the drain timed out; the node was uncordoned and the blocking pod named.
	// The agent asks again after a back-off.
	RebootDrainFailed RebootPhase = "DrainFailed"
)

// RebootAction is what a node does in its rollout slot.
// +kubebuilder:validation:Enum=Reboot;KubeletRestart
type RebootAction string

const (
	// ActionReboot: a reboot, for kernel arguments or staged BIOS settings (and the kubelet's
	// drop-in, when it changes too: one disruption instead of two).
	ActionReboot RebootAction = "Reboot"
	// ActionKubeletRestart: only the kubelet's settings change; the kubelet restarts, the host does not.
	ActionKubeletRestart RebootAction = "KubeletRestart"
)

// RebootStatus is the agent's account of a reboot (or kubelet restart) it needs.
type RebootStatus struct {
	// Phase of the reboot.
	Phase RebootPhase `json:"phase"`
	// Action is what the slot is for. Unset: Reboot.
	// +optional
	Action RebootAction `json:"action,omitempty"`
	// BootID is the kernel's boot ID when the reboot was requested; another one means it happened.
	// +optional
	BootID string `json:"bootID,omitempty"`
	// BlockingPod is namespace/name of the pod whose eviction the drain waited on in vain.
	// +optional
	BlockingPod string `json:"blockingPod,omitempty"`
	// Message says what is happening or what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when the phase last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// PendingFor reports whether the staged BIOS settings still wait for a reboot of the host that
// runs bootID (the kernel's boot ID, trailing newline allowed): the node agent's reason to ask for
// a reboot slot, the same one as for its kernel arguments. Any other boot ID means the reboot
// happened. Safe on a nil FirmwareSpec.
func (f *FirmwareSpec) PendingFor(bootID string) bool {
	return f != nil && f.PendingReboot && f.BootID != "" && f.BootID == strings.TrimSpace(bootID)
}

// BIOSAttributeState is how one BIOS attribute stands on the node.
// +kubebuilder:validation:Enum=Applied;PendingReboot;Pending;Mismatch;Missing;Drifted;Invalid
type BIOSAttributeState string

const (
	// BIOSApplied: the value is in effect.
	BIOSApplied BIOSAttributeState = "Applied"
	// BIOSPendingReboot: staged on the BMC; the firmware applies it at the next reboot.
	BIOSPendingReboot BIOSAttributeState = "PendingReboot"
	// BIOSPending: still staged after the reboot (the firmware did not apply it yet).
	BIOSPending BIOSAttributeState = "Pending"
	// BIOSMismatch: after the reboot the value differs and is not staged: the BIOS refused or lost it.
	BIOSMismatch BIOSAttributeState = "Mismatch"
	// BIOSMissing: the BIOS no longer reports the attribute.
	BIOSMissing BIOSAttributeState = "Missing"
	// BIOSDrifted: the value was in effect and someone changed it since.
	BIOSDrifted BIOSAttributeState = "Drifted"
	// BIOSInvalid: the attribute registry refuses the name or value; nothing was staged.
	BIOSInvalid BIOSAttributeState = "Invalid"
)

// BIOSAttributeStatus is one BIOS attribute's desired and observed value.
type BIOSAttributeStatus struct {
	// Name of the attribute.
	Name string `json:"name"`
	// Desired value.
	// +optional
	Desired string `json:"desired,omitempty"`
	// Observed value in effect, as the BMC reports it.
	// +optional
	Observed string `json:"observed,omitempty"`
	// State of the attribute.
	State BIOSAttributeState `json:"state"`
	// Message says what is wrong and how to fix it, when something is.
	// +optional
	Message string `json:"message,omitempty"`
}

// BIOSStatus is written by the operator's BIOS reconciler (never the agent, which holds no BMC
// credentials).
type BIOSStatus struct {
	// Endpoint of the BMC (never with credentials).
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Vendor is the BMC family the operator recognised (it picks the Auto preset).
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// StagedHash is the spec.firmware.hash whose attributes were validated and staged (or found
	// already in effect). While it differs, the operator tries again.
	// +optional
	StagedHash string `json:"stagedHash,omitempty"`
	// Attributes with their desired and observed values.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Attributes []BIOSAttributeStatus `json:"attributes,omitempty"`
	// LastVerifiedTime is when the values were last read back from the BMC.
	// +optional
	LastVerifiedTime *metav1.Time `json:"lastVerifiedTime,omitempty"`
	// Conditions: BMCReachable, BIOSValid, BIOSApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeviceResource is one extended resource of the SR-IOV network device plugin on the node, as the
// kubelet reports it in the Node's status.
type DeviceResource struct {
	// Name of the resource: <resourcePrefix>/<resourceName>.
	Name string `json:"name"`
	// Capacity is how many devices the plugin registered on this node: 0 when it found none that
	// the pool's selectors match (a node without SR-IOV VFs), or does not run here.
	Capacity int32 `json:"capacity"`
	// Allocatable is how many of them pods can get (healthy ones).
	Allocatable int32 `json:"allocatable"`
}

// LatencyNodeStateStatus is written by the node agent.
type LatencyNodeStateStatus struct {
	// ObservedGeneration is the spec generation the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Facts about the host.
	// +optional
	Facts *NodeFacts `json:"facts,omitempty"`
	// Settings lists each setting with its desired and observed value.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1024
	Settings []SettingStatus `json:"settings,omitempty"`
	// Reboot is set while the node needs, waits for or goes through a reboot.
	// +optional
	Reboot *RebootStatus `json:"reboot,omitempty"`
	// AppliedBootID is the kernel boot ID under which the tuning was last found Applied; while the
	// running boot's differs (a reboot), the tuning of this boot is not confirmed and the node keeps
	// the tickstack.io/tuning-pending taint.
	// +optional
	AppliedBootID string `json:"appliedBootID,omitempty"`
	// Fingerprint is a hash of the tuning really in effect; also the node label tickstack.io/fingerprint.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// BIOS is the operator's report on the node's BIOS settings (status.bios is the operator's;
	// everything else in status is the agent's).
	// +optional
	BIOS *BIOSStatus `json:"bios,omitempty"`
	// Devices are the node's SR-IOV network device plugin resources, read from its Node by the
	// agent: every resource under the operator's resource prefix the kubelet reports, and every
	// pool this node's NIC groups hand VFs out from (0 when the plugin registered none).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Devices []DeviceResource `json:"devices,omitempty"`
	// VFs is how many VF devices pods can get on this node: the allocatable count summed over
	// Devices. 0 on a node without SR-IOV; unset until the agent has read its Node.
	// +optional
	VFs *int32 `json:"vfs,omitempty"`
	// PTP is the agent's last reading of ptp4l, when the tuning has a ptp section.
	// +optional
	PTP *PTPStatus `json:"ptp,omitempty"`
	// KubeletConfig says how the agent reads the running kubelet's configuration (agents started
	// with --kubelet-config-dir).
	// +optional
	KubeletConfig *KubeletConfigStatus `json:"kubeletConfig,omitempty"`
	// Capabilities the node's agent has, so the operator uses a feature only where the agent can
	// serve it (during an upgrade, agents of two releases run side by side).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Capabilities []AgentCapability `json:"capabilities,omitempty"`
	// Resolved says which profile generation the agent resolved status.tuning from, when it
	// resolves its own node (spec.profile.resolveOnNode).
	// +optional
	Resolved *ResolvedTuning `json:"resolved,omitempty"`
	// Tuning is the desired tuning the agent resolved for this node (the same type as spec.tuning),
	// when it resolves its own node; each setting's desired and observed value is in settings.
	// +optional
	Tuning *NodeTuning `json:"tuning,omitempty"`
	// Conditions: Applied, Degraded, RebootRequired, Drifted, TimeSynced.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AgentCapability is a feature a node agent supports.
// +kubebuilder:validation:Enum=ResolveOnNode
type AgentCapability string

// CapabilityResolveOnNode: the agent resolves its node's tuning from the profile
// (spec.profile.resolveOnNode).
const CapabilityResolveOnNode AgentCapability = "ResolveOnNode"

// ResolvedTuning identifies the resolution an agent made of its own node.
type ResolvedTuning struct {
	// Profile is the LatencyProfile's name.
	// +kubebuilder:validation:MaxLength=253
	Profile string `json:"profile"`
	// Generation is the profile generation whose resolution last changed status.tuning. A profile
	// change that leaves this node's tuning as it is writes nothing, so it may be older than the
	// profile's (as spec.profile.generation).
	Generation int64 `json:"generation"`
	// TuningHash is a hash of status.tuning, so the operator compares resolutions without the
	// whole tuning (its cache keeps no status.tuning).
	// +kubebuilder:validation:MaxLength=64
	TuningHash string `json:"tuningHash"`
}

// LatencyNodeState is one node's resolved tuning (spec, by the operator) and what is really in effect
// there (status, by the node agent). It is named after its node.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=lns,categories=tickstack
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profile.name`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.status.resolved.generation`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Reboot",type=string,JSONPath=`.status.conditions[?(@.type=="RebootRequired")].status`
// +kubebuilder:printcolumn:name="Drifted",type=string,JSONPath=`.status.conditions[?(@.type=="Drifted")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="VFs",type=integer,JSONPath=`.status.vfs`
// +kubebuilder:printcolumn:name="TimeSynced",type=string,JSONPath=`.status.conditions[?(@.type=="TimeSynced")].status`,priority=1
// +kubebuilder:printcolumn:name="Offset",type=integer,JSONPath=`.status.ptp.offsetNs`,priority=1
// +kubebuilder:printcolumn:name="SysOffset",type=integer,JSONPath=`.status.ptp.systemOffsetNs`,priority=1
// +kubebuilder:printcolumn:name="BIOS",type=string,JSONPath=`.status.bios.conditions[?(@.type=="BIOSApplied")].reason`,priority=1
// +kubebuilder:printcolumn:name="Fingerprint",type=string,JSONPath=`.status.fingerprint`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LatencyNodeState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the node's resolved tuning.
	// +required
	Spec LatencyNodeStateSpec `json:"spec"`
	// Status is what the agent found and did.
	// +optional
	Status LatencyNodeStateStatus `json:"status,omitempty"`
}

// LatencyNodeStateList is a list of LatencyNodeStates.
// +kubebuilder:object:root=true
type LatencyNodeStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LatencyNodeState `json:"items"`
}
