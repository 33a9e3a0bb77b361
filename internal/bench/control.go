package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// The reflector side (role server) runs sockperf servers when the client side asks over a small
// control connection: one JSON request per line, one JSON response per line. Only sockperf server
// command lines built here from validated fields can be started, and every server started over a
// connection is stopped when that connection closes.

// DefaultMulticastGroup is the group multicast suites use (administratively scoped, link-local use:
// the TTL is sockperf's default 2 and the test network is a private veth pair or the node's VF).
const DefaultMulticastGroup = "239.255.18.1"

type controlRequest struct {
	Op           string        `json:"op"`
	Stack        tsv1.Stack    `json:"stack,omitempty"`
	Protocol     tsv1.Protocol `json:"protocol,omitempty"`
	Port         int           `json:"port,omitempty"`
	Group        string        `json:"group,omitempty"`
	GapDetection bool          `json:"gapDetection,omitempty"`
	// ReceiveBufferBytes is the server's SO_RCVBUF (sockperf --buffer-size); 0: the default. A
	// reflector without Hello.ReceiveBuffers ignores it.
	ReceiveBufferBytes int64 `json:"receiveBufferBytes,omitempty"`
	ID                 int   `json:"id,omitempty"`
	// T2T is a tickToTrade request (ops t2tExchange, t2tPublish); WaitSeconds bounds t2tCollect.
	T2T         *t2tRequest `json:"t2t,omitempty"`
	WaitSeconds int         `json:"waitSeconds,omitempty"`
	// Windows are the stalls of a stopped server's run, on CLOCK_MONOTONIC ("sched").
	Windows []StallWindow `json:"windows,omitempty"`
}

// ReflectorHello is the reflector's answer to "hello".
type ReflectorHello struct {
	// DataAddress is the IP its sockperf servers bind to.
	DataAddress string `json:"dataAddress"`
	// SockperfVersion is what `sockperf --version` said.
	SockperfVersion string `json:"sockperfVersion,omitempty"`
	// BypassUnavailable is empty when the bypass launcher is present, else why it is not.
	BypassUnavailable string `json:"bypassUnavailable,omitempty"`
	// T2TUnavailable is empty when the tick-to-trade rig's publisher and exchange simulator are
	// present, else why they are not.
	T2TUnavailable string `json:"t2tUnavailable,omitempty"`
	// Sched is true when the reflector samples its servers' run-queue wait and steal and answers
	// "sched" (an older reflector leaves it false).
	Sched bool `json:"sched,omitempty"`
	// BootID is the reflector host's /proc/sys/kernel/random/boot_id: its CLOCK_MONOTONIC is the
	// runner's only when the two are the same.
	BootID string `json:"bootID,omitempty"`
	// ReceiveBuffers is true when the reflector gives a server the receive buffer a start asks
	// for and reports every stopped server's buffering (an older reflector leaves it false and
	// ignores the request's receiveBufferBytes).
	ReceiveBuffers bool `json:"receiveBuffers,omitempty"`
	// ConformUnavailable is empty when the reflector can run the conformance suite's peer
	// ("conformPeer", for the qualify suite), else why it cannot (an older reflector says nothing
	// and answers the op as unknown).
	ConformUnavailable string `json:"conformUnavailable,omitempty"`
}

// ReflectorCounters is what a stopped sockperf server reported.
type ReflectorCounters struct {
	Received   int64  `json:"received"`
	GapDropped int64  `json:"gapDropped"`
	Output     string `json:"output,omitempty"`
	// Stack are the bypass stack's exit counters of a bypass server.
	Stack StackCounters `json:"stack,omitempty"`
	// StackMissing says why a bypass server's counters are missing.
	StackMissing string `json:"stackMissing,omitempty"`
	// SchedMissing says why the reflector has no run-queue or steal samples of this server.
	SchedMissing string `json:"schedMissing,omitempty"`
	// Buffering is the server's receive buffering, read on the reflector (nil from an older
	// reflector).
	Buffering *tsv1.ReceiveBuffering `json:"buffering,omitempty"`

	// serverID is the server's id on the reflector, for asking for its samples ("sched").
	serverID int
}

// ReflectorSched is the reflector's answer to "sched": for each stall window, what its sampler
// saw of the server.
type ReflectorSched struct {
	Deltas []SchedDelta `json:"deltas"`
}

type controlResponse struct {
	Error    string             `json:"error,omitempty"`
	ID       int                `json:"id,omitempty"`
	Hello    *ReflectorHello    `json:"hello,omitempty"`
	Counters *ReflectorCounters `json:"counters,omitempty"`
	T2T      *T2TOutput         `json:"t2t,omitempty"`
	Sched    *ReflectorSched    `json:"sched,omitempty"`
}

// Reflector serves the control protocol and runs sockperf servers.
type Reflector struct {
	Tools Tools
	// DataAddress is the local IP sockperf servers bind to (and join multicast on).
	DataAddress string
	// CPUs pins the sockperf servers (taskset -c); empty leaves them unpinned.
	CPUs string
	// Logf reports progress; nil discards it.
	Logf func(format string, a ...any)
	// Once makes Serve return after the first control connection ends (the client is done), so
	// a Job's reflector pod completes.
	Once bool
	// WorkDir holds the bypass servers' statistics dumps until they are read; empty means the
	// system's temporary directory.
	WorkDir string
	// Proc is where procfs is mounted, read for the servers' run-queue wait and steal; empty
	// means /proc.
	Proc string
}

// keptTraces is how many stopped servers' samples a control connection keeps for "sched".
const keptTraces = 4

type reflectorProc struct {
	cmd *exec.Cmd
	out *SyncBuffer
	// stdout is kept apart for the rig's programs (their JSON line); nil for sockperf servers,
	// whose out holds both.
	stdout *SyncBuffer
	done   chan struct{}
	err    error
	// statsDir receives a bypass server's statistics dump ("": none was asked for).
	statsDir string
	// statsErr says why a bypass server dumps no statistics.
	statsErr string
	// sampler samples the server's run-queue wait and its CPUs' steal.
	sampler *procSampler
	// stack is the server's stack.
	stack tsv1.Stack
	// buffering is the kernel's part of the server's receive buffering, read when it was ready.
	buffering *tsv1.ReceiveBuffering
}

func (r *Reflector) logf(format string, a ...any) {
	if r.Logf != nil {
		r.Logf(format, a...)
	}
}

// Serve accepts control connections on ln until ctx ends.
func (r *Reflector) Serve(ctx context.Context, ln net.Listener) error {
	if net.ParseIP(r.DataAddress) == nil {
		return fmt.Errorf("reflector data address %q is not an IP: pass --listen with this host's address on the test network", r.DataAddress)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting control connections: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.handle(ctx, c)
			if r.Once {
				cancel()
			}
		}()
	}
}

func (r *Reflector) handle(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	procs := map[int]*reflectorProc{}
	// traces are the samples of stopped servers, until "sched" asks for them
	traces := map[int]*schedTrace{}
	next := 0
	defer func() {
		for _, p := range procs {
			stopProc(p)
			p.removeStats()
			p.sampler.Stop()
		}
		c.Close()
	}()
	go func() {
		<-ctx.Done()
		c.Close()
	}()
	r.logf("control connection from %s", c.RemoteAddr())
	sc := bufio.NewScanner(c)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var req controlRequest
		var resp controlResponse
		// register keeps a started process under a new id for the later requests
		register := func(p *reflectorProc, err error) {
			if err != nil {
				resp.Error = err.Error()
				return
			}
			next++
			procs[next] = p
			resp.ID = next
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.Error = fmt.Sprintf("bad control request: %v", err)
		} else {
			switch req.Op {
			case "hello":
				resp.Hello = r.hello(ctx)
			case "start":
				register(r.start(ctx, req))
			case "conformPeer":
				register(r.conformPeer(ctx, req.Port))
			case "t2tExchange":
				if req.T2T == nil || req.T2T.Exchange == nil {
					resp.Error = "t2tExchange without t2t.exchange"
					break
				}
				register(r.t2tExchange(ctx, req.T2T.Exchange))
			case "t2tPublish":
				if req.T2T == nil || req.T2T.Publish == nil {
					resp.Error = "t2tPublish without t2t.publish"
					break
				}
				out, err := r.t2tPublish(ctx, req.T2T.Publish)
				resp.T2T = out
				if err != nil {
					resp.Error = err.Error()
				}
			case "t2tCollect":
				p, ok := procs[req.ID]
				if !ok || p.stdout == nil {
					resp.Error = fmt.Sprintf("no tick-to-trade program with id %d", req.ID)
					break
				}
				delete(procs, req.ID)
				resp.T2T = collectT2T(p, time.Duration(min(max(req.WaitSeconds, 0), 600))*time.Second)
			case "stop":
				p, ok := procs[req.ID]
				if !ok || p.stdout != nil {
					resp.Error = fmt.Sprintf("no server with id %d", req.ID)
					break
				}
				delete(procs, req.ID)
				out := stopProc(p)
				rep := ParseSockperfServer(out)
				resp.Counters = &ReflectorCounters{Received: rep.Received, GapDropped: rep.GapDropped, Output: tail(out, 2000), Buffering: p.buffering}
				if p.buffering != nil && p.stack == tsv1.StackBypass {
					sb, err := p.stackBuffers()
					withStackBuffers(p.buffering, sb, err)
				}
				resp.Counters.Stack, resp.Counters.StackMissing = p.stackCounters()
				tr := p.sampler.Stop()
				resp.Counters.SchedMissing = tr.Err
				traces[req.ID] = tr
				for id := range traces {
					if id <= req.ID-keptTraces {
						delete(traces, id)
					}
				}
				if !rep.HasReceived {
					resp.Error = fmt.Sprintf("sockperf server printed no totals when stopped: %s", tail(out, 600))
				}
			case "sched":
				tr, ok := traces[req.ID]
				if !ok {
					resp.Error = fmt.Sprintf("no samples of a stopped server with id %d (only the last %d are kept)", req.ID, keptTraces)
					break
				}
				delete(traces, req.ID)
				resp.Sched = &ReflectorSched{Deltas: tr.deltas(req.Windows)}
			default:
				resp.Error = fmt.Sprintf("unknown op %q: use hello, start, stop, sched, conformPeer, t2tExchange, t2tPublish or t2tCollect", req.Op)
			}
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
	}
}

func (r *Reflector) hello(ctx context.Context) *ReflectorHello {
	h := &ReflectorHello{DataAddress: r.DataAddress, Sched: true, BootID: bootID(r.proc()), ReceiveBuffers: true}
	if p, err := r.Tools.path("sockperf", r.Tools.Sockperf); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, _ := exec.CommandContext(cctx, p, "--version").CombinedOutput()
		cancel()
		if m := versionRe.FindStringSubmatch(CleanSockperfOutput(string(out))); m != nil {
			h.SockperfVersion = m[1]
		} else if m := sockperfVersionLineRe.FindStringSubmatch(string(out)); m != nil {
			h.SockperfVersion = m[1]
		}
	}
	if _, err := r.Tools.FindLauncher(); err != nil {
		h.BypassUnavailable = err.Error()
	}
	if _, err := r.Tools.FindConform(); err != nil {
		h.ConformUnavailable = err.Error()
	}
	for _, t := range []struct{ name, set string }{{t2tPubName, r.Tools.T2TPub}, {t2tExchangeName, r.Tools.T2TExchange}} {
		if _, err := r.Tools.t2tPath(t.name, t.set); err != nil {
			h.T2TUnavailable = err.Error()
			break
		}
	}
	return h
}

func (r *Reflector) start(ctx context.Context, req controlRequest) (*reflectorProc, error) {
	if req.Port < 1024 || req.Port > 65535 {
		return nil, fmt.Errorf("port %d out of range 1024..65535", req.Port)
	}
	if req.Stack != tsv1.StackKernel && req.Stack != tsv1.StackBypass {
		return nil, fmt.Errorf("stack %q: use kernel or bypass", req.Stack)
	}
	sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
	if err != nil {
		return nil, err
	}
	args := []string{"sr", "-p", strconv.Itoa(req.Port)}
	switch req.Protocol {
	case tsv1.ProtocolUDP:
		args = append(args, "-i", r.DataAddress)
	case tsv1.ProtocolTCP:
		args = append(args, "--tcp", "-i", r.DataAddress)
	case tsv1.ProtocolUDPMulticast:
		g := net.ParseIP(req.Group)
		if g == nil || !g.IsMulticast() || g.To4() == nil {
			return nil, fmt.Errorf("group %q is not an IPv4 multicast address", req.Group)
		}
		args = append(args, "-i", g.String(), "--mc-rx-if", r.DataAddress, "--mc-tx-if", r.DataAddress)
	default:
		return nil, fmt.Errorf("protocol %q: use udp, udpMulticast or tcp", req.Protocol)
	}
	if req.GapDetection {
		args = append(args, "-g")
	}
	if req.ReceiveBufferBytes != 0 {
		if req.ReceiveBufferBytes < judge.MinReceiveBufferBytes || req.ReceiveBufferBytes > judge.MaxReceiveBufferBytes {
			return nil, fmt.Errorf("receive buffer %d bytes out of range %d..%d", req.ReceiveBufferBytes, judge.MinReceiveBufferBytes, judge.MaxReceiveBufferBytes)
		}
		args = append(args, "--buffer-size", strconv.FormatInt(req.ReceiveBufferBytes, 10))
	}
	// The servers outlive this request: they stop on "stop", on connection close or at shutdown.
	cmd, err := r.Tools.command(context.WithoutCancel(ctx), req.Stack, r.CPUs, sp, args...)
	if err != nil {
		return nil, err
	}
	p := &reflectorProc{cmd: cmd, out: &SyncBuffer{}, done: make(chan struct{}), stack: req.Stack}
	if p.statsDir, err = withStatsDir(cmd, req.Stack, r.WorkDir, "tsbench-stats-"); err != nil {
		p.statsErr = err.Error()
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		p.removeStats()
		return nil, fmt.Errorf("starting sockperf server: %w", err)
	}
	var cpus []int
	if r.CPUs != "" {
		cpus, _ = judge.ParseCPUList(r.CPUs)
	}
	p.sampler = startProcSampler(r.proc(), cmd.Process.Pid, cpus, false)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	r.logf("sockperf server %s %s port %d (%s) started", req.Stack, req.Protocol, req.Port, cmd.String())
	deadline := time.Now().Add(15 * time.Second)
	for {
		if out := p.out.String(); ParseSockperfServer(out).Ready {
			// sockperf prints the buffer it was granted before it is ready
			p.buffering = kernelBuffering(r.proc(), req.ReceiveBufferBytes, out)
			return p, nil
		}
		select {
		case <-p.done:
			p.removeStats()
			p.sampler.Stop()
			return nil, fmt.Errorf("sockperf server exited before it was ready (%v): %s", p.err, tail(p.out.String(), 600))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopProc(p)
			p.removeStats()
			p.sampler.Stop()
			return nil, fmt.Errorf("sockperf server not ready after 15s: %s", tail(p.out.String(), 600))
		}
	}
}

func (r *Reflector) proc() string {
	if r.Proc == "" {
		return "/proc"
	}
	return r.Proc
}

// bootID is this host's boot id ("" when unreadable).
func bootID(proc string) string {
	b, err := os.ReadFile(filepath.Join(proc, "sys/kernel/random/boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// stackBuffers reads a stopped bypass server's buffering from its statistics dump.
func (p *reflectorProc) stackBuffers() (StackBuffers, error) {
	if p.statsDir == "" {
		if p.statsErr != "" {
			return StackBuffers{}, errors.New(p.statsErr)
		}
		return StackBuffers{}, errNoStatsDump
	}
	return ReadStackBuffersDir(p.statsDir)
}

// stackCounters reads a stopped bypass server's statistics dump and removes it; nil and "" for a
// kernel server.
func (p *reflectorProc) stackCounters() (StackCounters, string) {
	if p.statsDir == "" {
		return nil, p.statsErr
	}
	defer p.removeStats()
	c, err := ReadStackStatsDir(p.statsDir)
	if err != nil {
		return nil, err.Error()
	}
	return c, ""
}

func (p *reflectorProc) removeStats() {
	if p.statsDir != "" {
		os.RemoveAll(p.statsDir)
		p.statsDir = ""
	}
}

// stopProc ends a sockperf server with SIGINT (it prints its totals from that handler), then
// SIGKILL if it lingers, and returns its output.
func stopProc(p *reflectorProc) string {
	select {
	case <-p.done:
		return p.out.String()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return p.out.String()
}

// ReflectorClient talks to a Reflector.
type ReflectorClient struct {
	mu   sync.Mutex
	conn net.Conn
	rd   *bufio.Scanner
	// Hello is the reflector's greeting.
	Hello ReflectorHello
}

// DialReflector connects to a reflector's control address, retrying until timeout (the reflector's
// pod may start after the client's), and exchanges the greeting.
func DialReflector(ctx context.Context, addr string, timeout time.Duration) (*ReflectorClient, error) {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			rc := &ReflectorClient{conn: c, rd: bufio.NewScanner(c)}
			rc.rd.Buffer(make([]byte, 64*1024), 4*1024*1024)
			resp, err := rc.call(controlRequest{Op: "hello"}, 30*time.Second)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("greeting reflector %s: %w", addr, err)
			}
			if resp.Hello == nil {
				c.Close()
				return nil, fmt.Errorf("reflector %s sent no greeting", addr)
			}
			rc.Hello = *resp.Hello
			return rc, nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reflector at %s not reachable within %s (is the server role running with --listen on that address?): %w", addr, timeout, lastErr)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Close ends the connection; the reflector stops every server this client started.
func (c *ReflectorClient) Close() error { return c.conn.Close() }

func (c *ReflectorClient) call(req controlRequest, timeout time.Duration) (*controlResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.conn.SetDeadline(time.Time{}) }()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("sending %s request: %w", req.Op, err)
	}
	if !c.rd.Scan() {
		err := c.rd.Err()
		if err == nil {
			err = errors.New("connection closed")
		}
		return nil, fmt.Errorf("reading %s response: %w", req.Op, err)
	}
	var resp controlResponse
	if err := json.Unmarshal(c.rd.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", req.Op, err)
	}
	if resp.Error != "" {
		return &resp, fmt.Errorf("reflector: %s", resp.Error)
	}
	return &resp, nil
}

// ServerSpec describes a sockperf server to start on the reflector.
type ServerSpec struct {
	Stack        tsv1.Stack
	Protocol     tsv1.Protocol
	Port         int
	Group        string
	GapDetection bool
	// ReceiveBufferBytes is the server's SO_RCVBUF (sockperf --buffer-size); 0: the default.
	ReceiveBufferBytes int64
}

// Start starts a sockperf server and waits until it receives. A receive buffer is refused
// unless the reflector says it sets one (Hello.ReceiveBuffers): an older reflector would start
// the server without it.
func (c *ReflectorClient) Start(s ServerSpec) (int, error) {
	if s.ReceiveBufferBytes != 0 && !c.Hello.ReceiveBuffers {
		return 0, errReflectorBuffers
	}
	resp, err := c.call(controlRequest{Op: "start", Stack: s.Stack, Protocol: s.Protocol, Port: s.Port, Group: s.Group, GapDetection: s.GapDetection,
		ReceiveBufferBytes: s.ReceiveBufferBytes}, 30*time.Second)
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// ConformPeer starts the conformance suite's peer (`conform peer PORT`, on the kernel) on the
// reflector's side and waits until it listens; it runs until the control connection ends.
func (c *ReflectorClient) ConformPeer(port int) error {
	if c.Hello.ConformUnavailable != "" {
		return fmt.Errorf("reflector side: %s", c.Hello.ConformUnavailable)
	}
	_, err := c.call(controlRequest{Op: "conformPeer", Port: port}, 30*time.Second)
	return err
}

// Stop stops a server with SIGINT and returns its counters.
func (c *ReflectorClient) Stop(id int) (*ReflectorCounters, error) {
	resp, err := c.call(controlRequest{Op: "stop", ID: id}, 30*time.Second)
	if resp != nil && resp.Counters != nil {
		resp.Counters.serverID = id
		return resp.Counters, err
	}
	if err == nil {
		err = errors.New("reflector sent no counters")
	}
	return nil, err
}

// Sched asks what the reflector's sampler saw of a stopped server within each stall window
// (CLOCK_MONOTONIC of the reflector's host); the reflector forgets the server's samples then.
func (c *ReflectorClient) Sched(id int, windows []StallWindow) ([]SchedDelta, error) {
	if !c.Hello.Sched {
		return nil, errors.New("the reflector does not sample its servers (an older tickstack-bench)")
	}
	resp, err := c.call(controlRequest{Op: "sched", ID: id, Windows: windows}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Sched == nil || len(resp.Sched.Deltas) != len(windows) {
		return nil, fmt.Errorf("the reflector answered sched with no deltas for %d windows", len(windows))
	}
	return resp.Sched.Deltas, nil
}

// conformPeer starts `conform peer PORT` (the conformance suite's kernel peer, dataplane/tests/
// conform.c) bound to every address of the reflector's namespace, and returns once its UDP and
// TCP sockets listen. Like a t2t program it is not a sockperf server ("stop" refuses it); it is
// stopped when the control connection ends.
func (r *Reflector) conformPeer(ctx context.Context, port int) (*reflectorProc, error) {
	if port < 1024 || port > 65535 {
		return nil, fmt.Errorf("port %d out of range 1024..65535", port)
	}
	bin, err := r.Tools.FindConform()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), bin, "peer", strconv.Itoa(port))
	cmd.SysProcAttr = childAttr()
	p := &reflectorProc{cmd: cmd, out: &SyncBuffer{}, stdout: &SyncBuffer{}, done: make(chan struct{}), stack: tsv1.StackKernel}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the conformance peer: %w", err)
	}
	p.sampler = startProcSampler(r.proc(), cmd.Process.Pid, nil, false)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for !listening(r.proc(), port) {
		select {
		case <-p.done:
			p.sampler.Stop()
			return nil, fmt.Errorf("conformance peer exited before it listened (%v): %s", p.err, tail(p.out.String(), 600))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopProc(p)
			p.sampler.Stop()
			return nil, fmt.Errorf("conformance peer not listening on port %d after 15s: %s", port, tail(p.out.String(), 600))
		}
	}
	r.logf("conformance peer on port %d started", port)
	return p, nil
}

// listening reports whether a UDP and a TCP socket of this network namespace are bound to port
// (proc/net/udp and proc/net/tcp, where the TCP one is in LISTEN, state 0A).
func listening(proc string, port int) bool {
	want := fmt.Sprintf(":%04X ", port)
	has := func(file string, tcp bool) bool {
		b, err := os.ReadFile(filepath.Join(proc, "net", file))
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 3 && strings.HasSuffix(f[1]+" ", want) && (!tcp || f[3] == "0A") {
				return true
			}
		}
		return false
	}
	return has("udp", false) && has("tcp", true)
}
