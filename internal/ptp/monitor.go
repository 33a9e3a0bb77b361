package ptp

import (
	"fmt"
	"time"
)

// Reasons of the TimeSynced condition. The agent copies them into the node state's condition.
const (
	// ReasonSynchronized (True): a slave's port is SLAVE with |offset| <= maxOffsetNs, or a
	// grandmaster's port is MASTER.
	ReasonSynchronized = "Synchronized"
	// ReasonWithinHoldTime (True): the node was synchronized and is out of bounds for less than the
	// hold time; the message says what is wrong and for how long.
	ReasonWithinHoldTime = "WithinHoldTime"
	// ReasonPortNotSlave (False): a slave's port is not SLAVE (LISTENING: no master heard;
	// UNCALIBRATED: still locking; FAULTY: interface trouble).
	ReasonPortNotSlave = "PortNotSlave"
	// ReasonPortNotMaster (False): a grandmaster's port is not MASTER.
	ReasonPortNotMaster = "PortNotMaster"
	// ReasonOffsetAboveThreshold (False): |offsetFromMaster| > maxOffsetNs.
	ReasonOffsetAboveThreshold = "OffsetAboveThreshold"
	// ReasonNoOffset (False): the port is SLAVE but no offset could be read.
	ReasonNoOffset = "NoOffset"
	// ReasonSystemOffsetAboveThreshold (False): the system clock's |offset| > maxSystemOffsetNs.
	ReasonSystemOffsetAboveThreshold = "SystemOffsetAboveThreshold"
	// ReasonClockConflict (False): another daemon (chronyd, ntpd, systemd-timesyncd, ptpd)
	// steers the system clock a slave's linuxptp steers.
	ReasonClockConflict = "ClockConflict"
	// ReasonNoSystemOffset (False): the port is SLAVE but phc2sys reports no offset of the
	// system clock (not running, hung, or not following the NIC's clock).
	ReasonNoSystemOffset = "NoSystemOffset"
	// ReasonStateUnavailable (False): ptp4l's state could not be read (not running, not answering).
	ReasonStateUnavailable = "StateUnavailable"
	// ReasonNoSample (False): nothing has been read yet.
	ReasonNoSample = "NoSample"
)

// Status is the TimeSynced verdict plus the last sample it was drawn from.
type Status struct {
	// Synced is the TimeSynced condition's status.
	Synced bool
	// Reason is one of the Reason* constants.
	Reason string
	// Message explains the reason for people.
	Message string
	// LastTransition is when Synced last changed (zero before any sample).
	LastTransition time.Time
	// Sample is the sample the verdict was drawn from.
	Sample Sample
}

// Monitor decides TimeSynced from a stream of samples. A node that has never been in sync is not
// synced; once in sync it stays synced until its samples are out of bounds (port not SLAVE, offset
// above the threshold, state unreadable) without interruption for longer than the hold time, and it
// is synced again at the first good sample. Time comes only from the injected clock, so the verdict
// is a pure function of the samples and their times. Not safe for concurrent use.
type Monitor struct {
	role        Role
	maxOffsetNs int64
	maxSysNs    int64
	holdTime    time.Duration
	now         func() time.Time

	everSynced bool
	badSince   time.Time
	status     Status
}

// NewMonitor returns a Monitor for c's role, MaxOffsetNs, MaxSystemOffsetNs (hardware time
// stamping only) and HoldTime, reading time from now.
func NewMonitor(c Config, now func() time.Time) *Monitor {
	// With software time stamping the system clock is the one ptp4l steers: maxOffsetNs judges it.
	maxSys := c.MaxSystemOffsetNs
	if !c.RunsPhc2sys() {
		maxSys = 0
	}
	return &Monitor{role: c.Role, maxOffsetNs: c.MaxOffsetNs, maxSysNs: maxSys, holdTime: c.HoldTime, now: now,
		status: Status{Reason: ReasonNoSample, Message: "no PTP state read yet"}}
}

// Status returns the verdict of the last Observe.
func (m *Monitor) Status() Status { return m.status }

// Observe takes a sample read now and returns the new verdict.
func (m *Monitor) Observe(s Sample) Status {
	now := m.now()
	good, reason, problem := m.judge(s)
	next := Status{Sample: s, LastTransition: m.status.LastTransition}
	switch {
	case good:
		m.everSynced, m.badSince = true, time.Time{}
		next.Synced, next.Reason, next.Message = true, ReasonSynchronized, problem
	default:
		if m.badSince.IsZero() {
			m.badSince = now
		}
		bad := now.Sub(m.badSince)
		switch {
		case !m.everSynced:
			next.Reason, next.Message = reason, problem+"; not synchronized since the agent started PTP"
		case m.holdTime > 0 && bad <= m.holdTime:
			next.Synced, next.Reason = true, ReasonWithinHoldTime
			next.Message = fmt.Sprintf("%s for %s; TimeSynced turns false after the %s hold time", problem, bad.Round(time.Millisecond), m.holdTime)
		default:
			next.Reason = reason
			next.Message = fmt.Sprintf("%s for %s (hold time %s)", problem, bad.Round(time.Millisecond), m.holdTime)
		}
	}
	if next.Synced != m.status.Synced || m.status.LastTransition.IsZero() {
		next.LastTransition = now
	}
	m.status = next
	return next
}

// judge says whether one sample is in bounds; if not, with which reason and why (else a summary).
func (m *Monitor) judge(s Sample) (good bool, reason, message string) {
	if s.Err != nil {
		return false, ReasonStateUnavailable, "cannot read ptp4l state: " + s.Err.Error()
	}
	if m.role == RoleGrandmaster {
		if s.PortState == PortStateMaster || s.PortState == PortStateGrandMaster {
			return true, "", fmt.Sprintf("grandmaster port is %s", s.PortState)
		}
		return false, ReasonPortNotMaster, fmt.Sprintf("grandmaster port is %s, not MASTER", stateText(s.PortState))
	}
	if s.ClockConflicts != "" {
		return false, ReasonClockConflict, fmt.Sprintf("%s also steers the system clock linuxptp steers; stop and disable it on the node (for example systemctl disable --now chronyd)", s.ClockConflicts)
	}
	if s.PortState != PortStateSlave {
		return false, ReasonPortNotSlave, fmt.Sprintf("port is %s, not SLAVE", stateText(s.PortState))
	}
	if !s.HasOffset {
		return false, ReasonNoOffset, "port is SLAVE but no offsetFromMaster was read"
	}
	if abs(s.OffsetNs) > m.maxOffsetNs {
		return false, ReasonOffsetAboveThreshold, fmt.Sprintf("offset %d ns is beyond ±%d ns", s.OffsetNs, m.maxOffsetNs)
	}
	if m.maxSysNs > 0 {
		if !s.HasSystemOffset {
			return false, ReasonNoSystemOffset, fmt.Sprintf("port SLAVE, offset %d ns, but phc2sys reports no system clock offset (not running, hung, or not following the NIC's clock)", s.OffsetNs)
		}
		if abs(s.SystemOffsetNs) > m.maxSysNs {
			return false, ReasonSystemOffsetAboveThreshold, fmt.Sprintf("system clock offset %d ns is beyond ±%d ns (PTP offset %d ns)", s.SystemOffsetNs, m.maxSysNs, s.OffsetNs)
		}
		return true, "", fmt.Sprintf("port SLAVE, offset %d ns within ±%d ns, system clock offset %d ns within ±%d ns", s.OffsetNs, m.maxOffsetNs, s.SystemOffsetNs, m.maxSysNs)
	}
	return true, "", fmt.Sprintf("port SLAVE, offset %d ns within ±%d ns", s.OffsetNs, m.maxOffsetNs)
}

func stateText(s PortState) string {
	if s == PortStateUnknown {
		return "unknown"
	}
	return string(s)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
