package ptp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// ptpLab is a grandmaster and a slave namespace joined by a veth pair, created for one test.
type ptpLab struct {
	t              *testing.T
	prefix         string
	nsMaster       string
	nsSlave        string
	ifMaster       string
	ifSlave        string
	dir            string
	ptp4l, pmc, ip string
}

func newPTPLab(t *testing.T, tag string) *ptpLab {
	t.Helper()
	tsutil.RequireRoot(t)
	l := &ptpLab{t: t, ip: tsutil.RequireTool(t, "ip"), ptp4l: tsutil.RequireTool(t, "ptp4l"), pmc: tsutil.RequireTool(t, "pmc")}
	l.prefix = fmt.Sprintf("tsptp%d%s", os.Getpid(), tag)

	dir, err := os.MkdirTemp("", l.prefix+"-")
	if err != nil {
		t.Fatalf("creating temp dir: %v", err)
	}
	l.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })

	v := tsutil.VethNamespaces(t, l.prefix, "198.18.80")
	l.nsMaster, l.nsSlave, l.ifMaster, l.ifSlave = v.NSA, v.NSB, v.IfA, v.IfB
	tsutil.KeepSystemClockFrequency(t)
	t.Cleanup(l.checkNoLeftoverProcesses)
	return l
}

// inNetns runs a command inside a network namespace.
func (l *ptpLab) inNetns(ns string) func(Command) Command {
	return func(c Command) Command {
		c.Path, c.Args = l.ip, append([]string{"netns", "exec", ns, c.Path}, c.Args...)
		return c
	}
}

// checkNoLeftoverProcesses fails the test if any process still runs with the lab's files.
func (l *ptpLab) checkNoLeftoverProcesses() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(l.dir)) {
			continue
		}
		pid := strings.Split(p, "/")[2]
		var n int
		if _, err := fmt.Sscan(pid, &n); err != nil || tsutil.ProcessGone(n) {
			continue
		}
		l.t.Errorf("process %s still runs after the test: %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		_ = syscall.Kill(n, syscall.SIGKILL)
	}
}

// fastPTP shortens PTP's intervals so the test takes seconds: 4 announces/s (master lost after
// 0.75 s), 8 syncs and delay requests per second.
func fastPTP() map[string]string {
	return map[string]string{
		"logAnnounceInterval":    "-2",
		"announceReceiptTimeout": "3",
		"logSyncInterval":        "-3",
		"logMinDelayReqInterval": "-3",
	}
}

// daemonRun is a Daemon running in the background.
type daemonRun struct {
	t      *testing.T
	d      *Daemon
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *ptpLab) start(t *testing.T, name string, cfg Config, ns string, log logr.Logger, onChange func(Status)) *daemonRun {
	t.Helper()
	d, err := NewDaemon(cfg, DaemonOptions{
		RunDir:       filepath.Join(l.dir, name),
		Logger:       log.WithName(name),
		Ptp4lPath:    l.ptp4l,
		PmcPath:      l.pmc,
		PollInterval: 200 * time.Millisecond,
		Wrap:         l.inNetns(ns),
		Supervisor:   SupervisorOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, StopTimeout: 3 * time.Second},
		OnChange:     onChange,
	})
	if err != nil {
		t.Fatalf("NewDaemon(%s): %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &daemonRun{t: t, d: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := d.Run(ctx); err != nil {
			t.Errorf("%s Run: %v", name, err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *daemonRun) stop() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.t.Errorf("PTP daemon did not stop within 20s")
	}
}

// syncLog records TimeSynced transitions.
type syncLog struct {
	mu      sync.Mutex
	changes []Status
}

func (s *syncLog) add(st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, st)
}

func (s *syncLog) since(i int) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.changes[min(i, len(s.changes)):]...)
}

func (s *syncLog) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changes)
}

// TestPTPMasterAndSlaveOverVeth runs a grandmaster and a slave, each under its own Daemon, in two
// network namespaces over a veth pair with software time stamping, once per transport.
func TestPTPMasterAndSlaveOverVeth(t *testing.T) {
	for _, tr := range []Transport{TransportL2, TransportUDPv4} {
		t.Run(string(tr), func(t *testing.T) { testMasterAndSlave(t, tr) })
	}
}

func testMasterAndSlave(t *testing.T, transport Transport) {
	lab := newPTPLab(t, strings.ToLower(string(transport[0:1])))
	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
	const hold = 2 * time.Second

	// The grandmaster with the kernel's ordinary scheduling, the slave with the defaults
	// (SCHED_FIFO 10) pinned to CPU 0 as to a node's reserved CPUs.
	gm := Config{Role: RoleGrandmaster, Interface: lab.ifMaster, Domain: 24, Transport: transport,
		Timestamping: TimestampingSoftware, MaxOffsetNs: 1, HoldTime: hold, Ptp4lOptions: fastPTP(), SchedPolicy: SchedOther}
	slaveOpts := fastPTP()
	// The slave steers the machine-wide system clock: no steps, at most 100 ppb. Explicit PI
	// constants make it lock at once: with the software time stamping defaults (ki = 0.001 scaled)
	// the servo waits 0.016/ki = ~37 s before its first frequency estimate.
	slaveOpts["first_step_threshold"] = "0.0"
	slaveOpts["max_frequency"] = "100"
	slaveOpts["pi_proportional_const"] = "0.1"
	slaveOpts["pi_integral_const"] = "0.05"
	slave := Config{Role: RoleSlave, Interface: lab.ifSlave, Domain: 24, Transport: transport,
		Timestamping: TimestampingSoftware, MaxOffsetNs: 1_000_000, HoldTime: hold, Ptp4lOptions: slaveOpts, CPUs: "0"}

	changes := &syncLog{}
	master := lab.start(t, "gm", gm, lab.nsMaster, log, nil)
	sl := lab.start(t, "slave", slave, lab.nsSlave, log, changes.add)

	// 1. The slave locks: port SLAVE, a measured offset and path delay, TimeSynced true.
	// Software timestamping on a loaded 2-vCPU VM can bounce SLAVE -> UNCALIBRATED on a
	// synchronisation fault for a moment, so each view is polled until it shows the locked state.
	var st Status
	tsutil.PollTrue(t, 30*time.Second, "the slave to be synced with port SLAVE, an offset and a path delay", func() bool {
		st = sl.d.Status()
		return st.Synced && st.Reason == ReasonSynchronized && st.Sample.PortState == PortStateSlave &&
			st.Sample.HasOffset && st.Sample.MeanPathDelayNs > 0
	})
	t.Logf("slave synced: %s (path delay %d ns)", st.Message, st.Sample.MeanPathDelayNs)
	// Software time stamping: ptp4l steers CLOCK_REALTIME, so its offset is the system clock's.
	if !st.Sample.HasSystemOffset || st.Sample.SystemOffsetNs != st.Sample.OffsetNs {
		t.Errorf("system clock offset %d ns (read: %v), want ptp4l's offset %d ns", st.Sample.SystemOffsetNs, st.Sample.HasSystemOffset, st.Sample.OffsetNs)
	}
	if got := procSched(t, sl.d.Ptp4l().PID()); got != "policy 1 priority 10 cpus 0" {
		t.Errorf("slave ptp4l scheduling: %s, want SCHED_FIFO (policy 1) priority 10 on CPU 0", got)
	}
	if got := procSched(t, master.d.Ptp4l().PID()); !strings.HasPrefix(got, "policy 0 priority 0 ") {
		t.Errorf("grandmaster ptp4l scheduling: %s, want SCHED_OTHER (policy 0)", got)
	}
	if gst := master.d.Status(); gst.Sample.HasSystemOffset {
		t.Errorf("grandmaster status has a system clock offset %d ns; its system clock is the source", gst.Sample.SystemOffsetNs)
	}
	if gst := master.d.Status(); !gst.Synced || gst.Sample.PortState != PortStateMaster {
		t.Errorf("grandmaster status = %+v, want synced with port MASTER", gst)
	}
	// pmc read directly gives the same picture, and ptp4l's output (the fallback) agrees.
	var direct Sample
	tsutil.PollTrue(t, 10*time.Second, "pmc to read SLAVE with an offset", func() bool {
		direct = PMC{Path: lab.pmc, UDSAddress: sl.d.UDSAddress(), Domain: 24}.Read(context.Background())
		return direct.Err == nil && direct.PortState == PortStateSlave && direct.HasOffset
	})
	tsutil.PollTrue(t, 10*time.Second, "ptp4l's output to show SLAVE and an offset", func() bool {
		s := sl.d.logParser.Read(context.Background())
		return s.PortState == PortStateSlave && s.HasOffset
	})
	if err := testutil.CollectAndCompare(NewCollector(sl.d), strings.NewReader(fmt.Sprintf(`
# HELP tickstack_ptp_time_synced 1 when the TimeSynced condition is true, else 0.
# TYPE tickstack_ptp_time_synced gauge
tickstack_ptp_time_synced{interface=%q} 1
`, lab.ifSlave)), "tickstack_ptp_time_synced"); err != nil {
		t.Errorf("metrics: %v", err)
	}

	// 1b. A real chronyd starts on the host: two servos on one clock. The slave loses TimeSynced
	// with ClockConflict after the hold time, and is synced again once chronyd is gone.
	clockConflict(t, sl.d)

	// 2. The grandmaster stops: the slave stays synced for the hold time, then loses TimeSynced.
	mark := changes.len()
	gmPID := master.d.Ptp4l().PID()
	stopped := time.Now()
	master.stop()
	if !tsutil.ProcessGone(gmPID) {
		t.Fatalf("grandmaster ptp4l (pid %d) still runs after its daemon stopped", gmPID)
	}
	tsutil.PollTrue(t, 30*time.Second, "the slave to lose TimeSynced", func() bool { return !sl.d.Status().Synced })
	lost := time.Since(stopped)
	st = sl.d.Status()
	if st.Reason != ReasonPortNotSlave {
		t.Errorf("after losing the master: reason %s (%s), want %s", st.Reason, st.Message, ReasonPortNotSlave)
	}
	if lost < hold {
		t.Errorf("TimeSynced turned false %s after the master stopped, before the %s hold time", lost, hold)
	}
	sawHold := false
	for _, c := range changes.since(mark) {
		sawHold = sawHold || (c.Synced && c.Reason == ReasonWithinHoldTime)
	}
	if !sawHold {
		t.Errorf("no %s transition before TimeSynced turned false: %+v", ReasonWithinHoldTime, changes.since(mark))
	}
	t.Logf("slave lost sync %s after the master stopped: %s", lost.Round(time.Millisecond), st.Message)

	// 3. The grandmaster comes back: the slave is synced again.
	lab.start(t, "gm", gm, lab.nsMaster, log, nil)
	tsutil.PollTrue(t, 30*time.Second, "the slave to be synced again with port SLAVE", func() bool {
		st := sl.d.Status()
		return st.Synced && st.Sample.PortState == PortStateSlave
	})

	// 4. A killed ptp4l is restarted by the supervisor and locks again.
	old := sl.d.Ptp4l().PID()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the slave's ptp4l (pid %d): %v", old, err)
	}
	tsutil.PollTrue(t, 15*time.Second, "ptp4l to be restarted", func() bool {
		p := sl.d.Ptp4l().PID()
		return p != 0 && p != old
	})
	if got := sl.d.Snapshot().Restarts["ptp4l"]; got != 1 {
		t.Errorf("ptp4l restarts = %d, want 1", got)
	}
	tsutil.PollTrue(t, 30*time.Second, "the restarted slave to report SLAVE", func() bool {
		s := PMC{Path: lab.pmc, UDSAddress: sl.d.UDSAddress(), Domain: 24}.Read(context.Background())
		return s.PortState == PortStateSlave
	})
	tsutil.PollTrue(t, 10*time.Second, "the restarted slave to be synced", func() bool { return sl.d.Status().Synced })
	if err := testutil.CollectAndCompare(NewCollector(sl.d), strings.NewReader(fmt.Sprintf(`
# HELP tickstack_ptp_process_restarts_total Times a linuxptp process was restarted after exiting.
# TYPE tickstack_ptp_process_restarts_total counter
tickstack_ptp_process_restarts_total{interface=%q,process="ptp4l"} 1
`, lab.ifSlave)), "tickstack_ptp_process_restarts_total"); err != nil {
		t.Errorf("metrics: %v", err)
	}

	// 5. Stopping leaves no process behind (also checked for the whole lab at cleanup).
	slPID := sl.d.Ptp4l().PID()
	sl.stop()
	if !tsutil.ProcessGone(slPID) {
		t.Errorf("slave ptp4l (pid %d) still runs after its daemon stopped", slPID)
	}
}

// TestHardwareTimestampingWithoutPHC runs the hardware path on a NIC without a PTP hardware clock
// (veth): ptp4l refuses to start, the supervisor keeps retrying and counts it, phc2sys runs waiting
// for ptp4l, and TimeSynced stays false with the reason StateUnavailable.
func TestHardwareTimestampingWithoutPHC(t *testing.T) {
	lab := newPTPLab(t, "h")
	rec := &recorder{}
	cfg := Config{Role: RoleSlave, Interface: lab.ifSlave, Domain: 5, Transport: TransportL2,
		Timestamping: TimestampingHardware, MaxOffsetNs: 100, Phc2sysOptions: map[string]string{"-R": "4"}}
	d := lab.start(t, "hw", cfg, lab.nsSlave, rec.logger(), nil).d
	if d.Phc2sys() == nil {
		t.Fatal("no phc2sys supervisor with hardware timestamping")
	}
	tsutil.PollTrue(t, 20*time.Second, "two ptp4l restarts", func() bool { return d.Ptp4l().Restarts() >= 2 })
	tsutil.PollTrue(t, 10*time.Second, "phc2sys to run", func() bool { return d.Phc2sys().PID() != 0 })
	tsutil.PollTrue(t, 10*time.Second, "a StateUnavailable verdict", func() bool { return d.Status().Reason == ReasonStateUnavailable })
	if st := d.Status(); st.Synced {
		t.Errorf("status = %+v, want not synced", st)
	}
	_, logs, _, _ := rec.snapshot()
	joined := strings.Join(logs, "\n")
	for _, want := range []string{"does not support requested timestamping mode", `"process"="phc2sys"`, `"-a" "-r" "-n" "5"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("agent log lacks %s", want)
		}
	}
	if got := d.Snapshot().Restarts; got["ptp4l"] < 2 || got["phc2sys"] != 0 {
		t.Errorf("restarts = %v, want ptp4l >= 2 and phc2sys 0 (it waits for ptp4l)", got)
	}
}

// procSched reads a process's scheduling policy, real-time priority and allowed CPUs from /proc.
func procSched(t *testing.T, pid int) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("reading pid %d's stat: %v", pid, err)
	}
	// Fields after the command name: state is field 3; rt_priority 40 and policy 41.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading pid %d's status: %v", pid, err)
	}
	cpus := "?"
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			cpus = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("policy %s priority %s cpus %s", f[41-3], f[40-3], cpus)
}

// clockConflict runs chronyd beside the synced slave d: TimeSynced turns False with ClockConflict
// naming chronyd and its pid, then True again after chronyd stopped.
func clockConflict(t *testing.T, d *Daemon) {
	t.Helper()
	cmd := tsutil.StartChronyd(t)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	defer stop()
	want := fmt.Sprintf("chronyd (pid %d)", cmd.Process.Pid)
	var st Status
	tsutil.PollTrue(t, 30*time.Second, "the slave to lose TimeSynced to chronyd", func() bool {
		st = d.Status()
		return !st.Synced
	})
	if st.Reason != ReasonClockConflict || !strings.Contains(st.Message, want) {
		t.Errorf("with chronyd running: %s (%s), want %s naming %s", st.Reason, st.Message, ReasonClockConflict, want)
	}
	if d.Snapshot().Status.Sample.ClockConflicts != want {
		t.Errorf("sample conflicts %q, want %q", d.Snapshot().Status.Sample.ClockConflicts, want)
	}
	t.Logf("with chronyd: %s", st.Message)
	stop()
	tsutil.PollTrue(t, 30*time.Second, "the slave to be synced again without chronyd", func() bool {
		st = d.Status()
		return st.Synced && st.Reason == ReasonSynchronized
	})
}
