package v1alpha1

// QualifySpec parameterises the qualify suite: `tickstack qualify` on the node's data interface
// (docs/install.md "Qualifying a node's NIC"): the NIC's driver, queues, offloads and interrupts,
// native XDP and zero-copy tried, a few conformance cases and a kernel vs bypass UDP ping-pong
// against the reflector.
// +kubebuilder:object:generate=true
type QualifySpec struct {
	// Interface is the interface to qualify, as the runner pod sees it; default: the interface
	// holding the runner's address towards the reflector (the profile's latency interface when the
	// pod webhook attached one).
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@-]+$`
	Interface string `json:"interface,omitempty"`
	// MessageSize of the ping-pong in bytes, 14..1472; default 64.
	// +optional
	MessageSize int32 `json:"messageSize,omitempty"`
	// DurationSeconds of each stack's ping-pong, 1..60; default 2.
	// +optional
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
}

// QualifyVerdict is the outcome of a qualification.
// +kubebuilder:validation:Enum=Supported;Degraded;Unsupported
type QualifyVerdict string

const (
	// QualifySupported: the interface runs the bypass stack at its best (native XDP, zero-copy,
	// hardware timestamps, every check passed).
	QualifySupported QualifyVerdict = "Supported"
	// QualifyDegraded: the bypass stack runs and behaves as the kernel does, but something costs
	// latency or was not measured; each reason says what.
	QualifyDegraded QualifyVerdict = "Degraded"
	// QualifyUnsupported: the bypass stack cannot run on the interface, or differs from the
	// kernel there.
	QualifyUnsupported QualifyVerdict = "Unsupported"
)

// QualifyReason is one finding that lowered the verdict.
// +kubebuilder:object:generate=true
type QualifyReason struct {
	// Check names the finding, e.g. "zeroCopy", "nativeXDP", "conformance/cmsg".
	Check string `json:"check"`
	// Verdict is what this finding alone makes of the interface (Degraded or Unsupported).
	Verdict QualifyVerdict `json:"verdict"`
	// Message says what was found and what it costs.
	Message string `json:"message"`
}

// QualifyTrial is one thing tried on the interface.
// +kubebuilder:object:generate=true
type QualifyTrial struct {
	// Works is true when the trial succeeded.
	Works bool `json:"works"`
	// Detail is what the stack reported (the mode it bound) or why the trial failed.
	// +optional
	Detail string `json:"detail,omitempty"`
}

// QualifyXDP is what the data plane got when it tried each XDP mode and bind mode.
// +kubebuilder:object:generate=true
type QualifyXDP struct {
	// Native: the XDP program in the driver's hook (TICKSTACK_XDP_MODE=native).
	Native QualifyTrial `json:"native"`
	// Generic: the XDP program after the skb is built (TICKSTACK_XDP_MODE=skb); tried only when
	// native fails.
	// +optional
	Generic *QualifyTrial `json:"generic,omitempty"`
	// ZeroCopy: the XSK bound in zero-copy mode (TICKSTACK_XDP_MODE=native,zerocopy).
	ZeroCopy QualifyTrial `json:"zeroCopy"`
}

// QualifyQueues are the interface's channels (ethtool -l) and its receive queues in sysfs.
// +kubebuilder:object:generate=true
type QualifyQueues struct {
	// RX, TX and Combined are the current channel counts; MaxCombined the driver's limit.
	// Unknown (the driver has no channels call) when ChannelsError is set.
	RX          int32 `json:"rx"`
	TX          int32 `json:"tx"`
	Combined    int32 `json:"combined"`
	MaxCombined int32 `json:"maxCombined"`
	// ChannelsError is why the channels could not be read.
	// +optional
	ChannelsError string `json:"channelsError,omitempty"`
	// ReceiveQueues is the count of /sys/class/net/IF/queues/rx-*: the queues the stack serves
	// (an XSK on each).
	ReceiveQueues int32 `json:"receiveQueues"`
}

// QualifySteering is the flow steering the interface offers (ethtool -k, -n, -x).
// +kubebuilder:object:generate=true
type QualifySteering struct {
	// NTuple is the ntuple-filters feature (ethtool -k): on, off or unsupported.
	NTuple string `json:"ntuple"`
	// NTupleRules is how many flow steering rules are installed (ethtool -n); absent when the
	// driver does not say.
	// +optional
	NTupleRules *int32 `json:"ntupleRules,omitempty"`
	// RXHash is the receive-hashing feature (ethtool -k): on, off or unsupported.
	RXHash string `json:"rxHash"`
	// RSSRings is the receive rings RSS spreads over (ethtool -x); 0 when the driver has no RSS.
	RSSRings int32 `json:"rssRings"`
	// IndirectionTableSize is the RSS indirection table's size; 0 when the driver has none.
	IndirectionTableSize int32 `json:"indirectionTableSize"`
}

// QualifyTimestamping is the interface's timestamping capability (ethtool -T).
// +kubebuilder:object:generate=true
type QualifyTimestamping struct {
	// HardwareTX and HardwareRX: SOF_TIMESTAMPING_TX_HARDWARE, SOF_TIMESTAMPING_RX_HARDWARE.
	HardwareTX bool `json:"hardwareTX"`
	HardwareRX bool `json:"hardwareRX"`
	// PHCIndex is the PTP hardware clock's index (/dev/ptpN); -1 when there is none.
	PHCIndex int32 `json:"phcIndex"`
	// Capabilities are the SOF_TIMESTAMPING_* names the driver reports, as ethtool -T prints them.
	// +listType=atomic
	Capabilities []string `json:"capabilities,omitempty"`
	// Error is why the capability could not be read.
	// +optional
	Error string `json:"error,omitempty"`
}

// QualifyIRQ is one interrupt of the interface's device.
// +kubebuilder:object:generate=true
type QualifyIRQ struct {
	IRQ int32 `json:"irq"`
	// Name is its /proc/interrupts action name (the queue, e.g. "ice-eth0-TxRx-3").
	// +optional
	Name string `json:"name,omitempty"`
	// CPUs is its affinity (/proc/irq/N/smp_affinity_list).
	CPUs string `json:"cpus"`
	// NodeLocal is true when every CPU of the affinity is on the device's NUMA node.
	// +optional
	NodeLocal *bool `json:"nodeLocal,omitempty"`
}

// QualifyConformance is one conformance case (dataplane/tests/conform.c) run on the kernel and
// through the stack against the peer.
// +kubebuilder:object:generate=true
type QualifyConformance struct {
	Case string `json:"case"`
	// Passed: the transcripts were equal and the stack's XSK carried the datagrams.
	Passed bool `json:"passed"`
	// Detail is why a case failed (the first differing lines, or the counters).
	// +optional
	Detail string `json:"detail,omitempty"`
}

// QualifyPingPong is the UDP ping-pong of one stack on the interface.
// +kubebuilder:object:generate=true
type QualifyPingPong struct {
	Stack       Stack `json:"stack"`
	MessageSize int32 `json:"messageSize"`
	// MedianNs and P99Ns are sockperf's half round trips; 0 with Error.
	MedianNs int64 `json:"medianNs,omitempty"`
	P99Ns    int64 `json:"p99Ns,omitempty"`
	// Error is why the stack was not measured.
	// +optional
	Error string `json:"error,omitempty"`
}

// QualifyReport is what `tickstack qualify` found on one interface, and its verdict.
// +kubebuilder:object:generate=true
type QualifyReport struct {
	// Interface is the qualified interface; Address its IPv4 address used for the trials.
	Interface string `json:"interface"`
	// +optional
	Address string `json:"address,omitempty"`
	// Peer is the reflector's data address the conformance cases and ping-pong ran against;
	// empty when none was given.
	// +optional
	Peer string `json:"peer,omitempty"`
	// Kernel is the running kernel's release (uname -r).
	// +optional
	Kernel string `json:"kernel,omitempty"`
	// Driver, DriverVersion, Firmware and BusInfo are ethtool -i's.
	Driver        string `json:"driver"`
	DriverVersion string `json:"driverVersion,omitempty"`
	Firmware      string `json:"firmware,omitempty"`
	BusInfo       string `json:"busInfo,omitempty"`
	// NUMANode is the device's NUMA node; -1 when the kernel does not say (one node, or a
	// virtual interface).
	NUMANode int32 `json:"numaNode"`
	// NodeCPUs are the CPUs of NUMANode.
	// +optional
	NodeCPUs     string              `json:"nodeCPUs,omitempty"`
	Queues       QualifyQueues       `json:"queues"`
	Steering     QualifySteering     `json:"steering"`
	Timestamping QualifyTimestamping `json:"timestamping"`
	// IRQs are the device's interrupts (none on a virtual interface).
	// +listType=atomic
	IRQs []QualifyIRQ `json:"irqs,omitempty"`
	XDP  QualifyXDP   `json:"xdp"`
	// +listType=atomic
	Conformance []QualifyConformance `json:"conformance,omitempty"`
	// +listType=atomic
	PingPong []QualifyPingPong `json:"pingPong,omitempty"`
	// Verdict: Supported, Degraded or Unsupported; Reasons lists each finding behind it, the
	// Unsupported ones first.
	Verdict QualifyVerdict `json:"verdict"`
	// +listType=atomic
	Reasons []QualifyReason `json:"reasons,omitempty"`
	// Error is why the qualification could not run at all (then Verdict is Unsupported).
	// +optional
	Error string `json:"error,omitempty"`
}
