package ptp

import (
	"strings"
	"testing"
	"time"
)

// Lines as linuxptp 3.1's phc2sys prints them with -m (update_clock's and the summary's formats).
func TestSystemClockParser(t *testing.T) {
	now := time.Unix(1000, 0)
	p := &SystemClockParser{MaxAge: 5 * time.Second, Now: func() time.Time { return now }}
	read := func() string {
		v, ok := p.Read()
		if !ok {
			return "none"
		}
		return time.Duration(v).String()
	}
	steps := []struct {
		line string
		want string
	}{
		{"phc2sys[1234.567]: reconfiguring after port state change", "none"},
		{"phc2sys[1234.568]: selecting CLOCK_REALTIME for synchronization", "none"},
		{"phc2sys[1234.569]: ens1f1 phc offset        42 s2 freq   +1000 delay    500", "none"}, // another NIC's clock
		{"ptp4l[1234.570]: master offset        -12 s2 freq   +1234 path delay      5678", "none"},
		{"phc2sys[1235.567]: CLOCK_REALTIME phc offset       -12 s0 freq   +3456 delay    789", "-12ns"},
		{"phc2sys[1236.567]: CLOCK_REALTIME phc offset       250 s2 freq   +3400", "250ns"},
		{"phc2sys[1237.567]: CLOCK_REALTIME rms   12 max   34 freq  +3456 +/-   8 delay   789 +/-   1", "34ns"},
		{"phc2sys[1238.567]: CLOCK_REALTIME rms   12 max  1500 freq  +3456 +/-   8", "1.5µs"},
	}
	for i, s := range steps {
		p.Line(s.line)
		if got := read(); got != s.want {
			t.Fatalf("step %d (%q): Read() = %s, want %s", i, s.line, got, s.want)
		}
	}
	now = now.Add(5 * time.Second)
	if got := read(); got != "1.5µs" {
		t.Errorf("at MaxAge: %s, want the last offset still", got)
	}
	now = now.Add(time.Millisecond)
	if got := read(); got != "none" {
		t.Errorf("past MaxAge (phc2sys silent): %s, want none", got)
	}
	p.Line("phc2sys[1240.000]: CLOCK_REALTIME phc offset 7 s2 freq +1")
	p.Reset()
	if got := read(); got != "none" {
		t.Errorf("after Reset (phc2sys restarted): %s, want none", got)
	}
}

// With hardware time stamping a slave is in sync only while the system clock follows the NIC's
// clock too; with software time stamping the system clock is ptp4l's and maxOffsetNs judges it.
func TestMonitorSystemClock(t *testing.T) {
	now := time.Unix(5000, 0)
	sample := func(off int64, sys *int64) Sample {
		s := Sample{PortState: PortStateSlave, OffsetNs: off, HasOffset: true}
		if sys != nil {
			s.SystemOffsetNs, s.HasSystemOffset = *sys, true
		}
		return s
	}
	ns := func(v int64) *int64 { return &v }
	hw := NewMonitor(Config{Role: RoleSlave, Timestamping: TimestampingHardware, MaxOffsetNs: 100, MaxSystemOffsetNs: 500, HoldTime: time.Second}, func() time.Time { return now })
	for i, s := range []struct {
		after  time.Duration
		sample Sample
		synced bool
		reason string
		msg    string
	}{
		{0, sample(10, ns(-300)), true, ReasonSynchronized, "system clock offset -300 ns within ±500 ns"},
		{time.Second, sample(10, ns(900)), true, ReasonWithinHoldTime, "system clock offset 900 ns is beyond ±500 ns (PTP offset 10 ns)"},
		{1100 * time.Millisecond, sample(10, ns(-900)), false, ReasonSystemOffsetAboveThreshold, "system clock offset -900 ns"},
		{time.Second, sample(10, ns(20)), true, ReasonSynchronized, ""},
		{time.Second, sample(10, nil), true, ReasonWithinHoldTime, "phc2sys reports no system clock offset"},
		{1100 * time.Millisecond, sample(10, nil), false, ReasonNoSystemOffset, "not running, hung"},
		{time.Second, sample(200, ns(20)), false, ReasonOffsetAboveThreshold, "offset 200 ns"},
	} {
		now = now.Add(s.after)
		got := hw.Observe(s.sample)
		if got.Synced != s.synced || got.Reason != s.reason || !strings.Contains(got.Message, s.msg) {
			t.Fatalf("hardware step %d: synced %v reason %s (%s), want synced %v reason %s with %q", i, got.Synced, got.Reason, got.Message, s.synced, s.reason, s.msg)
		}
	}

	sw := NewMonitor(Config{Role: RoleSlave, Timestamping: TimestampingSoftware, MaxOffsetNs: 5000, MaxSystemOffsetNs: 500}, func() time.Time { return now })
	if got := sw.Observe(sample(3000, ns(3000))); !got.Synced {
		t.Errorf("software: %+v, want synced: maxOffsetNs judges the system clock ptp4l steers", got)
	}
	gm := NewMonitor(Config{Role: RoleGrandmaster, Timestamping: TimestampingHardware, MaxOffsetNs: 100, MaxSystemOffsetNs: 500}, func() time.Time { return now })
	if got := gm.Observe(Sample{PortState: PortStateMaster}); !got.Synced {
		t.Errorf("grandmaster: %+v, want synced: its system clock is the source", got)
	}
}
