package v1alpha1

// BenchmarkSuites selects the benchmark suites and their parameters. A nil suite is not run.
// +kubebuilder:object:generate=true
type BenchmarkSuites struct {
	// Stacks to run the network suites on; default [kernel].
	// +listType=set
	Stacks []Stack `json:"stacks,omitempty"`
	// +optional
	PingPong *PingPongSpec `json:"pingPong,omitempty"`
	// +optional
	RateSweep *RateSweepSpec `json:"rateSweep,omitempty"`
	// +optional
	Microburst *MicroburstSpec `json:"microburst,omitempty"`
	// +optional
	MixedBurst *MixedBurstSpec `json:"mixedBurst,omitempty"`
	// +optional
	Jitter *JitterSpec `json:"jitter,omitempty"`
	// +optional
	PTP *PTPSuite `json:"ptp,omitempty"`
	// +optional
	TickToTrade *TickToTradeSpec `json:"tickToTrade,omitempty"`
	// Qualify runs `tickstack qualify` on the runner's data interface against the reflector
	// (docs/install.md "Qualifying a node's NIC"); its verdict is in the node's results
	// (status.nodes[].results.qualify) and a node whose interface is Unsupported fails.
	// +optional
	Qualify *QualifySpec `json:"qualify,omitempty"`
}

// PingPongSpec parameterises the pingPong suite.
// +kubebuilder:object:generate=true
type PingPongSpec struct {
	// Protocols; default [udp, udpMulticast, tcp].
	// +listType=set
	Protocols []Protocol `json:"protocols,omitempty"`
	// MessageSizes in bytes, 14..1472; default paper 001's 14, 32, 64, 128, 256, 400, 800, 1024, 1472.
	// +listType=set
	MessageSizes []int32 `json:"messageSizes,omitempty"`
	// DurationSeconds per size; default 5 (sockperf drops the first 400 ms and last 50 ms).
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
}

// RateSweepSpec parameterises the rateSweep suite.
// +kubebuilder:object:generate=true
type RateSweepSpec struct {
	// Protocol; default udp.
	Protocol Protocol `json:"protocol,omitempty"`
	// MessageSizes; default paper 001's 64 and 800.
	// +listType=set
	MessageSizes []int32 `json:"messageSizes,omitempty"`
	// RatesMps in increasing order; default 10k, 125k, 250k, 500k, 1M (paper 001).
	// +listType=set
	RatesMps []int64 `json:"ratesMps,omitempty"`
	// ReplyEvery: one message in this many is reflected and timed; default 100 (sockperf's).
	ReplyEvery int32 `json:"replyEvery,omitempty"`
	// DurationSeconds per rate; default 5.
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
	// ReceiveBufferBytes is the receive buffer of the reflector's (receiving) sockperf servers in
	// bytes, 4096..67108864: sockperf --buffer-size, which sets SO_RCVBUF (and SO_SNDBUF). The
	// bypass stack honours SO_RCVBUF as the kernel does, so both stacks drop at the same stated
	// buffering. Unset: the socket's default (net.core.rmem_default on the kernel stack; the
	// socket queue's length in datagrams on the bypass stack). The result reports the buffering
	// in force either way.
	// +optional
	ReceiveBufferBytes int64 `json:"receiveBufferBytes,omitempty"`
}

// MicroburstSpec parameterises the microburst suite.
// +kubebuilder:object:generate=true
type MicroburstSpec struct {
	// MessageSize; default 256 (paper 002's headline figure).
	MessageSize int32 `json:"messageSize,omitempty"`
	// MaxBurstPackets bounds the search; default 262144. A search that absorbs a burst this long
	// reports limitReached: the result is a lower bound, not a measurement.
	MaxBurstPackets int64 `json:"maxBurstPackets,omitempty"`
	// TrialSeconds is how long each trial sends bursts, 10 bursts a second (all must
	// pass); default 1.
	TrialSeconds int32 `json:"trialSeconds,omitempty"`
	// MaxTrials bounds the search (doubling, then bisection) in burst lengths tried; default 16.
	// A length that dropped is tried a second time and fails only when both trials dropped.
	MaxTrials int32 `json:"maxTrials,omitempty"`
	// LinkSpeedMbps is the line rate for the burst-time formula; default 10000 (the paper's 10GbE).
	LinkSpeedMbps int64 `json:"linkSpeedMbps,omitempty"`
	// ReceiveBufferBytes are the receive buffer sizes in bytes the search runs at, increasing,
	// each 4096..67108864, at most 8: one search per size on each stack, with the reflector's
	// (receiving) sockperf server given --buffer-size N, which sets SO_RCVBUF (and SO_SNDBUF). The
	// bypass stack honours SO_RCVBUF as the kernel does, so both stacks absorb a burst at the
	// same buffering, and the result has one row per size: burst tolerance by buffer size
	// (paper 002). Empty: one search at the socket's default (net.core.rmem_default on the
	// kernel stack; the socket queue's length in datagrams on the bypass stack). Every row
	// reports the buffering in force.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +optional
	ReceiveBufferBytes []int64 `json:"receiveBufferBytes,omitempty"`
}

// MixedBurstPattern is one of paper 003's message patterns.
// +kubebuilder:object:generate=true
type MixedBurstPattern struct {
	// SteadyMps is sent all the time.
	SteadyMps int64 `json:"steadyMps"`
	// BurstMps is added during one second out of every two.
	BurstMps int64 `json:"burstMps"`
}

// MixedBurstSpec parameterises the mixedBurst suite.
// +kubebuilder:object:generate=true
type MixedBurstSpec struct {
	// Patterns; default paper 003's {500k + 500k} and {1M + 500k}.
	// +listType=atomic
	Patterns []MixedBurstPattern `json:"patterns,omitempty"`
	// DurationSeconds per pattern, even (whole burst periods), 2..60; default 4.
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
	// SmallSize and LargeSize; default 100 and 600.
	SmallSize int32 `json:"smallSize,omitempty"`
	LargeSize int32 `json:"largeSize,omitempty"`
	// ReplyEvery; default 1 (every message is timed, so both sizes are measured).
	ReplyEvery int32 `json:"replyEvery,omitempty"`
}

// JitterSpec parameterises the jitter suite.
// +kubebuilder:object:generate=true
type JitterSpec struct {
	// CPUs to measure, a Linux CPU list ("2-3,6"). Required.
	CPUs string `json:"cpus"`
	// Tools; default [oslat, cyclictest].
	// +listType=set
	Tools []JitterTool `json:"tools,omitempty"`
	// DurationSeconds per tool; default 10.
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
	// CyclictestIntervalMicros is cyclictest -i; default 100.
	CyclictestIntervalMicros int32 `json:"cyclictestIntervalMicros,omitempty"`
	// CyclictestPriority is cyclictest -p (SCHED_FIFO); default 95.
	CyclictestPriority int32 `json:"cyclictestPriority,omitempty"`
}

// TickMix is the market-data message sizes of the tickToTrade suite's feed.
// +kubebuilder:validation:Enum=steady;seed003
type TickMix string

const (
	// TickMixSteady sends every tick at messageSize bytes.
	TickMixSteady TickMix = "steady"
	// TickMixSeed003 sends paper 003's mix: two ticks in three of 100 bytes, one of 600 bytes.
	TickMixSeed003 TickMix = "seed003"
)

// TickToTradeSpec parameterises the tickToTrade suite (paper 004): the rig of dataplane/t2t
// (a market-data publisher, a FIX strategy, an exchange simulator) at each market-data rate, on
// each stack.
// +kubebuilder:object:generate=true
type TickToTradeSpec struct {
	// RatesMps are the market-data rates in messages per second, increasing; default paper 004's
	// 500, 1000, 10000, 50000, 100000.
	// +listType=set
	RatesMps []int64 `json:"ratesMps,omitempty"`
	// DurationSeconds the publisher sends at each rate, 1..3600; default 4.
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
	// OrderEvery: the strategy sends a BUY on every Nth tick (by sequence number), 1..1000000;
	// default 100. Each BUY is filled and closed by a SELL.
	OrderEvery int32 `json:"orderEvery,omitempty"`
	// MessageSize of a tick in bytes with mix steady, 32..1472; default 32 (the feed's header).
	MessageSize int32 `json:"messageSize,omitempty"`
	// Mix: steady (default) or seed003 (paper 003's 2/3 at 100 B, 1/3 at 600 B).
	// +optional
	Mix TickMix `json:"mix,omitempty"`
	// BurstMps is added to the rate during every other second (paper 003's one-second bursts);
	// default 0. With bursts, durationSeconds must be even (whole burst periods).
	// +optional
	BurstMps int64 `json:"burstMps,omitempty"`
	// Baseline names the untuned measurement this one is compared with: its tick-to-trade by stack
	// and rate, and the gain in percent (docs/benchmark.md "Tuned vs untuned"). Read by the
	// controller when it judges a node; the runner does not see it.
	// +optional
	Baseline *TickToTradeBaseline `json:"baseline,omitempty"`
}

// TickToTradeBaseline points at the LatencyBenchmark whose tickToTrade results are the untuned
// figures: the same suite run before the profile was applied, or on a node outside it.
// +kubebuilder:object:generate=true
type TickToTradeBaseline struct {
	// Benchmark is a LatencyBenchmark in this benchmark's namespace; its current run's results are
	// read when a node of this benchmark is judged.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Benchmark string `json:"benchmark"`
	// Node is the baseline benchmark's node to compare with; default: the node being judged when
	// the baseline measured it, else the baseline's only node.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
}

// PTPRunDir is the host directory where the node agent keeps ptp4l's configuration and management
// socket; in a benchmark runner pod, the path where PTPReadOnlyDir is mounted read-only.
const PTPRunDir = "/run/tickstack/ptp"

// PTPReadOnlyDir is the host directory where the node agent serves ptp4l's management socket
// read-only (GET only: a SET or COMMAND is dropped) as ptp4l.sock, with copies of ptp4l.conf and the
// system clock's offset: the only PTP files a benchmark runner pod mounts (read-only, at PTPRunDir).
const PTPReadOnlyDir = PTPRunDir + "-ro"

// DefaultPTPSocket is the node agent's ptp4l management socket as a benchmark pod sees it (the
// read-only one of PTPReadOnlyDir).
const DefaultPTPSocket = PTPRunDir + "/ptp4l.sock"

// PTPSuite parameterises the ptp suite: ptp4l's offset from its master, read with pmc through
// ptp4l's management socket every intervalMillis while the other suites run.
// +kubebuilder:object:generate=true
type PTPSuite struct {
	// Socket is ptp4l's UNIX management socket as the runner pod sees it; default
	// /run/tickstack/ptp/ptp4l.sock, where the node agent serves ptp4l's management read-only (the
	// host's /run/tickstack/ptp-ro, mounted read-only). pmc binds its reply socket in the runner's
	// own work directory; the agent answers it through the runner's root.
	// +optional
	// +kubebuilder:validation:MaxLength=107
	Socket string `json:"socket,omitempty"`
	// Domain is ptp4l's domainNumber (ptp4l ignores management messages of other domains);
	// default: the domainNumber of the ptp4l.conf beside the socket (the agent writes it there),
	// else 0.
	// +optional
	Domain *int32 `json:"domain,omitempty"`
	// IntervalMillis is the time between two reads, 100..60000; default 1000. Each read runs pmc
	// once on the runner's CPUs.
	// +optional
	IntervalMillis int32 `json:"intervalMillis,omitempty"`
	// DurationSeconds is how long to sample when ptp is the only suite, 1..86400; default 30.
	// With other suites the sampling spans them all and this is not used.
	// +optional
	DurationSeconds int32 `json:"durationSeconds,omitempty"`
}

// Defaulted returns a copy with every unset field given its default.
func (s BenchmarkSuites) Defaulted() BenchmarkSuites {
	out := s
	if len(out.Stacks) == 0 {
		out.Stacks = []Stack{StackKernel}
	}
	if s.PingPong != nil {
		p := *s.PingPong
		if len(p.Protocols) == 0 {
			p.Protocols = []Protocol{ProtocolUDP, ProtocolUDPMulticast, ProtocolTCP}
		}
		if len(p.MessageSizes) == 0 {
			p.MessageSizes = []int32{14, 32, 64, 128, 256, 400, 800, 1024, 1472}
		}
		if p.DurationSeconds == 0 {
			p.DurationSeconds = 5
		}
		out.PingPong = &p
	}
	if s.RateSweep != nil {
		r := *s.RateSweep
		if r.Protocol == "" {
			r.Protocol = ProtocolUDP
		}
		if len(r.MessageSizes) == 0 {
			r.MessageSizes = []int32{64, 800}
		}
		if len(r.RatesMps) == 0 {
			r.RatesMps = []int64{10000, 125000, 250000, 500000, 1000000}
		}
		if r.ReplyEvery == 0 {
			r.ReplyEvery = 100
		}
		if r.DurationSeconds == 0 {
			r.DurationSeconds = 5
		}
		out.RateSweep = &r
	}
	if s.Microburst != nil {
		m := *s.Microburst
		if m.MessageSize == 0 {
			m.MessageSize = 256
		}
		if m.MaxBurstPackets == 0 {
			m.MaxBurstPackets = 262144
		}
		if m.TrialSeconds == 0 {
			m.TrialSeconds = 1
		}
		if m.MaxTrials == 0 {
			m.MaxTrials = 16
		}
		if m.LinkSpeedMbps == 0 {
			m.LinkSpeedMbps = 10000
		}
		out.Microburst = &m
	}
	if s.MixedBurst != nil {
		m := *s.MixedBurst
		if len(m.Patterns) == 0 {
			m.Patterns = []MixedBurstPattern{{SteadyMps: 500000, BurstMps: 500000}, {SteadyMps: 1000000, BurstMps: 500000}}
		}
		if m.DurationSeconds == 0 {
			m.DurationSeconds = 4
		}
		if m.SmallSize == 0 {
			m.SmallSize = 100
		}
		if m.LargeSize == 0 {
			m.LargeSize = 600
		}
		if m.ReplyEvery == 0 {
			m.ReplyEvery = 1
		}
		out.MixedBurst = &m
	}
	if s.Jitter != nil {
		j := *s.Jitter
		if len(j.Tools) == 0 {
			j.Tools = []JitterTool{JitterOslat, JitterCyclictest}
		}
		if j.DurationSeconds == 0 {
			j.DurationSeconds = 10
		}
		if j.CyclictestIntervalMicros == 0 {
			j.CyclictestIntervalMicros = 100
		}
		if j.CyclictestPriority == 0 {
			j.CyclictestPriority = 95
		}
		out.Jitter = &j
	}
	if s.TickToTrade != nil {
		t := *s.TickToTrade
		if len(t.RatesMps) == 0 {
			t.RatesMps = []int64{500, 1000, 10000, 50000, 100000}
		}
		if t.DurationSeconds == 0 {
			t.DurationSeconds = 4
		}
		if t.OrderEvery == 0 {
			t.OrderEvery = 100
		}
		if t.MessageSize == 0 {
			t.MessageSize = 32
		}
		if t.Mix == "" {
			t.Mix = TickMixSteady
		}
		out.TickToTrade = &t
	}
	if s.Qualify != nil {
		q := *s.Qualify
		if q.MessageSize == 0 {
			q.MessageSize = 64
		}
		if q.DurationSeconds == 0 {
			q.DurationSeconds = 2
		}
		out.Qualify = &q
	}
	if s.PTP != nil {
		p := *s.PTP
		if p.Socket == "" {
			p.Socket = DefaultPTPSocket
		}
		if p.IntervalMillis == 0 {
			p.IntervalMillis = 1000
		}
		if p.DurationSeconds == 0 {
			p.DurationSeconds = 30
		}
		out.PTP = &p
	}
	return out
}

// NetworkSuites reports whether any suite needs a reflector (tickToTrade's publisher and exchange
// simulator run there; qualify's conformance peer and ping-pong servers too).
func (s BenchmarkSuites) NetworkSuites() bool {
	return s.PingPong != nil || s.RateSweep != nil || s.Microburst != nil || s.MixedBurst != nil || s.TickToTrade != nil || s.Qualify != nil
}
