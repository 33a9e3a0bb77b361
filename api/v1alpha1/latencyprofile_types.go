package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CPUSet is a Linux cpulist: comma-separated CPU ids and inclusive ranges, for example "0-1,32-33".
// The empty string is the empty set.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:Pattern=`^$|^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`
type CPUSet string

// SysctlValue is a sysctl's value: an integer, or a cpulist for the cpumask keys.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^-?[0-9]+([,-][0-9]+)*$`
type SysctlValue string

// IsolationMode says how hard the kernel keeps work off the isolated CPUs.
// +kubebuilder:validation:Enum=Nohz;Strict
type IsolationMode string

const (
	// IsolationNohz stops the scheduler tick (nohz_full), moves RCU callbacks (rcu_nocbs) and managed
	// device IRQs (isolcpus=managed_irq) off the isolated CPUs, and keeps scheduler load balancing, so
	// multi-threaded pods spread over their CPUs. The right default under the kubelet's CPU manager.
	IsolationNohz IsolationMode = "Nohz"
	// IsolationStrict adds isolcpus=domain: no load balancing at all on the isolated CPUs. Each thread
	// stays where it was started, so applications must pin every thread themselves.
	IsolationStrict IsolationMode = "Strict"
)

// CPUSpec splits the node's CPUs into housekeeping and isolated ones.
type CPUSpec struct {
	// Reserved CPUs run the operating system, the kubelet, device interrupts and every pod that is not
	// Guaranteed. It must not be empty. These are also the kubelet's reservedSystemCPUs.
	// +required
	// +kubebuilder:validation:MinLength=1
	Reserved CPUSet `json:"reserved"`

	// Isolated CPUs are kept free of kernel noise for latency pods: no scheduler tick, no RCU
	// callbacks, no movable IRQs. CPUs a node does not have are clipped away on that node.
	// +optional
	Isolated CPUSet `json:"isolated,omitempty"`

	// Offlined CPUs are taken offline at runtime (CPU hotplug through
	// /sys/devices/system/cpu/cpuN/online; no reboot), as OpenShift's PerformanceProfile
	// cpu.offlined: CPUs a node has but its workloads should not use, to cut its power draw and
	// noise. Refused if it names CPU 0 or a reserved or isolated CPU, and on a node where a CPU
	// does not exist or cannot be taken offline. Restored (brought back online) when the profile
	// goes. With the profile's kubelet section, a change restarts the kubelet in the node's slot
	// so its CPU manager sees the CPUs that are online (docs/agent.md, "Offlined CPUs").
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.split(',').exists(r, r.split('-')[0] == '0')",message="cpu.offlined: CPU 0 cannot be taken offline (the boot CPU; most kernels have no cpu0/online): remove it from cpu.offlined"
	Offlined CPUSet `json:"offlined,omitempty"`

	// Shared CPUs are a pool pods may use beside their exclusive CPUs (OpenShift's mixed CPUs):
	// the node advertises them as the extended resource tickstack.io/shared-cpus (one unit per
	// CPU), and the kubelet never hands them out as exclusive CPUs: as in OpenShift they are part
	// of its reservedSystemCPUs, so the profile's kubelet section is required. A Guaranteed pod's
	// exclusive containers get their own CPUs; its other containers (a fractional CPU request) and
	// every Burstable or BestEffort pod run on the kubelet's shared pool, which holds them. Must
	// be disjoint from cpu.reserved, cpu.isolated and cpu.offlined (docs/agent.md, "Shared CPUs").
	// +optional
	Shared CPUSet `json:"shared,omitempty"`

	// IsolationMode says how hard the isolated CPUs are kept apart. Default Nohz.
	// +optional
	// +kubebuilder:default=Nohz
	IsolationMode IsolationMode `json:"isolationMode,omitempty"`
}

// HugePageSize is the size of one huge page.
// +kubebuilder:validation:Enum="2Mi";"1Gi"
type HugePageSize string

const (
	// HugePageSize2Mi is the 2 MiB page of x86-64.
	HugePageSize2Mi HugePageSize = "2Mi"
	// HugePageSize1Gi is the 1 GiB page of x86-64.
	HugePageSize1Gi HugePageSize = "1Gi"
)

// TransparentHugepageMode is the kernel's transparent huge page policy.
// +kubebuilder:validation:Enum=never;madvise;always
type TransparentHugepageMode string

// HugePages asks for a number of pages of one size, on one NUMA node or spread by the kernel.
type HugePages struct {
	// Size of each page.
	// +required
	Size HugePageSize `json:"size"`
	// Count of pages.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	Count int32 `json:"count"`
	// Node is the NUMA node to allocate on; unset lets the kernel spread them. 1Gi pages without a
	// node are reserved at boot (a kernel argument, so a reboot); all others are allocated at runtime.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1023
	Node *int32 `json:"node,omitempty"`
}

// HugepagesSpec reserves huge pages for latency pods (packet buffers, order books).
// +kubebuilder:validation:XValidation:rule="!has(self.defaultSize) || (has(self.pages) && self.pages.exists(p, p.size == self.defaultSize))",message="hugepages.defaultSize must be the size of one of hugepages.pages"
// +kubebuilder:validation:XValidation:rule="!has(self.pages) || self.pages.all(a, self.pages.exists_one(b, b.size == a.size && (has(a.node) ? (has(b.node) && b.node == a.node) : !has(b.node))))",message="hugepages.pages: each (size, node) pair may appear once; add the counts together"
type HugepagesSpec struct {
	// DefaultSize is the kernel's default huge page size (default_hugepagesz).
	// +optional
	DefaultSize HugePageSize `json:"defaultSize,omitempty"`
	// Pages to reserve.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Pages []HugePages `json:"pages,omitempty"`
	// Transparent sets the transparent huge page policy; "never" avoids khugepaged compaction stalls.
	// +optional
	Transparent TransparentHugepageMode `json:"transparent,omitempty"`
}

// Governor is a cpufreq scaling governor.
// +kubebuilder:validation:Enum=performance;schedutil;powersave;ondemand
type Governor string

// ToggleMode turns a hardware feature on or off.
// +kubebuilder:validation:Enum=Enabled;Disabled
type ToggleMode string

const (
	// Enabled turns the feature on.
	Enabled ToggleMode = "Enabled"
	// Disabled turns the feature off.
	Disabled ToggleMode = "Disabled"
)

// PowerSpec holds the CPU power settings the seed papers turned first.
// +kubebuilder:validation:XValidation:rule="!(has(self.idlePoll) && self.idlePoll && has(self.maxCStateExitLatencyMicroseconds))",message="power.idlePoll already keeps CPUs out of every C-state: remove power.maxCStateExitLatencyMicroseconds or idlePoll"
type PowerSpec struct {
	// MaxCStateExitLatencyMicroseconds disables, at runtime and on every CPU, each idle state whose
	// exit latency is larger; 0 leaves only polling. Unset leaves idle states as they are.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MaxCStateExitLatencyMicroseconds *int32 `json:"maxCStateExitLatencyMicroseconds,omitempty"`
	// IdlePoll makes idle CPUs spin (idle=poll): the lowest wake-up latency at the highest power draw.
	// A kernel argument, so a reboot.
	// +optional
	IdlePoll *bool `json:"idlePoll,omitempty"`
	// Governor is the cpufreq governor, where the host exposes cpufreq.
	// +optional
	Governor Governor `json:"governor,omitempty"`
	// Turbo enables or disables turbo boost, where the host exposes it.
	// +optional
	Turbo ToggleMode `json:"turbo,omitempty"`
	// SMT enables or disables simultaneous multithreading (hyper-threads share a core's caches and
	// ports with the latency thread). Disabled adds the nosmt kernel argument and turns SMT off at runtime.
	// +optional
	SMT ToggleMode `json:"smt,omitempty"`
}

// KernelSpec holds extra kernel command line arguments.
type KernelSpec struct {
	// AdditionalArgs are appended to the kernel command line (a reboot). Arguments tickstack manages
	// itself from the other sections (isolcpus, nohz_full, rcu_nocbs, irqaffinity, hugepages,
	// hugepagesz, default_hugepagesz, idle, nosmt) are refused here: set those sections instead.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[^\s"']+$`
	// +kubebuilder:validation:XValidation:rule="self.all(a, !(a.split('=')[0] in ['isolcpus','nohz_full','rcu_nocbs','irqaffinity','hugepages','hugepagesz','default_hugepagesz','idle','nosmt']))",messageExpression="'kernel.additionalArgs: ' + self.filter(a, a.split('=')[0] in ['isolcpus','nohz_full','rcu_nocbs','irqaffinity','hugepages','hugepagesz','default_hugepagesz','idle','nosmt'])[0] + ' is managed by tickstack: set it through the cpu, hugepages or power section instead'"
	// +listType=atomic
	AdditionalArgs []string `json:"additionalArgs,omitempty"`
}

// IRQSpec says where device interrupts may run.
type IRQSpec struct {
	// KeepOffIsolated moves every movable IRQ to the reserved CPUs, sets default_smp_affinity to
	// them and bans the isolated CPUs in irqbalance. Default true when cpu.isolated is set.
	// +optional
	KeepOffIsolated *bool `json:"keepOffIsolated,omitempty"`
}

// AccelerationMode is how latency pods on a NIC reach the wire.
// +kubebuilder:validation:Enum=kernel;busyPoll;bypass
type AccelerationMode string

const (
	// AccelerationKernel uses the kernel's UDP/TCP stack with interrupts.
	AccelerationKernel AccelerationMode = "kernel"
	// AccelerationBusyPoll uses the kernel stack with socket busy polling (net.core.busy_poll and
	// busy_read, 50 us unless the profile's sysctls say otherwise).
	AccelerationBusyPoll AccelerationMode = "busyPoll"
	// AccelerationBypass injects tickstack's AF_XDP kernel-bypass stack into opted-in pods.
	AccelerationBypass AccelerationMode = "bypass"
)

// NICSelector picks a node's interfaces. Every field given must match; at least one is needed.
// +kubebuilder:validation:XValidation:rule="has(self.interfaceNames) || has(self.vendor) || has(self.device) || has(self.pfNames) || has(self.drivers)",message="nics[].selector needs at least one of interfaceNames, vendor, device, pfNames, drivers"
type NICSelector struct {
	// InterfaceNames are kernel interface names, for example ens1f0.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9_.:@-]+$`
	// +listType=set
	InterfaceNames []string `json:"interfaceNames,omitempty"`
	// Vendor is the PCI vendor id in hex, for example 8086 (Intel) or 15b3 (NVIDIA/Mellanox).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}$`
	Vendor string `json:"vendor,omitempty"`
	// Device is the PCI device id in hex, for example 1592 (E810-C).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}$`
	Device string `json:"device,omitempty"`
	// PFNames are physical function interface names, optionally with the VF range the device plugin
	// hands out, as the SR-IOV device plugin's pfNames: ens1f0 or ens1f0#0-3.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9_.:@-]+(#[0-9]+-[0-9]+)?$`
	// +listType=set
	PFNames []string `json:"pfNames,omitempty"`
	// Drivers are kernel driver names, for example ice, mlx5_core, veth.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=32
	// +listType=set
	Drivers []string `json:"drivers,omitempty"`
}

// Coalescing sets interrupt coalescing (ethtool -C). Lower values cut latency and raise interrupt load.
type Coalescing struct {
	// RxUsecs delays an RX interrupt at most this long.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	RxUsecs *int32 `json:"rxUsecs,omitempty"`
	// TxUsecs delays a TX completion interrupt at most this long.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	TxUsecs *int32 `json:"txUsecs,omitempty"`
	// RxFrames raises an RX interrupt after this many frames.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	RxFrames *int32 `json:"rxFrames,omitempty"`
	// AdaptiveRx lets the driver tune RX coalescing itself; off for predictable latency.
	// +optional
	AdaptiveRx *bool `json:"adaptiveRx,omitempty"`
	// AdaptiveTx lets the driver tune TX coalescing itself.
	// +optional
	AdaptiveTx *bool `json:"adaptiveTx,omitempty"`
}

// Rings sets descriptor ring sizes (ethtool -G).
type Rings struct {
	// RX ring entries.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	RX *int32 `json:"rx,omitempty"`
	// TX ring entries.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	TX *int32 `json:"tx,omitempty"`
}

// Channels sets queue counts (ethtool -L).
type Channels struct {
	// Combined RX/TX queue pairs.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Combined *int32 `json:"combined,omitempty"`
	// RX-only queues.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	RX *int32 `json:"rx,omitempty"`
	// TX-only queues.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	TX *int32 `json:"tx,omitempty"`
}

// NetworkType is the CNI plugin that attaches latency pods to a NIC group.
// +kubebuilder:validation:Enum=sriov;macvlan;ipvlan;hostDevice
type NetworkType string

const (
	// NetworkSRIOV gives each pod its own VF (sriov CNI), handed out by the SR-IOV device plugin.
	NetworkSRIOV NetworkType = "sriov"
	// NetworkMacvlan gives each pod a macvlan child of the one host interface (hosts without SR-IOV).
	NetworkMacvlan NetworkType = "macvlan"
	// NetworkIPvlan gives each pod an ipvlan child of the one host interface (hosts without SR-IOV).
	NetworkIPvlan NetworkType = "ipvlan"
	// NetworkHostDevice moves the one host interface into the pod (one pod per interface).
	NetworkHostDevice NetworkType = "hostDevice"
)

// IPAMType is the CNI IPAM plugin that addresses the pod's interface.
// +kubebuilder:validation:Enum=host-local;whereabouts;dhcp
type IPAMType string

// IPAM addresses the pod's interface on a NIC group's network.
// +kubebuilder:validation:XValidation:rule="self.type == 'dhcp' || has(self.subnet)",message="nics[].network.ipam.subnet is required for host-local and whereabouts: give the CIDR to hand addresses from"
type IPAM struct {
	// Type is the IPAM plugin.
	// +required
	Type IPAMType `json:"type"`
	// Subnet is the CIDR addresses come from, for example 198.18.0.0/24.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="nics[].network.ipam.subnet must be a CIDR such as 198.18.0.0/24"
	Subnet string `json:"subnet,omitempty"`
	// RangeStart is the first address handed out (host-local, whereabouts).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="nics[].network.ipam.rangeStart must be an IP address"
	RangeStart string `json:"rangeStart,omitempty"`
	// RangeEnd is the last address handed out (host-local, whereabouts).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="nics[].network.ipam.rangeEnd must be an IP address"
	RangeEnd string `json:"rangeEnd,omitempty"`
	// Gateway is the default gateway on this network, when there is one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="nics[].network.ipam.gateway must be an IP address"
	Gateway string `json:"gateway,omitempty"`
}

// NICNetwork says how latency pods attach to a NIC group: the operator renders a Multus
// NetworkAttachmentDefinition from it, and the pod webhook attaches opted-in pods to it.
type NICNetwork struct {
	// Type is the CNI plugin. Default sriov (a VF per pod); macvlan, ipvlan and hostDevice serve hosts
	// without SR-IOV (VMs, clouds).
	// +optional
	// +kubebuilder:default=sriov
	Type NetworkType `json:"type,omitempty"`
	// Namespace the NetworkAttachmentDefinition is created in; pods in other namespaces reference it
	// as namespace/name. Default: the operator's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
	// IPAM addresses the pod's interface. Unset leaves the interface without an address (raw AF_XDP
	// or DPDK use).
	// +optional
	IPAM *IPAM `json:"ipam,omitempty"`
}

// NICSpec tunes one group of a node's interfaces and says how latency pods use them.
// +kubebuilder:validation:XValidation:rule="!has(self.resourceName) || (has(self.numVfs) && self.numVfs > 0)",message="nics[].resourceName names the VFs' device plugin resource: set nics[].numVfs above 0 too"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || (has(self.network.type) && self.network.type != 'sriov') || has(self.resourceName)",message="nics[].network.type sriov hands each pod a VF: set nics[].resourceName and nics[].numVfs, or choose macvlan, ipvlan or hostDevice for hosts without SR-IOV"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || !has(self.network.type) || self.network.type == 'sriov' || (has(self.selector.interfaceNames) && size(self.selector.interfaceNames) == 1)",message="nics[].network.type macvlan, ipvlan and hostDevice attach to one host interface: list exactly one in nics[].selector.interfaceNames"
type NICSpec struct {
	// Name identifies this group inside the profile (a DNS label).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Selector picks the interfaces on each node.
	// +required
	Selector NICSelector `json:"selector"`
	// NumVFs is the number of SR-IOV virtual functions to create on each selected physical function.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	NumVFs *int32 `json:"numVfs,omitempty"`
	// ResourceName is the device plugin resource the VFs are offered as (without prefix).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_]+$`
	ResourceName string `json:"resourceName,omitempty"`
	// Acceleration is how latency pods reach the wire on these interfaces. Default kernel.
	// +optional
	// +kubebuilder:default=kernel
	Acceleration AccelerationMode `json:"acceleration,omitempty"`
	// Coalescing sets interrupt coalescing.
	// +optional
	Coalescing *Coalescing `json:"coalescing,omitempty"`
	// Rings sets descriptor ring sizes.
	// +optional
	Rings *Rings `json:"rings,omitempty"`
	// Channels sets queue counts.
	// +optional
	Channels *Channels `json:"channels,omitempty"`
	// Network attaches latency pods to these interfaces (a NetworkAttachmentDefinition). Unset: pods
	// are not attached to this group.
	// +optional
	Network *NICNetwork `json:"network,omitempty"`
}

// BIOSPreset names a vendor's low-latency BIOS preset: C-states off, C1E off, turbo on, SMT off,
// power profile maximum performance, sub-NUMA clustering off, uncore at maximum frequency, spelled
// the way that vendor's BIOS names them (docs/bios.md has the table).
// +kubebuilder:validation:Enum=None;Auto;Dell;HPE;Lenovo;Supermicro
type BIOSPreset string

const (
	// BIOSPresetNone sets only the listed attributes.
	BIOSPresetNone BIOSPreset = "None"
	// BIOSPresetAuto picks the preset from the manufacturer the BMC reports (the tests reach the
	// sushy-tools emulator's preset this way: it is no public preset name).
	BIOSPresetAuto BIOSPreset = "Auto"
)

// BIOSAttribute is one BIOS attribute, named as the node's BIOS attribute registry names it.
type BIOSAttribute struct {
	// Name of the attribute, for example ProcTurboMode (Dell) or MinProcIdlePower (HPE).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:-]+$`
	Name string `json:"name"`
	// Value as text: "true" and "42" become a Boolean and an Integer when the registry says so.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value"`
}

// BIOSSpec is the BIOS part of a profile: a vendor preset, attributes, or both (the attributes
// override the preset's entries of the same name).
// +kubebuilder:validation:XValidation:rule="(has(self.preset) && self.preset != 'None') || (has(self.attributes) && size(self.attributes) > 0)",message="bios needs a preset other than None or at least one entry in bios.attributes"
type BIOSSpec struct {
	// Preset adds a vendor's low-latency settings. Auto picks it from the BMC's manufacturer.
	// Default None.
	// +optional
	Preset BIOSPreset `json:"preset,omitempty"`
	// Attributes to set, as name/value pairs.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Attributes []BIOSAttribute `json:"attributes,omitempty"`
}

// DriftAction is what the agent does about a setting changed on the host after it was applied.
// +kubebuilder:validation:Enum=Correct;Report
type DriftAction string

const (
	// DriftCorrect reports the change (Drifted condition, event) and sets the value back.
	DriftCorrect DriftAction = "Correct"
	// DriftReport reports the change and leaves the host as it was found: for nodes where a
	// person investigates before anything is touched.
	DriftReport DriftAction = "Report"
)

// DriftSpec says how drift is handled.
type DriftSpec struct {
	// Action on drift. Default Correct.
	// +optional
	// +kubebuilder:default=Correct
	Action DriftAction `json:"action,omitempty"`
}

// RolloutSpec limits how many nodes change at once, and when.
type RolloutSpec struct {
	// MaxUnavailable is how many matched nodes may be cordoned or rebooting at once, as a count or a
	// percentage of the matched nodes (rounded down, at least 1). Default 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^([1-9][0-9]?|100)%$') : self >= 1",message="rollout.maxUnavailable must be a count of at least 1 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// DrainTimeout is how long a drain may wait for evictions before the node is uncordoned and the
	// blocking pod named in a condition. Default 10m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// Paused stops the rollout: no node is given a new reboot slot (so no reboot or kubelet restart
	// starts); a node already in its slot finishes. Default false.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Windows are the maintenance windows: a reboot or kubelet restart starts only inside one of them
	// (one already started finishes). None: any time.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Windows []MaintenanceWindow `json:"windows,omitempty"`
	// TopologyKey is a node label key (a rack, a zone, a power domain): at most
	// maxUnavailablePerDomain nodes of one value of this label are cordoned or rebooting at once, on
	// top of maxUnavailable. A node without the label is its own domain.
	// +optional
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	TopologyKey string `json:"topologyKey,omitempty"`
	// MaxUnavailablePerDomain is the budget of each topologyKey domain. Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxUnavailablePerDomain *int32 `json:"maxUnavailablePerDomain,omitempty"`
}

// Weekday is a day of the week, as its first three letters.
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// MaintenanceWindow is a time of day, on given days of the week, in an IANA time zone, during which
// a reboot or a kubelet restart may start. A window whose end is not after its start runs past
// midnight into the next day.
// +kubebuilder:validation:XValidation:rule="self.start != self.end",message="rollout.windows[]: start and end must differ (a window of no time never opens)"
type MaintenanceWindow struct {
	// Days the window opens on (its start's day, in timeZone).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	Days []Weekday `json:"days"`
	// Start is the opening time of day, HH:MM (24h) in timeZone.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`
	// End is the closing time of day, HH:MM (24h) in timeZone.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	End string `json:"end"`
	// TimeZone is an IANA time zone name such as Europe/London or America/New_York; UTC is allowed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone"`
}

// TopologyManagerPolicy is the kubelet's topology manager policy (how strictly CPUs, memory, huge
// pages and devices of a pod must come from one NUMA node).
// +kubebuilder:validation:Enum=none;best-effort;restricted;single-numa-node
type TopologyManagerPolicy string

// TopologyManagerScope is what the topology manager aligns: each container, or the whole pod.
// +kubebuilder:validation:Enum=container;pod
type TopologyManagerScope string

const (
	// DefaultTopologyManagerPolicy is kubelet.topologyManagerPolicy's default.
	DefaultTopologyManagerPolicy TopologyManagerPolicy = "single-numa-node"
	// DefaultTopologyManagerScope is kubelet.topologyManagerScope's default.
	DefaultTopologyManagerScope TopologyManagerScope = "container"
)

// KubeletSpec hands the kubelet settings that CPU isolation depends on to the profile: with it, the
// agent writes reservedSystemCPUs (= cpu.reserved), the static CPU manager, the topology manager and
// the Static memory manager as a drop-in in the kubelet's --config-dir, and restarts the kubelet
// inside the node's rollout slot (cordon, drain, new CPU and memory manager state, configz checked,
// uncordon); deleting the profile takes the drop-in back the same way. Without it, the kubelet is
// left as configured by hand (docs/agent.md "Kubelet settings").
type KubeletSpec struct {
	// TopologyManagerPolicy is the topology manager's policy. Default single-numa-node: a
	// Guaranteed pod's CPUs, memory, huge pages and VF all on one NUMA node, or the pod is refused.
	// +optional
	// +kubebuilder:default=single-numa-node
	TopologyManagerPolicy TopologyManagerPolicy `json:"topologyManagerPolicy,omitempty"`
	// TopologyManagerScope is the topology manager's scope. Default container.
	// +optional
	// +kubebuilder:default=container
	TopologyManagerScope TopologyManagerScope `json:"topologyManagerScope,omitempty"`
	// SystemReservedMemory is the memory kept from pods for the system (the kubelet's
	// systemReserved memory; kubeReserved memory is set to 0). Default 1Gi.
	// +optional
	SystemReservedMemory *resource.Quantity `json:"systemReservedMemory,omitempty"`
	// EvictionHardMemory is the kubelet's hard eviction threshold memory.available. Default 100Mi.
	// The memory manager's reservedMemory is their sum, on the NUMA node of the first reserved CPU
	// (the Static memory manager refuses to start unless the two agree); huge pages are not
	// reserved: all of the profile's huge pages go to pods.
	// +optional
	EvictionHardMemory *resource.Quantity `json:"evictionHardMemory,omitempty"`
}

// LatencyProfileSpec is what a set of nodes must look like to run latency pods.
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !has(self.cpu.shared) || size(self.cpu.shared) == 0 || has(self.kubelet)",message="cpu.shared: the kubelet must keep the shared CPUs out of its exclusive allocation through its reservedSystemCPUs, which the profile's kubelet section owns: add a kubelet section (kubelet: {}) or remove cpu.shared"
// +kubebuilder:validation:XValidation:rule="!has(self.ptp) || !has(self.ptp.nicGroup) || (has(self.nics) && self.nics.exists(n, n.name == self.ptp.nicGroup))",message="ptp.nicGroup must name one of the profile's spec.nics[] groups"
type LatencyProfileSpec struct {
	// NodeSelector picks the nodes this profile tunes (node labels, including node-feature-discovery
	// ones such as feature.node.kubernetes.io/network-sriov.capable).
	// +required
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`

	// Priority decides between profiles that select the same node: the higher wins. At equal
	// priority both report a Conflict and the node is left as it is.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Priority int32 `json:"priority,omitempty"`

	// CPU splits the CPUs into reserved and isolated ones.
	// +optional
	CPU *CPUSpec `json:"cpu,omitempty"`

	// Hugepages reserves huge pages.
	// +optional
	Hugepages *HugepagesSpec `json:"hugepages,omitempty"`

	// Power sets C-states, governor, turbo and SMT.
	// +optional
	Power *PowerSpec `json:"power,omitempty"`

	// Kernel adds kernel command line arguments.
	// +optional
	Kernel *KernelSpec `json:"kernel,omitempty"`

	// IRQ keeps device interrupts off the isolated CPUs.
	// +optional
	IRQ *IRQSpec `json:"irq,omitempty"`

	// Sysctls sets kernel parameters. Only latency-relevant keys are allowed, each documented in
	// docs/agent-host.md with why it matters: kernel.nmi_watchdog, kernel.numa_balancing, kernel.sched_rt_runtime_us, kernel.timer_migration, kernel.watchdog, kernel.watchdog_cpumask, net.core.busy_poll, net.core.busy_read, net.core.netdev_budget, net.core.netdev_budget_usecs, net.core.netdev_max_backlog, net.core.rmem_max, net.core.rps_sock_flow_entries, net.core.wmem_max, vm.compaction_proactiveness, vm.dirty_background_ratio, vm.stat_interval, vm.swappiness, vm.zone_reclaim_mode.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['kernel.nmi_watchdog','kernel.numa_balancing','kernel.sched_rt_runtime_us','kernel.timer_migration','kernel.watchdog','kernel.watchdog_cpumask','net.core.busy_poll','net.core.busy_read','net.core.netdev_budget','net.core.netdev_budget_usecs','net.core.netdev_max_backlog','net.core.rmem_max','net.core.rps_sock_flow_entries','net.core.wmem_max','vm.compaction_proactiveness','vm.dirty_background_ratio','vm.stat_interval','vm.swappiness','vm.zone_reclaim_mode'])",messageExpression="'sysctls: ' + self.filter(k, !(k in ['kernel.nmi_watchdog','kernel.numa_balancing','kernel.sched_rt_runtime_us','kernel.timer_migration','kernel.watchdog','kernel.watchdog_cpumask','net.core.busy_poll','net.core.busy_read','net.core.netdev_budget','net.core.netdev_budget_usecs','net.core.netdev_max_backlog','net.core.rmem_max','net.core.rps_sock_flow_entries','net.core.wmem_max','vm.compaction_proactiveness','vm.dirty_background_ratio','vm.stat_interval','vm.swappiness','vm.zone_reclaim_mode']))[0] + ' is not an allowed key; allowed are the latency-relevant keys in docs/agent-host.md'"
	Sysctls map[string]SysctlValue `json:"sysctls,omitempty"`

	// NICs tunes groups of interfaces and says how latency pods use them.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	NICs []NICSpec `json:"nics,omitempty"`

	// Drift says what the agent does when a setting it applied is changed on the host.
	// +optional
	Drift *DriftSpec `json:"drift,omitempty"`

	// Rollout limits how many nodes change at once.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`

	// Kubelet makes the profile own the kubelet's CPU, topology and memory manager settings
	// (reservedSystemCPUs follows cpu.reserved and cpu.shared, which it requires). Unset: the
	// kubelet is not touched.
	// +optional
	Kubelet *KubeletSpec `json:"kubelet,omitempty"`

	// BIOS sets BIOS attributes through each node's BMC over Redfish (docs/bios.md). The operator
	// validates them against the node's attribute registry, stages them, and they take effect in the
	// same reboot as the kernel arguments.
	// +optional
	BIOS *BIOSSpec `json:"bios,omitempty"`

	// Validation gates the profile's nodes on their LatencyBenchmark (docs/benchmark.md).
	// +optional
	Validation *ValidationSpec `json:"validation,omitempty"`

	// PTP runs linuxptp (ptp4l, and phc2sys with hardware time stamping) on each node and reports
	// whether the node's clock is in sync (condition TimeSynced; docs/ptp.md).
	// +optional
	PTP *PTPSpec `json:"ptp,omitempty"`

	// Bypass configures the kernel-bypass stack the pod webhook injects into latency pods when a NIC
	// group's acceleration is bypass (docs/dataplane.md).
	// +optional
	Bypass *BypassSpec `json:"bypass,omitempty"`

	// PodControls says which per-pod runtime controls a latency pod of this profile may ask for by
	// annotation (tickstack.io/irq-load-balancing, cpu-c-states, cpu-freq-governor, cpu-quota),
	// applied by the node's NRI plugin to the pod's exclusive CPUs before its container starts
	// (docs/agent.md "Per-pod controls"). Unset: none; the pod webhook refuses such annotations.
	// +optional
	PodControls *PodControlsSpec `json:"podControls,omitempty"`
}

// PodControl is one per-pod runtime control (the CRI-O annotations' names, under tickstack.io/).
// +kubebuilder:validation:Enum=irqLoadBalancing;cpuCStates;cpuFreqGovernor;cpuQuota
type PodControl string

const (
	// PodControlIRQLoadBalancing steers device interrupts off the pod's CPUs
	// (tickstack.io/irq-load-balancing: disable or housekeeping).
	PodControlIRQLoadBalancing PodControl = "irqLoadBalancing"
	// PodControlCPUCStates limits the idle states of the pod's CPUs
	// (tickstack.io/cpu-c-states: enable, disable or max_latency:N microseconds).
	PodControlCPUCStates PodControl = "cpuCStates"
	// PodControlCPUFreqGovernor sets the cpufreq governor of the pod's CPUs
	// (tickstack.io/cpu-freq-governor: NAME).
	PodControlCPUFreqGovernor PodControl = "cpuFreqGovernor"
	// PodControlCPUQuota takes the CFS quota off the pod's containers (tickstack.io/cpu-quota: disable).
	PodControlCPUQuota PodControl = "cpuQuota"
)

// PodControlsSpec lists the per-pod runtime controls a profile's nodes allow.
type PodControlsSpec struct {
	// Allow names the controls latency pods may ask for on this profile's nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=set
	Allow []PodControl `json:"allow,omitempty"`
}

// BypassTCP says which TCP connections of a latency pod the bypass stack carries.
// +kubebuilder:validation:Enum=Off;Connect;On
type BypassTCP string

const (
	// BypassTCPOff leaves every TCP socket on the kernel (the default).
	BypassTCPOff BypassTCP = "Off"
	// BypassTCPConnect accelerates outgoing connections only; listeners stay on the kernel (for
	// servers that accept in forked children).
	BypassTCPConnect BypassTCP = "Connect"
	// BypassTCPOn accelerates outgoing connections and listeners.
	BypassTCPOn BypassTCP = "On"
)

// BypassSpec configures the bypass stack in latency pods.
type BypassSpec struct {
	// Require makes a socket the stack cannot accelerate fail its call (bind, connect, send) with an
	// error naming the cause, instead of running on the kernel unnoticed: a latency pod that falls back
	// silently is a latency incident. Default true.
	// +optional
	// +kubebuilder:default=true
	Require *bool `json:"require,omitempty"`
	// TCP says which TCP connections the stack carries: Off (default), Connect or On.
	// +optional
	// +kubebuilder:default=Off
	TCP BypassTCP `json:"tcp,omitempty"`
}

// RequireBypass reports whether latency pods of this profile must be accelerated (spec.bypass.require,
// default true).
func (s *LatencyProfileSpec) RequireBypass() bool {
	return s.Bypass == nil || s.Bypass.Require == nil || *s.Bypass.Require
}

// BypassTCPMode is spec.bypass.tcp with its default.
func (s *LatencyProfileSpec) BypassTCPMode() BypassTCP {
	if s.Bypass == nil || s.Bypass.TCP == "" {
		return BypassTCPOff
	}
	return s.Bypass.TCP
}

// PTPRole is the PTP role a node plays.
// +kubebuilder:validation:Enum=slave;grandmaster;boundary
type PTPRole string

const (
	// PTPRoleSlave is an ordinary clock that only follows a master: the role of a trading node.
	PTPRoleSlave PTPRole = "slave"
	// PTPRoleGrandmaster is an ordinary clock that only serves time; for labs without a grandmaster.
	PTPRoleGrandmaster PTPRole = "grandmaster"
	// PTPRoleBoundary is a boundary clock over ptp.interfaces: locked to the best master through
	// one port, it serves time through the others.
	PTPRoleBoundary PTPRole = "boundary"
)

// PTPTransport is the network transport of PTP messages.
// +kubebuilder:validation:Enum=L2;UDPv4
type PTPTransport string

const (
	// PTPTransportL2 sends PTP in Ethernet frames (ethertype 0x88F7).
	PTPTransportL2 PTPTransport = "L2"
	// PTPTransportUDPv4 sends PTP over UDP/IPv4 multicast (ports 319 and 320).
	PTPTransportUDPv4 PTPTransport = "UDPv4"
)

// PTPTimestamping says where packet time stamps are taken.
// +kubebuilder:validation:Enum=hardware;software
type PTPTimestamping string

const (
	// PTPTimestampingHardware uses the NIC's PTP hardware clock; phc2sys copies it to the system clock.
	PTPTimestampingHardware PTPTimestamping = "hardware"
	// PTPTimestampingSoftware uses kernel software time stamps (ptp4l -S), for NICs without a PHC.
	// Expect microseconds, not nanoseconds.
	PTPTimestampingSoftware PTPTimestamping = "software"
)

// PTPSchedulingPolicy is the Linux scheduling policy of ptp4l and phc2sys.
// +kubebuilder:validation:Enum=SCHED_FIFO;SCHED_OTHER
type PTPSchedulingPolicy string

const (
	// PTPSchedulingFIFO runs them real-time, ahead of every ordinary thread on the reserved CPUs.
	PTPSchedulingFIFO PTPSchedulingPolicy = "SCHED_FIFO"
	// PTPSchedulingOther runs them with the kernel's ordinary time sharing.
	PTPSchedulingOther PTPSchedulingPolicy = "SCHED_OTHER"
)

// Defaults of a profile's ptp section: the CRD's +kubebuilder:default markers give the same values
// to a stored profile, internal/resolve to a node's PTPTuning, and internal/ptp to the Config the
// agent runs.
const (
	DefaultPTPRole         = PTPRoleSlave
	DefaultPTPTransport    = PTPTransportUDPv4
	DefaultPTPTimestamping = PTPTimestampingHardware
	// DefaultPTPMaxOffsetNs is the offset threshold when none is given: 1 µs, well inside what
	// hardware time stamping holds and far inside MiFID II RTS 25's 100 µs for HFT.
	DefaultPTPMaxOffsetNs int64 = 1000
	// DefaultPTPMaxSystemOffsetNs is the system clock's threshold when none is given: 1 µs, the
	// same budget again for the copy from the NIC's clock to CLOCK_REALTIME.
	DefaultPTPMaxSystemOffsetNs int64 = 1000
	// DefaultPTPSchedulingPolicy and DefaultPTPSchedulingPriority: SCHED_FIFO at 10, the priority
	// the PTP operator's documentation sets with ptpSchedulingPolicy SCHED_FIFO.
	DefaultPTPSchedulingPolicy   = PTPSchedulingFIFO
	DefaultPTPSchedulingPriority = 10
	// DefaultPTPHoldTime is how long a node may stay out of sync before TimeSynced turns false when
	// ptp.holdTime is absent.
	DefaultPTPHoldTime = 10 * time.Second
)

// PTPSpec is a profile's PTP time sync: one ptp4l port per node, judged against maxOffsetNs.
// +kubebuilder:validation:XValidation:rule="(has(self.interface) ? 1 : 0) + (has(self.nicGroup) ? 1 : 0) + (has(self.interfaces) ? 1 : 0) == 1",message="ptp: set exactly one of ptp.interface (an interface name such as ens1f0), ptp.nicGroup (the name of a spec.nics[] group) and ptp.interfaces (a boundary clock's ports)"
// +kubebuilder:validation:XValidation:rule="!has(self.ownsSystemClock) || !self.ownsSystemClock || !has(self.role) || self.role != 'grandmaster'",message="ptp.ownsSystemClock: a grandmaster's system clock is its source (it may follow NTP): remove ownsSystemClock, or use it on slaves and boundary clocks"
// +kubebuilder:validation:XValidation:rule="has(self.interfaces) == (has(self.role) && self.role == 'boundary')",message="ptp.interfaces: a boundary clock (ptp.role boundary) runs over ptp.interfaces, and only it: list its ports there, or give an ordinary clock ptp.interface"
// +kubebuilder:validation:XValidation:rule="!has(self.phc2sysOptions) || size(self.phc2sysOptions) == 0 || !has(self.timestamping) || self.timestamping == 'hardware'",message="ptp.phc2sysOptions: phc2sys does not run with software timestamping; remove the options or use hardware timestamping"
// +kubebuilder:validation:XValidation:rule="!has(self.schedulingPriority) || !has(self.schedulingPolicy) || self.schedulingPolicy == 'SCHED_FIFO'",message="ptp.schedulingPriority: SCHED_OTHER has no priority; remove ptp.schedulingPriority or set ptp.schedulingPolicy to SCHED_FIFO"
type PTPSpec struct {
	// Role is slave (follow a master; trading nodes) or grandmaster (serve time; labs).
	// +optional
	// +kubebuilder:default=slave
	Role PTPRole `json:"role,omitempty"`

	// Interface is the network interface ptp4l runs on. Set this or nicGroup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[^/:\s\[\]]+$`
	Interface string `json:"interface,omitempty"`

	// NICGroup names a spec.nics[] group; ptp4l runs on the interface that group selects on each
	// node (it must select exactly one there). Set this or interface.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	NICGroup string `json:"nicGroup,omitempty"`

	// Interfaces are a boundary clock's ports, in order (role boundary): ptp4l runs one port on
	// each. The best master algorithm makes the port towards the best master SLAVE and the others
	// MASTER. Set this, interface or nicGroup.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:Pattern=`^[^/:\s\[\]]+$`
	Interfaces []string `json:"interfaces,omitempty"`

	// Domain is the PTP domain number, 0..127: the one your grandmaster announces (0 for the
	// default profile, 24 for G.8275.1).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 127",message="ptp.domain must be in 0..127 (IEEE 1588 reserves 128-255)"
	Domain int32 `json:"domain,omitempty"`

	// Transport is L2 (Ethernet) or UDPv4.
	// +optional
	// +kubebuilder:default=UDPv4
	Transport PTPTransport `json:"transport,omitempty"`

	// Timestamping is hardware (NIC clock plus phc2sys) or software (ptp4l -S, no phc2sys).
	// +optional
	// +kubebuilder:default=hardware
	Timestamping PTPTimestamping `json:"timestamping,omitempty"`

	// Ptp4lOptions are extra ptp4l configuration options (ptp4l(8)), name to value. Options the
	// fields above control are refused by the agent.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 64 && size(self[k]) <= 256)",message="ptp.ptp4lOptions: names must be 1 to 64 characters and values at most 256"
	Ptp4lOptions map[string]string `json:"ptp4lOptions,omitempty"`

	// Phc2sysOptions are extra phc2sys options: a configuration option name or a short flag such
	// as "-R", to its value. Only with hardware timestamping.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 64 && size(self[k]) <= 256)",message="ptp.phc2sysOptions: names must be 1 to 64 characters and values at most 256"
	Phc2sysOptions map[string]string `json:"phc2sysOptions,omitempty"`

	// MaxOffsetNs is the largest |offset from master| in nanoseconds that still counts as in sync.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	MaxOffsetNs int64 `json:"maxOffsetNs,omitempty"`

	// MaxSystemOffsetNs is the largest |offset| in nanoseconds of the system clock (CLOCK_REALTIME,
	// the clock applications timestamp trades with) from the NIC's clock, as phc2sys reports it,
	// that still counts as in sync; a slave whose phc2sys reports nothing is not in sync either.
	// Hardware time stamping only: with software time stamping ptp4l steers the system clock
	// itself and maxOffsetNs judges it. MiFID II RTS 25 allows HFT 100 µs from UTC in all.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	MaxSystemOffsetNs int64 `json:"maxSystemOffsetNs,omitempty"`

	// OwnsSystemClock says PTP alone steers the system clock: the agent stops and masks the host's
	// clock daemons (chrony, ntp, ntpsec, openntpd, systemd-timesyncd units) while the profile
	// applies, journaling each one's original state, and unmasks them (and starts those that ran)
	// when the profile goes. Without it, a running one only makes TimeSynced False
	// (ClockConflict). Not with role grandmaster.
	// +optional
	OwnsSystemClock bool `json:"ownsSystemClock,omitempty"`

	// SchedulingPolicy is how ptp4l and phc2sys are scheduled: SCHED_FIFO (real-time, so a
	// loaded node still answers sync messages and steers its clock on time) or SCHED_OTHER. Either
	// way they run on the node's reserved CPUs (spec.cpu.reserved), off the isolated ones.
	// +optional
	// +kubebuilder:default=SCHED_FIFO
	SchedulingPolicy PTPSchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// SchedulingPriority is their SCHED_FIFO priority, 1..65 as the PTP operator's
	// ptpSchedulingPriority. Unset: 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65
	SchedulingPriority *int32 `json:"schedulingPriority,omitempty"`

	// HoldTime is how long the node may be out of sync (port not SLAVE, or offset above
	// maxOffsetNs) without interruption before TimeSynced turns False. 0s reacts at once.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	HoldTime *metav1.Duration `json:"holdTime,omitempty"`
}

// LatencyProfileStatus is what the operator observed for a profile.
type LatencyProfileStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedNodes is the number of nodes the selector picks.
	// +optional
	MatchedNodes int32 `json:"matchedNodes"`
	// OwnedNodes is the number of matched nodes this profile won (not lost to a higher priority or in conflict).
	// +optional
	OwnedNodes int32 `json:"ownedNodes"`
	// AppliedNodes is the number of owned nodes whose agent reports the current settings in effect.
	// +optional
	AppliedNodes int32 `json:"appliedNodes"`
	// RebootPendingNodes is the number of owned nodes waiting for a reboot to finish applying.
	// +optional
	RebootPendingNodes int32 `json:"rebootPendingNodes"`
	// DegradedNodes is the number of owned nodes where something could not be applied.
	// +optional
	DegradedNodes int32 `json:"degradedNodes"`
	// Conditions: Ready, Progressing, Degraded, Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LatencyProfile is the tuning a set of nodes needs to run latency-critical trading pods: CPU isolation,
// huge pages, power, kernel arguments, IRQ placement, sysctls and NICs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=lp,categories=tickstack
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedNodes`
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.appliedNodes`
// +kubebuilder:printcolumn:name="Reboot",type=integer,JSONPath=`.status.rebootPendingNodes`
// +kubebuilder:printcolumn:name="Degraded",type=integer,JSONPath=`.status.degradedNodes`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LatencyProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the wanted tuning.
	// +required
	Spec LatencyProfileSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status LatencyProfileStatus `json:"status,omitempty"`
}

// LatencyProfileList is a list of LatencyProfiles.
// +kubebuilder:object:root=true
type LatencyProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LatencyProfile `json:"items"`
}
