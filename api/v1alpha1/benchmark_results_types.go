package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The benchmark's results: what the node runner (internal/bench) measures, shaped to be embedded in the
// LatencyBenchmark status: camelCase JSON, integer nanoseconds, no floats.

// BenchmarkResultsSchemaVersion names the layout of BenchmarkResults; a reader refuses a document with
// another value.
const BenchmarkResultsSchemaVersion = "bench.tickstack.io/v1alpha1"

// Stack is the network stack a suite ran on.
// +kubebuilder:validation:Enum=kernel;bypass
type Stack string

const (
	// StackKernel is the plain Linux socket stack.
	StackKernel Stack = "kernel"
	// StackBypass runs the same sockperf under the tickstack dataplane launcher
	// (tickstack-run -p latency --require).
	StackBypass Stack = "bypass"
)

// Protocol is the transport a network suite used.
// +kubebuilder:validation:Enum=udp;udpMulticast;tcp
type Protocol string

const (
	// ProtocolUDP is UDP unicast.
	ProtocolUDP Protocol = "udp"
	// ProtocolUDPMulticast is UDP to a multicast group the reflector joined.
	ProtocolUDPMulticast Protocol = "udpMulticast"
	// ProtocolTCP is one TCP connection (Nagle off, as sockperf does for latency modes).
	ProtocolTCP Protocol = "tcp"
)

// SuiteName names a suite.
// +kubebuilder:validation:Enum=pingPong;rateSweep;microburst;mixedBurst;jitter;ptp;tickToTrade
type SuiteName string

const (
	// SuitePingPong is the half round trip by message size (papers 000, 001).
	SuitePingPong SuiteName = "pingPong"
	// SuiteRateSweep is latency under load across message rates (papers 000, 001, 002).
	SuiteRateSweep SuiteName = "rateSweep"
	// SuiteMicroburst is the largest back-to-back burst absorbed without a drop (paper 002).
	SuiteMicroburst SuiteName = "microburst"
	// SuiteMixedBurst is 2/3 100 B + 1/3 600 B, steady rate plus one-second bursts (paper 003).
	SuiteMixedBurst SuiteName = "mixedBurst"
	// SuiteJitter is OS noise on given CPUs with oslat and cyclictest.
	SuiteJitter SuiteName = "jitter"
	// SuitePTP is ptp4l's offset from its master, sampled through its management socket for the
	// whole run.
	SuitePTP SuiteName = "ptp"
	// SuiteTickToTrade is market data in, FIX order out, fill back and the position closed, by
	// market-data rate (paper 004).
	SuiteTickToTrade SuiteName = "tickToTrade"
)

// JitterTool names an rt-tests program.
// +kubebuilder:validation:Enum=oslat;cyclictest
type JitterTool string

const (
	// JitterOslat is rt-tests' oslat (busy loop, measures the longest gap between two reads of the TSC).
	JitterOslat JitterTool = "oslat"
	// JitterCyclictest is rt-tests' cyclictest (timer wake-up latency of a SCHED_FIFO thread).
	JitterCyclictest JitterTool = "cyclictest"
)

// LatencyStats is one latency distribution in integer nanoseconds. Latencies of network suites are
// half round trips (sockperf's RTT/2), like the papers report.
// +kubebuilder:object:generate=true
type LatencyStats struct {
	// Samples is the number of observations the statistics come from.
	Samples int64 `json:"samples"`
	// MinNs is the smallest observation.
	MinNs int64 `json:"minNs"`
	// MedianNs is the 50th percentile.
	MedianNs int64 `json:"medianNs"`
	// MeanNs is the arithmetic mean.
	MeanNs int64 `json:"meanNs"`
	// P95Ns is the 95th percentile.
	P95Ns int64 `json:"p95Ns"`
	// P99Ns is the 99th percentile.
	P99Ns int64 `json:"p99Ns"`
	// P999Ns is the 99.9th percentile.
	P999Ns int64 `json:"p999Ns"`
	// MaxNs is the largest observation.
	MaxNs int64 `json:"maxNs"`
	// StdDevNs is the sample standard deviation (n-1, as sockperf computes it).
	StdDevNs int64 `json:"stdDevNs"`
}

// PercentilePoint is one point of a percentile curve.
// +kubebuilder:object:generate=true
type PercentilePoint struct {
	// Percentile is a decimal string such as "50", "99.9" or "100".
	Percentile string `json:"percentile"`
	// ValueNs is the latency at that percentile.
	ValueNs int64 `json:"valueNs"`
}

// MaxListedStalls is how many stalls a StallReport lists; its Count says how many there were.
const MaxListedStalls = 10

// Stall is one stretch of a run in which the measured messages stood still: a message far slower
// than the run's p99.9, or a pause between two consecutive sends far longer than the run's usual
// interval, stretches that overlap or touch counted as one.
// +kubebuilder:object:generate=true
type Stall struct {
	// OffsetNs is when the stall began, from the send of the run's first timed message.
	OffsetNs int64 `json:"offsetNs"`
	// DurationNs is how long nothing moved: from the send of the first message the stall held up
	// to that message's reply, or to the next send, whichever came later.
	DurationNs int64 `json:"durationNs"`
	// LatencyNs is the latency of the slowest timed message sent during the stall; at most the
	// report's LatencyThresholdNs means no message was slow itself: the sender paused, or replies
	// went missing.
	LatencyNs int64 `json:"latencyNs"`
	// ClientRunQueueWaitNs is how long the runner's sockperf waited on a run queue for its CPU
	// (/proc/<pid>/schedstat) within the stall, widened by one sample interval (10 ms) on each
	// side (docs/benchmark-methods.md "Stalls").
	// +optional
	ClientRunQueueWaitNs int64 `json:"clientRunQueueWaitNs,omitempty"`
	// ReflectorRunQueueWaitNs is the same for the reflector's sockperf server.
	// +optional
	ReflectorRunQueueWaitNs int64 `json:"reflectorRunQueueWaitNs,omitempty"`
	// StealNs is the most steal time (the hypervisor running something else on the vCPU) that
	// any one CPU of the client or the reflector accumulated within the stall, widened by one
	// steal sample interval (10 ms) on each side. The kernel reports steal in 10 ms units
	// (USER_HZ), so a value of 10 ms means anything from a little to 20 ms. On the bypass stack,
	// whose sockperfs spin and never sleep, it is at least the time either was off its CPU
	// without waiting for it (its vCPU taken, from its own clock to the nanosecond).
	// +optional
	StealNs int64 `json:"stealNs,omitempty"`
	// Cause is what the operating system saw during the stall: preempted, steal or unexplained;
	// empty when the runner sampled nothing for this run (see the report's AttributionMissing).
	// +optional
	Cause StallCause `json:"cause,omitempty"`
}

// StallCause is what a stall is attributed to (docs/benchmark-methods.md "Stalls").
// +kubebuilder:validation:Enum=preempted;steal;unexplained
type StallCause string

const (
	// StallPreempted: the client's or the reflector's sockperf waited on a run queue for at least
	// half of the stall (another task had its CPU); on the kernel stack, whose sockperfs sleep
	// until the message reaches them, the two sides' waits together.
	StallPreempted StallCause = "preempted"
	// StallSteal: a CPU of the client or the reflector lost at least half of the stall to steal
	// (the hypervisor ran something else on the vCPU).
	StallSteal StallCause = "steal"
	// StallUnexplained: neither covered half of the stall; the bypass stack's counters, if any,
	// are what is left to explain it.
	StallUnexplained StallCause = "unexplained"
)

// StackCounter is one counter of the bypass stack's statistics (docs/dataplane.md "Statistics")
// over one sockperf process's run, named after the line of the stack's statistics dump it is on
// and its name there ("xsk.tx_ring_full", "sock.tx_kernel_neigh", "nh.refreshes"); counters of
// several XSKs or sockets are summed.
// +kubebuilder:object:generate=true
type StackCounter struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// StallReport is what the runner found about stalls in one row's run: the stalls themselves, a
// sample count far below the suite's other rows, and, on the bypass stack, the stack's counters
// that say what it was doing (docs/benchmark-methods.md "Stalls").
// +kubebuilder:object:generate=true
type StallReport struct {
	// Count is the number of stalls found.
	Count int32 `json:"count"`
	// TotalNs is their summed duration.
	TotalNs int64 `json:"totalNs"`
	// LatencyThresholdNs is the latency above which a message is a stall: 10 x the run's p99.9,
	// at least 1 ms. For the bypass stack's pingPong rows it is also the bound the row's maximum
	// is checked against.
	LatencyThresholdNs int64 `json:"latencyThresholdNs"`
	// GapThresholdNs is the pause between the sends of two consecutive timed messages above which
	// the pause is a stall: 10 x the median pause of the run, at least 1 ms (0: fewer than two
	// messages).
	GapThresholdNs int64 `json:"gapThresholdNs"`
	// Stalls are the longest stalls, at most MaxListedStalls, in the order they happened.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Stalls []Stall `json:"stalls,omitempty"`
	// NeighbourSamples is, for a pingPong row, the median sample count of the suite's other rows
	// of the same stack and protocol (0: there were none).
	// +optional
	NeighbourSamples int64 `json:"neighbourSamples,omitempty"`
	// FewSamples is true when the row's sample count is below a quarter of NeighbourSamples: in
	// the same time the run timed far fewer messages than its neighbours did.
	// +optional
	FewSamples bool `json:"fewSamples,omitempty"`
	// Counters are the bypass stack's counters of the runner's sockperf that are zero in an
	// undisturbed run (waits for a full ring or an empty fill ring, drops, fallbacks to the
	// kernel, next-hop refreshes, failed wake-ups, retransmissions) and were not; empty on the
	// kernel stack.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Counters []StackCounter `json:"counters,omitempty"`
	// ReflectorCounters are the same counters of the reflector's sockperf server of this row.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ReflectorCounters []StackCounter `json:"reflectorCounters,omitempty"`
	// CountersMissing says why the bypass stack's counters of a side are missing (the process
	// wrote no statistics dump), so that empty counters are not read as an undisturbed run.
	// +optional
	CountersMissing string `json:"countersMissing,omitempty"`
	// AttributionMissing says why the stalls' run-queue wait and steal are missing or cover
	// one side only (no sample of the client's or the reflector's process, a reflector that
	// cannot sample or runs on another host), so that an absent number is not read as zero.
	// +optional
	AttributionMissing string `json:"attributionMissing,omitempty"`
}

// PingPongRow is one message size of one protocol.
// +kubebuilder:object:generate=true
type PingPongRow struct {
	Protocol Protocol `json:"protocol"`
	// MessageSize is the UDP/TCP payload in bytes.
	MessageSize int32 `json:"messageSize"`
	// LatencyStats is the half round trip distribution.
	LatencyStats `json:",inline"`
	// Dropped counts replies that never came back (sockperf's "dropped messages").
	Dropped int64 `json:"dropped"`
	// Stalls is what the runner found about stalls in this row's run.
	// +optional
	Stalls *StallReport `json:"stalls,omitempty"`
}

// PingPongResult is the pingPong table.
// +kubebuilder:object:generate=true
type PingPongResult struct {
	// +listType=atomic
	Rows []PingPongRow `json:"rows,omitempty"`
	// Curve is the percentile curve of the reference row (the first protocol's first size), for
	// the report.
	// +optional
	Curve *PercentileCurve `json:"curve,omitempty"`
	// Error says why the suite did not complete; rows measured before the error are kept.
	// +optional
	Error string `json:"error,omitempty"`
}

// PercentileCurve is a latency distribution sampled at fixed percentiles.
// +kubebuilder:object:generate=true
type PercentileCurve struct {
	Protocol    Protocol `json:"protocol"`
	MessageSize int32    `json:"messageSize"`
	// +listType=atomic
	Points []PercentilePoint `json:"points"`
}

// RateRow is latency under load at one target rate.
// +kubebuilder:object:generate=true
type RateRow struct {
	Protocol    Protocol `json:"protocol"`
	MessageSize int32    `json:"messageSize"`
	// TargetMps is the requested rate in messages per second (sockperf --mps).
	TargetMps int64 `json:"targetMps"`
	// AchievedMps is what the sender managed during the measured window.
	AchievedMps int64 `json:"achievedMps"`
	// Sent is the number of messages sent in the measured window.
	Sent int64 `json:"sent"`
	// Dropped is the reflector's sequence gaps plus lost replies.
	Dropped int64 `json:"dropped"`
	// Sustained is true when nothing was dropped and the sender reached at least 95 % of the target.
	Sustained bool `json:"sustained"`
	// LatencyStats is the half round trip of the reflected messages (one in ReplyEvery).
	LatencyStats `json:",inline"`
	// Stalls is what the runner found about stalls in this row's run.
	// +optional
	Stalls *StallReport `json:"stalls,omitempty"`
}

// RateSweepResult is the rateSweep table.
// +kubebuilder:object:generate=true
type RateSweepResult struct {
	// ReceiveBufferBytes is the SO_RCVBUF asked of the reflector's servers (sockperf
	// --buffer-size); 0: none, the socket's default.
	// +optional
	ReceiveBufferBytes int64 `json:"receiveBufferBytes,omitempty"`
	// Buffering is the receive buffering in force at the reflector, as the first server of the
	// sweep that reported it read it (every row runs a fresh server with the same settings).
	// +optional
	Buffering *ReceiveBuffering `json:"buffering,omitempty"`
	// +listType=atomic
	Rows []RateRow `json:"rows,omitempty"`
	// MaxSustainedMps is, per message size, the highest target rate sustained; rates above the
	// first unsustained one do not count (like the papers' missing data points).
	// +listType=atomic
	MaxSustained []SustainedRate `json:"maxSustained,omitempty"`
	// +optional
	Error string `json:"error,omitempty"`
}

// SustainedRate is the highest sustained rate for one protocol and message size.
// +kubebuilder:object:generate=true
type SustainedRate struct {
	Protocol    Protocol `json:"protocol"`
	MessageSize int32    `json:"messageSize"`
	// Mps is 0 when even the lowest rate was not sustained.
	Mps int64 `json:"mps"`
	// LimitReached is true when every rate of the sweep was sustained, so Mps is the sweep's highest
	// rate and the real limit is higher: a lower bound, not a measurement.
	LimitReached bool `json:"limitReached,omitempty"`
}

// BurstTrial is one tried burst length.
// +kubebuilder:object:generate=true
type BurstTrial struct {
	// Packets is the number of back-to-back messages in each burst.
	Packets int64 `json:"packets"`
	// Bursts is how many bursts the trial sent.
	Bursts int64 `json:"bursts"`
	// Sent is the number of messages sent.
	Sent int64 `json:"sent"`
	// Dropped is the reflector's sequence-gap count.
	Dropped int64 `json:"dropped"`
}

// ReceiveBuffering is the receive buffering in force at the receiving end of a run, the
// reflector's sockperf server, read on the reflector (in its pod's network namespace). A field
// left out is unknown (an older reflector or data plane, a file it could not read), never zero;
// Missing says why (docs/benchmark-methods.md "Bounds, buffers and stalls").
// +kubebuilder:object:generate=true
type ReceiveBuffering struct {
	// GrantedBytes is the receive buffer the kernel keeps for the server's socket, as
	// getsockopt(SO_RCVBUF) returns it (sockperf prints it when given --buffer-size; without,
	// the reflector reads it from a socket it opens the same way). With a request Linux grants
	// twice the request, the request first capped at RmemMaxBytes: sockperf sets SO_RCVBUF, never
	// SO_RCVBUFFORCE, so the cap applies whatever the pod's capabilities. Without a request it is
	// RmemDefaultBytes. The bypass stack bounds a socket's queue by these bytes only once
	// SO_RCVBUF was set (then, like the kernel's, it holds what these bytes allow, copying the
	// datagrams past SocketQueueDatagrams out of the UMEM); without, by SocketQueueDatagrams alone.
	// +optional
	GrantedBytes *int64 `json:"grantedBytes,omitempty"`
	// RmemDefaultBytes is net.core.rmem_default, a socket's receive buffer when none is asked for.
	// +optional
	RmemDefaultBytes *int64 `json:"rmemDefaultBytes,omitempty"`
	// RmemMaxBytes is net.core.rmem_max, the largest SO_RCVBUF request honoured.
	// +optional
	RmemMaxBytes *int64 `json:"rmemMaxBytes,omitempty"`
	// SocketQueueDatagrams is, on the bypass stack, the most datagrams a socket queues in UMEM
	// frames (TICKSTACK_SOCKQ_LEN or the profile's), from the stack's statistics dump: all it
	// holds without SO_RCVBUF; with SO_RCVBUF, the datagrams past it are queued as copies.
	// +optional
	SocketQueueDatagrams *int64 `json:"socketQueueDatagrams,omitempty"`
	// UMEMFrames is, on the bypass stack, the frames of each XSK's UMEM (TICKSTACK_UMEM_FRAMES),
	// shared by every socket's queue and the fill ring, from the stack's statistics dump.
	// +optional
	UMEMFrames *int64 `json:"umemFrames,omitempty"`
	// RXRingEntries is, on the bypass stack, the entries of each XSK's RX ring, from the stack's
	// statistics dump.
	// +optional
	RXRingEntries *int64 `json:"rxRingEntries,omitempty"`
	// Missing says which of the values above are unknown, and why.
	// +optional
	Missing string `json:"missing,omitempty"`
}

// MicroburstRow is the search at one receive buffer size.
// +kubebuilder:object:generate=true
type MicroburstRow struct {
	// ReceiveBufferBytes is the SO_RCVBUF asked of the receiving server (sockperf --buffer-size);
	// 0: none, the socket's default.
	ReceiveBufferBytes int64 `json:"receiveBufferBytes"`
	// Buffering is the receive buffering in force, as the reflector read it for the first trial
	// of this row.
	// +optional
	Buffering *ReceiveBuffering `json:"buffering,omitempty"`
	// +listType=atomic
	Trials []BurstTrial `json:"trials,omitempty"`
	// MaxBurstPackets is the largest burst absorbed without a drop (0: none was).
	MaxBurstPackets int64 `json:"maxBurstPackets"`
	// BurstTimeNs is paper 002's burst time: (46 + size) x packets x bit time x 8.
	BurstTimeNs int64 `json:"burstTimeNs"`
	// LimitReached is true when every burst tried was absorbed (up to maxBurstPackets, or until
	// maxTrials ran out), so MaxBurstPackets is a lower bound and the real limit is higher.
	LimitReached bool `json:"limitReached,omitempty"`
	// Error says why this row's search did not complete; its trials are kept.
	// +optional
	Error string `json:"error,omitempty"`
}

// MicroburstResult is the microburst table: the largest burst absorbed, by receive buffer size.
// +kubebuilder:object:generate=true
type MicroburstResult struct {
	Protocol    Protocol `json:"protocol"`
	MessageSize int32    `json:"messageSize"`
	// LinkSpeedMbps is the line rate the burst time is computed for.
	LinkSpeedMbps int64 `json:"linkSpeedMbps"`
	// Rows has one search per receive buffer size of the spec, in its order; one row at the
	// socket's default (receiveBufferBytes 0) when the spec names none.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Rows []MicroburstRow `json:"rows,omitempty"`
}

// MixedBurstRow is one traffic pattern of paper 003.
// +kubebuilder:object:generate=true
type MixedBurstRow struct {
	// SteadyMps is the continuous rate.
	SteadyMps int64 `json:"steadyMps"`
	// BurstMps is the rate added during every other second.
	BurstMps int64 `json:"burstMps"`
	// Sent is the number of messages the playback sent.
	Sent int64 `json:"sent"`
	// Dropped is lost replies plus the reflector's sequence gaps.
	Dropped int64 `json:"dropped"`
	// LatencyStats covers every message, both sizes (the paper's average, p99 and standard deviation
	// are MeanNs, P99Ns and StdDevNs).
	LatencyStats `json:",inline"`
	// Small is the distribution of the 100 B messages only.
	// +optional
	Small *LatencyStats `json:"small,omitempty"`
	// Large is the distribution of the 600 B messages only.
	// +optional
	Large *LatencyStats `json:"large,omitempty"`
	// Stalls is what the runner found about stalls in this row's run.
	// +optional
	Stalls *StallReport `json:"stalls,omitempty"`
}

// MixedBurstResult is the mixedBurst table.
// +kubebuilder:object:generate=true
type MixedBurstResult struct {
	Protocol Protocol `json:"protocol"`
	// SmallSize and LargeSize are the two message sizes (100 and 600 B in the paper).
	SmallSize int32 `json:"smallSize"`
	LargeSize int32 `json:"largeSize"`
	// +listType=atomic
	Rows []MixedBurstRow `json:"rows,omitempty"`
	// +optional
	Error string `json:"error,omitempty"`
}

// JitterRow is one tool on one CPU.
// +kubebuilder:object:generate=true
type JitterRow struct {
	Tool JitterTool `json:"tool"`
	CPU  int32      `json:"cpu"`
	// LatencyStats: min, mean and max are the tool's own; percentiles come from its 1 us histogram
	// (an upper bound); StdDevNs is computed from the histogram.
	LatencyStats `json:",inline"`
	// Overflows counts observations beyond the histogram (their exact values are unknown; MaxNs is exact).
	Overflows int64 `json:"overflows,omitempty"`
}

// JitterResult is the jitter table.
// +kubebuilder:object:generate=true
type JitterResult struct {
	// +listType=atomic
	Rows []JitterRow `json:"rows,omitempty"`
	// +optional
	Error string `json:"error,omitempty"`
}

// PTPPortStateCount is how many ptp samples saw one port state.
// +kubebuilder:object:generate=true
type PTPPortStateCount struct {
	// State is ptp4l's portState as pmc prints it: SLAVE, UNCALIBRATED, LISTENING, MASTER, FAULTY...
	State string `json:"state"`
	// Samples is the number of answered reads that saw it.
	Samples int64 `json:"samples"`
}

// PTPResult is the ptp table: ptp4l's offset from its master, read through its management socket
// (pmc GET PORT_DATA_SET and CURRENT_DATA_SET) every intervalMillis from the start of the first
// suite to the end of the last.
// +kubebuilder:object:generate=true
type PTPResult struct {
	// Socket is the ptp4l management socket that was read.
	Socket string `json:"socket"`
	// Domain is the PTP domain the reads used (ptp4l ignores other domains).
	Domain int32 `json:"domain"`
	// IntervalMillis is the time between two reads.
	IntervalMillis int32 `json:"intervalMillis"`
	// Samples is the number of reads.
	Samples int64 `json:"samples"`
	// FailedReads counts reads without a port state and an offset: ptp4l not running, not
	// answering in time, or listening on another socket or domain.
	FailedReads int64 `json:"failedReads"`
	// NotSlaveSamples counts answered reads whose port state was not SLAVE; their offsets are not
	// in Offset.
	NotSlaveSamples int64 `json:"notSlaveSamples"`
	// Offset is the distribution of |offsetFromMaster| over the SLAVE samples, in nanoseconds.
	// +optional
	Offset LatencyStats `json:"offset"`
	// MinOffsetNs and MaxOffsetNs are the signed extremes of offsetFromMaster over the SLAVE
	// samples (negative: this clock is behind its master).
	MinOffsetNs int64 `json:"minOffsetNs"`
	MaxOffsetNs int64 `json:"maxOffsetNs"`
	// SystemOffset is the distribution of |offset| of the system clock (CLOCK_REALTIME, the clock
	// applications timestamp with) over the SLAVE samples, as the node agent last read it
	// (status.ptp.systemOffsetNs: phc2sys's offset from the NIC's clock, ptp4l's with software
	// time stamping), in nanoseconds. Absent when the agent published none.
	// +optional
	SystemOffset *LatencyStats `json:"systemOffset,omitempty"`
	// MedianPathDelayNs is the median meanPathDelay over the SLAVE samples.
	MedianPathDelayNs int64 `json:"medianPathDelayNs"`
	// PortStates lists every port state seen, in order of first appearance, with its count.
	// +listType=atomic
	PortStates []PTPPortStateCount `json:"portStates,omitempty"`
	// LastFailure is the error of the last failed read.
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`
	// Error says why nothing was measured: pmc is missing, or no read was answered.
	// +optional
	Error string `json:"error,omitempty"`
}

// TickToTradeRow is one market-data rate of the tickToTrade suite: the rig's three programs' counts
// and latencies (dataplane/t2t; docs/benchmark-methods.md "tickToTrade").
// +kubebuilder:object:generate=true
type TickToTradeRow struct {
	// RateMps is the market-data rate asked for.
	RateMps int64 `json:"rateMps"`
	// BurstMps is added to the rate in every other second.
	// +optional
	BurstMps int64 `json:"burstMps,omitempty"`
	// AchievedMps is the ticks sent divided by the time the publisher took.
	AchievedMps int64 `json:"achievedMps"`
	// TicksSent is what the publisher sent.
	TicksSent int64 `json:"ticksSent"`
	// TicksReceived is what the strategy received.
	TicksReceived int64 `json:"ticksReceived"`
	// TicksLost counts sequence gaps and a missing tail.
	TicksLost int64 `json:"ticksLost"`
	// TicksOutOfSequence counts ticks that came after a later one.
	TicksOutOfSequence int64 `json:"ticksOutOfSequence"`
	// Orders is the BUY and SELL orders the strategy sent.
	Orders int64 `json:"orders"`
	// OrdersUnfilled is the orders without a fill.
	OrdersUnfilled int64 `json:"ordersUnfilled"`
	// ExchangeOrders is what the exchange simulator received.
	ExchangeOrders int64 `json:"exchangeOrders"`
	// TickToTrade is the BUY's arrival at the exchange minus the tick's send time (paper 004's BUY
	// row), one sample per BUY.
	TickToTrade LatencyStats `json:"tickToTrade"`
	// InApplication is the tick received (recv returned) to the BUY sent (QuickFIX's send returned).
	InApplication LatencyStats `json:"inApplication"`
	// OrderToFill is an order handed to QuickFIX to its fill received, BUY and SELL (the round
	// trip through the exchange).
	OrderToFill LatencyStats `json:"orderToFill"`
	// Sell is the BUY's fill received to the SELL's arrival at the exchange (paper 004's SELL row).
	Sell LatencyStats `json:"sell"`
	// Unaccounted says what this run did not account for: ticks lost or out of sequence, orders
	// without a fill, FIX sequence errors, counts the ends disagree on. Empty when every tick and
	// order is accounted for; a row with entries fails its check.
	// +listType=atomic
	Unaccounted []string `json:"unaccounted,omitempty"`
	// MarketDataPath is the path the strategy received the feed on: bypass when its feed socket
	// received datagrams through the XSK (the stack's counters), else kernel.
	// +optional
	MarketDataPath Stack `json:"marketDataPath,omitempty"`
	// OrderPath is the path the strategy's FIX session took: bypass when the stack carried its TCP
	// connection (the profile's spec.bypass.tcp), else kernel.
	// +optional
	OrderPath Stack `json:"orderPath,omitempty"`
}

// TickToTradeResult is the tickToTrade table of one stack.
// +kubebuilder:object:generate=true
type TickToTradeResult struct {
	// Mix is the feed's message sizes.
	Mix TickMix `json:"mix"`
	// MessageSize is the size of a tick with mix steady.
	// +optional
	MessageSize int32 `json:"messageSize,omitempty"`
	// OrderEvery is the strategy's rule: a BUY on every Nth tick.
	OrderEvery int32 `json:"orderEvery"`
	// Rows has one entry per rate measured, in the order of the spec.
	// +listType=atomic
	Rows []TickToTradeRow `json:"rows,omitempty"`
	// Error says why a rate was not measured (the rig missing, a program that failed); the rows
	// measured are kept.
	// +optional
	Error string `json:"error,omitempty"`
}

// StackResults holds the network suites run on one stack.
// +kubebuilder:object:generate=true
type StackResults struct {
	Stack Stack `json:"stack"`
	// Unavailable says why this stack could not run at all (e.g. the bypass launcher is absent).
	// +optional
	Unavailable string `json:"unavailable,omitempty"`
	// +optional
	PingPong *PingPongResult `json:"pingPong,omitempty"`
	// +optional
	RateSweep *RateSweepResult `json:"rateSweep,omitempty"`
	// +optional
	Microburst *MicroburstResult `json:"microburst,omitempty"`
	// +optional
	MixedBurst *MixedBurstResult `json:"mixedBurst,omitempty"`
	// +optional
	TickToTrade *TickToTradeResult `json:"tickToTrade,omitempty"`
}

// NetworkPath is the network path the network suites measured.
// +kubebuilder:object:generate=true
type NetworkPath struct {
	// ClientAddress is the runner's source address towards the reflector.
	ClientAddress string `json:"clientAddress"`
	// ReflectorAddress is the address the reflector's sockperf servers bind to (its
	// --data-interface's, else its control address).
	ReflectorAddress string `json:"reflectorAddress"`
	// Interface is the runner's interface holding ClientAddress, e.g. lat0.
	// +optional
	Interface string `json:"interface,omitempty"`
}

// BenchmarkResults is what the benchmark runner writes: one document per node and run.
// +kubebuilder:object:generate=true
type BenchmarkResults struct {
	// SchemaVersion is BenchmarkResultsSchemaVersion, "bench.tickstack.io/v1alpha1".
	SchemaVersion string `json:"schemaVersion"`
	// Node is the node the runner ran on (from --node or NODE_NAME).
	// +optional
	Node string `json:"node,omitempty"`
	// StartTime and CompletionTime bound the run.
	StartTime      metav1.Time `json:"startTime"`
	CompletionTime metav1.Time `json:"completionTime"`
	// Tools records the versions measured with, e.g. "sockperf 3.7-no.git", "oslat V 2.40".
	// +listType=atomic
	Tools []string `json:"tools,omitempty"`
	// Path is where the network suites' traffic went: the two data addresses and this side's
	// interface (the profile's latency interface when the pod webhook attached one).
	// +optional
	Path *NetworkPath `json:"path,omitempty"`
	// +listType=atomic
	Stacks []StackResults `json:"stacks,omitempty"`
	// +optional
	Jitter *JitterResult `json:"jitter,omitempty"`
	// +optional
	PTP *PTPResult `json:"ptp,omitempty"`
	// Qualify is the qualify suite's report of the runner's data interface.
	// +optional
	Qualify *QualifyReport `json:"qualify,omitempty"`
}

// Stack returns the results of one stack, or nil.
func (r *BenchmarkResults) Stack(s Stack) *StackResults {
	for i := range r.Stacks {
		if r.Stacks[i].Stack == s {
			return &r.Stacks[i]
		}
	}
	return nil
}

// StackComparison sets the kernel and bypass stacks side by side for one table row, like paper 000's
// kernel vs OpenOnload exhibits.
// +kubebuilder:object:generate=true
type StackComparison struct {
	Suite       SuiteName `json:"suite"`
	Protocol    Protocol  `json:"protocol"`
	MessageSize int32     `json:"messageSize,omitempty"`
	// TargetMps is the rateSweep or tickToTrade rate; SteadyMps/BurstMps name a mixedBurst pattern.
	TargetMps      int64 `json:"targetMps,omitempty"`
	SteadyMps      int64 `json:"steadyMps,omitempty"`
	BurstMps       int64 `json:"burstMps,omitempty"`
	KernelMedianNs int64 `json:"kernelMedianNs"`
	BypassMedianNs int64 `json:"bypassMedianNs"`
	KernelP99Ns    int64 `json:"kernelP99Ns"`
	BypassP99Ns    int64 `json:"bypassP99Ns"`
	// MedianSpeedup is kernel median / bypass median as a decimal string ("2.315"); above 1 the
	// bypass stack is faster.
	MedianSpeedup string `json:"medianSpeedup,omitempty"`
	// P99Speedup is the same for the 99th percentile.
	P99Speedup string `json:"p99Speedup,omitempty"`
}

// TickToTradeGain compares one stack and rate of a tickToTrade run with its baseline.
// +kubebuilder:object:generate=true
type TickToTradeGain struct {
	// Stack is this run's stack.
	Stack Stack `json:"stack"`
	// RateMps is the market-data rate.
	RateMps int64 `json:"rateMps"`
	// BaselineStack is the baseline row's stack: the same stack, else kernel (the untuned host's
	// plain stack) when the baseline did not measure this one.
	BaselineStack Stack `json:"baselineStack"`
	// BaselineMeanNs is the baseline's mean tick-to-trade.
	BaselineMeanNs int64 `json:"baselineMeanNs"`
	// MeanNs is this run's mean tick-to-trade.
	MeanNs int64 `json:"meanNs"`
	// BaselineMedianNs is the baseline's median tick-to-trade.
	BaselineMedianNs int64 `json:"baselineMedianNs"`
	// MedianNs is this run's median tick-to-trade.
	MedianNs int64 `json:"medianNs"`
	// BaselineP99Ns is the baseline's 99th percentile of tick-to-trade.
	BaselineP99Ns int64 `json:"baselineP99Ns"`
	// P99Ns is this run's 99th percentile of tick-to-trade.
	P99Ns int64 `json:"p99Ns"`
	// MeanGainPercent is how much lower this run's mean is than the baseline's, in percent of the
	// baseline, as a decimal string ("23.4"; negative: slower than the baseline). Paper 004's
	// "tuning was worth 20-30 %" compares means.
	MeanGainPercent string `json:"meanGainPercent"`
	// MedianGainPercent is the same for the median.
	MedianGainPercent string `json:"medianGainPercent"`
	// P99GainPercent is the same for the 99th percentile.
	P99GainPercent string `json:"p99GainPercent"`
}

// TickToTradeComparison is a node's tickToTrade results against the baseline named by
// suites.tickToTrade.baseline, taken when the node was judged.
// +kubebuilder:object:generate=true
type TickToTradeComparison struct {
	// Benchmark is the baseline LatencyBenchmark.
	Benchmark string `json:"benchmark"`
	// Run is the baseline's run the figures come from.
	// +optional
	Run int64 `json:"run,omitempty"`
	// Node is the baseline's node the figures come from.
	// +optional
	Node string `json:"node,omitempty"`
	// Rows has one entry per stack and rate measured by both (rows with unaccounted ticks on
	// either side are left out).
	// +listType=atomic
	Rows []TickToTradeGain `json:"rows,omitempty"`
	// Message says why there is nothing to compare with (the baseline is missing, has no such
	// node, or no tickToTrade row of these rates).
	// +optional
	Message string `json:"message,omitempty"`
}
