// Package qualify is `tickstack qualify`: what one interface of a node offers the bypass stack
// (driver and firmware, queues, flow steering, hardware timestamps, interrupts and their NUMA
// locality), native XDP and AF_XDP zero-copy found by trying them with the data plane itself,
// a few conformance cases and a kernel vs bypass ping-pong against a peer, and a verdict:
// Supported, Degraded (each reason) or Unsupported (docs/install.md "Qualifying a node's NIC").
//
// It runs on the node (the CLI as root, or the benchmark runner's qualify suite in its pod) and
// reads the host (ethtool, sysfs, procfs), so the operator never links it.
package qualify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// Options say what to qualify and with which tools.
type Options struct {
	// Interface is the interface to qualify (required).
	Interface string
	// Reflector is the peer (a tickstack-bench --role=server) the conformance cases and the
	// ping-pong run against; nil: they do not run and the verdict says so.
	Reflector *bench.ReflectorClient
	// Tools are the programs used: sockperf, the bypass launcher (tickstack-run, with
	// tickstack-stats and conform beside it).
	Tools bench.Tools
	// WorkDir holds the trials' logs and statistics dumps; it must exist.
	WorkDir string
	// CPUs pins the ping-pong clients (taskset -c); empty leaves them unpinned.
	CPUs string
	// MessageSize and Duration of the ping-pong; defaults 64 bytes and 2 seconds.
	MessageSize int32
	Duration    time.Duration
	// BasePort is the first port used (trials, conformance peer, sockperf); default 12600.
	BasePort int
	// Sys and Proc are where sysfs and procfs are mounted; empty means /sys and /proc.
	Sys, Proc string
	// Logf reports progress; nil discards it.
	Logf func(format string, a ...any)
}

func (o *Options) logf(format string, a ...any) {
	if o.Logf != nil {
		o.Logf(format, a...)
	}
}

func (o *Options) sys() string {
	if o.Sys == "" {
		return "/sys"
	}
	return o.Sys
}

func (o *Options) proc() string {
	if o.Proc == "" {
		return "/proc"
	}
	return o.Proc
}

func (o *Options) port(n int) int {
	if o.BasePort == 0 {
		return 12600 + n
	}
	return o.BasePort + n
}

// Check refuses options that cannot run, naming the flag and the fix, before anything runs.
func (o *Options) Check() error {
	if o.Interface == "" {
		return errors.New("--interface is required: the NIC or VF to qualify (ip -br link lists them)")
	}
	if len(o.Interface) > 15 {
		return fmt.Errorf("--interface %q: longer than 15 characters, not an interface name", o.Interface)
	}
	if _, err := net.InterfaceByName(o.Interface); err != nil {
		return fmt.Errorf("--interface %s: no such interface in this network namespace (ip -br link lists them): %w", o.Interface, err)
	}
	if o.MessageSize != 0 && (o.MessageSize < judge.MinMessageSize || o.MessageSize > judge.MaxMessageSize) {
		return fmt.Errorf("--size %d out of range: use %d..%d bytes", o.MessageSize, judge.MinMessageSize, judge.MaxMessageSize)
	}
	if o.Duration != 0 && (o.Duration < time.Second || o.Duration > time.Minute) {
		return fmt.Errorf("--duration %s out of range: use 1s..60s", o.Duration)
	}
	if st, err := os.Stat(o.WorkDir); err != nil || !st.IsDir() {
		return fmt.Errorf("work directory %q is not a directory", o.WorkDir)
	}
	return nil
}

// Run qualifies the interface and returns the judged report. Findings that could not be made are
// in the report (and its verdict); an error is returned only for options that cannot run.
func Run(ctx context.Context, o Options) (*tsv1.QualifyReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.MessageSize == 0 {
		o.MessageSize = 64
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
	}
	r := &tsv1.QualifyReport{Interface: o.Interface, NUMANode: -1}
	r.Address = ipv4Of(o.Interface)
	if o.Reflector != nil {
		r.Peer = o.Reflector.Hello.DataAddress
	}
	o.logf("qualify %s: reading the NIC", o.Interface)
	probeNIC(&o, r)
	if r.Error != "" {
		// the NIC could not be read (not Linux): nothing to try
	} else if r.Address == "" {
		r.Error = fmt.Sprintf("%s has no IPv4 address: give it one (the trials bind a socket there)", o.Interface)
	} else if launcher, err := o.Tools.FindLauncher(); err != nil {
		r.Error = err.Error()
	} else {
		o.logf("qualify %s: trying the XDP and bind modes", o.Interface)
		tryModes(ctx, &o, launcher, r)
		if o.Reflector != nil {
			o.logf("qualify %s: conformance cases against %s", o.Interface, r.Peer)
			conformance(ctx, &o, launcher, r)
			o.logf("qualify %s: kernel vs bypass ping-pong against %s", o.Interface, r.Peer)
			pingPong(ctx, &o, r)
		}
	}
	Judge(r)
	return r, ctx.Err()
}

// ipv4Of returns the interface's first IPv4 address, or "".
func ipv4Of(name string) string {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return ""
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// pingPong measures the UDP ping-pong on both stacks with the benchmark's own runner.
func pingPong(ctx context.Context, o *Options, r *tsv1.QualifyReport) {
	dir := filepath.Join(o.WorkDir, "pingpong")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.PingPong = []tsv1.QualifyPingPong{{Stack: tsv1.StackBypass, MessageSize: o.MessageSize, Error: err.Error()}}
		return
	}
	run := &bench.Runner{Tools: o.Tools, Reflector: o.Reflector, LocalAddress: r.Address, CPUs: o.CPUs, WorkDir: dir,
		BasePort: o.port(100), Logf: o.Logf, Proc: o.Proc}
	secs := int32(o.Duration / time.Second)
	res, err := run.Run(ctx, tsv1.BenchmarkSuites{Stacks: []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass},
		PingPong: &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{tsv1.ProtocolUDP}, MessageSizes: []int32{o.MessageSize}, DurationSeconds: secs}})
	for _, st := range []tsv1.Stack{tsv1.StackKernel, tsv1.StackBypass} {
		p := tsv1.QualifyPingPong{Stack: st, MessageSize: o.MessageSize}
		var s *tsv1.StackResults
		if res != nil {
			s = res.Stack(st)
		}
		switch {
		case s == nil && err != nil:
			p.Error = err.Error()
		case s == nil:
			p.Error = "not measured"
		case s.Unavailable != "":
			p.Error = s.Unavailable
		case s.PingPong == nil || s.PingPong.Error != "" || len(s.PingPong.Rows) == 0:
			p.Error = "no result"
			if s.PingPong != nil && s.PingPong.Error != "" {
				p.Error = s.PingPong.Error
			}
		default:
			row := s.PingPong.Rows[0]
			p.MedianNs, p.P99Ns = row.MedianNs, row.P99Ns
		}
		r.PingPong = append(r.PingPong, p)
	}
}

// VerdictError is returned by the CLI for a verdict other than Supported: the command's exit
// status says which (docs/cli.md).
type VerdictError struct {
	Verdict tsv1.QualifyVerdict
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("interface qualified %s (the reasons are in the report)", e.Verdict)
}
