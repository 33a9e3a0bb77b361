package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/qualify/qualifytest"
	"github.com/tickstack/tickstack/internal/testutil"
)

// The test binary doubles as the runner: with this variable set it runs main's logic instead of
// the tests, so the real-run test drives the same code path a Job does, in two network namespaces.
const runAsRunner = "TSBN_RUN_AS_RUNNER"

func TestMain(m *testing.M) {
	if os.Getenv(runAsRunner) == "1" {
		if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "tickstack-bench: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// vethPair creates namespaces <p>a and <p>b (p is tsbn, the PID and tag) joined by a veth pair
// with 198.18.0.1 and 198.18.0.2, removed when the test ends.
func vethPair(t *testing.T, tag string) (nsA, nsB string) {
	t.Helper()
	p := fmt.Sprintf("tsbn%d%s", os.Getpid(), tag)
	nsA, nsB = p+"a", p+"b"
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", nsA).Run()
		_ = exec.Command("ip", "netns", "del", nsB).Run()
	})
	sh(t, "ip", "netns", "add", nsA)
	sh(t, "ip", "netns", "add", nsB)
	sh(t, "ip", "link", "add", p+"a0", "netns", nsA, "type", "veth", "peer", "name", p+"b0", "netns", nsB)
	sh(t, "ip", "-n", nsA, "addr", "add", "198.18.0.1/24", "dev", p+"a0")
	sh(t, "ip", "-n", nsB, "addr", "add", "198.18.0.2/24", "dev", p+"b0")
	for _, ns := range []string{nsA, nsB} {
		sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	sh(t, "ip", "-n", nsA, "link", "set", p+"a0", "up")
	sh(t, "ip", "-n", nsB, "link", "set", p+"b0", "up")
	return nsA, nsB
}

// ownGroup puts cmd in its own process group, killed whole when the context ends, so no runner or
// sockperf outlives the test.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
}

func monotonic(t *testing.T, what string, s tsv1.LatencyStats) {
	t.Helper()
	if s.Samples <= 0 {
		t.Errorf("%s: no samples: %+v", what, s)
		return
	}
	if !(0 < s.MinNs && s.MinNs <= s.MedianNs && s.MedianNs <= s.P95Ns && s.P95Ns <= s.P99Ns && s.P99Ns <= s.P999Ns && s.P999Ns <= s.MaxNs) {
		t.Errorf("%s: percentiles not monotonic: %+v", what, s)
	}
	if s.MeanNs < s.MinNs || s.MeanNs > s.MaxNs || s.StdDevNs < 0 {
		t.Errorf("%s: mean/std-dev out of bounds: %+v", what, s)
	}
}

// TestRunnerOverVeth runs the reflector in one namespace and the client in the other, every suite
// with short durations, the kernel stack measured and the bypass stack asked for with a launcher
// that does not exist; it checks every table is filled and the log block equals the output file.
func TestRunnerOverVeth(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"ip", "sockperf", "oslat", "cyclictest", "taskset"} {
		testutil.RequireTool(t, tool)
	}
	nsA, nsB := vethPair(t, "")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	serverCPU, clientCPU := "0", "0"
	if runtime.NumCPU() > 1 {
		clientCPU = "1"
	}
	spec := tsv1.BenchmarkSuites{
		Stacks:     []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass},
		PingPong:   &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{tsv1.ProtocolUDP, tsv1.ProtocolUDPMulticast, tsv1.ProtocolTCP}, MessageSizes: []int32{14, 1472}, DurationSeconds: 1},
		RateSweep:  &tsv1.RateSweepSpec{MessageSizes: []int32{64}, RatesMps: []int64{1000, 4000}, ReplyEvery: 10, DurationSeconds: 1},
		Microburst: &tsv1.MicroburstSpec{MessageSize: 256, MaxBurstPackets: 4096, MaxTrials: 3, TrialSeconds: 1},
		MixedBurst: &tsv1.MixedBurstSpec{Patterns: []tsv1.MixedBurstPattern{{SteadyMps: 1000, BurstMps: 1000}}, DurationSeconds: 2},
		Jitter:     &tsv1.JitterSpec{CPUs: clientCPU, DurationSeconds: 1, CyclictestPriority: 50},
	}
	specFile := filepath.Join(dir, "spec.json")
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(specFile, b, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var serverLog bytes.Buffer
	server := exec.CommandContext(ctx, "ip", "netns", "exec", nsA, self, "--role=server", "--listen=198.18.0.1", "--once", "--cpus="+serverCPU,
		"--launcher="+filepath.Join(dir, "no-such-launcher"))
	server.Env = append(os.Environ(), runAsRunner+"=1")
	ownGroup(server)
	server.Stdout, server.Stderr = &serverLog, &serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	serverDone := make(chan struct{})
	var serverErr error
	go func() {
		serverErr = server.Wait()
		close(serverDone)
	}()
	t.Cleanup(func() {
		select {
		case <-serverDone:
		default:
			_ = syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
			<-serverDone
		}
	})

	outFile := filepath.Join(dir, "results.json")
	var stdout, stderr bytes.Buffer
	client := exec.CommandContext(ctx, "ip", "netns", "exec", nsB, self, "--role=client", "--peer=198.18.0.1", "--peer-timeout=30s",
		"--cpus="+clientCPU, "--spec="+specFile, "--output="+outFile, "--node=tsbn-node", "--work-dir="+dir,
		"--launcher="+filepath.Join(dir, "no-such-launcher"))
	client.Env = append(os.Environ(), runAsRunner+"=1")
	ownGroup(client)
	client.Stdout, client.Stderr = &stdout, &stderr
	start := time.Now()
	if err := client.Run(); err != nil {
		t.Fatalf("client: %v\nstderr:\n%s\nserver:\n%s", err, stderr.String(), serverLog.String())
	}
	t.Logf("client ran %s", time.Since(start).Round(time.Second))
	select {
	case <-serverDone:
		if serverErr != nil {
			t.Fatalf("server (--once) exited with %v: %s", serverErr, serverLog.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not exit after its client left: %s", serverLog.String())
	}

	res, err := judge.ReadResultsLog(&stdout)
	if err != nil {
		t.Fatalf("results block in the log: %v\n%s", err, stdout.String())
	}
	fromFile, err := judge.ReadResultsFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res)
	c, _ := json.Marshal(fromFile)
	if !bytes.Equal(a, c) {
		t.Error("the log block and the output file differ")
	}
	if res.Node != "tsbn-node" || res.CompletionTime.Before(&res.StartTime) {
		t.Errorf("node %q start %v completion %v", res.Node, res.StartTime, res.CompletionTime)
	}
	if !strings.Contains(strings.Join(res.Tools, ","), "sockperf 3.7") {
		t.Errorf("tools %v lack sockperf's version", res.Tools)
	}

	k := res.Stack(tsv1.StackKernel)
	if k == nil || k.Unavailable != "" {
		t.Fatalf("kernel stack missing or unavailable: %+v", k)
	}
	// pingPong: 3 protocols x 2 sizes, in order.
	if k.PingPong == nil || k.PingPong.Error != "" || len(k.PingPong.Rows) != 6 {
		t.Fatalf("pingPong: %+v", k.PingPong)
	}
	i := 0
	for _, p := range spec.PingPong.Protocols {
		for _, size := range spec.PingPong.MessageSizes {
			row := k.PingPong.Rows[i]
			if row.Protocol != p || row.MessageSize != size {
				t.Errorf("pingPong row %d is %s %d B, want %s %d B", i, row.Protocol, row.MessageSize, p, size)
			}
			monotonic(t, fmt.Sprintf("pingPong %s %d B", p, size), row.LatencyStats)
			// every row is examined for stalls and compared with the other size of its protocol;
			// the kernel stack has no counters to report
			if st := row.Stalls; st == nil || st.LatencyThresholdNs != judge.LatencyStallThreshold(row.P999Ns) || st.NeighbourSamples == 0 ||
				st.Counters != nil || st.ReflectorCounters != nil || st.CountersMissing != "" {
				t.Errorf("pingPong %s %d B stall report %+v", p, size, row.Stalls)
			}
			if p == tsv1.ProtocolTCP && row.Dropped != 0 {
				t.Errorf("TCP ping-pong dropped %d messages", row.Dropped)
			}
			i++
		}
	}
	if cv := k.PingPong.Curve; cv == nil || len(cv.Points) != len(bench.CurvePercentiles()) {
		t.Errorf("percentile curve %+v", cv)
	} else {
		for j := 1; j < len(cv.Points); j++ {
			if cv.Points[j].ValueNs < cv.Points[j-1].ValueNs {
				t.Errorf("curve not monotonic at %s", cv.Points[j].Percentile)
			}
		}
		if cv.Points[0].ValueNs != k.PingPong.Rows[0].MinNs || cv.Points[len(cv.Points)-1].ValueNs != k.PingPong.Rows[0].MaxNs {
			t.Errorf("curve ends %d..%d, row min/max %d..%d", cv.Points[0].ValueNs, cv.Points[len(cv.Points)-1].ValueNs, k.PingPong.Rows[0].MinNs, k.PingPong.Rows[0].MaxNs)
		}
	}
	// rateSweep: one row per rate with the sender's achieved rate and reflected samples.
	if k.RateSweep == nil || k.RateSweep.Error != "" || len(k.RateSweep.Rows) != 2 || len(k.RateSweep.MaxSustained) != 1 {
		t.Fatalf("rateSweep: %+v", k.RateSweep)
	}
	for j, row := range k.RateSweep.Rows {
		if row.TargetMps != spec.RateSweep.RatesMps[j] || row.Sent <= 0 || row.AchievedMps <= 0 || row.Dropped < 0 {
			t.Errorf("rateSweep row %d: %+v", j, row)
		}
		if row.Samples > 0 {
			monotonic(t, fmt.Sprintf("rateSweep %d msg/s", row.TargetMps), row.LatencyStats)
		}
		if row.Samples > row.Sent/int64(spec.RateSweep.ReplyEvery)+1 {
			t.Errorf("rateSweep row %d: %d samples for %d sent with one reply in %d", j, row.Samples, row.Sent, spec.RateSweep.ReplyEvery)
		}
	}
	if ms := k.RateSweep.MaxSustained[0].Mps; ms != 0 && ms != 1000 && ms != 4000 {
		t.Errorf("max sustained %d is not one of the rates", ms)
	}
	// the sweep's highest rate sustained is its bound, reported as such; anything else is measured
	if m := k.RateSweep.MaxSustained[0]; m.LimitReached != (m.Mps == 4000) {
		t.Errorf("max sustained %d msg/s with limitReached %v: want it exactly when the highest rate (4000) was sustained", m.Mps, m.LimitReached)
	}
	// rateSweep without a receive buffer: the socket's default, reported as the reflector read it
	if b := k.RateSweep.Buffering; k.RateSweep.ReceiveBufferBytes != 0 || !defaultBuffering(b) {
		t.Errorf("rateSweep buffering %+v", b)
	}
	// microburst: one row at the socket's default buffering (none asked for), its buffering
	// reported; the answer is a trial that dropped nothing, converted by paper 002's formula.
	if k.Microburst == nil || len(k.Microburst.Rows) != 1 {
		t.Fatalf("microburst: %+v", k.Microburst)
	}
	mb := k.Microburst.Rows[0]
	// maxTrials 3 counts lengths; a length that dropped gets a second trial
	if mb.Error != "" || len(mb.Trials) == 0 || len(mb.Trials) > 2*3 || mb.ReceiveBufferBytes != 0 {
		t.Fatalf("microburst: %+v", mb)
	}
	for i, tr := range mb.Trials {
		second := i > 0 && mb.Trials[i-1].Packets == tr.Packets && mb.Trials[i-1].Dropped > 0
		if tr.Dropped > 0 && !second && (i+1 == len(mb.Trials) || mb.Trials[i+1].Packets != tr.Packets) {
			t.Errorf("microburst trial %d (%d packets) dropped %d and was not tried again: %+v", i, tr.Packets, tr.Dropped, mb.Trials)
		}
	}
	if !defaultBuffering(mb.Buffering) {
		t.Errorf("microburst buffering %+v", mb.Buffering)
	}
	best := int64(0)
	for _, tr := range mb.Trials {
		if tr.Sent <= 0 || tr.Bursts <= 0 {
			t.Errorf("microburst trial sent nothing: %+v", tr)
		}
		if tr.Dropped == 0 && tr.Packets > best {
			best = tr.Packets
		}
	}
	// a length failed when its second trial dropped too
	dropped := false
	for i, tr := range mb.Trials {
		dropped = dropped || (tr.Dropped > 0 && i > 0 && mb.Trials[i-1].Packets == tr.Packets && mb.Trials[i-1].Dropped > 0)
	}
	if mb.LimitReached == dropped {
		t.Errorf("microburst answer %d with limitReached %v: want it exactly when no length failed (%v)", mb.MaxBurstPackets, mb.LimitReached, !dropped)
	}
	if mb.MaxBurstPackets != best || mb.BurstTimeNs != judge.BurstTimeNs(256, best, 10000) || k.Microburst.LinkSpeedMbps != 10000 {
		t.Errorf("microburst answer %d (%d ns), trials say %d: %+v", mb.MaxBurstPackets, mb.BurstTimeNs, best, mb)
	}
	// mixedBurst: 1000 msg/s in the steady second, 2000 in the burst second.
	mx := k.MixedBurst
	if mx == nil || mx.Error != "" || len(mx.Rows) != 1 {
		t.Fatalf("mixedBurst: %+v", mx)
	}
	row := mx.Rows[0]
	if row.Sent != 3000 || row.Samples <= 0 || row.Samples > 3000 {
		t.Errorf("mixedBurst row: %+v", row)
	}
	monotonic(t, "mixedBurst", row.LatencyStats)
	// Every message is timed (replyEvery 1) and split by size: 2000 small and 1000 large were sent,
	// sockperf's measured window may leave the last few out.
	if row.Small == nil || row.Large == nil || row.Small.Samples+row.Large.Samples != row.Samples ||
		row.Small.Samples > 2000 || row.Large.Samples > 1000 || row.Small.Samples == 0 || row.Large.Samples == 0 {
		t.Fatalf("mixedBurst split by size: small %+v large %+v", row.Small, row.Large)
	}
	if d := row.Small.Samples - 2*row.Large.Samples; row.Dropped == 0 && (d < -10 || d > 10) {
		t.Errorf("mixedBurst: %d small and %d large messages timed, want two small for each large", row.Small.Samples, row.Large.Samples)
	}
	// Bypass asked for without a launcher: unavailable, with the reason and the fix.
	bp := res.Stack(tsv1.StackBypass)
	if bp == nil || !strings.Contains(bp.Unavailable, "no-such-launcher") || !strings.Contains(bp.Unavailable, "make -C dataplane") || bp.PingPong != nil {
		t.Errorf("bypass stack: %+v", bp)
	}
	// jitter: one row per tool on the measured CPU.
	if res.Jitter == nil || res.Jitter.Error != "" || len(res.Jitter.Rows) != 2 {
		t.Fatalf("jitter: %+v", res.Jitter)
	}
	cpu, _ := strconv.Atoi(clientCPU)
	for _, jr := range res.Jitter.Rows {
		if jr.CPU != int32(cpu) {
			t.Errorf("jitter %s on CPU %d, want %d", jr.Tool, jr.CPU, cpu)
		}
		monotonic(t, string(jr.Tool), jr.LatencyStats)
	}
	if res.Jitter.Rows[0].Tool != tsv1.JitterOslat || res.Jitter.Rows[1].Tool != tsv1.JitterCyclictest {
		t.Errorf("jitter tools %s, %s", res.Jitter.Rows[0].Tool, res.Jitter.Rows[1].Tool)
	}
	// The verdict logic accepts the real document.
	v := judge.Evaluate(res, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatMin, Max: "10s"}}})
	if v.Result != tsv1.VerdictInconclusive || v.Reasons[0].Name != "stack/bypass" {
		t.Errorf("verdict on the real run: %+v", v)
	}
}

// defaultBuffering says b is the kernel's buffering of a socket that asked for none, fully
// reported: granted net.core.rmem_default, no value of the bypass stack.
func defaultBuffering(b *tsv1.ReceiveBuffering) bool {
	return b != nil && b.Missing == "" && b.GrantedBytes != nil && b.RmemDefaultBytes != nil && b.RmemMaxBytes != nil &&
		*b.GrantedBytes == *b.RmemDefaultBytes && b.SocketQueueDatagrams == nil && b.UMEMFrames == nil && b.RXRingEntries == nil
}

// grantedFor is what Linux grants a plain SO_RCVBUF request (sockperf --buffer-size): twice the
// request, the request first capped at net.core.rmem_max.
func grantedFor(req int64, b *tsv1.ReceiveBuffering) int64 {
	return 2 * min(req, *b.RmemMaxBytes)
}

func TestFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "--role is required"},
		{[]string{"--role=peer"}, `--role "peer": use server or client`},
		{[]string{"--role=server", "--listen=host"}, `--listen "host"`},
		{[]string{"--role=client"}, "no suite"},
		{[]string{"--role=client", "--suites=pingPong,warp"}, `"warp" is not a suite`},
		{[]string{"--role=client", "--suites=pingPong", "--sizes=12"}, "pingPong.messageSizes[0]: message size 12 out of range"},
		{[]string{"--role=client", "--suites=jitter"}, "--jitter-cpus"},
		{[]string{"--role=client", "--suites=pingPong"}, "--peer is required"},
		{[]string{"--role=client", "--suites=mixedBurst", "--mixed-patterns=fast"}, `"fast" is not STEADY+BURST`},
		{[]string{"--role=client", "--spec=x.json", "--sizes=64"}, "--sizes and --spec both given"},
		{[]string{"--role=client", "--spec=/nonexistent/spec.json"}, "reading --spec"},
		{[]string{"--role=client", "--cpus=a-b", "--suites=jitter", "--jitter-cpus=0"}, "--cpus"},
		{[]string{"--role=client", "stray"}, "unexpected arguments"},
		{[]string{"--role=server", "--listen=127.0.0.1", "--control-port=0", "--data-interface=tsbnnosuch0"}, "--data-interface tsbnnosuch0"},
		{[]string{"--role=client", "--suites=tickToTrade", "--t2t-rates=1k"}, `--t2t-rates: "1k" is not a number`},
		{[]string{"--role=client", "--suites=tickToTrade", "--t2t-mix=bursty"}, `tickToTrade.mix: "bursty" is not a mix`},
		{[]string{"--role=client", "--suites=tickToTrade", "--t2t-burst=1000", "--t2t-duration=3"}, "tickToTrade.durationSeconds: 3 is odd"},
		{[]string{"--role=client", "--suites=tickToTrade"}, "--peer is required"},
		{[]string{"--role=client", "--spec=x.json", "--t2t-rates=500"}, "--t2t-rates and --spec both given"},
		{[]string{"--role=client", "--suites=microburst", "--burst-buffers=64k"}, `--burst-buffers: "64k" is not a number`},
		{[]string{"--role=client", "--suites=microburst", "--burst-buffers=212992,65536"}, "microburst.receiveBufferBytes: sizes must increase"},
		{[]string{"--role=client", "--suites=rateSweep", "--rate-buffer=1024"}, "rateSweep.receiveBufferBytes: 1024 out of range: use 4096..67108864 bytes"},
		{[]string{"--role=client", "--spec=x.json", "--burst-buffers=65536"}, "--burst-buffers and --spec both given"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		err := run(c.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(bad, []byte(`{"pingPong":{"sizes":[64]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--role=client", "--spec=" + bad}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `unknown field "sizes"`) {
		t.Errorf("misspelt spec field: %v", err)
	}
}

// runPair runs the reflector in nsA and a client in nsB with args, returns the results.
func runPair(t *testing.T, nsA, nsB string, serverArgs, clientArgs []string) *tsv1.BenchmarkResults {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var serverLog bytes.Buffer
	server := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsA, self, "--role=server", "--listen=198.18.0.1", "--once"}, serverArgs...)...)
	server.Env = append(os.Environ(), runAsRunner+"=1")
	ownGroup(server)
	server.Stdout, server.Stderr = &serverLog, &serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
		_ = server.Wait()
	}()
	var stdout, stderr bytes.Buffer
	client := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsB, self, "--role=client", "--peer=198.18.0.1", "--peer-timeout=30s"}, clientArgs...)...)
	client.Env = append(os.Environ(), runAsRunner+"=1")
	ownGroup(client)
	client.Stdout, client.Stderr = &stdout, &stderr
	if err := client.Run(); err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	res, err := judge.ReadResultsLog(&stdout)
	if err != nil {
		t.Fatalf("results: %v\n%s", err, stderr.String())
	}
	return res
}

// TestRunnerMicroburstBuffersOverVeth searches the largest burst at two receive buffer sizes of
// the reflector's server on the kernel stack, as a Job does with suites.microburst.
// receiveBufferBytes, and a rateSweep at a stated buffer: one row per size, each with the buffer
// the kernel granted (twice the request, capped at rmem_max), and the larger buffer absorbs at
// least as long a burst.
func TestRunnerMicroburstBuffersOverVeth(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"ip", "sockperf", "taskset"} {
		testutil.RequireTool(t, tool)
	}
	nsA, nsB := vethPair(t, "r")
	serverCPU, clientCPU := "0", "0"
	if runtime.NumCPU() > 1 {
		clientCPU = "1"
	}
	const small, large = 4096, 1 << 20
	res := runPair(t, nsA, nsB, []string{"--cpus=" + serverCPU},
		[]string{"--cpus=" + clientCPU, "--suites=microburst,rateSweep", "--burst-size=256", "--max-burst=512", "--burst-trials=6",
			fmt.Sprintf("--burst-buffers=%d,%d", small, large), "--rates=1000", "--rate-sizes=64", "--duration=1", "--rate-buffer=65536"})
	k := res.Stack(tsv1.StackKernel)
	if k == nil || k.Microburst == nil || len(k.Microburst.Rows) != 2 {
		t.Fatalf("kernel microburst: %+v", k)
	}
	rows := k.Microburst.Rows
	for i, want := range []int64{small, large} {
		row := rows[i]
		b := row.Buffering
		if row.ReceiveBufferBytes != want || row.Error != "" || len(row.Trials) == 0 {
			t.Fatalf("row %d: %+v", i, row)
		}
		if b == nil || b.Missing != "" || b.GrantedBytes == nil || b.RmemDefaultBytes == nil || b.RmemMaxBytes == nil || b.SocketQueueDatagrams != nil {
			t.Fatalf("row %d (SO_RCVBUF %d) buffering %+v", i, want, b)
		}
		if *b.GrantedBytes != grantedFor(want, b) {
			t.Errorf("SO_RCVBUF %d: granted %d, want twice the request capped at rmem_max %d: %d", want, *b.GrantedBytes, *b.RmemMaxBytes, grantedFor(want, b))
		}
		t.Logf("SO_RCVBUF %d (granted %d): %s messages, trials %+v", want, *b.GrantedBytes, judge.FormatSearched(row.MaxBurstPackets, row.LimitReached), row.Trials)
	}
	if rows[1].MaxBurstPackets < rows[0].MaxBurstPackets {
		t.Errorf("SO_RCVBUF %d absorbed %d messages, fewer than the %d of SO_RCVBUF %d", large, rows[1].MaxBurstPackets, rows[0].MaxBurstPackets, small)
	}
	// 8 KiB granted holds a few 256 B datagrams (each charged its skb's true size): a burst of
	// 512 cannot fit, whatever the receiver drains meanwhile
	if rows[0].LimitReached {
		t.Errorf("SO_RCVBUF %d absorbed every burst up to the bound: %+v", small, rows[0])
	}
	rs := k.RateSweep
	if rs == nil || rs.ReceiveBufferBytes != 65536 || rs.Buffering == nil || rs.Buffering.GrantedBytes == nil || rs.Buffering.RmemMaxBytes == nil ||
		*rs.Buffering.GrantedBytes != grantedFor(65536, rs.Buffering) {
		t.Errorf("rateSweep at SO_RCVBUF 65536: %+v", rs)
	}
}

// TestRunnerBypassOverVeth measures UDP ping-pong on both stacks when the dataplane launcher is
// built (make -C dataplane), and checks both tables are filled and compared. The launcher belongs
// to the dataplane; without it this test has nothing to run.
func TestRunnerBypassOverVeth(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sockperf")
	launcher, err := filepath.Abs(filepath.Join("..", "..", bench.DefaultLauncherPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (bench.Tools{Launcher: launcher}).FindLauncher(); err != nil {
		testutil.Unavailable(t, fmt.Sprintf("the dataplane is not built (make dataplane): %v", err))
	}
	nsA, nsB := vethPair(t, "x")
	cpu := "0"
	if runtime.NumCPU() > 1 {
		cpu = "1" // spinning ends on different CPUs
	}
	res := runPair(t, nsA, nsB, []string{"--cpus=0", "--launcher=" + launcher},
		[]string{"--cpus=" + cpu, "--launcher=" + launcher, "--suites=pingPong,microburst", "--stacks=kernel,bypass", "--protocols=udp", "--sizes=64", "--duration=1",
			"--burst-buffers=65536", "--max-burst=256", "--burst-trials=3"})
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		s := res.Stack(st)
		if s == nil || s.Unavailable != "" || s.PingPong == nil || s.PingPong.Error != "" || len(s.PingPong.Rows) != 1 {
			t.Fatalf("%s stack: %+v", st, s)
		}
		monotonic(t, string(st), s.PingPong.Rows[0].LatencyStats)
		// both bypass processes dumped the stack's counters where the runner asked them to
		if sr := s.PingPong.Rows[0].Stalls; sr == nil || sr.CountersMissing != "" {
			t.Errorf("%s stack: stall report %+v", st, sr)
		}
	}
	// microburst at equal buffering: the kernel granted both servers the same SO_RCVBUF, and
	// the bypass server's dump states its socket queue (the latency profile's), UMEM frames
	// and RX ring
	kb, bb := res.Stack(tsv1.StackKernel).Microburst, res.Stack(tsv1.StackBypass).Microburst
	if kb == nil || bb == nil || len(kb.Rows) != 1 || len(bb.Rows) != 1 {
		t.Fatalf("microburst: kernel %+v, bypass %+v", kb, bb)
	}
	k, b := kb.Rows[0].Buffering, bb.Rows[0].Buffering
	if k == nil || b == nil || k.Missing != "" || b.Missing != "" || k.GrantedBytes == nil || b.GrantedBytes == nil || *k.GrantedBytes != *b.GrantedBytes ||
		*b.GrantedBytes != grantedFor(65536, b) {
		t.Fatalf("microburst buffering: kernel %+v, bypass %+v", k, b)
	}
	if b.SocketQueueDatagrams == nil || *b.SocketQueueDatagrams != 1024 || b.UMEMFrames == nil || *b.UMEMFrames != 8192 || b.RXRingEntries == nil || *b.RXRingEntries != 4096 ||
		k.SocketQueueDatagrams != nil {
		t.Errorf("bypass buffering %+v: want socket queue 1024 (profile latency), 8192 UMEM frames, RX ring 4096; kernel %+v", b, k)
	}
	t.Logf("microburst at SO_RCVBUF 65536: kernel %s, bypass %s messages", judge.FormatSearched(kb.Rows[0].MaxBurstPackets, kb.Rows[0].LimitReached),
		judge.FormatSearched(bb.Rows[0].MaxBurstPackets, bb.Rows[0].LimitReached))
	cmp := judge.CompareStacks(res)
	if len(cmp) != 1 || cmp[0].MedianSpeedup == "" || cmp[0].KernelMedianNs != res.Stack(tsv1.StackKernel).PingPong.Rows[0].MedianNs {
		t.Errorf("comparison %+v", cmp)
	}
	t.Logf("udp 64 B median: kernel %d ns, bypass %d ns (%sx)", cmp[0].KernelMedianNs, cmp[0].BypassMedianNs, cmp[0].MedianSpeedup)
}

// TestRunnerDataInterface gives the namespaces a second link: the client reaches the reflector's
// control port over the first, and the measured traffic goes over the second, the reflector's
// --data-interface, as in a TwoPods benchmark over a profile's latency network.
func TestRunnerDataInterface(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sockperf")
	nsA, nsB := vethPair(t, "d")
	p := fmt.Sprintf("tsbn%dd", os.Getpid())
	sh(t, "ip", "link", "add", p+"a1", "netns", nsA, "type", "veth", "peer", "name", p+"b1", "netns", nsB)
	sh(t, "ip", "-n", nsA, "addr", "add", "198.18.1.1/24", "dev", p+"a1")
	sh(t, "ip", "-n", nsB, "addr", "add", "198.18.1.2/24", "dev", p+"b1")
	sh(t, "ip", "-n", nsA, "link", "set", p+"a1", "up")
	sh(t, "ip", "-n", nsB, "link", "set", p+"b1", "up")
	res := runPair(t, nsA, nsB, []string{"--data-interface=" + p + "a1"},
		[]string{"--suites=pingPong", "--protocols=udp", "--sizes=64", "--duration=1"})
	want := tsv1.NetworkPath{ClientAddress: "198.18.1.2", ReflectorAddress: "198.18.1.1", Interface: p + "b1"}
	if res.Path == nil || *res.Path != want {
		t.Fatalf("path %+v, want %+v", res.Path, want)
	}
	k := res.Stack(tsv1.StackKernel)
	if k == nil || k.PingPong == nil || k.PingPong.Error != "" || len(k.PingPong.Rows) != 1 {
		t.Fatalf("kernel stack: %+v", k)
	}
	monotonic(t, "udp 64 B over the data interface", k.PingPong.Rows[0].LatencyStats)
}

// t2tBuild returns the dataplane build directory holding the tick-to-trade rig and the launcher,
// and reports the test unavailable (a failure under CI) when they are not built.
func t2tBuild(t *testing.T, launcher bool) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", bench.T2TDirDefault))
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"t2t-pub", "t2t-strategy", "t2t-exchange"}
	if launcher {
		need = append(need, "tickstack-run", "libtickstack.so")
	}
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			testutil.Unavailable(t, fmt.Sprintf("the dataplane and its tick-to-trade rig are not built (make -C dataplane all t2t): %v", err))
		}
	}
	return dir
}

// checkT2TRows checks a stack's tickToTrade table: one row per rate, every tick sent received in
// sequence, a BUY on every `every`th tick, each filled and closed by a filled SELL that the exchange
// saw, the distributions' sample counts and order, and the path each leg took.
func checkT2TRows(t *testing.T, st *tsv1.StackResults, rates []int64, seconds, every int64, marketData, orders tsv1.Stack) {
	t.Helper()
	tt := st.TickToTrade
	if tt == nil || tt.Error != "" || len(tt.Rows) != len(rates) || tt.Mix != tsv1.TickMixSteady || tt.MessageSize != 32 || tt.OrderEvery != int32(every) {
		t.Fatalf("%s tickToTrade: %+v", st.Stack, tt)
	}
	for i, row := range tt.Rows {
		what := fmt.Sprintf("%s at %d msg/s", st.Stack, rates[i])
		want := rates[i] * seconds
		buys := row.TicksSent / every
		if row.RateMps != rates[i] || row.TicksSent < want*99/100 || row.TicksSent > want+1 {
			t.Errorf("%s: rate %d, %d ticks sent, want about %d", what, row.RateMps, row.TicksSent, want)
		}
		if len(row.Unaccounted) != 0 || row.TicksReceived != row.TicksSent || row.TicksLost != 0 || row.TicksOutOfSequence != 0 ||
			row.Orders != 2*buys || row.OrdersUnfilled != 0 || row.ExchangeOrders != row.Orders {
			t.Errorf("%s: not every tick and order accounted for: %+v", what, row)
		}
		for _, m := range []struct {
			name string
			s    tsv1.LatencyStats
			n    int64
		}{{"tick-to-trade", row.TickToTrade, buys}, {"in-application", row.InApplication, buys}, {"order->fill", row.OrderToFill, 2 * buys}, {"fill->SELL", row.Sell, buys}} {
			if m.s.Samples != m.n {
				t.Errorf("%s %s: %d samples, want %d", what, m.name, m.s.Samples, m.n)
			}
			monotonic(t, what+" "+m.name, m.s)
		}
		// tick-to-trade spans the in-application time of the same BUY: its smallest is larger
		if row.TickToTrade.MinNs <= row.InApplication.MinNs {
			t.Errorf("%s: tick-to-trade min %d ns within in-application min %d ns", what, row.TickToTrade.MinNs, row.InApplication.MinNs)
		}
		if row.MarketDataPath != marketData || row.OrderPath != orders {
			t.Errorf("%s: market data on %q, orders on %q; want %s and %s", what, row.MarketDataPath, row.OrderPath, marketData, orders)
		}
	}
}

// TestRunnerTickToTradeOverVeth runs the tickToTrade suite as a TwoPods benchmark does: the venue
// (exchange simulator and publisher) with the reflector in one namespace, the strategy with the
// client in the other, at two rates on both stacks. The bypass rows run the feed through the XSK
// at both ends and, with TICKSTACK_TCP=1 as a profile's spec.bypass.tcp On sets it, the FIX
// session through the stack; the exchange simulator stays on the kernel.
func TestRunnerTickToTradeOverVeth(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "taskset")
	dir := t2tBuild(t, true)
	launcher := filepath.Join(dir, "tickstack-run")
	t.Setenv("TICKSTACK_TCP", "1")
	nsA, nsB := vethPair(t, "t")
	cpu := "0"
	if runtime.NumCPU() > 1 {
		cpu = "1" // spinning ends on different CPUs
	}
	work := t.TempDir()
	rates := []int64{1000, 5000}
	res := runPair(t, nsA, nsB, []string{"--cpus=0", "--launcher=" + launcher, "--t2t-dir=" + dir},
		[]string{"--cpus=" + cpu, "--launcher=" + launcher, "--t2t-dir=" + dir, "--work-dir=" + work, "--output=" + filepath.Join(work, "results.json"),
			"--suites=tickToTrade", "--stacks=kernel,bypass", "--t2t-rates=1000,5000", "--t2t-duration=2", "--t2t-every=50"})
	checkT2TRows(t, res.Stack(tsv1.StackKernel), rates, 2, 50, tsv1.StackKernel, tsv1.StackKernel)
	checkT2TRows(t, res.Stack(tsv1.StackBypass), rates, 2, 50, tsv1.StackBypass, tsv1.StackBypass)
	if left, _ := filepath.Glob(filepath.Join(work, "t2t-stats-*")); len(left) != 0 {
		t.Errorf("the strategy's statistics directories were left in the work directory: %v", left)
	}
	var cmp []tsv1.StackComparison
	for _, c := range judge.CompareStacks(res) {
		if c.Suite == tsv1.SuiteTickToTrade {
			cmp = append(cmp, c)
		}
	}
	if len(cmp) != len(rates) || cmp[0].TargetMps != 1000 || cmp[1].TargetMps != 5000 || cmp[0].MedianSpeedup == "" {
		t.Errorf("kernel vs bypass tick-to-trade: %+v", cmp)
	}
	v := judge.Evaluate(res, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Statistic: tsv1.StatMin, Max: "1s"}}})
	if v.Result != tsv1.VerdictPassed || len(v.Reasons) != 1+2*len(rates) {
		t.Errorf("verdict on the real run: %+v", v)
	}
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		for _, row := range res.Stack(st).TickToTrade.Rows {
			t.Logf("%s at %d msg/s: tick-to-trade median %d ns p99 %d ns, in-application median %d ns, order->fill median %d ns",
				st, row.RateMps, row.TickToTrade.MedianNs, row.TickToTrade.P99Ns, row.InApplication.MedianNs, row.OrderToFill.MedianNs)
		}
	}
}

// TestRunnerTickToTradeOnePod runs the venue and the strategy in one network namespace, as a
// SamePod benchmark does: the publisher must loop its multicast back for the strategy.
func TestRunnerTickToTradeOnePod(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t2tBuild(t, false)
	nsA, _ := vethPair(t, "o")
	res := runPair(t, nsA, nsA, []string{"--t2t-dir=" + dir},
		[]string{"--t2t-dir=" + dir, "--suites=tickToTrade", "--t2t-rates=2000", "--t2t-duration=1", "--t2t-every=20"})
	if res.Path == nil || res.Path.ClientAddress != res.Path.ReflectorAddress {
		t.Fatalf("path %+v: the strategy and the venue share an address", res.Path)
	}
	checkT2TRows(t, res.Stack(tsv1.StackKernel), []int64{2000}, 1, 20, tsv1.StackKernel, tsv1.StackKernel)
}

// TestRunnerTickToTradeRigMissing: a reflector without the rig makes the suite say why and how to
// fix it, and the node Inconclusive, not a crash or a silent pass.
func TestRunnerTickToTradeRigMissing(t *testing.T) {
	testutil.RequireRoot(t)
	nsA, nsB := vethPair(t, "m")
	missing := filepath.Join(t.TempDir(), "no-rig")
	res := runPair(t, nsA, nsB, []string{"--t2t-dir=" + missing}, []string{"--t2t-dir=" + missing, "--suites=tickToTrade", "--t2t-rates=1000", "--t2t-duration=1"})
	tt := res.Stack(tsv1.StackKernel).TickToTrade
	if tt == nil || len(tt.Rows) != 0 || !strings.Contains(tt.Error, "reflector side:") || !strings.Contains(tt.Error, "make -C dataplane t2t") {
		t.Fatalf("tickToTrade without the rig: %+v", tt)
	}
	if v := judge.Evaluate(res, tsv1.Thresholds{}); v.Result != tsv1.VerdictInconclusive || v.Reasons[0].Name != "suite/tickToTrade/kernel" {
		t.Errorf("verdict %+v", v)
	}
}

// TestRunnerQualifyOverVeth runs the qualify suite as a benchmark Job does (--spec with
// suites.qualify, the reflector in the other namespace): the runner qualifies the interface it
// measures over, and the report is in the results: veth, native XDP, zero-copy refused, so
// Degraded, the conformance cases passed against the reflector's peer, both stacks' medians.
func TestRunnerQualifyOverVeth(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sockperf")
	launcher := qualifytest.RequireConform(t)
	link := testutil.VethNamespaces(t, fmt.Sprintf("qualifyb%d", os.Getpid()%10000), "198.18.0")
	spec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(spec, []byte(`{"stacks":["kernel","bypass"],"qualify":{"durationSeconds":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runPair(t, link.NSA, link.NSB, []string{"--launcher=" + launcher}, []string{"--launcher=" + launcher, "--spec=" + spec})
	q := res.Qualify
	if q == nil {
		t.Fatalf("no qualify report in %+v", res)
	}
	if len(res.Stacks) != 0 {
		t.Errorf("stacks %+v: qualify alone runs no stack suite", res.Stacks)
	}
	if q.Interface != link.IfB || q.Driver != "veth" || q.Peer != link.AddrA || !q.XDP.Native.Works || q.XDP.ZeroCopy.Works {
		t.Errorf("report %+v: want %s, veth, peer %s, native XDP, no zero-copy", q, link.IfB, link.AddrA)
	}
	if q.Verdict != tsv1.QualifyDegraded {
		t.Errorf("verdict %s (%+v), want Degraded", q.Verdict, q.Reasons)
	}
	qualifytest.CheckMeasured(t, q)
	v := judge.Evaluate(res, tsv1.Thresholds{})
	if v.Result != tsv1.VerdictPassed || len(v.Reasons) != 1 || v.Reasons[0].Name != "qualify/"+link.IfB {
		t.Errorf("verdict %+v: a Degraded interface passes, with the qualify check", v)
	}
}
