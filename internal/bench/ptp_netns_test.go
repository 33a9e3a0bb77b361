package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"

	"github.com/go-logr/logr/funcr"

	"github.com/tickstack/tickstack/internal/ptp"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// ptpLab is a PTP grandmaster and a slave, each a real ptp4l under the agent's ptp.Daemon, in two
// network namespaces joined by a veth pair, with software time stamping. The suite reads the
// slave through the socket its Daemon serves read-only, as a benchmark pod does.
type ptpLab struct {
	pmc       string
	slaveSock string // the read-only one
	slave     *ptp.Daemon
}

func newPTPLab(t *testing.T) *ptpLab {
	t.Helper()
	tsutil.RequireRoot(t)
	ptp4l := tsutil.RequireTool(t, "ptp4l")
	lab := &ptpLab{pmc: tsutil.RequireTool(t, "pmc")}
	prefix := fmt.Sprintf("tsb%d", os.Getpid())
	v := tsutil.VethNamespaces(t, prefix, "198.18.84")
	ip, nsMaster, nsSlave, ifMaster, ifSlave := v.IP, v.NSA, v.NSB, v.IfA, v.IfB
	tsutil.KeepSystemClockFrequency(t)

	dir := t.TempDir()
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
	// Fast PTP: 4 announces/s, 8 syncs and delay requests per second.
	fast := func() map[string]string {
		return map[string]string{"logAnnounceInterval": "-2", "announceReceiptTimeout": "3", "logSyncInterval": "-3", "logMinDelayReqInterval": "-3"}
	}
	// The slave steers the machine-wide system clock: no steps, at most 100 ppb, PI constants that
	// lock at once (internal/ptp's netns test explains them).
	slaveOpts := fast()
	slaveOpts["first_step_threshold"] = "0.0"
	slaveOpts["max_frequency"] = "100"
	slaveOpts["pi_proportional_const"] = "0.1"
	slaveOpts["pi_integral_const"] = "0.05"
	start := func(name, ns string, cfg ptp.Config) *ptp.Daemon {
		t.Helper()
		d, err := ptp.NewDaemon(cfg, ptp.DaemonOptions{
			RunDir: filepath.Join(dir, name), ReadOnlyDir: filepath.Join(dir, name+"-ro"), Logger: log.WithName(name), Ptp4lPath: ptp4l, PmcPath: lab.pmc,
			PollInterval: 200 * time.Millisecond,
			Wrap: func(c ptp.Command) ptp.Command {
				return ptp.Command{Name: c.Name, Path: ip, Args: append([]string{"netns", "exec", ns, c.Path}, c.Args...)}
			},
			Supervisor: ptp.SupervisorOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, StopTimeout: 3 * time.Second},
		})
		if err != nil {
			t.Fatalf("NewDaemon(%s): %v", name, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := d.Run(ctx); err != nil {
				t.Errorf("%s Run: %v", name, err)
			}
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("PTP daemon %s did not stop within 20s", name)
			}
		})
		return d
	}
	start("gm", nsMaster, ptp.Config{Role: ptp.RoleGrandmaster, Interface: ifMaster, Domain: 24, Transport: ptp.TransportUDPv4,
		Timestamping: ptp.TimestampingSoftware, MaxOffsetNs: 1, Ptp4lOptions: fast()})
	lab.slave = start("sl", nsSlave, ptp.Config{Role: ptp.RoleSlave, Interface: ifSlave, Domain: 24, Transport: ptp.TransportUDPv4,
		Timestamping: ptp.TimestampingSoftware, MaxOffsetNs: 1_000_000, Ptp4lOptions: slaveOpts})
	lab.slaveSock = filepath.Join(dir, "sl-ro", "ptp4l.sock")
	return lab
}

// waitLocked polls until the slave's own monitor sees it synced in SLAVE state.
func (l *ptpLab) waitLocked(t *testing.T) {
	t.Helper()
	tsutil.Poll(t, 30*time.Second, "the slave to lock", func() error {
		if st := l.slave.Status(); !st.Synced || st.Sample.PortState != ptp.PortStateSlave {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}

// TestPTPSuiteAgainstRealPtp4l runs the ptp suite against a real ptp4l slave locked to a real
// grandmaster: alone, beside the jitter suite, and with a wrong domain.
func TestPTPSuiteAgainstRealPtp4l(t *testing.T) {
	lab := newPTPLab(t)
	runner := &Runner{Tools: Tools{Pmc: lab.pmc}, WorkDir: t.TempDir(), Logf: t.Logf}

	// 1. Alone, for its duration, the domain read from the ptp4l.conf the Daemon wrote beside
	// the socket. A run in which the slave bounced out of SLAVE is measured again.
	var res *tsv1.PTPResult
	for attempt := 1; ; attempt++ {
		lab.waitLocked(t)
		r, err := runner.Run(context.Background(), tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: lab.slaveSock, IntervalMillis: 200, DurationSeconds: 3}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if r.PTP == nil {
			t.Fatal("no ptp table in the results")
		}
		res = r.PTP
		if res.NotSlaveSamples == 0 && res.FailedReads == 0 || attempt == 3 {
			if !strings.Contains(strings.Join(r.Tools, ","), "linuxptp pmc") {
				t.Errorf("tools %v do not record pmc", r.Tools)
			}
			break
		}
		t.Logf("attempt %d: the slave left SLAVE during the run (%+v): measuring again", attempt, res.PortStates)
	}
	t.Logf("ptp table: %+v", *res)
	if res.Error != "" || res.Domain != 24 || res.Socket != lab.slaveSock || res.IntervalMillis != 200 {
		t.Fatalf("ptp table %+v, want no error, domain 24 from ptp4l.conf, the slave's socket, 200 ms", *res)
	}
	// 3 s at 5 reads a second is about 15 reads; a loaded machine gets fewer, never none.
	if res.Samples < 5 || res.Samples > 16 {
		t.Errorf("%d samples in 3 s at 200 ms, want 5..16", res.Samples)
	}
	if res.NotSlaveSamples != 0 || res.FailedReads != 0 || len(res.PortStates) != 1 || res.PortStates[0] != (tsv1.PTPPortStateCount{State: "SLAVE", Samples: res.Samples}) {
		t.Errorf("port states %+v (%d not SLAVE, %d failed: %s), want every sample SLAVE", res.PortStates, res.NotSlaveSamples, res.FailedReads, res.LastFailure)
	}
	// Both ends share one system clock over a veth: a locked slave is within a millisecond, and
	// the path delay is positive.
	if o := res.Offset; o.Samples != res.Samples || o.MaxNs >= 1_000_000 || o.MinNs < 0 || o.MedianNs > o.P99Ns || o.P99Ns > o.MaxNs ||
		res.MinOffsetNs < -o.MaxNs || res.MaxOffsetNs > o.MaxNs || res.MedianPathDelayNs <= 0 {
		t.Errorf("offset %+v, signed %d..%d, path delay %d: want a finite locked offset and a positive path delay", o, res.MinOffsetNs, res.MaxOffsetNs, res.MedianPathDelayNs)
	}
	// The system clock's offset the slave's Daemon publishes beside the socket (software time
	// stamping: ptp4l's own) is in the table, sample for sample.
	if so := res.SystemOffset; so == nil || so.Samples == 0 || so.Samples > res.Samples || so.MaxNs >= 1_000_000 || so.MedianNs > so.MaxNs {
		t.Errorf("system clock offset %+v over %d samples: want one per SLAVE sample the agent published, locked", so, res.Samples)
	}
	if left, _ := filepath.Glob(filepath.Join(runner.WorkDir, pmcSocketPrefix+"*")); len(left) != 0 {
		t.Errorf("pmc's reply sockets left behind: %v", left)
	}

	// 2. The verdict: a generous bound passes, an impossible one fails, both naming the offset.
	results := &tsv1.BenchmarkResults{SchemaVersion: tsv1.BenchmarkResultsSchemaVersion, PTP: res}
	v := judge.Evaluate(results, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "10ms"}}})
	if v.Result != tsv1.VerdictPassed || len(v.Reasons) != 2 || !strings.Contains(v.Reasons[0].Message+v.Reasons[1].Message, "|offset from master|") {
		t.Errorf("generous bound: %+v, want Passed with ptp/p99 and ptp/slave", v)
	}
	if res.Offset.MaxNs <= 1 {
		t.Fatalf("max |offset| %d ns: the impossible bound below would hold", res.Offset.MaxNs)
	}
	v = judge.Evaluate(results, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatMax, Max: "1ns"}}})
	if v.Result != tsv1.VerdictFailed || v.Reasons[0].Name != "ptp/max" || !strings.Contains(v.Reasons[0].Message, "exceeds 1ns") {
		t.Errorf("impossible bound: %+v, want Failed on ptp/max", v)
	}

	// 3. Beside another suite, the sampling spans it: oslat on CPU 0 for 2 s.
	if _, err := exec.LookPath("oslat"); err == nil {
		lab.waitLocked(t)
		r, err := runner.Run(context.Background(), tsv1.BenchmarkSuites{
			Jitter: &tsv1.JitterSpec{CPUs: "0", Tools: []tsv1.JitterTool{tsv1.JitterOslat}, DurationSeconds: 2},
			PTP:    &tsv1.PTPSuite{Socket: lab.slaveSock, IntervalMillis: 200, DurationSeconds: 60},
		})
		if err != nil {
			t.Fatalf("Run with jitter: %v", err)
		}
		if r.Jitter == nil || len(r.Jitter.Rows) != 1 || r.PTP == nil || r.PTP.Samples < 5 || r.PTP.Samples > 30 {
			t.Errorf("jitter %+v, ptp %+v: want one oslat row and ptp samples over its ~2 s (not the 60 s of ptp alone)", r.Jitter, r.PTP)
		}
	} else {
		tsutil.Unavailable(t, "oslat not on PATH for the concurrent run")
	}

	// 4. The wrong domain: ptp4l ignores the reads, the suite says so and the verdict is
	// Inconclusive, not Passed.
	r, err := runner.Run(context.Background(), tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: lab.slaveSock, Domain: ptr(int32(7)), IntervalMillis: 200, DurationSeconds: 1}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if p := r.PTP; p == nil || p.Samples == 0 || p.FailedReads != p.Samples || !strings.Contains(p.Error, "domain 7") {
		t.Fatalf("wrong domain: %+v, want every read failed and an error naming domain 7", p)
	}
	v = judge.Evaluate(r, tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "10ms"}}})
	if v.Result != tsv1.VerdictInconclusive || v.Reasons[0].Name != "suite/ptp" {
		t.Errorf("wrong domain verdict %+v, want Inconclusive with suite/ptp first", v)
	}

	// 5. From another mount namespace with its own /run and its own work directory, as in a pod
	// that mounts only the read-only PTP directory: ptp4l's own socket cannot answer a pmc there
	// (it would send to a path only that namespace has), the read-only socket does, through the
	// pmc process's root.
	unshare := tsutil.RequireTool(t, "unshare")
	podPmc := filepath.Join(t.TempDir(), "pmc-in-own-mount-ns")
	script := fmt.Sprintf("#!/bin/sh\nexec %s -m --propagation private sh -c 'mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs %s && exec \"$0\" \"$@\"' %s \"$@\"\n",
		unshare, runner.WorkDir, lab.pmc)
	if err := os.WriteFile(podPmc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if s := (ptp.PMC{Path: podPmc, UDSAddress: lab.slave.UDSAddress(), Domain: 24, Attempts: 1,
		LocalAddress: filepath.Join(runner.WorkDir, "pmc.direct")}).Read(context.Background()); s.Err == nil {
		t.Errorf("ptp4l's own socket answered a pmc in its own mount namespace (%+v): the test does not separate the namespaces", s)
	}
	lab.waitLocked(t)
	runner.Tools.Pmc = podPmc
	r, err = runner.Run(context.Background(), tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: lab.slaveSock, IntervalMillis: 200, DurationSeconds: 1}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if p := r.PTP; p == nil || p.Error != "" || p.Offset.Samples == 0 {
		t.Errorf("ptp from its own mount namespace through the read-only socket: %+v, want SLAVE samples", p)
	}
}
