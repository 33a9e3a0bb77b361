package bios

import (
	"strings"
	"testing"

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
