package judge

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// ValidateThresholds reports every malformed threshold, naming its field and the fix.
func ValidateThresholds(t tsv1.Thresholds) error {
	var errs []string
	for i, l := range t.Latency {
		f := fmt.Sprintf("thresholds.latency[%d]", i)
		switch l.Suite {
		case tsv1.SuitePingPong, tsv1.SuiteRateSweep, tsv1.SuiteMixedBurst, tsv1.SuiteJitter:
		case tsv1.SuiteTickToTrade:
			for _, sel := range []struct {
				name string
				set  bool
			}{{"protocol", l.Protocol != ""}, {"messageSize", l.MessageSize != 0}, {"tool", l.Tool != ""}} {
				if sel.set {
					errs = append(errs, fmt.Sprintf("%s.%s: does not apply to suite tickToTrade (its rows are a stack and a rate): remove it, or narrow with stack and rateMps", f, sel.name))
				}
			}
		case tsv1.SuitePTP:
			for _, sel := range []struct {
				name string
				set  bool
			}{{"stack", l.Stack != ""}, {"protocol", l.Protocol != ""}, {"messageSize", l.MessageSize != 0}, {"tool", l.Tool != ""}} {
				if sel.set {
					errs = append(errs, fmt.Sprintf("%s.%s: does not apply to suite ptp (one offset distribution per node): remove it", f, sel.name))
				}
			}
		default:
			errs = append(errs, fmt.Sprintf("%s.suite: %q has no latency rows: use pingPong, rateSweep, mixedBurst, jitter, ptp or tickToTrade", f, l.Suite))
		}
		if l.RateMps < 0 || (l.RateMps != 0 && l.Suite != tsv1.SuiteRateSweep && l.Suite != tsv1.SuiteTickToTrade) {
			errs = append(errs, fmt.Sprintf("%s.rateMps: %d: narrows rateSweep and tickToTrade rows to one rate of the suite; remove it for suite %s", f, l.RateMps, l.Suite))
		}
		if _, ok := l.Statistic.Of(tsv1.LatencyStats{}); !ok {
			errs = append(errs, fmt.Sprintf("%s.statistic: %q is unknown: use min, median, mean, p95, p99, p999, max or stdDev", f, l.Statistic))
		}
		if d, err := time.ParseDuration(l.Max); err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s.max: %q is not a positive duration: write it like \"25us\" or \"1.5ms\"", f, l.Max))
		}
		if l.Stack != "" && l.Stack != tsv1.StackKernel && l.Stack != tsv1.StackBypass {
			errs = append(errs, fmt.Sprintf("%s.stack: %q: use kernel, bypass or leave it empty", f, l.Stack))
		}
	}
	if t.MaxDropped != nil && *t.MaxDropped < 0 {
		errs = append(errs, "thresholds.maxDropped: negative: use 0 or more")
	}
	if t.MinSustainedMps != nil && *t.MinSustainedMps < 0 {
		errs = append(errs, "thresholds.minSustainedMps: negative: use 0 or more")
	}
	if t.MinMicroburstPackets != nil && *t.MinMicroburstPackets < 0 {
		errs = append(errs, "thresholds.minMicroburstPackets: negative: use 0 or more")
	}
	if t.MinBypassSpeedup != "" {
		if _, err := ParseRatio(t.MinBypassSpeedup); err != nil {
			errs = append(errs, fmt.Sprintf("thresholds.minBypassSpeedup: %v", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid thresholds: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ValidateSuites checks defaulted suites; each error names the field and the fix.
func ValidateSuites(s tsv1.BenchmarkSuites) error {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if !s.NetworkSuites() && s.Jitter == nil && s.PTP == nil {
		add("spec: no suite selected: set at least one of pingPong, rateSweep, microburst, mixedBurst, jitter, ptp, tickToTrade, qualify")
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
	checkBuffer := func(field string, v int64) {
		if v < MinReceiveBufferBytes || v > MaxReceiveBufferBytes {
			add("%s: %d out of range: use %d..%d bytes (the receiving socket's SO_RCVBUF; the kernel caps it at net.core.rmem_max)", field, v, MinReceiveBufferBytes, MaxReceiveBufferBytes)
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
		if r.ReceiveBufferBytes != 0 {
			checkBuffer("rateSweep.receiveBufferBytes", r.ReceiveBufferBytes)
		}
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
		if len(m.ReceiveBufferBytes) > MaxReceiveBufferSizes {
			add("microburst.receiveBufferBytes: %d sizes: use at most %d (each is a search on every stack)", len(m.ReceiveBufferBytes), MaxReceiveBufferSizes)
		}
		for i, v := range m.ReceiveBufferBytes {
			checkBuffer(fmt.Sprintf("microburst.receiveBufferBytes[%d]", i), v)
			if i > 0 && v <= m.ReceiveBufferBytes[i-1] {
				add("microburst.receiveBufferBytes: sizes must increase, each once: sort them and drop repeats")
				break
			}
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
	if q := s.Qualify; q != nil {
		checkSize("qualify.messageSize", q.MessageSize)
		checkDuration("qualify.durationSeconds", q.DurationSeconds, 1, 60)
	}
	if t := s.TickToTrade; t != nil {
		if len(t.RatesMps) == 0 {
			add("tickToTrade.ratesMps: empty: give at least one rate, e.g. 500, 1000, 10000, 50000, 100000")
		}
		for i, v := range t.RatesMps {
			if v < 1 || v > MaxT2TRate {
				add("tickToTrade.ratesMps[%d]: %d out of range: use 1..%d messages per second", i, v, MaxT2TRate)
			}
		}
		if !sort.SliceIsSorted(t.RatesMps, func(a, b int) bool { return t.RatesMps[a] < t.RatesMps[b] }) {
			add("tickToTrade.ratesMps: rates must increase: sort them")
		}
		checkDuration("tickToTrade.durationSeconds", t.DurationSeconds, 1, 3600)
		if t.OrderEvery < 1 || t.OrderEvery > 1000000 {
			add("tickToTrade.orderEvery: %d out of range: use 1..1000000 (a BUY on every Nth tick)", t.OrderEvery)
		} else if len(t.RatesMps) > 0 && t.RatesMps[0] > 0 && t.RatesMps[0]*int64(t.DurationSeconds) < int64(t.OrderEvery) {
			add("tickToTrade.orderEvery: %d is more than the %d ticks of the lowest rate (%d msg/s for %d s): no order would be sent; lower it or send longer", t.OrderEvery, t.RatesMps[0]*int64(t.DurationSeconds), t.RatesMps[0], t.DurationSeconds)
		}
		switch t.Mix {
		case tsv1.TickMixSteady:
			if t.MessageSize < MinT2TMessageSize || t.MessageSize > MaxMessageSize {
				add("tickToTrade.messageSize: %d out of range: use %d..%d bytes (a tick's header is 32 bytes)", t.MessageSize, MinT2TMessageSize, MaxMessageSize)
			}
		case tsv1.TickMixSeed003:
		default:
			add("tickToTrade.mix: %q is not a mix: use steady or seed003", t.Mix)
		}
		if t.BurstMps < 0 || t.BurstMps > MaxT2TRate {
			add("tickToTrade.burstMps: %d out of range: use 0..%d", t.BurstMps, MaxT2TRate)
		}
		if t.BurstMps > 0 && t.DurationSeconds%2 != 0 {
			add("tickToTrade.durationSeconds: %d is odd: with burstMps use an even number (a burst period is 2 s)", t.DurationSeconds)
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
			add("ptp.socket: %q is not a clean absolute path: give the read-only socket the node agent serves, e.g. %s", p.Socket, tsv1.DefaultPTPSocket)
		case len(p.Socket) > MaxUDSPath:
			add("ptp.socket: %q is longer than %d bytes, the longest UNIX socket path: use a shorter path", p.Socket, MaxUDSPath)
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
