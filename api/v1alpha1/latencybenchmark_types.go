package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a LatencyBenchmark.
const (
	// BenchmarkValid is False when the spec cannot run (suites, thresholds or schedule malformed in
	// a way the CRD's rules cannot see); its message names the field and the fix.
	BenchmarkValid = "Valid"
	// BenchmarkComplete is True when every target node of the current run has a verdict.
	BenchmarkComplete = "Complete"
	// BenchmarkPassed is True when the current run is complete and every node passed.
	BenchmarkPassed = "Passed"
	// BenchmarkNamespaceOptedIn is False when the benchmark's namespace is not opted in to
	// benchmarks: the manager may create Jobs and their objects only in namespaces where an
	// administrator bound it the benchmark namespace ClusterRole (docs/security.md); its message
	// names the namespace and the RoleBinding to create. Nothing is created until it is True.
	BenchmarkNamespaceOptedIn = "NamespaceOptedIn"
)

// Condition reasons of a LatencyBenchmark.
const (
	// ReasonSpecValid: the spec passed validation.
	ReasonSpecValid = "SpecValid"
	// ReasonInvalidSpec: see the message for the field and the fix.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonRunning: Jobs of the current run are still measuring.
	ReasonRunning = "Running"
	// ReasonAllNodesDone: every node of the run has a verdict.
	ReasonAllNodesDone = "AllNodesDone"
	// ReasonNoTargetNodes: the target matches no node.
	ReasonNoTargetNodes = "NoTargetNodes"
	// ReasonAllPassed: every node met the thresholds.
	ReasonAllPassed = "AllPassed"
	// ReasonNodesFailed: at least one node failed a threshold or its Job failed.
	ReasonNodesFailed = "NodesFailed"
	// ReasonNodesInconclusive: nothing failed, but something a threshold needs was not measured.
	ReasonNodesInconclusive = "NodesInconclusive"
	// ReasonNamespaceOptedIn: the manager may create the benchmark's objects in its namespace.
	ReasonNamespaceOptedIn = "NamespaceOptedIn"
	// ReasonNamespaceNotOptedIn: the manager may not; the message names the RoleBinding to create.
	ReasonNamespaceNotOptedIn = "NamespaceNotOptedIn"
)

// Keys of a results ConfigMap, written by tickstack-bench-upload in the benchmark pod.
const (
	// BenchResultsKey holds the runner's results document (BenchmarkResults as JSON).
	BenchResultsKey = "results.json"
	// BenchExitCodeKey holds the runner's exit code.
	BenchExitCodeKey = "exit-code"
	// BenchErrorKey says why there are no results (the runner wrote none, or they were too large).
	BenchErrorKey = "error"
)

// JitterCPUsPod as suites.jitter.cpus measures the CPUs the kubelet gave the runner container
// (its exclusive CPUs under the static CPU manager), which a spec cannot know in advance.
const JitterCPUsPod = "pod"

// ValidationSpec says how a LatencyProfile's nodes are gated on their benchmark.
type ValidationSpec struct {
	// TaintUntilValidated keeps the NoSchedule taint tickstack.io/unvalidated on every node where
	// this profile is applied (label tickstack.io/profile=<profile>) until a LatencyBenchmark passes
	// there and labels it tickstack.io/validated=<profile>. Benchmark pods tolerate it.
	// +optional
	TaintUntilValidated bool `json:"taintUntilValidated,omitempty"`
}

// BenchmarkTarget picks the nodes to measure: exactly one of profile, nodeSelector, nodeNames.
// +kubebuilder:validation:XValidation:rule="(has(self.profile) ? 1 : 0) + (has(self.nodeSelector) ? 1 : 0) + (has(self.nodeNames) ? 1 : 0) == 1",message="target: set exactly one of profile, nodeSelector or nodeNames"
type BenchmarkTarget struct {
	// Profile measures every node where this LatencyProfile is applied (label
	// tickstack.io/profile=<profile>); passing nodes are labelled tickstack.io/validated=<profile>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Profile string `json:"profile,omitempty"`
	// NodeSelector measures the nodes with these labels.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// NodeNames measures these nodes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	NodeNames []string `json:"nodeNames,omitempty"`
}

// PlacementMode says where the reflector runs relative to the runner.
// +kubebuilder:validation:Enum=SamePod;TwoPods
type PlacementMode string

const (
	// PlacementSamePod runs the reflector and the runner as two containers of one pod: one network
	// namespace, so traffic stays inside the node's stack (loopback routing). It measures the
	// kernel stack and CPU isolation, not the NIC.
	PlacementSamePod PlacementMode = "SamePod"
	// PlacementTwoPods runs the reflector and the runner as two pods on the node (two Jobs), each
	// with its own network namespace. With target.profile both pods get the profile's network from
	// the pod webhook, and the traffic goes over its first interface (lat0: a VF, or a macvlan,
	// ipvlan or host device): the runner reaches the reflector's control port through a Service
	// made per node and run, and the reflector's sockperf servers bind to lat0's address. The
	// bypass stack needs it.
	PlacementTwoPods PlacementMode = "TwoPods"
)

// BenchmarkPlacement sizes and places the benchmark pods. Every container gets requests equal to
// limits (Guaranteed QoS), and whole CPUs where asked, so the kubelet's static CPU manager gives
// them exclusive CPUs.
type BenchmarkPlacement struct {
	// Mode: SamePod (default) or TwoPods.
	// +optional
	// +kubebuilder:default=SamePod
	Mode PlacementMode `json:"mode,omitempty"`
	// RunnerCPUs is the number of exclusive CPUs of the runner (sockperf client, oslat,
	// cyclictest); default 1. jitter.cpus must be among the CPUs it gets.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	RunnerCPUs *int32 `json:"runnerCPUs,omitempty"`
	// ReflectorCPUs is the number of exclusive CPUs of the reflector (sockperf servers); default 1.
	// 0 puts it on the node's shared CPUs with no CPU request (memory only, no CPU quota to
	// throttle it), for nodes whose exclusive CPUs all go to the runner.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	ReflectorCPUs *int32 `json:"reflectorCPUs,omitempty"`
	// Memory of each container; default 512Mi.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// LatencyBenchmarkSpec is what to measure, where, how often, and what passes.
// +kubebuilder:validation:XValidation:rule="has(self.suites.pingPong) || has(self.suites.rateSweep) || has(self.suites.microburst) || has(self.suites.mixedBurst) || has(self.suites.jitter) || has(self.suites.ptp) || has(self.suites.tickToTrade) || has(self.suites.qualify)",message="suites: select at least one of pingPong, rateSweep, microburst, mixedBurst, jitter, ptp, tickToTrade, qualify"
// +kubebuilder:validation:XValidation:rule="!has(self.suites.qualify) || (has(self.stacks) && 'bypass' in self.stacks)",message="suites.qualify needs bypass in stacks (with target.profile and placement.mode TwoPods): its trials run the bypass stack through the profile's node daemon, tickstack-xdpd, and its ping-pong compares the two stacks"
// +kubebuilder:validation:XValidation:rule="!has(self.suites.stacks)",message="suites.stacks: set the stacks to compare in spec.stacks instead"
// +kubebuilder:validation:XValidation:rule="!has(self.stacks) || !('bypass' in self.stacks) || has(self.target.profile)",message="stacks: bypass needs target.profile: the pod webhook sets the bypass stack up from that profile"
// +kubebuilder:validation:XValidation:rule="!has(self.stacks) || !('bypass' in self.stacks) || (has(self.placement) && self.placement.mode == 'TwoPods')",message="stacks: bypass needs placement.mode TwoPods: in one pod the traffic never leaves through an interface the bypass stack can drive"
type LatencyBenchmarkSpec struct {
	// Target picks the nodes; one Job per node.
	// +required
	Target BenchmarkTarget `json:"target"`

	// Stacks to run the network suites on and compare: kernel (default), bypass, or both.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	Stacks []Stack `json:"stacks,omitempty"`

	// Suites to run and their parameters (docs/benchmark-methods.md); unset suites are not run.
	// tickToTrade.baseline names another LatencyBenchmark of this namespace whose tickToTrade
	// results are the untuned figures (docs/benchmark.md "Tuned vs untuned").
	// jitter.cpus may be "pod": the CPUs the runner container was given. ptp reads the node
	// agent's ptp4l through /run/tickstack/ptp, where the runner pod mounts the agent's read-only PTP directory. Rules on lists (message
	// sizes, rates) and strings (jitter.cpus) are checked by the controller, which reports them on the Valid condition: the embedded types carry no maxItems,
	// so CEL rules over them exceed the API server's cost budget.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.rateSweep) || !has(self.rateSweep.protocol) || self.rateSweep.protocol != 'tcp'",message="suites.rateSweep.protocol: tcp has no message drops to detect: use udp or udpMulticast"
	// +kubebuilder:validation:XValidation:rule="!has(self.mixedBurst) || !has(self.mixedBurst.durationSeconds) || self.mixedBurst.durationSeconds % 2 == 0",message="suites.mixedBurst.durationSeconds: use an even number (a burst period is 2 s)"
	// +kubebuilder:validation:XValidation:rule="!has(self.tickToTrade) || !has(self.tickToTrade.burstMps) || self.tickToTrade.burstMps == 0 || !has(self.tickToTrade.durationSeconds) || self.tickToTrade.durationSeconds % 2 == 0",message="suites.tickToTrade.durationSeconds: with burstMps use an even number (a burst period is 2 s)"
	// +kubebuilder:validation:XValidation:rule="!has(self.ptp) || !has(self.ptp.socket) || self.ptp.socket.startsWith('/run/tickstack/ptp/')",message="suites.ptp.socket: the benchmark pod mounts only the node agent's read-only PTP directory: give a socket under /run/tickstack/ptp/ (default /run/tickstack/ptp/ptp4l.sock)"
	Suites BenchmarkSuites `json:"suites"`

	// Thresholds a node must meet to pass; unset ones are not checked. With none, a node passes
	// when every suite completed. Durations and ratios are checked by the controller (Valid
	// condition).
	// +optional
	Thresholds Thresholds `json:"thresholds,omitempty"`

	// Schedule reruns the benchmark periodically, in cron syntax ("0 3 * * *", "@daily",
	// "@every 6h"), evaluated in UTC, counted from the start of the last run. A scheduled run that
	// falls due while a run is measuring starts when that run finishes.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9a-z.]+|\\\\S+( +\\\\S+){4})$')",message="schedule: write a cron expression with five fields such as \"0 3 * * *\", or @daily, @hourly, @every 6h"
	Schedule string `json:"schedule,omitempty"`

	// Placement sizes and places the benchmark pods.
	// +optional
	Placement *BenchmarkPlacement `json:"placement,omitempty"`

	// MaxParallel is how many nodes are measured at once: a run creates the Jobs of the first
	// MaxParallel nodes (by name), and each node's verdict lets the next one start (Waiting until
	// then). A fleet of a thousand nodes is measured in waves instead of a thousand pods at once.
	// Unset: every node at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxParallel *int32 `json:"maxParallel,omitempty"`

	// TimeoutSeconds bounds each node's Job (activeDeadlineSeconds); default 3600.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// NodeRunPhase is where one node's measurement stands.
// +kubebuilder:validation:Enum=Waiting;Pending;Running;Completed;Failed
type NodeRunPhase string

const (
	// NodeWaiting: no Job yet; the node waits for one of spec.maxParallel slots.
	NodeWaiting NodeRunPhase = "Waiting"
	// NodePending: the Job is created, no pod runs yet.
	NodePending NodeRunPhase = "Pending"
	// NodeRunning: the Job runs.
	NodeRunning NodeRunPhase = "Running"
	// NodeCompleted: results arrived and were judged (see verdict).
	NodeCompleted NodeRunPhase = "Completed"
	// NodeFailed: the Job ended without results (see message); the verdict is Failed.
	NodeFailed NodeRunPhase = "Failed"
)

// MaxBenchmarkNodes is the most nodes one LatencyBenchmark measures: its status holds an entry of a
// few hundred bytes for each (the tables of most in their ConfigMaps), and an object is limited to
// about 1.5 MiB. A larger fleet is measured by several benchmarks (by profile or nodeSelector).
const MaxBenchmarkNodes = 2000

// BenchmarkNodeStatus is one node's outcome in the current run.
type BenchmarkNodeStatus struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Profile is the LatencyProfile applied on the node when the run started (its
	// tickstack.io/profile label); the validated label names it.
	// +optional
	Profile string `json:"profile,omitempty"`
	// Job is the Job measuring the node.
	// +optional
	Job string `json:"job,omitempty"`
	// Phase is Pending, Running, Completed or Failed.
	Phase NodeRunPhase `json:"phase"`
	// Message says what is happening or what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// CompletionTime is when the results were collected or the Job failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Results are every suite's tables as the runner measured them. In a fleet too large for every
	// node's tables to fit one object, the nodes past the status's share (256 KiB of results and
	// comparisons, in node order) keep theirs in the run's results ConfigMap instead, named by
	// resultsConfigMap.
	// +optional
	Results *BenchmarkResults `json:"results,omitempty"`
	// ResultsConfigMap, when set, is the ConfigMap in the benchmark's namespace (key results.json)
	// that holds this node's results in place of the results field, which is then empty, as are
	// the comparisons and the verdict's reasons (the verdict's result and the message stay); it
	// lives as long as the run. `tickstack bench` and `tickstack report` read it and show the
	// reasons again from the results and spec.thresholds.
	// +optional
	ResultsConfigMap string `json:"resultsConfigMap,omitempty"`
	// Comparisons are the kernel vs bypass ratios of every row measured on both stacks (left out
	// with the results when those are in resultsConfigMap).
	// +optional
	// +listType=atomic
	Comparisons []StackComparison `json:"comparisons,omitempty"`
	// Verdict is the judgement against the thresholds, with one reason per check.
	// +optional
	Verdict *Verdict `json:"verdict,omitempty"`
	// TickToTradeBaseline compares the node's tickToTrade results with the baseline named by
	// suites.tickToTrade.baseline (tuned vs untuned), as it was when the node was judged.
	// +optional
	TickToTradeBaseline *TickToTradeComparison `json:"tickToTradeBaseline,omitempty"`
	// Labelled is true once the node's tickstack.io/validated label was updated for this verdict
	// (set when passed, removed when failed, left as it was when inconclusive), so a later run of
	// another benchmark is not overwritten by this one.
	// +optional
	Labelled bool `json:"labelled,omitempty"`
}

// LatencyBenchmarkStatus is the current run's progress and outcome.
type LatencyBenchmarkStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Run counts the runs; the current run's Jobs carry it (label tickstack.io/benchmark-run).
	// +optional
	Run int64 `json:"run,omitempty"`
	// RunGeneration is the spec generation the current run measures.
	// +optional
	RunGeneration int64 `json:"runGeneration,omitempty"`
	// RunReason says why the current run started: Created, SpecChanged, Rerun or Schedule.
	// +optional
	RunReason string `json:"runReason,omitempty"`
	// Rerun is the value of the tickstack.io/rerun annotation the controller last acted on.
	// +optional
	Rerun string `json:"rerun,omitempty"`
	// StartTime is when the current run started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the current run's last node got its verdict.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// LastScheduleTime is when the schedule last started a run.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the schedule will start the next run.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Verdict of the current run over all nodes: Failed if any node failed, Inconclusive if any
	// was, Passed if all passed; empty while it runs.
	// +optional
	Verdict VerdictResult `json:"verdict,omitempty"`
	// NodesTotal is the number of target nodes of the current run.
	// +optional
	NodesTotal int32 `json:"nodesTotal"`
	// NodesPassed is the number of them that passed.
	// +optional
	NodesPassed int32 `json:"nodesPassed"`
	// Nodes holds each target node's tables, ratios, verdict and reasons (the tables, ratios and
	// reasons of the nodes past the status's share in their results ConfigMaps: resultsConfigMap).
	// One benchmark measures at most MaxBenchmarkNodes nodes.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=2000
	Nodes []BenchmarkNodeStatus `json:"nodes,omitempty"`
	// Conditions: Valid, Complete, Passed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LatencyBenchmark measures nodes with the seed papers' methods (sockperf ping-pong by size,
// latency under load by rate, microburst, mixed bursts, OS jitter, tick-to-trade), judges them against thresholds,
// and labels the nodes that pass tickstack.io/validated=<profile>.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=lbench,categories=tickstack
// +kubebuilder:printcolumn:name="Run",type=integer,JSONPath=`.status.run`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Passed",type=integer,JSONPath=`.status.nodesPassed`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodesTotal`
// +kubebuilder:printcolumn:name="Complete",type=string,JSONPath=`.status.conditions[?(@.type=="Complete")].status`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`,priority=1
// +kubebuilder:printcolumn:name="Last Run",type=date,JSONPath=`.status.startTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LatencyBenchmark struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LatencyBenchmarkSpec   `json:"spec,omitempty"`
	Status LatencyBenchmarkStatus `json:"status,omitempty"`
}

// LatencyBenchmarkList is a list of LatencyBenchmarks.
// +kubebuilder:object:root=true
type LatencyBenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LatencyBenchmark `json:"items"`
}
