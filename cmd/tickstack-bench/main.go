// Command tickstack-bench is the node-side benchmark runner a LatencyBenchmark Job executes. It has
// two roles:
//
//	tickstack-bench --role=server --listen=IP [--data-interface=IFACE] [--cpus=LIST] [--once]
//	tickstack-bench --role=client --peer=IP[:PORT] [--cpus=LIST] [--spec=FILE | suite flags] [--output=FILE]
//
// The server role is the reflector: it runs unmodified sockperf servers (under the bypass launcher
// for the bypass stack) when the client asks over a control connection. The control connection
// uses --listen; the measured traffic uses --data-interface's address when given (a pod's latency
// interface, e.g. lat0), so the suites run over the profile's network while the client finds the
// reflector by its primary address. The server also runs the tickToTrade suite's venue (the rig's
// exchange simulator and market-data publisher) when the client asks. The client role runs the
// suites (sockperf clients, oslat, cyclictest; pmc reading ptp4l for the ptp suite; the rig's
// strategy for tickToTrade), then writes the results as compact JSON to
// --output and prints them to stdout between marker lines (see judge.WriteResultsLog), where a
// controller reads them from the pod log. Progress goes to stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/qualify"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "tickstack-bench: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	role         string
	listen       string
	dataIface    string
	controlPort  int
	once         bool
	peer         string
	peerTimeout  time.Duration
	cpus         string
	launcher     string
	specFile     string
	output       string
	workDir      string
	node         string
	basePort     int
	group        string
	suites       string
	stacks       string
	protocols    string
	sizes        string
	duration     int
	rates        string
	rateSizes    string
	replyEvery   int
	burstSize    int
	maxBurst     int64
	burstTrials  int
	linkMbps     int64
	burstBufs    string
	rateBuf      int64
	mixed        string
	mixedSeconds int
	jitterCPUs   string
	jitterSecs   int
	jitterTools  string
	cyclicPrio   int
	ptpSocket    string
	ptpInterval  time.Duration
	ptpDomain    int
	ptpDuration  int
	t2tDir       string
	t2tRates     string
	t2tDuration  int
	t2tEvery     int
	t2tSize      int
	t2tMix       string
	t2tBurst     int64
}

func parseFlags(args []string, stderr io.Writer) (*options, *flag.FlagSet, error) {
	o := &options{}
	fs := flag.NewFlagSet("tickstack-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.role, "role", "", "server (the reflector) or client (runs the suites)")
	fs.StringVar(&o.listen, "listen", "", "server: this host's IP on the test network; sockperf servers bind to it and the control port listens on it")
	fs.StringVar(&o.dataIface, "data-interface", "", "server: interface whose IPv4 address the sockperf servers bind to (default: the --listen address)")
	fs.IntVar(&o.controlPort, "control-port", judge.DefaultControlPort, "server: control port; client: default port of --peer")
	fs.BoolVar(&o.once, "once", false, "server: exit when the first client disconnects (for Jobs)")
	fs.StringVar(&o.peer, "peer", "", "client: the reflector's control address, IP or IP:PORT")
	fs.DurationVar(&o.peerTimeout, "peer-timeout", 2*time.Minute, "client: how long to wait for the reflector")
	fs.StringVar(&o.cpus, "cpus", "", "CPU list (taskset -c) for this side's sockperf processes, e.g. 2 or 2-3")
	fs.StringVar(&o.launcher, "launcher", "", "bypass launcher path (default "+bench.DefaultLauncherPath+", then tickstack-run on PATH)")
	fs.StringVar(&o.specFile, "spec", "", "client: JSON bench.Spec file (- for stdin); excludes the suite flags below")
	fs.StringVar(&o.output, "output", "", "client: also write the results JSON to this file")
	fs.StringVar(&o.workDir, "work-dir", "", "client: directory for sockperf full logs and playback files (default: a new temporary directory)")
	fs.StringVar(&o.node, "node", os.Getenv("NODE_NAME"), "client: node name recorded in the results (default $NODE_NAME)")
	fs.IntVar(&o.basePort, "base-port", 11111, "client: first sockperf data port")
	fs.StringVar(&o.group, "group", bench.DefaultMulticastGroup, "client: multicast group for udpMulticast")
	fs.StringVar(&o.suites, "suites", "", "client: comma list of pingPong,rateSweep,microburst,mixedBurst,jitter,ptp (instead of --spec)")
	fs.StringVar(&o.stacks, "stacks", "", "client: comma list of kernel,bypass (default kernel)")
	fs.StringVar(&o.protocols, "protocols", "", "pingPong: comma list of udp,udpMulticast,tcp")
	fs.StringVar(&o.sizes, "sizes", "", "pingPong: comma list of message sizes in bytes (14..1472)")
	fs.IntVar(&o.duration, "duration", 0, "seconds per pingPong size and per rateSweep rate")
	fs.StringVar(&o.rates, "rates", "", "rateSweep: comma list of increasing rates in msg/s")
	fs.StringVar(&o.rateSizes, "rate-sizes", "", "rateSweep: comma list of message sizes")
	fs.IntVar(&o.replyEvery, "reply-every", 0, "rateSweep: reflect one message in N")
	fs.IntVar(&o.burstSize, "burst-size", 0, "microburst: message size")
	fs.Int64Var(&o.maxBurst, "max-burst", 0, "microburst: largest burst to try")
	fs.IntVar(&o.burstTrials, "burst-trials", 0, "microburst: most trials of the search")
	fs.Int64Var(&o.linkMbps, "link-mbps", 0, "microburst: line rate for the burst-time formula (default 10000)")
	fs.StringVar(&o.burstBufs, "burst-buffers", "", "microburst: comma list of increasing receive buffer sizes in bytes, the reflector's SO_RCVBUF (sockperf --buffer-size), one search each (default: the socket's default)")
	fs.Int64Var(&o.rateBuf, "rate-buffer", 0, "rateSweep: the reflector's receive buffer in bytes, SO_RCVBUF (default: the socket's default)")
	fs.StringVar(&o.mixed, "mixed-patterns", "", "mixedBurst: comma list of STEADY+BURST msg/s, e.g. 500000+500000,1000000+500000")
	fs.IntVar(&o.mixedSeconds, "mixed-duration", 0, "mixedBurst: seconds per pattern (even)")
	fs.StringVar(&o.jitterCPUs, "jitter-cpus", "", "jitter: CPU list to measure (required for jitter)")
	fs.IntVar(&o.jitterSecs, "jitter-duration", 0, "jitter: seconds per tool")
	fs.StringVar(&o.jitterTools, "jitter-tools", "", "jitter: comma list of oslat,cyclictest")
	fs.IntVar(&o.cyclicPrio, "cyclictest-priority", 0, "jitter: cyclictest SCHED_FIFO priority")
	fs.StringVar(&o.ptpSocket, "ptp-socket", "", "ptp: ptp4l's management socket (default "+tsv1.DefaultPTPSocket+")")
	fs.DurationVar(&o.ptpInterval, "ptp-interval", 0, "ptp: time between two reads of ptp4l, 100ms..60s (default 1s)")
	fs.IntVar(&o.ptpDomain, "ptp-domain", 0, "ptp: ptp4l's domainNumber, 0..127 (default: from ptp4l.conf beside the socket, else 0)")
	fs.IntVar(&o.ptpDuration, "ptp-duration", 0, "ptp: seconds to sample when ptp is the only suite (default 30)")
	fs.StringVar(&o.t2tDir, "t2t-dir", "", "directory holding the tick-to-trade rig (t2t-pub, t2t-strategy, t2t-exchange; default: on PATH, then "+bench.T2TDirDefault+")")
	fs.StringVar(&o.t2tRates, "t2t-rates", "", "tickToTrade: comma list of increasing market-data rates in msg/s (default 500,1000,10000,50000,100000)")
	fs.IntVar(&o.t2tDuration, "t2t-duration", 0, "tickToTrade: seconds the publisher sends at each rate (default 4)")
	fs.IntVar(&o.t2tEvery, "t2t-every", 0, "tickToTrade: a BUY on every Nth tick (default 100)")
	fs.IntVar(&o.t2tSize, "t2t-size", 0, "tickToTrade: tick size in bytes, 32..1472 (default 32)")
	fs.StringVar(&o.t2tMix, "t2t-mix", "", "tickToTrade: steady (default) or seed003 (2/3 at 100 B, 1/3 at 600 B)")
	fs.Int64Var(&o.t2tBurst, "t2t-burst", 0, "tickToTrade: msg/s added in every other second")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected arguments %q: every option is a --flag", fs.Args())
	}
	return o, fs, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, fs, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	tools := bench.Tools{Launcher: o.launcher}
	if o.t2tDir != "" {
		tools.T2TPub = filepath.Join(o.t2tDir, "t2t-pub")
		tools.T2TStrategy = filepath.Join(o.t2tDir, "t2t-strategy")
		tools.T2TExchange = filepath.Join(o.t2tDir, "t2t-exchange")
	}
	if o.cpus != "" {
		if _, err := judge.ParseCPUList(o.cpus); err != nil {
			return fmt.Errorf("--cpus: %w", err)
		}
	}
	switch o.role {
	case "server":
		return runServer(ctx, o, tools, logf)
	case "client":
		spec, err := buildSpec(o, fs)
		if err != nil {
			return err
		}
		return runClient(ctx, o, tools, spec, stdout, logf)
	case "":
		return errors.New("--role is required: server (the reflector) or client (runs the suites)")
	default:
		return fmt.Errorf("--role %q: use server or client", o.role)
	}
}

func runServer(ctx context.Context, o *options, tools bench.Tools, logf func(string, ...any)) error {
	if net.ParseIP(o.listen) == nil {
		return fmt.Errorf("--listen %q: give this host's IP on the test network", o.listen)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.listen, strconv.Itoa(o.controlPort)))
	if err != nil {
		return fmt.Errorf("listening for control connections: %w", err)
	}
	data := o.listen
	if o.dataIface != "" {
		if data, err = interfaceIPv4(o.dataIface); err != nil {
			ln.Close()
			return err
		}
	}
	logf("reflector listening on %s (data address %s)", ln.Addr(), data)
	r := &bench.Reflector{Tools: tools, DataAddress: data, CPUs: o.cpus, Logf: logf, Once: o.once}
	return r.Serve(ctx, ln)
}

// interfaceIPv4 returns the first IPv4 address of the named interface.
func interfaceIPv4(name string) (string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return "", fmt.Errorf("--data-interface %s: %w: name an interface of this host (ip link lists them)", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("--data-interface %s: reading its addresses: %w", name, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("--data-interface %s has no IPv4 address: give it one, or leave the flag out to measure over --listen", name)
}

func runClient(ctx context.Context, o *options, tools bench.Tools, spec tsv1.BenchmarkSuites, stdout io.Writer, logf func(string, ...any)) error {
	workDir, remove, err := bench.WorkDir(o.workDir, "tsbench-")
	if err != nil {
		return err
	}
	defer remove()
	runner := &bench.Runner{Tools: tools, CPUs: o.cpus, WorkDir: workDir, BasePort: o.basePort, MulticastGroup: o.group, Node: o.node, Logf: logf}
	if spec.Defaulted().NetworkSuites() {
		if o.peer == "" {
			return errors.New("--peer is required for network suites: the reflector's IP (run --role=server there)")
		}
		addr := o.peer
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(addr, strconv.Itoa(o.controlPort))
		}
		rc, err := bench.DialReflector(ctx, addr, o.peerTimeout)
		if err != nil {
			return err
		}
		defer rc.Close()
		logf("reflector %s: data address %s, sockperf %s", addr, rc.Hello.DataAddress, rc.Hello.SockperfVersion)
		runner.Reflector = rc
	}
	res, err := runner.Run(ctx, spec)
	if res == nil {
		return err
	}
	if q := spec.Defaulted().Qualify; q != nil && err == nil {
		res.Qualify = runQualify(ctx, runner, res, q, tools, workDir, logf)
		res.CompletionTime = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	}
	if o.output != "" {
		if werr := judge.WriteResultsFile(o.output, res); werr != nil {
			return werr
		}
	}
	if werr := judge.WriteResultsLog(stdout, res); werr != nil {
		return fmt.Errorf("printing results: %w", werr)
	}
	return err
}

// buildSpec reads --spec or assembles a spec from the suite flags.
func buildSpec(o *options, fs *flag.FlagSet) (tsv1.BenchmarkSuites, error) {
	var spec tsv1.BenchmarkSuites
	suiteFlags := []string{"suites", "stacks", "protocols", "sizes", "duration", "rates", "rate-sizes", "reply-every", "burst-size",
		"max-burst", "burst-trials", "link-mbps", "burst-buffers", "rate-buffer", "mixed-patterns", "mixed-duration", "jitter-cpus", "jitter-duration", "jitter-tools", "cyclictest-priority",
		"ptp-socket", "ptp-interval", "ptp-domain", "ptp-duration", "t2t-rates", "t2t-duration", "t2t-every", "t2t-size", "t2t-mix", "t2t-burst"}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.specFile != "" {
		for _, n := range suiteFlags {
			if set[n] {
				return spec, fmt.Errorf("--%s and --spec both given: put the setting in the spec file or drop --spec", n)
			}
		}
		var b []byte
		var err error
		if o.specFile == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(o.specFile)
		}
		if err != nil {
			return spec, fmt.Errorf("reading --spec: %w", err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return spec, fmt.Errorf("--spec %s: %w", o.specFile, err)
		}
		if j := spec.Jitter; j != nil && j.CPUs == tsv1.JitterCPUsPod {
			// The CPUs the kubelet gave this container, which the spec could not know.
			if o.cpus == "" {
				return spec, fmt.Errorf("--spec %s: jitter.cpus %q measures this container's CPUs: pass them with --cpus", o.specFile, tsv1.JitterCPUsPod)
			}
			j.CPUs = o.cpus
		}
		return spec, validate(spec)
	}
	if o.suites == "" {
		return spec, errors.New("no suite: pass --spec FILE or --suites pingPong,rateSweep,microburst,mixedBurst,jitter,ptp,tickToTrade")
	}
	for _, s := range splitList(o.stacks) {
		spec.Stacks = append(spec.Stacks, tsv1.Stack(s))
	}
	sizes, err := int32List("--sizes", o.sizes)
	if err != nil {
		return spec, err
	}
	rateSizes, err := int32List("--rate-sizes", o.rateSizes)
	if err != nil {
		return spec, err
	}
	rates, err := int64List("--rates", "messages per second", o.rates)
	if err != nil {
		return spec, err
	}
	t2tRates, err := int64List("--t2t-rates", "messages per second", o.t2tRates)
	if err != nil {
		return spec, err
	}
	burstBufs, err := int64List("--burst-buffers", "bytes", o.burstBufs)
	if err != nil {
		return spec, err
	}
	for _, s := range splitList(o.suites) {
		switch tsv1.SuiteName(s) {
		case tsv1.SuitePingPong:
			p := &tsv1.PingPongSpec{MessageSizes: sizes, DurationSeconds: int32(o.duration)}
			for _, pr := range splitList(o.protocols) {
				p.Protocols = append(p.Protocols, tsv1.Protocol(pr))
			}
			spec.PingPong = p
		case tsv1.SuiteRateSweep:
			spec.RateSweep = &tsv1.RateSweepSpec{MessageSizes: rateSizes, RatesMps: rates, ReplyEvery: int32(o.replyEvery), DurationSeconds: int32(o.duration),
				ReceiveBufferBytes: o.rateBuf}
		case tsv1.SuiteMicroburst:
			spec.Microburst = &tsv1.MicroburstSpec{MessageSize: int32(o.burstSize), MaxBurstPackets: o.maxBurst, MaxTrials: int32(o.burstTrials), LinkSpeedMbps: o.linkMbps,
				ReceiveBufferBytes: burstBufs}
		case tsv1.SuiteMixedBurst:
			m := &tsv1.MixedBurstSpec{DurationSeconds: int32(o.mixedSeconds)}
			for _, p := range splitList(o.mixed) {
				a, b, ok := strings.Cut(p, "+")
				sv, err1 := strconv.ParseInt(a, 10, 64)
				bv, err2 := strconv.ParseInt(b, 10, 64)
				if !ok || err1 != nil || err2 != nil {
					return spec, fmt.Errorf("--mixed-patterns: %q is not STEADY+BURST, e.g. 500000+500000", p)
				}
				m.Patterns = append(m.Patterns, tsv1.MixedBurstPattern{SteadyMps: sv, BurstMps: bv})
			}
			spec.MixedBurst = m
		case tsv1.SuiteJitter:
			j := &tsv1.JitterSpec{CPUs: o.jitterCPUs, DurationSeconds: int32(o.jitterSecs), CyclictestPriority: int32(o.cyclicPrio)}
			for _, t := range splitList(o.jitterTools) {
				j.Tools = append(j.Tools, tsv1.JitterTool(t))
			}
			if j.CPUs == "" {
				return spec, errors.New("--suites jitter needs --jitter-cpus, e.g. --jitter-cpus 2-3")
			}
			spec.Jitter = j
		case tsv1.SuitePTP:
			p := &tsv1.PTPSuite{Socket: o.ptpSocket, DurationSeconds: int32(o.ptpDuration)}
			if o.ptpInterval != 0 {
				if o.ptpInterval%time.Millisecond != 0 {
					return spec, fmt.Errorf("--ptp-interval %s: give whole milliseconds, e.g. 500ms", o.ptpInterval)
				}
				p.IntervalMillis = int32(max(min(o.ptpInterval.Milliseconds(), 1<<30), -1<<30))
			}
			if set["ptp-domain"] {
				p.Domain = ptrTo(int32(max(min(o.ptpDomain, 1<<30), -1<<30)))
			}
			spec.PTP = p
		case tsv1.SuiteTickToTrade:
			spec.TickToTrade = &tsv1.TickToTradeSpec{RatesMps: t2tRates, DurationSeconds: int32(max(min(o.t2tDuration, 1<<30), -1<<30)),
				OrderEvery: int32(max(min(o.t2tEvery, 1<<30), -1<<30)), MessageSize: int32(max(min(o.t2tSize, 1<<30), -1<<30)),
				Mix: tsv1.TickMix(o.t2tMix), BurstMps: o.t2tBurst}
		default:
			return spec, fmt.Errorf("--suites: %q is not a suite: use pingPong, rateSweep, microburst, mixedBurst, jitter, ptp or tickToTrade", s)
		}
	}
	return spec, validate(spec)
}

func ptrTo[T any](v T) *T { return &v }

func validate(spec tsv1.BenchmarkSuites) error {
	return judge.ValidateSuites(spec.Defaulted())
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// int64List parses a comma list of numbers of unit ("messages per second", "bytes").
func int64List(flagName, unit, s string) ([]int64, error) {
	var out []int64
	for _, f := range splitList(s) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number of %s", flagName, f, unit)
		}
		out = append(out, v)
	}
	return out, nil
}

func int32List(flagName, s string) ([]int32, error) {
	var out []int32
	for _, f := range splitList(s) {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number of bytes", flagName, f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// runQualify runs the qualify suite on the data interface the runner measured over (or the
// spec's), against the same reflector: the interface's report and verdict go into the results.
func runQualify(ctx context.Context, runner *bench.Runner, res *tsv1.BenchmarkResults, q *tsv1.QualifySpec, tools bench.Tools, workDir string,
	logf func(string, ...any)) *tsv1.QualifyReport {
	ifname := q.Interface
	if ifname == "" && res.Path != nil {
		ifname = res.Path.Interface
	}
	dir := filepath.Join(workDir, "qualify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &tsv1.QualifyReport{Interface: ifname, NUMANode: -1, Verdict: tsv1.QualifyUnsupported, Error: err.Error()}
	}
	o := qualify.Options{Interface: ifname, Reflector: runner.Reflector, Tools: tools, WorkDir: dir, CPUs: runner.CPUs,
		MessageSize: q.MessageSize, Duration: time.Duration(q.DurationSeconds) * time.Second, Logf: logf}
	r, err := qualify.Run(ctx, o)
	if err != nil {
		r = &tsv1.QualifyReport{Interface: ifname, NUMANode: -1, Error: err.Error()}
		qualify.Judge(r)
	}
	logf("qualify %s: %s", r.Interface, r.Verdict)
	return r
}
