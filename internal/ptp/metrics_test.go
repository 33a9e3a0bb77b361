package ptp

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type staticSource Snapshot

func (s staticSource) Snapshot() Snapshot { return Snapshot(s) }

func TestCollector(t *testing.T) {
	states := func(current string) string {
		var b strings.Builder
		b.WriteString("# HELP tickstack_ptp_port_state PTP port state: 1 for the current state, 0 for the others; all 0 when unreadable.\n# TYPE tickstack_ptp_port_state gauge\n")
		for _, ps := range PortStates() {
			v := "0"
			if string(ps) == current {
				v = "1"
			}
			b.WriteString(`tickstack_ptp_port_state{interface="eth0",state="` + string(ps) + `"} ` + v + "\n")
		}
		return b.String()
	}
	const syncHelp = "# HELP tickstack_ptp_time_synced 1 when the TimeSynced condition is true, else 0.\n# TYPE tickstack_ptp_time_synced gauge\n"
	const restartsHelp = "# HELP tickstack_ptp_process_restarts_total Times a linuxptp process was restarted after exiting.\n# TYPE tickstack_ptp_process_restarts_total counter\n"
	const offsetHelp = "# HELP tickstack_ptp_offset_nanoseconds PTP offsetFromMaster of the node's clock in nanoseconds, as ptp4l reports it.\n# TYPE tickstack_ptp_offset_nanoseconds gauge\n"
	const delayHelp = "# HELP tickstack_ptp_mean_path_delay_nanoseconds PTP meanPathDelay to the master in nanoseconds.\n# TYPE tickstack_ptp_mean_path_delay_nanoseconds gauge\n"
	const conflictsHelp = "# HELP tickstack_ptp_clock_conflicts Other daemons (chronyd, ntpd, systemd-timesyncd, ptpd) found steering the system clock a slave's linuxptp steers.\n# TYPE tickstack_ptp_clock_conflicts gauge\n"
	const sysHelp = "# HELP tickstack_ptp_system_offset_nanoseconds Offset of the system clock (CLOCK_REALTIME) in nanoseconds: from the NIC's clock as phc2sys reports it, or from the master with software time stamping.\n# TYPE tickstack_ptp_system_offset_nanoseconds gauge\n"

	tests := []struct {
		name string
		snap Snapshot
		want string
	}{
		{
			name: "synced slave",
			snap: Snapshot{Interface: "eth0", Role: RoleSlave, Restarts: map[string]int{"ptp4l": 2, "phc2sys": 0}, Running: map[string]bool{"ptp4l": true, "phc2sys": false},
				Status: Status{Synced: true, Sample: Sample{PortState: PortStateSlave, OffsetNs: -42, HasOffset: true, MeanPathDelayNs: 2100, SystemOffsetNs: 17, HasSystemOffset: true}}},
			want: offsetHelp + `tickstack_ptp_offset_nanoseconds{interface="eth0"} -42
` + delayHelp + `tickstack_ptp_mean_path_delay_nanoseconds{interface="eth0"} 2100
` + sysHelp + `tickstack_ptp_system_offset_nanoseconds{interface="eth0"} 17
` + conflictsHelp + `tickstack_ptp_clock_conflicts{interface="eth0"} 0
` + states("SLAVE") + syncHelp + `tickstack_ptp_time_synced{interface="eth0"} 1
` + restartsHelp + `tickstack_ptp_process_restarts_total{interface="eth0",process="phc2sys"} 0
tickstack_ptp_process_restarts_total{interface="eth0",process="ptp4l"} 2
# HELP tickstack_ptp_process_running 1 while a linuxptp process runs, 0 while its supervisor waits to restart it.
# TYPE tickstack_ptp_process_running gauge
tickstack_ptp_process_running{interface="eth0",process="phc2sys"} 0
tickstack_ptp_process_running{interface="eth0",process="ptp4l"} 1
`,
		},
		{
			name: "unreadable: no offset, no state",
			snap: Snapshot{Interface: "eth0", Restarts: map[string]int{"ptp4l": 5},
				Status: Status{Sample: Sample{Err: errors.New("down")}}},
			want: conflictsHelp + `tickstack_ptp_clock_conflicts{interface="eth0"} 0
` + states("") + syncHelp + `tickstack_ptp_time_synced{interface="eth0"} 0
` + restartsHelp + `tickstack_ptp_process_restarts_total{interface="eth0",process="ptp4l"} 5
`,
		},
		{
			name: "slave beside two clock daemons",
			snap: Snapshot{Interface: "eth0", Role: RoleSlave, Restarts: map[string]int{"ptp4l": 0},
				Status: Status{Sample: Sample{PortState: PortStateSlave, ClockConflicts: "chronyd (pid 812), ntpd (pid 901)"}}},
			want: conflictsHelp + `tickstack_ptp_clock_conflicts{interface="eth0"} 2
` + states("SLAVE") + syncHelp + `tickstack_ptp_time_synced{interface="eth0"} 0
` + restartsHelp + `tickstack_ptp_process_restarts_total{interface="eth0",process="ptp4l"} 0
`,
		},
		{
			name: "grandmaster: no conflict gauge (its system clock may follow NTP)",
			snap: Snapshot{Interface: "eth0", Role: RoleGrandmaster, Restarts: map[string]int{"ptp4l": 0},
				Status: Status{Synced: true, Sample: Sample{PortState: PortStateMaster}}},
			want: states("MASTER") + syncHelp + `tickstack_ptp_time_synced{interface="eth0"} 1
` + restartsHelp + `tickstack_ptp_process_restarts_total{interface="eth0",process="ptp4l"} 0
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCollector(staticSource(tt.snap))
			if err := testutil.CollectAndCompare(c, strings.NewReader(tt.want)); err != nil {
				t.Error(err)
			}
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(c); err != nil {
				t.Fatalf("registering the collector: %v", err)
			}
			if _, err := reg.Gather(); err != nil {
				t.Errorf("pedantic gather: %v", err)
			}
		})
	}
}
