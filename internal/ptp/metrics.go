package ptp

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is what the Daemon knows at one moment, for metrics and for the node state.
type Snapshot struct {
	// Interface is the PTP interface (a boundary clock's first port).
	Interface string
	// Ports are the interfaces of ptp4l's ports in its port order (one for an ordinary clock).
	Ports []string
	// Role is the configured role.
	Role Role
	// Status is the latest TimeSynced verdict and the sample behind it.
	Status Status
	// Restarts counts restarts per supervised process name ("ptp4l", "phc2sys").
	Restarts map[string]int
	// Running says, per supervised process name, whether it runs now.
	Running map[string]bool
}

// portNames are the snapshot's port interfaces (Interface alone when Ports is unset).
func (s Snapshot) portNames() []string {
	if len(s.Ports) > 0 {
		return s.Ports
	}
	return []string{s.Interface}
}

// PortStatuses pairs each port's interface with its state in the snapshot's sample.
func (s Snapshot) PortStatuses() []PortStatus {
	var out []PortStatus
	for i, name := range s.portNames() {
		ps := PortStatus{Interface: name}
		for _, p := range s.Status.Sample.Ports {
			if p.Number == i+1 {
				ps.State = p.State
			}
		}
		out = append(out, ps)
	}
	return out
}

// PortStatus is one port's interface and state.
type PortStatus struct {
	Interface string
	State     PortState
}

// SnapshotSource gives the current Snapshot; *Daemon is one.
type SnapshotSource interface {
	Snapshot() Snapshot
}

// Collector exports a SnapshotSource as Prometheus metrics, read at scrape time:
//
//	tickstack_ptp_offset_nanoseconds{interface}              offsetFromMaster (absent when not read)
//	tickstack_ptp_mean_path_delay_nanoseconds{interface}     meanPathDelay (absent when not read)
//	tickstack_ptp_system_offset_nanoseconds{interface}       system clock offset (absent when not read)
//	tickstack_ptp_clock_conflicts{interface}                 other daemons steering the system clock (slaves)
//	tickstack_ptp_port_state{interface,state}                1 for each port's current state (interface: the port), 0 for the others
//	tickstack_ptp_time_synced{interface}                     1 when TimeSynced is true
//	tickstack_ptp_process_restarts_total{interface,process}  restarts of ptp4l and phc2sys
//	tickstack_ptp_process_running{interface,process}         1 while ptp4l (phc2sys) runs
type Collector struct {
	src                            SnapshotSource
	offset, pathDelay, state, sync *prometheus.Desc
	sysOffset, conflicts           *prometheus.Desc
	restarts, running              *prometheus.Desc
}

// NewCollector returns a Collector for src; register it with the agent's registry.
func NewCollector(src SnapshotSource) *Collector {
	return &Collector{
		src: src,
		offset: prometheus.NewDesc("tickstack_ptp_offset_nanoseconds",
			"PTP offsetFromMaster of the node's clock in nanoseconds, as ptp4l reports it.", []string{"interface"}, nil),
		pathDelay: prometheus.NewDesc("tickstack_ptp_mean_path_delay_nanoseconds",
			"PTP meanPathDelay to the master in nanoseconds.", []string{"interface"}, nil),
		sysOffset: prometheus.NewDesc("tickstack_ptp_system_offset_nanoseconds",
			"Offset of the system clock (CLOCK_REALTIME) in nanoseconds: from the NIC's clock as phc2sys reports it, or from the master with software time stamping.", []string{"interface"}, nil),
		conflicts: prometheus.NewDesc("tickstack_ptp_clock_conflicts",
			"Other daemons (chronyd, ntpd, systemd-timesyncd, ptpd) found steering the system clock a slave's linuxptp steers.", []string{"interface"}, nil),
		state: prometheus.NewDesc("tickstack_ptp_port_state",
			"PTP port state: 1 for the current state, 0 for the others; all 0 when unreadable.", []string{"interface", "state"}, nil),
		sync: prometheus.NewDesc("tickstack_ptp_time_synced",
			"1 when the TimeSynced condition is true, else 0.", []string{"interface"}, nil),
		restarts: prometheus.NewDesc("tickstack_ptp_process_restarts_total",
			"Times a linuxptp process was restarted after exiting.", []string{"interface", "process"}, nil),
		running: prometheus.NewDesc("tickstack_ptp_process_running",
			"1 while a linuxptp process runs, 0 while its supervisor waits to restart it.", []string{"interface", "process"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.offset, c.pathDelay, c.sysOffset, c.conflicts, c.state, c.sync, c.restarts, c.running} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	st := s.Status
	if st.Sample.HasOffset {
		ch <- prometheus.MustNewConstMetric(c.offset, prometheus.GaugeValue, float64(st.Sample.OffsetNs), s.Interface)
		ch <- prometheus.MustNewConstMetric(c.pathDelay, prometheus.GaugeValue, float64(st.Sample.MeanPathDelayNs), s.Interface)
	}
	if st.Sample.HasSystemOffset {
		ch <- prometheus.MustNewConstMetric(c.sysOffset, prometheus.GaugeValue, float64(st.Sample.SystemOffsetNs), s.Interface)
	}
	if s.Role != RoleGrandmaster {
		n := 0
		if st.Sample.ClockConflicts != "" {
			n = len(strings.Split(st.Sample.ClockConflicts, ", "))
		}
		ch <- prometheus.MustNewConstMetric(c.conflicts, prometheus.GaugeValue, float64(n), s.Interface)
	}
	for i, port := range s.portNames() {
		// Port i+1's state: the sample's port of that number (a single-port sample without port
		// numbers gives the clock's state).
		state := PortStateUnknown
		if st.Sample.Err == nil {
			if len(st.Sample.Ports) == 0 && i == 0 {
				state = st.Sample.PortState
			}
			for _, p := range st.Sample.Ports {
				if p.Number == i+1 {
					state = p.State
				}
			}
		}
		for _, ps := range PortStates() {
			v := 0.0
			if state == ps {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, port, string(ps))
		}
	}
	synced := 0.0
	if st.Synced {
		synced = 1
	}
	ch <- prometheus.MustNewConstMetric(c.sync, prometheus.GaugeValue, synced, s.Interface)
	for _, name := range slices.Sorted(maps.Keys(s.Restarts)) {
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(s.Restarts[name]), s.Interface, name)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Running)) {
		v := 0.0
		if s.Running[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, v, s.Interface, name)
	}
}
