package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Runner is the client side: it drives sockperf clients against a Reflector and runs the jitter
// tools locally.
type Runner struct {
	Tools Tools
	// Reflector is the connected server side; required for network suites.
	Reflector *ReflectorClient
	// LocalAddress is this side's IP on the test network (multicast interface); empty: the source
	// address the kernel picks towards the reflector.
	LocalAddress string
	// CPUs pins the sockperf clients (taskset -c); empty leaves them unpinned.
	CPUs string
	// WorkDir holds full logs and playback files; it must exist.
	WorkDir string
	// BasePort is the first sockperf data port; default 11111.
	BasePort int
	// MulticastGroup defaults to DefaultMulticastGroup.
	MulticastGroup string
	// Node is recorded in the results.
	Node string
	// Logf reports progress; nil discards it.
	Logf func(format string, a ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	portSeq int
	tools   map[string]bool
}

func (r *Runner) logf(format string, a ...any) {
	if r.Logf != nil {
		r.Logf(format, a...)
	}
}

func (r *Runner) now() metav1.Time {
	if r.Now != nil {
		return metav1.NewTime(r.Now().UTC().Truncate(time.Second))
	}
	return metav1.NewTime(time.Now().UTC().Truncate(time.Second))
}

func (r *Runner) noteTool(s string) {
	if r.tools == nil {
		r.tools = map[string]bool{}
	}
	r.tools[s] = true
}

// Run runs every suite of spec and returns the results. Failures of a suite are recorded in its
// Error field and the run goes on; an error is returned only for a spec or setup that cannot run.
func (r *Runner) Run(ctx context.Context, spec tsv1.BenchmarkSuites) (*tsv1.BenchmarkResults, error) {
	spec = spec.Defaulted()
	if err := ValidateSuites(spec); err != nil {
		return nil, err
	}
	if st, err := os.Stat(r.WorkDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("work directory %q is not a directory: pass --work-dir", r.WorkDir)
	}
	res := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, Node: r.Node, StartTime: r.now()}
	if spec.NetworkSuites() {
		if r.Reflector == nil {
			return nil, errors.New("network suites need a reflector: run the server role on the peer and pass --peer")
		}
		if r.LocalAddress == "" {
			la, err := localAddressTowards(r.Reflector.Hello.DataAddress)
			if err != nil {
				return nil, err
			}
			r.LocalAddress = la
		}
		res.Path = &tsv1.NetworkPath{ClientAddress: r.LocalAddress, ReflectorAddress: r.Reflector.Hello.DataAddress, Interface: interfaceOf(r.LocalAddress)}
	}
	// The ptp suite samples from the start of the first suite to the end of the last.
	var stopPTP func() *tsv1.PTPResult
	if spec.PTP != nil {
		stopPTP = r.startPTP(ctx, spec.PTP)
	}
	if spec.NetworkSuites() {
		for _, stack := range spec.Stacks {
			res.Stacks = append(res.Stacks, r.runStack(ctx, stack, spec))
		}
	}
	if spec.Jitter != nil {
		res.Jitter = r.jitter(ctx, spec.Jitter)
	}
	if stopPTP != nil {
		if !spec.NetworkSuites() && spec.Jitter == nil {
			// ptp alone: sample for its duration.
			t := time.NewTimer(time.Duration(spec.PTP.DurationSeconds) * time.Second)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		res.PTP = stopPTP()
	}
	for t := range r.tools {
		res.Tools = append(res.Tools, t)
	}
	sort.Strings(res.Tools)
	res.CompletionTime = r.now()
	return res, ctx.Err()
}

// localAddressTowards returns the source address the kernel would use to reach ip (a UDP
// "connect" sends nothing).
func localAddressTowards(ip string) (string, error) {
	c, err := net.Dial("udp", net.JoinHostPort(ip, "9"))
	if err != nil {
		return "", fmt.Errorf("no route to reflector data address %s: %w", ip, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// interfaceOf names the local interface holding ip, or "" when none does.
func interfaceOf(ip string) string {
	want := net.ParseIP(ip)
	ifs, err := net.Interfaces()
	if err != nil || want == nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
				return ifc.Name
			}
		}
	}
	return ""
}

func (r *Runner) runStack(ctx context.Context, stack tsv1.Stack, spec tsv1.BenchmarkSuites) tsv1.StackResults {
	sr := tsv1.StackResults{Stack: stack}
	if stack == tsv1.StackBypass {
		if _, err := r.Tools.FindLauncher(); err != nil {
			sr.Unavailable = "client side: " + err.Error()
			r.logf("bypass stack unavailable: %s", sr.Unavailable)
			return sr
		}
		if u := r.Reflector.Hello.BypassUnavailable; u != "" {
			sr.Unavailable = "reflector side: " + u
			r.logf("bypass stack unavailable: %s", sr.Unavailable)
			return sr
		}
	}
	if spec.PingPong != nil {
		sr.PingPong = r.pingPong(ctx, stack, spec.PingPong)
	}
	if spec.RateSweep != nil {
		sr.RateSweep = r.rateSweep(ctx, stack, spec.RateSweep)
	}
	if spec.Microburst != nil {
		sr.Microburst = r.microburst(ctx, stack, spec.Microburst)
	}
	if spec.MixedBurst != nil {
		sr.MixedBurst = r.mixedBurst(ctx, stack, spec.MixedBurst)
	}
	return sr
}

func (r *Runner) port() int {
	base := r.BasePort
	if base == 0 {
		base = 11111
	}
	p := base + r.portSeq%1000
	r.portSeq++
	return p
}

func (r *Runner) group() string {
	if r.MulticastGroup != "" {
		return r.MulticastGroup
	}
	return DefaultMulticastGroup
}

// target returns the sockperf client arguments that address the reflector's server.
func (r *Runner) target(proto tsv1.Protocol, port int) []string {
	p := strconv.Itoa(port)
	switch proto {
	case tsv1.ProtocolTCP:
		return []string{"--tcp", "-i", r.Reflector.Hello.DataAddress, "-p", p}
	case tsv1.ProtocolUDPMulticast:
		return []string{"-i", r.group(), "-p", p, "--mc-rx-if", r.LocalAddress, "--mc-tx-if", r.LocalAddress}
	}
	return []string{"-i", r.Reflector.Hello.DataAddress, "-p", p}
}

// withServer starts a sockperf server on the reflector, runs fn against its port and stops it.
func (r *Runner) withServer(stack tsv1.Stack, proto tsv1.Protocol, gap bool, fn func(port int) error) (*ReflectorCounters, error) {
	port := r.port()
	id, err := r.Reflector.Start(ServerSpec{Stack: stack, Protocol: proto, Port: port, Group: r.group(), GapDetection: gap})
	if err != nil {
		return nil, fmt.Errorf("starting the %s %s reflector: %w", stack, proto, err)
	}
	ferr := fn(port)
	counters, serr := r.Reflector.Stop(id)
	if ferr != nil {
		return counters, ferr
	}
	if serr != nil {
		return counters, fmt.Errorf("stopping the %s %s reflector: %w", stack, proto, serr)
	}
	return counters, nil
}

// clientRun runs one sockperf client with a full log and returns its summary and the per-message
// latencies in the full log's order.
func (r *Runner) clientRun(ctx context.Context, stack tsv1.Stack, seconds int32, mode string, args ...string) (*SockperfClientReport, []int64, error) {
	rep, rows, err := r.clientRunRows(ctx, stack, seconds, mode, args...)
	return rep, latencies(rows), err
}

func latencies(rows []FullLogSample) []int64 {
	if rows == nil {
		return nil
	}
	out := make([]int64, len(rows))
	for i, row := range rows {
		out[i] = row.LatencyNs
	}
	return out
}

// clientRunRows is clientRun returning the full log's rows (sequence number and latency).
func (r *Runner) clientRunRows(ctx context.Context, stack tsv1.Stack, seconds int32, mode string, args ...string) (*SockperfClientReport, []FullLogSample, error) {
	sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
	if err != nil {
		return nil, nil, err
	}
	logFile, err := os.CreateTemp(r.WorkDir, "fulllog-*.csv")
	if err != nil {
		return nil, nil, fmt.Errorf("creating full log: %w", err)
	}
	logPath := logFile.Name()
	logFile.Close()
	defer os.Remove(logPath)
	full := append([]string{mode}, args...)
	full = append(full, "--full-log", logPath)
	cmd, err := r.Tools.command(ctx, stack, r.CPUs, sp, full...)
	if err != nil {
		return nil, nil, err
	}
	r.logf("%s", strings.Join(cmd.Args, " "))
	out, err := runTool(ctx, cmd, time.Duration(seconds)*time.Second+60*time.Second)
	if err != nil {
		// sockperf's own error lines (or the launcher's) say more than an exit status.
		if rep, perr := ParseSockperfClient(out); perr != nil && len(rep.Errors) > 0 {
			return rep, nil, perr
		}
		return nil, nil, err
	}
	rep, perr := ParseSockperfClient(out)
	if rep != nil && rep.Version != "" {
		r.noteTool("sockperf " + rep.Version)
	}
	if errors.Is(perr, ErrNoSummary) {
		return rep, nil, fmt.Errorf("%w; its output ends: %s", perr, tail(out, 300))
	}
	if perr != nil {
		return rep, nil, perr
	}
	f, err := os.Open(logPath)
	if err != nil {
		return rep, nil, fmt.Errorf("opening full log: %w", err)
	}
	defer f.Close()
	rows, err := ParseFullLog(bufio.NewReader(f))
	if err != nil {
		return rep, nil, fmt.Errorf("sockperf full log: %w", err)
	}
	return rep, rows, nil
}

// measureAttempts is how often a measurement is made when sockperf ended without a summary.
const measureAttempts = 2

// retry runs f again when it failed because sockperf printed no summary (ErrNoSummary).
func (r *Runner) retry(what string, f func() error) error {
	for i := 1; ; i++ {
		err := f()
		if err == nil || !errors.Is(err, ErrNoSummary) || i >= measureAttempts {
			return err
		}
		r.logf("%s: %v: measuring again", what, err)
	}
}

func joinErr(prev, next string) string {
	if prev == "" {
		return next
	}
	return prev + "; " + next
}

func (r *Runner) pingPong(ctx context.Context, stack tsv1.Stack, s *tsv1.PingPongSpec) *tsv1.PingPongResult {
	res := &tsv1.PingPongResult{}
	for _, proto := range s.Protocols {
		_, err := r.withServer(stack, proto, false, func(port int) error {
			for _, size := range s.MessageSizes {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				args := append(r.target(proto, port), "-m", strconv.Itoa(int(size)), "-t", strconv.Itoa(int(s.DurationSeconds)))
				var rep *SockperfClientReport
				var samples []int64
				err := r.retry(fmt.Sprintf("pingPong %s %s %d B", stack, proto, size), func() (err error) {
					rep, samples, err = r.clientRun(ctx, stack, s.DurationSeconds, "pp", args...)
					return err
				})
				if err != nil {
					return fmt.Errorf("%d B: %w", size, err)
				}
				st := ComputeStats(samples)
				res.Rows = append(res.Rows, tsv1.PingPongRow{Protocol: proto, MessageSize: size, LatencyStats: st, Dropped: rep.Dropped})
				if res.Curve == nil && proto == s.Protocols[0] {
					res.Curve = &tsv1.PercentileCurve{Protocol: proto, MessageSize: size, Points: ComputeCurve(samples)}
				}
				r.logf("pingPong %s %s %d B: median %s us p99 %s us", stack, proto, size, FormatNanosAsMicros(st.MedianNs), FormatNanosAsMicros(st.P99Ns))
			}
			return nil
		})
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", proto, err))
		}
	}
	return res
}

func (r *Runner) rateSweep(ctx context.Context, stack tsv1.Stack, s *tsv1.RateSweepSpec) *tsv1.RateSweepResult {
	res := &tsv1.RateSweepResult{}
	for _, size := range s.MessageSizes {
		best := tsv1.SustainedRate{Protocol: s.Protocol, MessageSize: size}
		stillSustained := true
		for _, rate := range s.RatesMps {
			if ctx.Err() != nil {
				res.Error = joinErr(res.Error, ctx.Err().Error())
				return res
			}
			row := tsv1.RateRow{Protocol: s.Protocol, MessageSize: size, TargetMps: rate}
			var rep *SockperfClientReport
			var samples []int64
			var runErr error
			var counters *ReflectorCounters
			// Each attempt gets a fresh reflector, so its gap count covers that attempt only.
			err := r.retry(fmt.Sprintf("rateSweep %s %d B at %d msg/s", stack, size, rate), func() error {
				var err error
				counters, err = r.withServer(stack, s.Protocol, true, func(port int) error {
					args := append(r.target(s.Protocol, port), "-m", strconv.Itoa(int(size)), "-t", strconv.Itoa(int(s.DurationSeconds)),
						"--mps", strconv.FormatInt(rate, 10), "--reply-every", strconv.Itoa(int(s.ReplyEvery)))
					rep, samples, runErr = r.clientRun(ctx, stack, s.DurationSeconds, "ul", args...)
					return nil
				})
				if err != nil {
					return err
				}
				return runErr
			})
			if err != nil && (counters == nil || rep == nil || rep.ValidSent == 0) {
				// Not measured: it cannot count as sustained either.
				res.Error = joinErr(res.Error, fmt.Sprintf("%d B at %d msg/s: %v", size, rate, err))
				stillSustained = false
				continue
			}
			// A run whose replies all went missing still measured a rate that was not sustained.
			row.Sent = rep.ValidSent
			if rep.ValidRunNs > 0 {
				row.AchievedMps = rep.ValidSent * 1000000000 / rep.ValidRunNs
			}
			row.Dropped = rep.Dropped + counters.GapDropped
			if runErr != nil && row.Dropped == 0 {
				row.Dropped = rep.ValidSent / int64(s.ReplyEvery)
			}
			row.LatencyStats = ComputeStats(samples)
			row.Sustained = row.Dropped == 0 && row.AchievedMps*100 >= rate*95
			res.Rows = append(res.Rows, row)
			if stillSustained && row.Sustained {
				best.Mps = rate
			} else {
				stillSustained = false
			}
			r.logf("rateSweep %s %d B at %d msg/s: achieved %d, dropped %d, median %s us", stack, size, rate, row.AchievedMps, row.Dropped, FormatNanosAsMicros(row.MedianNs))
		}
		res.MaxSustained = append(res.MaxSustained, best)
	}
	return res
}

func (r *Runner) microburst(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec) *tsv1.MicroburstResult {
	res := &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: s.MessageSize, LinkSpeedMbps: s.LinkSpeedMbps}
	trial := func(n int64) (bool, error) {
		var rep *SockperfClientReport
		var counters *ReflectorCounters
		err := r.retry(fmt.Sprintf("microburst %s %d x %d B", stack, n, s.MessageSize), func() (err error) {
			counters, err = r.burstTrial(ctx, stack, s, n, &rep)
			return err
		})
		if err != nil {
			return false, err
		}
		t := tsv1.BurstTrial{Packets: n, Sent: rep.MessagesSent, Bursts: rep.MessagesSent / n}
		// Gap detection sees every loss followed by a later message; a loss at the very end of the
		// last burst only shows as fewer messages received (the count includes warm-up messages).
		t.Dropped = max(counters.GapDropped, rep.MessagesSent-counters.Received, 0)
		res.Trials = append(res.Trials, t)
		r.logf("microburst %s %d x %d B: sent %d, dropped %d", stack, n, s.MessageSize, t.Sent, t.Dropped)
		return t.Dropped == 0 && t.Sent > 0, nil
	}
	var lo, hi int64 // largest burst absorbed, smallest burst that dropped (0: none yet)
	n := min(int64(64), s.MaxBurstPackets)
	for i := int32(0); i < s.MaxTrials; i++ {
		if ctx.Err() != nil {
			res.Error = ctx.Err().Error()
			break
		}
		if hi != 0 {
			if hi-lo <= max(1, lo/32) {
				break
			}
			n = (lo + hi) / 2
		}
		ok, err := trial(n)
		if err != nil {
			res.Error = fmt.Sprintf("burst of %d: %v", n, err)
			break
		}
		switch {
		case ok && hi == 0 && n >= s.MaxBurstPackets:
			lo = n
			res.LimitReached = true
		case ok:
			lo = n
			if hi == 0 {
				n = min(n*2, s.MaxBurstPackets)
			}
		default:
			hi = n
		}
		if res.LimitReached {
			break
		}
	}
	res.MaxBurstPackets = lo
	res.BurstTimeNs = BurstTimeNs(s.MessageSize, lo, s.LinkSpeedMbps)
	return res
}

// burstTrial sends bursts of n messages against a fresh gap-detecting reflector and returns the
// reflector's counters; *rep receives the client's report.
func (r *Runner) burstTrial(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec, n int64, rep **SockperfClientReport) (*ReflectorCounters, error) {
	return r.withServer(stack, tsv1.ProtocolUDP, true, func(port int) error {
		sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
		if err != nil {
			return err
		}
		args := append([]string{"tp"}, r.target(tsv1.ProtocolUDP, port)...)
		args = append(args, "-m", strconv.Itoa(int(s.MessageSize)), "-t", strconv.Itoa(int(s.TrialSeconds)),
			"-b", strconv.FormatInt(n, 10), "--mps", strconv.FormatInt(n*BurstsPerSecond, 10))
		cmd, err := r.Tools.command(ctx, stack, r.CPUs, sp, args...)
		if err != nil {
			return err
		}
		r.logf("%s", strings.Join(cmd.Args, " "))
		out, err := runTool(ctx, cmd, time.Duration(s.TrialSeconds)*time.Second+60*time.Second)
		if err != nil {
			if rp, perr := ParseSockperfClient(out); perr != nil && len(rp.Errors) > 0 {
				return perr
			}
			return err
		}
		rp, err := ParseSockperfClient(out)
		if rp != nil && rp.Version != "" {
			r.noteTool("sockperf " + rp.Version)
		}
		if errors.Is(err, ErrNoSummary) {
			return fmt.Errorf("%w; its output ends: %s", err, tail(out, 300))
		}
		*rep = rp
		return err
	})
}

// mixedSize is the size of message i of a mixedBurst playback: two small, then one large.
func mixedSize(i int64, small, large int32) int32 {
	if i%3 == 2 {
		return large
	}
	return small
}

// WritePlayback writes a sockperf playback file (--data-file: "seconds, size" a line) for paper
// 003's pattern: steadyMps all the time plus burstMps during every second second, messages evenly
// spaced within each second, sizes cycling small, small, large (2/3 and 1/3). It returns the
// number of messages.
func WritePlayback(path string, p tsv1.MixedBurstPattern, seconds int32, small, large int32) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("creating playback file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var i int64
	const start = 1.0 // sockperf starts the timeline after its warm-up
	for sec := int32(0); sec < seconds; sec++ {
		rate := p.SteadyMps
		if sec%2 == 1 {
			rate += p.BurstMps
		}
		for k := int64(0); k < rate; k++ {
			// Integer nanoseconds keep the timeline exact.
			ns := int64(sec)*1000000000 + k*1000000000/rate
			t := start + float64(ns)/1e9
			if _, err := fmt.Fprintf(w, "%.9f, %d\n", t, mixedSize(i, small, large)); err != nil {
				f.Close()
				return 0, fmt.Errorf("writing playback file: %w", err)
			}
			i++
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, fmt.Errorf("writing playback file: %w", err)
	}
	return i, f.Close()
}

func (r *Runner) mixedBurst(ctx context.Context, stack tsv1.Stack, s *tsv1.MixedBurstSpec) *tsv1.MixedBurstResult {
	res := &tsv1.MixedBurstResult{Protocol: tsv1.ProtocolUDP, SmallSize: s.SmallSize, LargeSize: s.LargeSize}
	for _, p := range s.Patterns {
		if ctx.Err() != nil {
			res.Error = joinErr(res.Error, ctx.Err().Error())
			return res
		}
		label := fmt.Sprintf("%d+%d msg/s", p.SteadyMps, p.BurstMps)
		pb := filepath.Join(r.WorkDir, fmt.Sprintf("playback-%d-%d.csv", p.SteadyMps, p.BurstMps))
		total, err := WritePlayback(pb, p, s.DurationSeconds, s.SmallSize, s.LargeSize)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		var rep *SockperfClientReport
		var rows []FullLogSample
		var counters *ReflectorCounters
		err = r.retry(fmt.Sprintf("mixedBurst %s %s", stack, label), func() (err error) {
			counters, err = r.withServer(stack, tsv1.ProtocolUDP, true, func(port int) error {
				args := append(r.target(tsv1.ProtocolUDP, port), "--data-file", pb, "--reply-every", strconv.Itoa(int(s.ReplyEvery)))
				var err error
				rep, rows, err = r.clientRunRows(ctx, stack, s.DurationSeconds, "pb", args...)
				return err
			})
			return err
		})
		os.Remove(pb)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		// Sent counts the whole playback ([Total Run]); sockperf's measured window may leave the
		// last few messages out of the samples.
		row := tsv1.MixedBurstRow{SteadyMps: p.SteadyMps, BurstMps: p.BurstMps, Sent: rep.TotalSent, Dropped: rep.Dropped + counters.GapDropped}
		if row.Sent == 0 {
			row.Sent = total
		}
		if s.ReplyEvery == 1 {
			// Every message is timed and its full-log sequence number is its line in the playback
			// file, which says its size.
			var sm, lg []int64
			for _, fr := range rows {
				if mixedSize(fr.Packet, s.SmallSize, s.LargeSize) == s.LargeSize {
					lg = append(lg, fr.LatencyNs)
				} else {
					sm = append(sm, fr.LatencyNs)
				}
			}
			sst, lst := ComputeStats(sm), ComputeStats(lg)
			row.Small, row.Large = &sst, &lst
		}
		row.LatencyStats = ComputeStats(latencies(rows))
		res.Rows = append(res.Rows, row)
		r.logf("mixedBurst %s %s: sent %d, dropped %d, mean %s us, p99 %s us, std-dev %s us", stack, label, row.Sent, row.Dropped,
			FormatNanosAsMicros(row.MeanNs), FormatNanosAsMicros(row.P99Ns), FormatNanosAsMicros(row.StdDevNs))
	}
	return res
}

func (r *Runner) jitter(ctx context.Context, s *tsv1.JitterSpec) *tsv1.JitterResult {
	res := &tsv1.JitterResult{}
	cpus, err := ParseCPUList(s.CPUs)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	timeout := time.Duration(s.DurationSeconds)*time.Second + 60*time.Second
	for _, tool := range s.Tools {
		if ctx.Err() != nil {
			res.Error = joinErr(res.Error, ctx.Err().Error())
			return res
		}
		switch tool {
		case tsv1.JitterOslat:
			p, err := r.Tools.path("oslat", r.Tools.Oslat)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			cmd, _ := r.Tools.command(ctx, tsv1.StackKernel, "", p, "--cpu-list", s.CPUs, "-D", strconv.Itoa(int(s.DurationSeconds)), "-C", strconv.Itoa(mainCPU(cpus)), "-b", "1024", "-z")
			r.logf("%s", strings.Join(cmd.Args, " "))
			out, err := runTool(ctx, cmd, timeout)
			if err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("oslat: %v", err))
				continue
			}
			reps, err := ParseOslat(out)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			if v := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]); strings.HasPrefix(v, "oslat V") {
				r.noteTool(v)
			}
			for _, o := range reps {
				res.Rows = append(res.Rows, tsv1.JitterRow{Tool: tsv1.JitterOslat, CPU: int32(o.CPU), LatencyStats: o.Stats()})
			}
		case tsv1.JitterCyclictest:
			p, err := r.Tools.path("cyclictest", r.Tools.Cyclictest)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			cmd, _ := r.Tools.command(ctx, tsv1.StackKernel, "", p, "-m", "-q", "-a", s.CPUs, "-t", strconv.Itoa(len(cpus)),
				"-p", strconv.Itoa(int(s.CyclictestPriority)), "-i", strconv.Itoa(int(s.CyclictestIntervalMicros)),
				"-D", strconv.Itoa(int(s.DurationSeconds)), "-h", "1000")
			r.logf("%s", strings.Join(cmd.Args, " "))
			out, err := runTool(ctx, cmd, timeout)
			if err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("cyclictest: %v", err))
				continue
			}
			reps, err := ParseCyclictest(out)
			if err != nil {
				res.Error = joinErr(res.Error, err.Error())
				continue
			}
			r.noteTool("cyclictest (rt-tests)")
			for i, c := range reps {
				cpu := -1
				if i < len(cpus) {
					cpu = cpus[i]
				}
				res.Rows = append(res.Rows, tsv1.JitterRow{Tool: tsv1.JitterCyclictest, CPU: int32(cpu), LatencyStats: c.Stats(), Overflows: c.Overflows})
			}
		}
	}
	return res
}

// mainCPU picks the CPU for oslat's main thread: one this process may run on that is not measured,
// else the first measured one (oslat's default, CPU 0, may be outside a pinned pod's cpuset).
func mainCPU(measured []int) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		in := map[int]bool{}
		for _, c := range measured {
			in[c] = true
		}
		for c := 0; c < 1024; c++ {
			if set.IsSet(c) && !in[c] {
				return c
			}
		}
	}
	return measured[0]
}
