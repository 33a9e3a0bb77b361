package bench

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
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

// MaxPTPDomain is the highest PTP domain number ptp4l accepts.
const MaxPTPDomain = 127

// maxUDSPath is the longest UNIX socket path Linux accepts (sun_path minus its NUL).
const maxUDSPath = 107

// ValidateSuites checks defaulted suites; each error names the field and the fix.
func ValidateSuites(s tsv1.BenchmarkSuites) error {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if !s.NetworkSuites() && s.Jitter == nil && s.PTP == nil {
		add("spec: no suite selected: set at least one of pingPong, rateSweep, microburst, mixedBurst, jitter, ptp")
	}
	for i, st := range s.Stacks {
		if st != tsv1.StackKernel && st != tsv1.StackBypass {
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
	checkProto := func(field string, p tsv1.Protocol) {
		if p != tsv1.ProtocolUDP && p != tsv1.ProtocolUDPMulticast && p != tsv1.ProtocolTCP {
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
		if r.Protocol == tsv1.ProtocolTCP {
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
			if t != tsv1.JitterOslat && t != tsv1.JitterCyclictest {
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
			add("ptp.socket: %q is not a clean absolute path: give ptp4l's uds_address, e.g. %s", p.Socket, tsv1.DefaultPTPSocket)
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
