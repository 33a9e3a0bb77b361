package bench

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// BurstsPerSecond is how often the microburst suite repeats a burst: 100 ms apart, so the receiver
// has drained the previous burst before the next one.
const BurstsPerSecond = 10

// Size limits of sockperf 3.7 over a 1500 B MTU: 14 B is its smallest message (the papers' 12 B is
// refused), 1472 B is the largest UDP payload that fits one IPv4 frame.
const (
	MinMessageSize = 14
	MaxMessageSize = 1472
)

// Spec selects the suites and their parameters. A nil suite is not run. It is shaped so the
// LatencyBenchmark spec can embed it.
// +kubebuilder:object:generate=true
type Spec struct {
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
	PTP *PTPSpec `json:"ptp,omitempty"`
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
}

// MicroburstSpec parameterises the microburst suite.
// +kubebuilder:object:generate=true
type MicroburstSpec struct {
	// MessageSize; default 256 (paper 002's headline figure).
	MessageSize int32 `json:"messageSize,omitempty"`
	// MaxBurstPackets bounds the search; default 65536.
	MaxBurstPackets int64 `json:"maxBurstPackets,omitempty"`
	// TrialSeconds is how long each trial sends bursts, BurstsPerSecond of them a second (all must
	// pass); default 1.
	TrialSeconds int32 `json:"trialSeconds,omitempty"`
	// MaxTrials bounds the search (doubling, then bisection); default 16.
	MaxTrials int32 `json:"maxTrials,omitempty"`
	// LinkSpeedMbps is the line rate for the burst-time formula; default 10000 (the paper's 10GbE).
	LinkSpeedMbps int64 `json:"linkSpeedMbps,omitempty"`
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

// PTPRunDir is the host directory where the node agent keeps ptp4l's configuration and management
// socket (the agent's PTPRunDir; this package cannot import the agent).
const PTPRunDir = "/run/tickstack/ptp"

// DefaultPTPSocket is the node agent's ptp4l management socket.
const DefaultPTPSocket = PTPRunDir + "/ptp4l.sock"

// MaxPTPDomain is the highest PTP domain number ptp4l accepts.
const MaxPTPDomain = 127

// maxUDSPath is the longest UNIX socket path Linux accepts (sun_path minus its NUL).
const maxUDSPath = 107

// PTPSpec parameterises the ptp suite: ptp4l's offset from its master, read with pmc through
// ptp4l's management socket every intervalMillis while the other suites run.
// +kubebuilder:object:generate=true
type PTPSpec struct {
	// Socket is ptp4l's UNIX management socket (its uds_address); default
	// /run/tickstack/ptp/ptp4l.sock, where the node agent's ptp4l listens. pmc binds its own
	// reply socket in the same directory, so the directory must be writable.
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
func (s Spec) Defaulted() Spec {
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
			m.MaxBurstPackets = 65536
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

// NetworkSuites reports whether any suite needs a reflector.
func (s Spec) NetworkSuites() bool {
	return s.PingPong != nil || s.RateSweep != nil || s.Microburst != nil || s.MixedBurst != nil
}

// Validate checks a defaulted spec; each error names the field and the fix.
func (s Spec) Validate() error {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if !s.NetworkSuites() && s.Jitter == nil && s.PTP == nil {
		add("spec: no suite selected: set at least one of pingPong, rateSweep, microburst, mixedBurst, jitter, ptp")
	}
	for i, st := range s.Stacks {
		if st != StackKernel && st != StackBypass {
			add("stacks[%d]: %q is not a stack: use kernel or bypass", i, st)
		}
	}
	checkSize := func(field string, v int32) {
		if v < MinMessageSize || v > MaxMessageSize {
			add("%s: message size %d out of range: use %d..%d bytes (sockperf's minimum is 14, 1472 fills a 1500 B MTU)", field, v, MinMessageSize, MaxMessageSize)
		}
	}
	checkDuration := func(field string, v, lo, hi int32) {
		if v < lo || v > hi {
			add("%s: %d out of range: use %d..%d seconds", field, v, lo, hi)
		}
	}
	checkProto := func(field string, p Protocol) {
		if p != ProtocolUDP && p != ProtocolUDPMulticast && p != ProtocolTCP {
			add("%s: %q is not a protocol: use udp, udpMulticast or tcp", field, p)
		}
	}
	if p := s.PingPong; p != nil {
		for i, pr := range p.Protocols {
			checkProto(fmt.Sprintf("pingPong.protocols[%d]", i), pr)
		}
		for i, m := range p.MessageSizes {
			checkSize(fmt.Sprintf("pingPong.messageSizes[%d]", i), m)
		}
		checkDuration("pingPong.durationSeconds", p.DurationSeconds, 1, 3600)
	}
	if r := s.RateSweep; r != nil {
		checkProto("rateSweep.protocol", r.Protocol)
		if r.Protocol == ProtocolTCP {
			add("rateSweep.protocol: tcp has no message drops to detect: use udp or udpMulticast")
		}
		for i, m := range r.MessageSizes {
			checkSize(fmt.Sprintf("rateSweep.messageSizes[%d]", i), m)
		}
		for i, v := range r.RatesMps {
			if v < 1 || v > 100000000 {
				add("rateSweep.ratesMps[%d]: %d out of range: use 1..100000000 messages per second", i, v)
			}
		}
		if !sort.SliceIsSorted(r.RatesMps, func(a, b int) bool { return r.RatesMps[a] < r.RatesMps[b] }) {
			add("rateSweep.ratesMps: rates must increase: sort them")
		}
		if r.ReplyEvery < 1 || r.ReplyEvery > 1000000 {
			add("rateSweep.replyEvery: %d out of range: use 1..1000000", r.ReplyEvery)
		}
		checkDuration("rateSweep.durationSeconds", r.DurationSeconds, 1, 3600)
	}
	if m := s.Microburst; m != nil {
		checkSize("microburst.messageSize", m.MessageSize)
		if m.MaxBurstPackets < 2 || m.MaxBurstPackets > 10000000 {
			add("microburst.maxBurstPackets: %d out of range: use 2..10000000", m.MaxBurstPackets)
		}
		checkDuration("microburst.trialSeconds", m.TrialSeconds, 1, 60)
		if m.MaxTrials < 1 || m.MaxTrials > 64 {
			add("microburst.maxTrials: %d out of range: use 1..64", m.MaxTrials)
		}
		if m.LinkSpeedMbps < 1 || m.LinkSpeedMbps > 1000000 {
			add("microburst.linkSpeedMbps: %d out of range: use 1..1000000 (10000 for 10GbE)", m.LinkSpeedMbps)
		}
	}
	if m := s.MixedBurst; m != nil {
		if len(m.Patterns) == 0 {
			add("mixedBurst.patterns: empty: give at least one {steadyMps, burstMps}")
		}
		for i, p := range m.Patterns {
			if p.SteadyMps < 1 || p.BurstMps < 0 || p.SteadyMps+p.BurstMps > 10000000 {
				add("mixedBurst.patterns[%d]: steadyMps %d, burstMps %d: use steadyMps >= 1, burstMps >= 0, sum <= 10000000", i, p.SteadyMps, p.BurstMps)
			}
			if (p.SteadyMps+p.BurstMps)*int64(m.DurationSeconds) > 20000000 {
				add("mixedBurst.patterns[%d]: %d messages exceed the 20000000 a playback file may hold: lower the rates or durationSeconds", i, (p.SteadyMps+p.BurstMps)*int64(m.DurationSeconds))
			}
		}
		checkDuration("mixedBurst.durationSeconds", m.DurationSeconds, 2, 60)
		if m.DurationSeconds%2 != 0 {
			add("mixedBurst.durationSeconds: %d is odd: use an even number (a burst period is 2 s)", m.DurationSeconds)
		}
		checkSize("mixedBurst.smallSize", m.SmallSize)
		checkSize("mixedBurst.largeSize", m.LargeSize)
		if m.ReplyEvery < 1 || m.ReplyEvery > 1000000 {
			add("mixedBurst.replyEvery: %d out of range: use 1..1000000", m.ReplyEvery)
		}
	}
	if j := s.Jitter; j != nil {
		if _, err := ParseCPUList(j.CPUs); err != nil {
			add("jitter.cpus: %v", err)
		}
		for i, t := range j.Tools {
			if t != JitterOslat && t != JitterCyclictest {
				add("jitter.tools[%d]: %q is not a tool: use oslat or cyclictest", i, t)
			}
		}
		checkDuration("jitter.durationSeconds", j.DurationSeconds, 1, 86400)
		if j.CyclictestIntervalMicros < 10 || j.CyclictestIntervalMicros > 1000000 {
			add("jitter.cyclictestIntervalMicros: %d out of range: use 10..1000000", j.CyclictestIntervalMicros)
		}
		if j.CyclictestPriority < 1 || j.CyclictestPriority > 99 {
			add("jitter.cyclictestPriority: %d out of range: use 1..99", j.CyclictestPriority)
		}
	}
	if p := s.PTP; p != nil {
		switch {
		case !filepath.IsAbs(p.Socket) || filepath.Clean(p.Socket) != p.Socket:
			add("ptp.socket: %q is not a clean absolute path: give ptp4l's uds_address, e.g. %s", p.Socket, DefaultPTPSocket)
		case len(p.Socket) > maxUDSPath:
			add("ptp.socket: %q is longer than %d bytes, the longest UNIX socket path: use a shorter path", p.Socket, maxUDSPath)
		case len(filepath.Dir(p.Socket))+len(pmcSocketLongest) > maxUDSPath:
			add("ptp.socket: directory %q is longer than %d bytes: pmc's reply socket there would not fit a UNIX socket path: use a shorter directory", filepath.Dir(p.Socket), maxUDSPath-len(pmcSocketLongest))
		}
		if p.Domain != nil && (*p.Domain < 0 || *p.Domain > MaxPTPDomain) {
			add("ptp.domain: %d out of range: use 0..%d, ptp4l's domainNumber (or leave it unset to read it from ptp4l.conf beside the socket)", *p.Domain, MaxPTPDomain)
		}
		if p.IntervalMillis < 100 || p.IntervalMillis > 60000 {
			add("ptp.intervalMillis: %d out of range: use 100..60000 milliseconds", p.IntervalMillis)
		}
		checkDuration("ptp.durationSeconds", p.DurationSeconds, 1, 86400)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid benchmark spec: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ParseCPUList parses a Linux CPU list such as "1,3-5" into sorted, distinct CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list: give CPUs like \"2\" or \"2-3,6\"")
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number: give CPUs like \"2\" or \"2-3,6\"", s, part)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range low-high: give CPUs like \"2-3\"", s, part)
			}
		}
		if b > 4095 {
			return nil, fmt.Errorf("CPU list %q: CPU %d is beyond 4095", s, b)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}
