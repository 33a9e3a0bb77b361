package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoSummary is returned for sockperf client output that ends without a summary and without an
// error line. sockperf 3.7 stops its own threads with a signal at the end of a run and, rarely,
// exits before it printed the summary; the suites run such a measurement once more.
var ErrNoSummary = errors.New("sockperf client output holds no latency or throughput summary")

// SockperfClientReport is what a sockperf 3.7 client (ping-pong, under-load, playback, throughput)
// printed. Latencies are nanoseconds (sockperf prints microseconds with three decimals).
type SockperfClientReport struct {
	// Version is sockperf's version string ("3.7-no.git").
	Version string
	// TotalRunNs, TotalSent, TotalReceived are the "[Total Run]" line.
	TotalRunNs, TotalSent, TotalReceived int64
	// ValidRunNs, ValidSent, ValidReceived are the "[Valid Duration]" line (the measured window:
	// sockperf drops the first 400 ms and last 50 ms).
	ValidRunNs, ValidSent, ValidReceived int64
	// HasLatency is true when the latency summary was found.
	HasLatency bool
	// AvgNs and StdDevNs are the "avg-latency=... (std-dev=...)" line.
	AvgNs, StdDevNs int64
	// Dropped, Duplicated, OutOfOrder are the reply counters.
	Dropped, Duplicated, OutOfOrder int64
	// Observations is "Total N observations".
	Observations int64
	// MinNs and MaxNs are the <MIN> and <MAX> observations.
	MinNs, MaxNs int64
	// Percentiles maps sockperf's percentile label ("99.900") to nanoseconds.
	Percentiles map[string]int64
	// MessagesSent and SendSeconds are throughput mode's "Total of N messages sent in X sec".
	MessagesSent int64
	// MessageRate is throughput mode's "Message Rate is N [msg/sec]".
	MessageRate int64
	// Errors are sockperf's own error lines (it exits 0 even then).
	Errors []string
}

// SockperfServerReport is what a sockperf 3.7 server printed, up to its SIGINT summary.
type SockperfServerReport struct {
	Version string
	// Ready is true once the server printed that it blocks on (or polls) its sockets.
	Ready bool
	// Received is "Total N messages received and handled" (includes warm-up messages).
	Received int64
	// HasReceived is true when that line, or the idle server's "No messages were received on the
	// server", was found (the server printed its totals).
	HasReceived bool
	// GapDropped sums every session's "Summary: Total Dropped/OOO: N" (with -g).
	GapDropped int64
	// Errors are sockperf's own error lines.
	Errors []string
}

var (
	ansiRe                = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]|\\[[0-9;]+m")
	versionRe             = regexp.MustCompile(`==\s*version\s*#(\S+)\s*==`)
	sockperfVersionLineRe = regexp.MustCompile(`sockperf,\s*version\s+(\S+)`)
	totalRunRe            = regexp.MustCompile(`\[Total\s+Run\]\s*RunTime=\s*([0-9.]+)\s*sec;\s*Warm\s+up\s+time=\s*[0-9]+\s*msec;\s*SentMessages=\s*([0-9]+);\s*ReceivedMessages=\s*([0-9]+)`)
	validRunRe            = regexp.MustCompile(`\[Valid\s+Duration\]\s*RunTime=\s*([0-9.]+)\s*sec;\s*SentMessages=\s*([0-9]+);\s*ReceivedMessages=\s*([0-9]+)`)
	avgLatencyRe          = regexp.MustCompile(`avg-(?:latency|rtt)=\s*([0-9.]+)\s*\(std-dev=\s*([0-9.]+)\)`)
	countersRe            = regexp.MustCompile(`#\s*dropped\s+messages\s*=\s*([0-9]+);\s*#\s*duplicated\s+messages\s*=\s*([0-9]+);\s*#\s*out-of-order\s+messages\s*=\s*([0-9]+)`)
	observationsRe        = regexp.MustCompile(`Total\s+([0-9]+)\s+observations`)
	maxObsRe              = regexp.MustCompile(`<MAX>\s+observation\s*=\s*([0-9.]+)`)
	minObsRe              = regexp.MustCompile(`<MIN>\s+observation\s*=\s*([0-9.]+)`)
	percentileRe          = regexp.MustCompile(`percentile\s+([0-9]+\.[0-9]+)\s*=\s*([0-9.]+)`)
	sentInRe              = regexp.MustCompile(`Total\s+of\s+([0-9]+)\s+messages\s+sent\s+in\s+([0-9.]+)\s*sec`)
	msgRateRe             = regexp.MustCompile(`Message\s+Rate\s+is\s+([0-9]+)\s*\[msg/sec\]`)
	serverTotalRe         = regexp.MustCompile(`Total\s+([0-9]+)\s+messages\s+received\s+and\s+handled`)
	serverGapSumRe        = regexp.MustCompile(`Summary:\s*Total\s+Dropped/OOO:\s*([0-9]+)`)
	serverIdleRe          = regexp.MustCompile(`No\s+messages\s+were\s+received\s+on\s+the\s+server`)
	serverReadyRe         = regexp.MustCompile(`using\s+\S+\s+to\s+(?:block|poll)\s+on\s+socket`)
	sockperfErrorRe       = regexp.MustCompile(`(?m)^(?:sockperf:\s*)?(ERROR:.*|.*TICKSTACK_REQUIRE=1:.*|.*Invalid .*|.*No messages were received.*|.*Is the server down.*|.*[Ff]ailed .*)$`)
)

// CleanSockperfOutput removes ANSI colour codes and carriage returns.
func CleanSockperfOutput(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	return ansiRe.ReplaceAllString(s, "")
}

func atoi64(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func micros(s string) int64 {
	v, err := ParseMicrosToNanos(s)
	if err != nil {
		return 0
	}
	return v
}

// secondsToNanos parses "1.550" seconds.
func secondsToNanos(s string) int64 {
	us, err := ParseMicrosToNanos(s) // "1.550" read as microseconds gives 1550 = milliseconds
	if err != nil {
		return 0
	}
	return us * 1000000
}

func sockperfErrors(text string) []string {
	var out []string
	for _, m := range sockperfErrorRe.FindAllStringSubmatch(text, -1) {
		line := strings.TrimSpace(m[1])
		if line != "" && len(out) < 8 {
			out = append(out, line)
		}
	}
	return out
}

// ParseSockperfClient parses a sockperf 3.7 client's combined output. Colour codes, lines in any
// order (sockperf's signal handler interleaves them) and lines wrapped at whitespace are accepted.
// It fails when the output holds neither a latency summary nor a throughput summary, and the error
// quotes sockperf's own error line when there is one.
func ParseSockperfClient(output string) (*SockperfClientReport, error) {
	text := CleanSockperfOutput(output)
	r := &SockperfClientReport{Percentiles: map[string]int64{}, Errors: sockperfErrors(text)}
	if m := versionRe.FindStringSubmatch(text); m != nil {
		r.Version = m[1]
	}
	if m := totalRunRe.FindStringSubmatch(text); m != nil {
		r.TotalRunNs, r.TotalSent, r.TotalReceived = secondsToNanos(m[1]), atoi64(m[2]), atoi64(m[3])
	}
	if m := validRunRe.FindStringSubmatch(text); m != nil {
		r.ValidRunNs, r.ValidSent, r.ValidReceived = secondsToNanos(m[1]), atoi64(m[2]), atoi64(m[3])
	}
	if m := avgLatencyRe.FindStringSubmatch(text); m != nil {
		r.HasLatency = true
		r.AvgNs, r.StdDevNs = micros(m[1]), micros(m[2])
	}
	if m := countersRe.FindStringSubmatch(text); m != nil {
		r.Dropped, r.Duplicated, r.OutOfOrder = atoi64(m[1]), atoi64(m[2]), atoi64(m[3])
	}
	if m := observationsRe.FindStringSubmatch(text); m != nil {
		r.Observations = atoi64(m[1])
	}
	if m := maxObsRe.FindStringSubmatch(text); m != nil {
		r.MaxNs = micros(m[1])
	}
	if m := minObsRe.FindStringSubmatch(text); m != nil {
		r.MinNs = micros(m[1])
	}
	for _, m := range percentileRe.FindAllStringSubmatch(text, -1) {
		r.Percentiles[m[1]] = micros(m[2])
	}
	if m := sentInRe.FindStringSubmatch(text); m != nil {
		r.MessagesSent = atoi64(m[1])
	}
	if m := msgRateRe.FindStringSubmatch(text); m != nil {
		r.MessageRate = atoi64(m[1])
	}
	if !r.HasLatency && r.MessageRate == 0 && r.MessagesSent == 0 {
		if len(r.Errors) > 0 {
			return r, fmt.Errorf("sockperf client reported no results: %s", strings.Join(r.Errors, "; "))
		}
		return r, ErrNoSummary
	}
	return r, nil
}

// ParseSockperfServer parses a sockperf 3.7 server's output, complete or not.
func ParseSockperfServer(output string) *SockperfServerReport {
	text := CleanSockperfOutput(output)
	r := &SockperfServerReport{Errors: sockperfErrors(text)}
	if m := versionRe.FindStringSubmatch(text); m != nil {
		r.Version = m[1]
	}
	r.Ready = serverReadyRe.MatchString(text)
	if m := serverTotalRe.FindStringSubmatch(text); m != nil {
		r.Received, r.HasReceived = atoi64(m[1]), true
	} else if serverIdleRe.MatchString(text) {
		// An idle server prints this instead of its total.
		r.Received, r.HasReceived = 0, true
	}
	for _, m := range serverGapSumRe.FindAllStringSubmatch(text, -1) {
		r.GapDropped += atoi64(m[1])
	}
	return r
}

// FullLogSample is one row of sockperf's --full-log CSV.
type FullLogSample struct {
	// Packet is sockperf's sequence number of the timed message.
	Packet int64
	// TxNs and RxNs are when the message was sent and its reply received, in nanoseconds of
	// sockperf's clock (0 when the column was not a time).
	TxNs, RxNs int64
	// LatencyNs is the row's latency column (RTT/2 unless --full-rtt).
	LatencyNs int64
}

// parseSecondsToNanos parses a non-negative decimal number of seconds with up to nine decimals
// ("2.436765509", sockperf's full-log times) into integer nanoseconds without a float.
func parseSecondsToNanos(s string) (int64, error) {
	s = strings.TrimSpace(s)
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" || len(intPart) > 9 || len(frac) > 9 {
		return 0, fmt.Errorf("%q is not a time in seconds", s)
	}
	for _, part := range []string{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%q is not a time in seconds", s)
			}
		}
	}
	whole, _ := strconv.ParseInt(intPart, 10, 64)
	ns := whole * 1000000000
	if frac != "" {
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		ns += f
	}
	return ns, nil
}

// ParseFullLog reads a sockperf --full-log CSV: a header of summary lines, then
// "packet, txTime(sec), rxTime(sec), latency(usec)" and one row per timed message. Rows whose
// latency is not a number (e.g. a reply that never came) are skipped.
func ParseFullLog(r io.Reader) ([]FullLogSample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var out []FullLogSample
	inRows := false
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if !inRows {
			if strings.HasPrefix(t, "packet,") && strings.Contains(t, "latency") {
				inRows = true
			}
			continue
		}
		if t == "" || strings.HasPrefix(t, "---") {
			continue
		}
		f := strings.Split(t, ",")
		if len(f) < 4 {
			return out, fmt.Errorf("full log line %d: %q has %d fields, want 4 (packet, txTime, rxTime, latency)", line, t, len(f))
		}
		pkt, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		if err != nil {
			return out, fmt.Errorf("full log line %d: packet %q is not a number", line, f[0])
		}
		lat, err := ParseMicrosToNanos(f[3])
		if err != nil {
			continue
		}
		// A time that is not a number leaves 0: the stall detection then has no time for the row.
		tx, _ := parseSecondsToNanos(f[1])
		rx, _ := parseSecondsToNanos(f[2])
		out = append(out, FullLogSample{Packet: pkt, TxNs: tx, RxNs: rx, LatencyNs: lat})
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading full log: %w", err)
	}
	if !inRows {
		return nil, fmt.Errorf("full log has no \"packet, txTime(sec), rxTime(sec), latency(usec)\" header")
	}
	return out, nil
}
