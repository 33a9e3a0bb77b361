package agent

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/ptp"
)

// The PTP part of the status is a pure function of the observation: TimeSynced and status.ptp
// follow the daemon, an invalid section is Degraded, and no section removes both.
func TestPTPStatus(t *testing.T) {
	read := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	synced := &ptp.Snapshot{
		Status:   ptp.Status{Synced: true, Reason: ptp.ReasonSynchronized, Sample: ptp.Sample{PortState: "SLAVE", OffsetNs: -42, HasOffset: true, MeanPathDelayNs: 900, SystemOffsetNs: 35, HasSystemOffset: true}},
		Restarts: map[string]int{"ptp4l": 2, "phc2sys": 1},
	}
	boundary := &ptp.Snapshot{Interface: "ens1f0", Ports: []string{"ens1f0", "ens2f0"}, Role: ptp.RoleBoundary,
		Status: ptp.Status{Synced: true, Reason: ptp.ReasonSynchronized, Sample: ptp.Sample{PortState: "SLAVE", OffsetNs: 12, HasOffset: true,
			Ports: []ptp.PortSample{{Number: 1, State: "SLAVE"}, {Number: 2, State: "MASTER"}}}}}
	lost := &ptp.Snapshot{Status: ptp.Status{Reason: ptp.ReasonStateUnavailable, Message: "pmc: no answer", Sample: ptp.Sample{Err: errors.New("no answer")}}}
	tests := []struct {
		name                      string
		obs                       observation
		wantSynced                metav1.ConditionStatus // "" means no TimeSynced condition
		wantReason                string
		wantPTP                   *tsv1.PTPStatus
		wantDegraded, degradedWhy string
	}{{
		name: "no ptp section: no condition, no status.ptp",
	}, {
		name:       "synced slave with a live offset",
		obs:        observation{ptpWanted: true, ptp: synced, ptpRead: read},
		wantSynced: metav1.ConditionTrue, wantReason: ptp.ReasonSynchronized,
		wantPTP: &tsv1.PTPStatus{PortState: "SLAVE", OffsetNs: ptr.To[int64](-42), MeanPathDelayNs: ptr.To[int64](900), SystemOffsetNs: ptr.To[int64](35), Restarts: 3, LastSample: &metav1.Time{Time: read}},
	}, {
		name:       "a boundary clock lists its ports by interface",
		obs:        observation{ptpWanted: true, ptp: boundary, ptpRead: read},
		wantSynced: metav1.ConditionTrue, wantReason: ptp.ReasonSynchronized,
		wantPTP: &tsv1.PTPStatus{PortState: "SLAVE", OffsetNs: ptr.To[int64](12), MeanPathDelayNs: ptr.To[int64](0), LastSample: &metav1.Time{Time: read},
			Ports: []tsv1.PTPPortStatus{{Interface: "ens1f0", PortState: "SLAVE"}, {Interface: "ens2f0", PortState: "MASTER"}}},
	}, {
		name:       "unreadable state keeps no offset",
		obs:        observation{ptpWanted: true, ptp: lost, ptpRead: read},
		wantSynced: metav1.ConditionFalse, wantReason: ptp.ReasonStateUnavailable,
		wantPTP: &tsv1.PTPStatus{},
	}, {
		name:       "invalid section is Degraded naming the field",
		obs:        observation{ptpWanted: true, ptpInvalid: &ptp.FieldError{Field: "ptp.ptp4lOptions[slaveOnly]", Problem: "is set by ptp.role", Fix: "remove it"}},
		wantSynced: metav1.ConditionFalse, wantReason: ReasonPTPInvalid,
		wantDegraded: ReasonPTPInvalid, degradedWhy: "ptp.ptp4lOptions[slaveOnly]: is set by ptp.role; remove it",
	}, {
		name:       "linuxptp missing",
		obs:        observation{ptpWanted: true, ptpErr: errors.New(`exec: "ptp4l": executable file not found in $PATH`)},
		wantSynced: metav1.ConditionFalse, wantReason: ReasonPTPFailed,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &tsv1.LatencyNodeStateStatus{Conditions: []metav1.Condition{{Type: tsv1.NodeTimeSynced, Status: metav1.ConditionTrue, Reason: "Old"}}}
			st.PTP = &tsv1.PTPStatus{PortState: "OLD"}
			tc.obs.generation = 1
			applyStatus(st, &tc.obs)
			c := meta.FindStatusCondition(st.Conditions, tsv1.NodeTimeSynced)
			switch {
			case tc.wantSynced == "" && c != nil:
				t.Errorf("TimeSynced = %+v, want none", c)
			case tc.wantSynced != "" && (c == nil || c.Status != tc.wantSynced || c.Reason != tc.wantReason):
				t.Errorf("TimeSynced = %+v, want %s/%s", c, tc.wantSynced, tc.wantReason)
			}
			if tc.wantPTP == nil && st.PTP != nil && tc.obs.ptp == nil {
				t.Errorf("status.ptp = %+v, want none", st.PTP)
			}
			if tc.wantPTP != nil && !equalPTP(st.PTP, tc.wantPTP) {
				t.Errorf("status.ptp = %+v, want %+v", st.PTP, tc.wantPTP)
			}
			if tc.wantDegraded != "" {
				d := meta.FindStatusCondition(st.Conditions, tsv1.NodeDegraded)
				if d == nil || d.Status != metav1.ConditionTrue || d.Reason != tc.wantDegraded || !strings.Contains(d.Message, tc.degradedWhy) {
					t.Errorf("Degraded = %+v, want True/%s with %q", d, tc.wantDegraded, tc.degradedWhy)
				}
			}
		})
	}
}

func equalPTP(a, b *tsv1.PTPStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y *int64) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.PortState == b.PortState && a.Restarts == b.Restarts && eq(a.OffsetNs, b.OffsetNs) &&
		eq(a.MeanPathDelayNs, b.MeanPathDelayNs) && eq(a.SystemOffsetNs, b.SystemOffsetNs) && a.LastSample.Equal(b.LastSample) &&
		reflect.DeepEqual(a.Ports, b.Ports)
}
