package agent_test

import (
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/ptp"
	tsutil "github.com/tickstack/tickstack/internal/testutil"
)

// TestAgentPTPBoundaryOverVeth runs three agents against envtest: a grandmaster, a boundary clock
// and a slave, each in a network namespace of its own, across two veth pairs (198.18.85.0/24 and
// 198.18.86.0/24), software time stamping. The boundary clock's node state lists its two ports,
// SLAVE towards the grandmaster and MASTER towards the slave; the boundary clock's and the
// slave's node states show TimeSynced True with the system clock's offset, and so do their agents'
// metrics.
func TestAgentPTPBoundaryOverVeth(t *testing.T) {
	tsutil.RequireRoot(t)
	pid := os.Getpid()
	up := tsutil.VethNamespaces(t, fmt.Sprintf("tsbu%d", pid), "198.18.85")
	down := tsutil.VethNamespaces(t, fmt.Sprintf("tsbd%d", pid), "198.18.86")
	// The boundary clock's namespace holds both pairs' inner ends.
	down.Run(t, "-n", down.NSA, "link", "set", down.IfA, "netns", up.NSB)
	down.Run(t, "-n", up.NSB, "addr", "add", down.AddrA+"/24", "dev", down.IfA)
	down.Run(t, "-n", up.NSB, "link", "set", down.IfA, "up")
	tsutil.KeepSystemClockFrequency(t)

	const hold = 2 * time.Second
	opts := func(extra map[string]string) map[string]string {
		o := map[string]string{"logAnnounceInterval": "-2", "announceReceiptTimeout": "3", "logSyncInterval": "-3", "logMinDelayReqInterval": "-3"}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	// Followers steer the machine-wide clock: no steps, at most 100 ppb, PI constants that lock
	// at once; the grandmaster is the best master (priority1 10 against the boundary clock's 128).
	follow := opts(map[string]string{"first_step_threshold": "0.0", "max_frequency": "100", "pi_proportional_const": "0.1", "pi_integral_const": "0.05"})
	tuning := func(role tsv1.PTPRole, ifaces []string, o map[string]string) *tsv1.NodeTuning {
		p := &tsv1.PTPTuning{Role: role, Interface: ifaces[0], Domain: 24, Transport: tsv1.PTPTransportUDPv4,
			Timestamping: tsv1.PTPTimestampingSoftware, Ptp4lOptions: o, MaxOffsetNs: 1_000_000, HoldTime: metav1.Duration{Duration: hold}}
		if len(ifaces) > 1 {
			p.Interfaces = ifaces
		}
		return &tsv1.NodeTuning{PTP: p}
	}
	prefix := fmt.Sprintf("tsbc%d", pid)
	gmNode, bcNode, slNode := prefix+"-gm", prefix+"-bc", prefix+"-sl"
	bcReg, slReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	startPTPAgent(t, gmNode, up.NSA, up.IP, tuning(tsv1.PTPRoleGrandmaster, []string{up.IfA}, opts(map[string]string{"priority1": "10"})), nil)
	startPTPAgent(t, bcNode, up.NSB, up.IP, tuning(tsv1.PTPRoleBoundary, []string{up.IfB, down.IfA}, follow), bcReg)
	startPTPAgent(t, slNode, down.NSB, up.IP, tuning(tsv1.PTPRoleSlave, []string{down.IfB}, follow), slReg)

	wantPorts := []tsv1.PTPPortStatus{{Interface: up.IfB, PortState: "SLAVE"}, {Interface: down.IfA, PortState: "MASTER"}}
	for _, n := range []string{bcNode, slNode} {
		tsutil.Poll(t, 90*time.Second, n+"'s TimeSynced=True with the system clock's offset", func() error {
			l := getLNS(t, n)
			if err := wantCondition(l, tsv1.NodeTimeSynced, metav1.ConditionTrue, ptp.ReasonSynchronized); err != nil {
				return err
			}
			p := l.Status.PTP
			if p == nil || p.PortState != "SLAVE" || p.OffsetNs == nil || p.SystemOffsetNs == nil {
				return fmt.Errorf("status.ptp = %+v, want SLAVE with an offset and a system clock offset", p)
			}
			if n == bcNode && !reflect.DeepEqual(p.Ports, wantPorts) {
				return fmt.Errorf("status.ptp.ports = %+v, want %+v", p.Ports, wantPorts)
			}
			return nil
		})
	}
	bc, sl := getLNS(t, bcNode).Status.PTP, getLNS(t, slNode).Status.PTP
	t.Logf("boundary clock: ports %+v, offset %d ns, system clock %d ns; slave: offset %d ns, system clock %d ns",
		bc.Ports, *bc.OffsetNs, *bc.SystemOffsetNs, *sl.OffsetNs, *sl.SystemOffsetNs)

	// The agents' metrics say the same.
	gauge := func(reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if hasLabels(m, labels) {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
	tsutil.Poll(t, 10*time.Second, "the metrics of the boundary clock and the slave", func() error {
		for _, c := range []struct {
			reg    *prometheus.Registry
			name   string
			labels map[string]string
			want   float64 // 0: any value
		}{
			{bcReg, "tickstack_ptp_system_offset_nanoseconds", map[string]string{"interface": up.IfB}, 0},
			{bcReg, "tickstack_ptp_port_state", map[string]string{"interface": up.IfB, "state": "SLAVE"}, 1},
			{bcReg, "tickstack_ptp_port_state", map[string]string{"interface": down.IfA, "state": "MASTER"}, 1},
			{slReg, "tickstack_ptp_system_offset_nanoseconds", map[string]string{"interface": down.IfB}, 0},
			{slReg, "tickstack_ptp_time_synced", map[string]string{"interface": down.IfB}, 1},
		} {
			v, ok := gauge(c.reg, c.name, c.labels)
			if !ok || (c.want != 0 && v != c.want) {
				return fmt.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
			}
		}
		return nil
	})
}

// hasLabels reports whether m carries every label of want.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
