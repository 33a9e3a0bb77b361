package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

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

// withServer starts a sockperf server on the reflector, with a receive buffer of rcvbuf bytes
// (0: the socket's default), runs fn against its port and stops it.
func (r *Runner) withServer(stack tsv1.Stack, proto tsv1.Protocol, gap bool, rcvbuf int64, fn func(port int) error) (*ReflectorCounters, error) {
	port := r.port()
	id, err := r.Reflector.Start(ServerSpec{Stack: stack, Protocol: proto, Port: port, Group: r.group(), GapDetection: gap, ReceiveBufferBytes: rcvbuf})
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

// clientOutcome is one sockperf client run.
type clientOutcome struct {
	rep *SockperfClientReport
	// rows are the full log's rows in its order.
	rows []FullLogSample
	// counters are the bypass stack's exit counters of the client (nil on the kernel stack, or
	// when countersErr says why they are missing).
	counters    StackCounters
	countersErr error
	// sched is what the sampler read of the client's process (nil: it was not started).
	sched *schedTrace
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

// clientRun runs one sockperf client with a full log and returns its summary, the full log's rows
// (sequence number, times, latency) and, on the bypass stack, the stack's counters. On an error the
// outcome holds what was read.
func (r *Runner) clientRun(ctx context.Context, stack tsv1.Stack, seconds int32, mode string, args ...string) (clientOutcome, error) {
	var o clientOutcome
	sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
	if err != nil {
		return o, err
	}
	logFile, err := os.CreateTemp(r.WorkDir, "fulllog-*.csv")
	if err != nil {
		return o, fmt.Errorf("creating full log: %w", err)
	}
	logPath := logFile.Name()
	logFile.Close()
	defer os.Remove(logPath)
	full := append([]string{mode}, args...)
	full = append(full, "--full-log", logPath)
	cmd, err := r.Tools.command(ctx, stack, r.CPUs, sp, full...)
	if err != nil {
		return o, err
	}
	statsDir, err := withStatsDir(cmd, stack, r.WorkDir, "stats-*")
	if err != nil {
		o.countersErr = err
	} else if statsDir != "" {
		defer os.RemoveAll(statsDir)
	}
	r.logf("%s", strings.Join(cmd.Args, " "))
	var cpus []int
	if r.CPUs != "" {
		cpus, _ = judge.ParseCPUList(r.CPUs)
	}
	var sampler *procSampler
	out, err := runToolStarted(ctx, cmd, time.Duration(seconds)*time.Second+60*time.Second, func(pid int) {
		sampler = startProcSampler(r.proc(), pid, cpus, true)
	})
	if sampler != nil {
		o.sched = sampler.Stop()
	}
	if statsDir != "" {
		o.counters, o.countersErr = ReadStackStatsDir(statsDir)
	}
	if err != nil {
		// sockperf's own error lines (or the launcher's) say more than an exit status.
		if rep, perr := ParseSockperfClient(out); perr != nil && len(rep.Errors) > 0 {
			o.rep = rep
			return o, perr
		}
		return o, err
	}
	rep, perr := ParseSockperfClient(out)
	o.rep = rep
	if rep != nil && rep.Version != "" {
		r.noteTool("sockperf " + rep.Version)
	}
	if errors.Is(perr, ErrNoSummary) {
		return o, fmt.Errorf("%w; its output ends: %s", perr, tail(out, 300))
	}
	if perr != nil {
		return o, perr
	}
	f, err := os.Open(logPath)
	if err != nil {
		return o, fmt.Errorf("opening full log: %w", err)
	}
	defer f.Close()
	rows, err := ParseFullLog(bufio.NewReader(f))
	if err != nil {
		return o, fmt.Errorf("sockperf full log: %w", err)
	}
	o.rows = rows
	return o, nil
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
