package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// The tickToTrade suite's venue side runs on the reflector: the exchange simulator (t2t-exchange,
// a FIX acceptor) and the market-data publisher (t2t-pub). The client starts the exchange, starts
// its strategy against it, asks the reflector to publish, and collects the exchange's line when the
// strategy has logged out. As with sockperf servers, only command lines built here from validated
// fields run, and every program started over a connection is stopped when it closes.

// T2TDirDefault is where the dataplane build puts the rig, relative to the repository.
const T2TDirDefault = "dataplane/build"

// The rig's programs.
const (
	t2tPubName      = "t2t-pub"
	t2tStrategyName = "t2t-strategy"
	t2tExchangeName = "t2t-exchange"
)

// t2tExchangeListening is what t2t-exchange prints on stderr once its acceptor listens.
const t2tExchangeListening = "t2t-exchange: listening on"

// t2tPath finds one program of the tick-to-trade rig: the path given, else on PATH, else next to
// the working directory's or the runner's dataplane build.
func (t Tools) t2tPath(name, set string) (string, error) {
	if set != "" {
		if isExecutable(set) {
			return set, nil
		}
		return "", fmt.Errorf("%w: %s %s is missing or not executable: build the tick-to-trade rig (make -C dataplane t2t) or fix --t2t-dir", ErrStackUnavailable, name, set)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	tried := []string{name + " on PATH"}
	if wd, err := os.Getwd(); err == nil {
		tried = append(tried, filepath.Join(wd, T2TDirDefault, name))
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		tried = append(tried, filepath.Join(dir, name), filepath.Join(dir, "..", T2TDirDefault, name))
	}
	for _, p := range tried[1:] {
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found (looked at %s): build the tick-to-trade rig (make -C dataplane t2t; it needs Debian's libquickfix-dev) or pass --t2t-dir", ErrStackUnavailable, name, strings.Join(tried, ", "))
}

// T2TPublishSpec is one run of the publisher the client asks the reflector for.
type T2TPublishSpec struct {
	Stack tsv1.Stack `json:"stack"`
	Group string     `json:"group"`
	Port  int        `json:"port"`
	// RateMps, Seconds, Size, Mix and BurstMps are t2t-pub's --rate, --seconds, --size, --mix
	// and --burst.
	RateMps  int64        `json:"rateMps"`
	Seconds  int32        `json:"seconds"`
	Size     int32        `json:"size,omitempty"`
	Mix      tsv1.TickMix `json:"mix,omitempty"`
	BurstMps int64        `json:"burstMps,omitempty"`
	// Loop turns IP_MULTICAST_LOOP on: the strategy shares the publisher's network namespace.
	Loop bool `json:"loop,omitempty"`
}

// T2TExchangeSpec is the exchange simulator the client asks the reflector for.
type T2TExchangeSpec struct {
	Port int `json:"port"`
	// TimeoutSeconds is t2t-exchange's --timeout: how long it waits for the logon, then the logout.
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// T2TOutput is what one of the rig's programs printed: its JSON line (stdout) and the end of its
// stderr.
type T2TOutput struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr,omitempty"`
	ExitCode int    `json:"exitCode"`
}

type t2tRequest struct {
	Publish  *T2TPublishSpec  `json:"publish,omitempty"`
	Exchange *T2TExchangeSpec `json:"exchange,omitempty"`
}

func checkT2TPort(p int) error {
	if p < 1024 || p > 65535 {
		return fmt.Errorf("port %d out of range 1024..65535", p)
	}
	return nil
}

// publishArgs validates a publish request and returns t2t-pub's arguments.
func (r *Reflector) publishArgs(p *T2TPublishSpec) ([]string, error) {
	if p.Stack != tsv1.StackKernel && p.Stack != tsv1.StackBypass {
		return nil, fmt.Errorf("stack %q: use kernel or bypass", p.Stack)
	}
	g := net.ParseIP(p.Group)
	if g == nil || !g.IsMulticast() || g.To4() == nil {
		return nil, fmt.Errorf("group %q is not an IPv4 multicast address", p.Group)
	}
	if err := checkT2TPort(p.Port); err != nil {
		return nil, err
	}
	if p.RateMps < 1 || p.RateMps > judge.MaxT2TRate || p.BurstMps < 0 || p.BurstMps > judge.MaxT2TRate {
		return nil, fmt.Errorf("rate %d + burst %d msg/s out of range: rate 1..%d, burst 0..%d", p.RateMps, p.BurstMps, judge.MaxT2TRate, judge.MaxT2TRate)
	}
	if p.Seconds < 1 || p.Seconds > 3600 {
		return nil, fmt.Errorf("seconds %d out of range 1..3600", p.Seconds)
	}
	args := []string{"--rate", strconv.FormatInt(p.RateMps, 10), "--seconds", strconv.Itoa(int(p.Seconds)), "--if", r.DataAddress}
	switch p.Mix {
	case tsv1.TickMixSeed003:
		args = append(args, "--mix", string(tsv1.TickMixSeed003))
	case tsv1.TickMixSteady, "":
		if p.Size != 0 {
			if p.Size < judge.MinT2TMessageSize || p.Size > judge.MaxMessageSize {
				return nil, fmt.Errorf("size %d out of range %d..%d", p.Size, judge.MinT2TMessageSize, judge.MaxMessageSize)
			}
			args = append(args, "--size", strconv.Itoa(int(p.Size)))
		}
	default:
		return nil, fmt.Errorf("mix %q: use steady or seed003", p.Mix)
	}
	if p.BurstMps > 0 {
		args = append(args, "--burst", strconv.FormatInt(p.BurstMps, 10))
	}
	if p.Loop {
		args = append(args, "--loop")
	}
	return append(args, g.String(), strconv.Itoa(p.Port)), nil
}

// t2tPublish runs the publisher to its end and returns what it printed.
func (r *Reflector) t2tPublish(ctx context.Context, p *T2TPublishSpec) (*T2TOutput, error) {
	args, err := r.publishArgs(p)
	if err != nil {
		return nil, err
	}
	pub, err := r.Tools.t2tPath(t2tPubName, r.Tools.T2TPub)
	if err != nil {
		return nil, err
	}
	cmd, err := r.Tools.command(ctx, p.Stack, r.CPUs, pub, args...)
	if err != nil {
		return nil, err
	}
	r.logf("%s", strings.Join(cmd.Args, " "))
	out, err := runSplit(ctx, cmd, time.Duration(p.Seconds)*time.Second+60*time.Second)
	if out != nil {
		return out, err
	}
	return nil, err
}

// t2tExchange starts the exchange simulator (on the kernel stack: it stands for the venue) and
// waits until it listens.
func (r *Reflector) t2tExchange(ctx context.Context, x *T2TExchangeSpec) (*reflectorProc, error) {
	if err := checkT2TPort(x.Port); err != nil {
		return nil, err
	}
	if x.TimeoutSeconds < 1 || x.TimeoutSeconds > 7200 {
		return nil, fmt.Errorf("timeout %d s out of range 1..7200", x.TimeoutSeconds)
	}
	ex, err := r.Tools.t2tPath(t2tExchangeName, r.Tools.T2TExchange)
	if err != nil {
		return nil, err
	}
	cmd, err := r.Tools.command(context.WithoutCancel(ctx), tsv1.StackKernel, r.CPUs, ex, "--timeout", strconv.Itoa(int(x.TimeoutSeconds)), strconv.Itoa(x.Port))
	if err != nil {
		return nil, err
	}
	p := &reflectorProc{cmd: cmd, out: &SyncBuffer{}, stdout: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting t2t-exchange: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	r.logf("%s started", cmd.String())
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.out.String(), t2tExchangeListening) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("t2t-exchange exited before it listened (%v): %s", p.err, tail(p.out.String(), 600))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopProc(p)
			return nil, fmt.Errorf("t2t-exchange not listening after 15s: %s", tail(p.out.String(), 600))
		}
	}
	return p, nil
}

// collectT2T waits up to wait for a rig program that ends by itself (the exchange ends after the
// strategy's logout), then stops it, and returns what it printed.
func collectT2T(p *reflectorProc, wait time.Duration) *T2TOutput {
	select {
	case <-p.done:
	case <-time.After(wait):
		stopProc(p)
	}
	return &T2TOutput{Stdout: p.stdout.String(), Stderr: tail(p.out.String(), 2000), ExitCode: exitCode(p.err)}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// runSplit runs cmd to completion with a deadline, keeping stdout (the rig's JSON line) apart from
// stderr. A non-zero exit is returned as an error together with the output.
func runSplit(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (*T2TOutput, error) {
	var stdout, stderr SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		err = fmt.Errorf("did not finish within %s (%v)", timeout, err)
	case <-ctx.Done():
		// the command's Cancel (SIGINT, then SIGKILL after WaitDelay) ends it
		err = <-done
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	out := &T2TOutput{Stdout: stdout.String(), Stderr: tail(stderr.String(), 2000), ExitCode: exitCode(err)}
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tail(stderr.String(), 400))
	}
	return out, nil
}

// jsonLine is the last line of a rig program's stdout that holds a JSON object.
func jsonLine(stdout string) []byte {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			return []byte(l)
		}
	}
	return nil
}

// StartT2TExchange starts the exchange simulator on the reflector and returns its id.
func (c *ReflectorClient) StartT2TExchange(x T2TExchangeSpec) (int, error) {
	resp, err := c.call(controlRequest{Op: "t2tExchange", T2T: &t2tRequest{Exchange: &x}}, 30*time.Second)
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// CollectT2T waits for a rig program the reflector started to end (stopping it after wait) and
// returns what it printed.
func (c *ReflectorClient) CollectT2T(id int, wait time.Duration) (*T2TOutput, error) {
	resp, err := c.call(controlRequest{Op: "t2tCollect", ID: id, WaitSeconds: int(wait / time.Second)}, wait+30*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.T2T == nil {
		return nil, errors.New("reflector sent no output")
	}
	return resp.T2T, nil
}

// PublishT2T runs the publisher on the reflector and returns what it printed; it blocks while the
// publisher sends.
func (c *ReflectorClient) PublishT2T(p T2TPublishSpec) (*T2TOutput, error) {
	resp, err := c.call(controlRequest{Op: "t2tPublish", T2T: &t2tRequest{Publish: &p}}, time.Duration(p.Seconds)*time.Second+90*time.Second)
	if resp != nil && resp.T2T != nil {
		return resp.T2T, err
	}
	if err == nil {
		err = errors.New("reflector sent no output")
	}
	return nil, err
}
