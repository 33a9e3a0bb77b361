package ptp

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestPTPBoundaryClockOverVeth runs a grandmaster, a boundary clock and a slave, each a Daemon in
// a network namespace of its own, across two veth pairs (198.18.80.0/24 and 198.18.84.0/24):
// software time stamping, UDPv4. The boundary clock's port towards the grandmaster is SLAVE and
// the one towards the slave MASTER, each reported by its interface in the sample and the metrics;
// the slave, two steps from the grandmaster, is synced through it. Stopping the boundary clock
// loses the slave its sync after the hold time.
func TestPTPBoundaryClockOverVeth(t *testing.T) {
	lab := newPTPLab(t, "bc")
	// The second pair: one end moved into the boundary clock's namespace (lab.nsSlave).
	down := tsutil.VethNamespaces(t, fmt.Sprintf("tsbc%d", os.Getpid()), "198.18.84")
	down.Run(t, "-n", down.NSA, "link", "set", down.IfA, "netns", lab.nsSlave)
	down.Run(t, "-n", lab.nsSlave, "addr", "add", down.AddrA+"/24", "dev", down.IfA)
	down.Run(t, "-n", lab.nsSlave, "link", "set", down.IfA, "up")

	log := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{})
	const hold = 2 * time.Second
	follower := func() map[string]string {
		// The followers steer the machine-wide system clock: no steps, at most 100 ppb, and PI
		// constants that lock at once (see testMasterAndSlave).
		o := fastPTP()
		o["first_step_threshold"], o["max_frequency"] = "0.0", "100"
		o["pi_proportional_const"], o["pi_integral_const"] = "0.1", "0.05"
		return o
	}
	gmOpts := fastPTP()
	gmOpts["priority1"] = "10" // the best master: the boundary clock (128) follows it
	gm := Config{Role: RoleGrandmaster, Interface: lab.ifMaster, Domain: 24, Transport: TransportUDPv4,
		Timestamping: TimestampingSoftware, MaxOffsetNs: 1, HoldTime: hold, Ptp4lOptions: gmOpts}
	bc := Config{Role: RoleBoundary, Interfaces: []string{lab.ifSlave, down.IfA}, Domain: 24, Transport: TransportUDPv4,
		Timestamping: TimestampingSoftware, MaxOffsetNs: 1_000_000, HoldTime: hold, Ptp4lOptions: follower()}
	sl := Config{Role: RoleSlave, Interface: down.IfB, Domain: 24, Transport: TransportUDPv4,
		Timestamping: TimestampingSoftware, MaxOffsetNs: 1_000_000, HoldTime: hold, Ptp4lOptions: follower()}

	lab.start(t, "gm", gm, lab.nsMaster, log, nil)
	bcRun := lab.start(t, "bc", bc, lab.nsSlave, log, nil)
	slRun := lab.start(t, "slave", sl, down.NSB, log, nil)

	want := []PortStatus{{lab.ifSlave, PortStateSlave}, {down.IfA, PortStateMaster}}
	tsutil.PollTrue(t, 60*time.Second, "the boundary clock synced, SLAVE towards the grandmaster and MASTER towards the slave", func() bool {
		snap := bcRun.d.Snapshot()
		return snap.Status.Synced && fmt.Sprint(snap.PortStatuses()) == fmt.Sprint(want)
	})
	var st Status
	tsutil.PollTrue(t, 60*time.Second, "the slave synced through the boundary clock, two steps from the grandmaster", func() bool {
		st = slRun.d.Status()
		return st.Synced && st.Reason == ReasonSynchronized && st.Sample.StepsRemoved == 2
	})
	t.Logf("boundary clock: %s; slave: %s, %d steps removed", bcRun.d.Status().Message, st.Message, st.Sample.StepsRemoved)
	if got := bcRun.d.Status().Sample.StepsRemoved; got != 1 {
		t.Errorf("the boundary clock is %d steps from the grandmaster, want 1", got)
	}
	if err := testutil.CollectAndCompare(NewCollector(bcRun.d), strings.NewReader(fmt.Sprintf(`
# HELP tickstack_ptp_port_state PTP port state: 1 for the current state, 0 for the others; all 0 when unreadable.
# TYPE tickstack_ptp_port_state gauge
%s%s`, stateLines(lab.ifSlave, PortStateSlave), stateLines(down.IfA, PortStateMaster))), "tickstack_ptp_port_state"); err != nil {
		t.Errorf("boundary clock port metrics: %v", err)
	}

	// Without the boundary clock the slave hears no master: it loses sync after the hold time.
	bcRun.stop()
	tsutil.PollTrue(t, 30*time.Second, "the slave to lose TimeSynced without the boundary clock", func() bool { return !slRun.d.Status().Synced })
	if st := slRun.d.Status(); st.Reason != ReasonPortNotSlave {
		t.Errorf("slave without the boundary clock: %s (%s), want %s", st.Reason, st.Message, ReasonPortNotSlave)
	}
}

// stateLines are the port_state series of one port in state s.
func stateLines(port string, s PortState) string {
	var b strings.Builder
	for _, ps := range PortStates() {
		v := 0
		if ps == s {
			v = 1
		}
		fmt.Fprintf(&b, "tickstack_ptp_port_state{interface=%q,state=%q} %d\n", port, ps, v)
	}
	return b.String()
}
