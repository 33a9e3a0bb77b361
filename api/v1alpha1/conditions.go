package v1alpha1

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
	// NodeRebootRequired is True when kernel arguments were written, or BIOS settings staged
	// (spec.firmware), and wait for a reboot.
	NodeRebootRequired = "RebootRequired"
	// NodeDrifted is True when a setting was changed on the host after it was applied.
	NodeDrifted = "Drifted"
	// NodeTimeSynced is True while the node's clock follows PTP within spec.tuning.ptp.maxOffsetNs
	// (or, for a grandmaster, while ptp4l serves time); False once it has been out of bounds longer
	// than the hold time. Only present when the tuning has a ptp section.
	NodeTimeSynced = "TimeSynced"
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
	// ReasonRolloutPaused: nodes wait for a reboot and spec.rollout.paused holds them.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonOutsideWindow: nodes wait for a reboot until a spec.rollout.windows window opens.
	ReasonOutsideWindow = "OutsideMaintenanceWindow"
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

// Condition types in a LatencyNodeState's status.bios, written by the operator's BIOS reconciler.
const (
	// BIOSBMCReachable is True when the operator reached the node's BMC and logged in.
	BIOSBMCReachable = "BMCReachable"
	// BIOSValid is True when the node's attribute registry accepts every wanted attribute.
	BIOSValid = "BIOSValid"
	// BIOSAppliedCondition is True when every wanted attribute is in effect.
	BIOSAppliedCondition = "BIOSApplied"
)

// Reasons of the BIOS conditions.
const (
	// ReasonBMCConnected: the BMC answered and accepted the credentials.
	ReasonBMCConnected = "Connected"
	// ReasonNoBMC: no BMC object for the node.
	ReasonNoBMC = "NoBMC"
	// ReasonBMCSecret: the credentials Secret is missing or lacks username/password.
	ReasonBMCSecret = "CredentialsSecretInvalid"
	// ReasonBMCConfig: the BMC object cannot be used as it is (nothing was sent).
	ReasonBMCConfig = "BMCConfigInvalid"
	// ReasonBMCTLS: the BMC's certificate is not trusted.
	ReasonBMCTLS = "TLSFailed"
	// ReasonBMCAuth: the BMC refused the credentials.
	ReasonBMCAuth = "AuthenticationFailed"
	// ReasonBMCUnreachable: the BMC did not answer.
	ReasonBMCUnreachable = "Unreachable"
	// ReasonBMCProtocol: the BMC answered with a Redfish error.
	ReasonBMCProtocol = "RedfishError"
	// ReasonBIOSValid: the registry accepts every attribute.
	ReasonBIOSValid = "Valid"
	// ReasonBIOSInvalid: the registry refuses some attributes; nothing was staged.
	ReasonBIOSInvalid = "InvalidAttributes"
	// ReasonBIOSPresetUnknown: the preset names no vendor the operator knows for this BMC.
	ReasonBIOSPresetUnknown = "PresetUnavailable"
	// ReasonBIOSInEffect: every attribute is in effect.
	ReasonBIOSInEffect = "InEffect"
	// ReasonBIOSPendingReboot: attributes are staged and wait for the node's reboot slot.
	ReasonBIOSPendingReboot = "PendingReboot"
	// ReasonBIOSNotApplied: after the reboot some attributes are not in effect.
	ReasonBIOSNotApplied = "NotApplied"
	// ReasonBIOSDrifted: attributes that were in effect changed since.
	ReasonBIOSDrifted = "Drifted"
	// ReasonBIOSUnknown: the BMC could not be read, so nothing is known.
	ReasonBIOSUnknown = "Unknown"
	// ReasonWaitingForBootID: the node's kubelet has not reported a boot ID yet (staging waits for
	// it, so that the reboot can be recognised).
	ReasonWaitingForBootID = "WaitingForBootID"
)

// Condition types in a BMC's status, written by the operator's BMC controller.
const (
	// BMCAccepted is True when the operator uses the BMC object; False names what it refuses
	// (reasons InsecureTransportRefused, CredentialsSecretNamespaceRefused).
	BMCAccepted = "Accepted"
	// BMCInsecureTransport is True, a warning, while the object uses a TLS opt-out the manager
	// allows (--allow-insecure-bmc): reasons InsecureSkipVerify, PlainHTTP.
	BMCInsecureTransport = "InsecureTransport"
)

// Reasons of the BMC conditions; the refusals also appear on the node states' BMCReachable.
const (
	// ReasonBMCAccepted: the operator uses the object.
	ReasonBMCAccepted = "Accepted"
	// ReasonBMCInsecureRefused: spec.tls.insecureSkipVerify or spec.allowPlainHTTP is set and the
	// manager runs without --allow-insecure-bmc (chart value bios.allowInsecureBMC).
	ReasonBMCInsecureRefused = "InsecureTransportRefused"
	// ReasonBMCSecretNamespace: spec.credentialsSecret names a Secret outside the operator's
	// namespace, which the operator cannot and will not read.
	ReasonBMCSecretNamespace = "CredentialsSecretNamespaceRefused"
	// ReasonBMCInsecureSkipVerify: spec.tls.insecureSkipVerify is in use (allowed by the manager).
	ReasonBMCInsecureSkipVerify = "InsecureSkipVerify"
	// ReasonBMCPlainHTTP: spec.allowPlainHTTP is in use with an http:// endpoint (allowed by the
	// manager): the password crosses the network in clear.
	ReasonBMCPlainHTTP = "PlainHTTP"
	// ReasonBMCTransportVerified: the BMC's certificate is verified (InsecureTransport False).
	ReasonBMCTransportVerified = "Verified"
)
