package ptp

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMonitor(t *testing.T) {
	slave := func(off int64) Sample { return Sample{PortState: PortStateSlave, OffsetNs: off, HasOffset: true} }
	state := func(s PortState) Sample { return Sample{PortState: s} }
	down := Sample{Err: errors.New("no response from ptp4l")}

	type step struct {
		after      time.Duration // clock advance before the sample
		sample     Sample
		synced     bool
		reason     string
		msg        string // substring of the message
		transition bool   // LastTransition moves to this step's time
	}
	tests := []struct {
		name  string
		role  Role
		hold  time.Duration
		steps []step
	}{
		{name: "never synced is false without waiting for the hold time", hold: time.Hour, steps: []step{
			{sample: state(PortStateListening), reason: ReasonPortNotSlave, msg: "port is LISTENING, not SLAVE; not synchronized since", transition: true},
			{after: time.Second, sample: state(PortStateUncalibrated), reason: ReasonPortNotSlave, msg: "UNCALIBRATED"},
			{after: time.Second, sample: slave(40), synced: true, reason: ReasonSynchronized, msg: "offset 40 ns within ±100 ns", transition: true},
		}},
		{name: "master lost: true within hold, false after, true on recovery", hold: 2 * time.Second, steps: []step{
			{sample: slave(10), synced: true, reason: ReasonSynchronized, transition: true},
			{after: time.Second, sample: state(PortStateListening), synced: true, reason: ReasonWithinHoldTime, msg: "port is LISTENING, not SLAVE for 0s; TimeSynced turns false after the 2s hold time"},
			{after: 2 * time.Second, sample: state(PortStateListening), synced: true, reason: ReasonWithinHoldTime, msg: "for 2s"},
			{after: time.Millisecond, sample: state(PortStateListening), reason: ReasonPortNotSlave, msg: "port is LISTENING, not SLAVE for 2.001s (hold time 2s)", transition: true},
			{after: time.Second, sample: state(PortStateUncalibrated), reason: ReasonPortNotSlave},
			{after: time.Second, sample: slave(-20), synced: true, reason: ReasonSynchronized, msg: "offset -20 ns", transition: true},
		}},
		{name: "offset excursions shorter than the hold time never flip it", hold: 2 * time.Second, steps: []step{
			{sample: slave(0), synced: true, reason: ReasonSynchronized, transition: true},
			{after: time.Second, sample: slave(500), synced: true, reason: ReasonWithinHoldTime, msg: "offset 500 ns is beyond ±100 ns"},
			{after: 1500 * time.Millisecond, sample: slave(-100), synced: true, reason: ReasonSynchronized},
			{after: time.Second, sample: slave(-101), synced: true, reason: ReasonWithinHoldTime},
			{after: 1500 * time.Millisecond, sample: slave(99), synced: true, reason: ReasonSynchronized},
		}},
		{name: "offset above threshold for longer than the hold time", hold: time.Second, steps: []step{
			{sample: slave(5), synced: true, reason: ReasonSynchronized, transition: true},
			{after: time.Second, sample: slave(-5000), synced: true, reason: ReasonWithinHoldTime},
			{after: 1100 * time.Millisecond, sample: slave(7000), reason: ReasonOffsetAboveThreshold, msg: "offset 7000 ns is beyond ±100 ns for 1.1s", transition: true},
		}},
		{name: "bad reasons mix: the clock runs from the first bad sample", hold: time.Second, steps: []step{
			{sample: slave(5), synced: true, reason: ReasonSynchronized, transition: true},
			{after: time.Second, sample: slave(900), synced: true, reason: ReasonWithinHoldTime},
			{after: 600 * time.Millisecond, sample: down, synced: true, reason: ReasonWithinHoldTime, msg: "cannot read ptp4l state: no response from ptp4l"},
			{after: 600 * time.Millisecond, sample: state(PortStateFaulty), reason: ReasonPortNotSlave, msg: "FAULTY", transition: true},
		}},
		{name: "zero hold time reacts at once", hold: 0, steps: []step{
			{sample: slave(5), synced: true, reason: ReasonSynchronized, transition: true},
			{after: time.Millisecond, sample: down, reason: ReasonStateUnavailable, transition: true},
		}},
		{name: "slave without an offset", hold: 0, steps: []step{
			{sample: state(PortStateSlave), reason: ReasonNoOffset, transition: true},
		}},
		{name: "grandmaster is synced while MASTER", role: RoleGrandmaster, hold: time.Second, steps: []step{
			{sample: state(PortStateListening), reason: ReasonPortNotMaster, msg: "grandmaster port is LISTENING, not MASTER", transition: true},
			{after: time.Second, sample: state(PortStateMaster), synced: true, reason: ReasonSynchronized, msg: "grandmaster port is MASTER", transition: true},
			{after: time.Second, sample: state(PortStateFaulty), synced: true, reason: ReasonWithinHoldTime},
			{after: 2 * time.Second, sample: state(PortStateFaulty), reason: ReasonPortNotMaster, transition: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(5000, 0)
			role := tt.role
			if role == "" {
				role = RoleSlave
			}
			m := NewMonitor(Config{Role: role, MaxOffsetNs: 100, HoldTime: tt.hold}, func() time.Time { return now })
			if st := m.Status(); st.Synced || st.Reason != ReasonNoSample {
				t.Fatalf("initial Status() = %+v, want not synced with %s", st, ReasonNoSample)
			}
			prev := time.Time{}
			for i, s := range tt.steps {
				now = now.Add(s.after)
				got := m.Observe(s.sample)
				if got.Synced != s.synced || got.Reason != s.reason {
					t.Fatalf("step %d: Observe() = synced %v reason %s (%s), want synced %v reason %s", i, got.Synced, got.Reason, got.Message, s.synced, s.reason)
				}
				if !strings.Contains(got.Message, s.msg) {
					t.Errorf("step %d: message %q lacks %q", i, got.Message, s.msg)
				}
				if s.transition && !got.LastTransition.Equal(now) {
					t.Errorf("step %d: LastTransition = %v, want now (%v)", i, got.LastTransition, now)
				}
				if !s.transition && !got.LastTransition.Equal(prev) {
					t.Errorf("step %d: LastTransition moved to %v without a change of Synced", i, got.LastTransition)
				}
				if !reflect.DeepEqual(got.Sample, s.sample) {
					t.Errorf("step %d: Status.Sample = %+v, want the observed %+v", i, got.Sample, s.sample)
				}
				if !reflect.DeepEqual(m.Status(), got) {
					t.Errorf("step %d: Status() = %+v differs from Observe()'s %+v", i, m.Status(), got)
				}
				prev = got.LastTransition
			}
		})
	}
}
