package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Runner is the client side: it drives sockperf clients against a Reflector, runs the jitter
// tools locally, and runs the tick-to-trade rig's strategy against the venue the Reflector runs.
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
	// Proc is where procfs is mounted, read for the clients' run-queue wait and steal; empty
	// means /proc.
	Proc string

	portSeq int
	tools   map[string]bool
}

func (r *Runner) proc() string {
	if r.Proc == "" {
		return "/proc"
	}
	return r.Proc
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
	if err := judge.ValidateSuites(spec); err != nil {
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
	if spec.PingPong != nil || spec.RateSweep != nil || spec.Microburst != nil || spec.MixedBurst != nil || spec.TickToTrade != nil {
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
	if spec.TickToTrade != nil {
		sr.TickToTrade = r.tickToTrade(ctx, stack, spec.TickToTrade)
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
