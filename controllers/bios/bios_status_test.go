package bios

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
)

func TestWantedBIOS(t *testing.T) {
	got, err := bmc.WantedAttributes(&tsv1.BIOSSpec{Preset: tsv1.BIOSPresetAuto, Attributes: []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: "Disabled"}}}, bmc.VendorSushy)
	if err != nil || got["ProcTurboMode"] != "Disabled" || len(got) != 1 {
		t.Errorf("explicit attributes must override the preset: %v %v", got, err)
	}
	got, err = bmc.WantedAttributes(&tsv1.BIOSSpec{Preset: "Dell"}, "")
	if err != nil || got["ProcCStates"] != "Disabled" || got["SysProfile"] != "Custom" {
		t.Errorf("Dell preset: %v %v", got, err)
	}
	if _, err := bmc.WantedAttributes(&tsv1.BIOSSpec{Preset: tsv1.BIOSPresetAuto}, ""); err == nil || !strings.Contains(err.Error(), "Auto") {
		t.Errorf("Auto with an unknown vendor: %v", err)
	}
}

func TestVerifiedAttributeStatusesAndCondition(t *testing.T) {
	v := &bmc.Verification{Results: []bmc.AttributeResult{
		{Attribute: "A", Desired: "x", Observed: "x", State: bmc.StateApplied},
		{Attribute: "B", Desired: "x", Observed: "y", State: bmc.StateMismatch},
	}}
	prev := []tsv1.BIOSAttributeStatus{{Name: "B", State: tsv1.BIOSApplied}}
	after := verifiedAttributeStatuses(v, prev, false)
	if after[1].State != tsv1.BIOSMismatch {
		t.Errorf("right after the reboot a wrong value is Mismatch, got %s", after[1].State)
	}
	if ok, reason, msg := appliedCondition(after); ok || reason != tsv1.ReasonBIOSNotApplied || !strings.Contains(msg, "B Mismatch") {
		t.Errorf("condition %v %s %q", ok, reason, msg)
	}
	drift := verifiedAttributeStatuses(v, prev, true)
	if drift[1].State != tsv1.BIOSDrifted {
		t.Errorf("a value in effect before and changed since is Drifted, got %s", drift[1].State)
	}
	if ok, reason, msg := appliedCondition(drift); ok || reason != tsv1.ReasonBIOSDrifted || !strings.Contains(msg, "B=y (want x)") {
		t.Errorf("condition %v %s %q", ok, reason, msg)
	}
	if ok, reason, _ := appliedCondition(drift[:1]); !ok || reason != tsv1.ReasonBIOSInEffect {
		t.Errorf("all applied: %v %s", ok, reason)
	}
}

func TestFirmwarePendingFor(t *testing.T) {
	fw := &tsv1.FirmwareSpec{Hash: "h", PendingReboot: true, BootID: "b-1"}
	for _, tc := range []struct {
		fw   *tsv1.FirmwareSpec
		boot string
		want bool
	}{
		{fw, "b-1\n", true},
		{fw, "b-2", false},
		{&tsv1.FirmwareSpec{Hash: "h", BootID: "b-1"}, "b-1", false},
		{&tsv1.FirmwareSpec{Hash: "h", PendingReboot: true}, "", false},
		{nil, "b-1", false},
	} {
		if got := tc.fw.PendingFor(tc.boot); got != tc.want {
			t.Errorf("%+v.PendingFor(%q) = %v, want %v", tc.fw, tc.boot, got, tc.want)
		}
	}
}

// TestSetBIOSStatus: the conditions come from the phases' judgements in order, for the node
// state's generation; an unjudged condition stays; a status change moves the transition time, also
// when the BMC answered and then failed within one reconcile.
func TestSetBIOSStatus(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	prev := func() *tsv1.BIOSStatus {
		return &tsv1.BIOSStatus{Conditions: []metav1.Condition{
			{Type: tsv1.BIOSBMCReachable, Status: metav1.ConditionFalse, Reason: tsv1.ReasonBMCUnreachable, LastTransitionTime: old, ObservedGeneration: 1},
			{Type: tsv1.BIOSValid, Status: metav1.ConditionTrue, Reason: tsv1.ReasonBIOSValid, LastTransitionTime: old, ObservedGeneration: 1},
		}}
	}
	cond := func(st *tsv1.BIOSStatus, typ string) metav1.Condition {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil {
			t.Fatalf("no condition %s in %+v", typ, st.Conditions)
		}
		return *c
	}

	st := prev()
	var f biosFacts
	f.judge(tsv1.BIOSBMCReachable, false, tsv1.ReasonBMCUnreachable, "still no answer")
	setBIOSStatus(st, &f, 2)
	if c := cond(st, tsv1.BIOSBMCReachable); !c.LastTransitionTime.Equal(&old) || c.Message != "still no answer" || c.ObservedGeneration != 2 {
		t.Errorf("unreachable again: %+v, want the old transition time, the new message, generation 2", c)
	}
	if c := cond(st, tsv1.BIOSValid); c.ObservedGeneration != 1 || c.Status != metav1.ConditionTrue {
		t.Errorf("an unjudged condition changed: %+v", c)
	}
	if meta.FindStatusCondition(st.Conditions, tsv1.BIOSAppliedCondition) != nil {
		t.Error("a condition no phase judged appeared")
	}

	// Reachable at connect, then a failure while staging: False again, but since now.
	st = prev()
	f = biosFacts{}
	f.judge(tsv1.BIOSBMCReachable, true, tsv1.ReasonBMCConnected, "answers")
	f.judge(tsv1.BIOSBMCReachable, false, tsv1.ReasonBMCProtocol, "500")
	f.judge(tsv1.BIOSAppliedCondition, false, tsv1.ReasonBIOSUnknown, "nothing was staged")
	setBIOSStatus(st, &f, 2)
	if c := cond(st, tsv1.BIOSBMCReachable); c.Status != metav1.ConditionFalse || c.Reason != tsv1.ReasonBMCProtocol || !c.LastTransitionTime.After(old.Time) {
		t.Errorf("answered then failed: %+v, want False since this reconcile", c)
	}
	if c := cond(st, tsv1.BIOSAppliedCondition); c.Status != metav1.ConditionFalse || c.Reason != tsv1.ReasonBIOSUnknown {
		t.Errorf("applied: %+v", c)
	}

	// No judgement: the status is as it was.
	st = prev()
	setBIOSStatus(st, &biosFacts{}, 3)
	if !reflect.DeepEqual(st, prev()) {
		t.Errorf("no judgement changed the status: %+v", st)
	}
}
