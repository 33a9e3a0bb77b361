package controllers

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bmc"
)

func TestBIOSHashIgnoresOrderAndDefaults(t *testing.T) {
	a := &tsv1.BIOSSpec{Attributes: []tsv1.BIOSAttribute{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}}
	b := &tsv1.BIOSSpec{Preset: tsv1.BIOSPresetNone, Attributes: []tsv1.BIOSAttribute{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}}
	if BIOSHash(a) != BIOSHash(b) {
		t.Errorf("same settings, different hashes: %s %s", BIOSHash(a), BIOSHash(b))
	}
	c := &tsv1.BIOSSpec{Attributes: []tsv1.BIOSAttribute{{Name: "A", Value: "1"}, {Name: "B", Value: "3"}}}
	d := &tsv1.BIOSSpec{Preset: tsv1.BIOSPresetAuto, Attributes: a.Attributes}
	if BIOSHash(a) == BIOSHash(c) || BIOSHash(a) == BIOSHash(d) || BIOSHash(nil) != "" {
		t.Errorf("hashes do not tell settings apart: %s %s %s %q", BIOSHash(a), BIOSHash(c), BIOSHash(d), BIOSHash(nil))
	}
}

func TestHoldForBIOS(t *testing.T) {
	spec := &tsv1.BIOSSpec{Attributes: []tsv1.BIOSAttribute{{Name: "ProcTurboMode", Value: "Disabled"}}}
	profile := &tsv1.LatencyProfile{Spec: tsv1.LatencyProfileSpec{BIOS: spec}}
	state := func(name string, fw *tsv1.FirmwareSpec) *tsv1.LatencyNodeState {
		return &tsv1.LatencyNodeState{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tsv1.LatencyNodeStateSpec{Firmware: fw}}
	}
	states := []*tsv1.LatencyNodeState{
		state("none", nil),
		state("old", &tsv1.FirmwareSpec{Hash: "0000"}),
		state("staged", &tsv1.FirmwareSpec{Hash: BIOSHash(spec), PendingReboot: true, BootID: "b"}),
		state("refused", &tsv1.FirmwareSpec{Hash: BIOSHash(spec)}),
	}
	all := []string{"none", "old", "staged", "refused"}
	if got := strings.Join(holdForBIOS(profile, states, all), ","); got != "staged,refused" {
		t.Errorf("granted %s, want staged,refused", got)
	}
	if got := strings.Join(holdForBIOS(&tsv1.LatencyProfile{}, states, all), ","); got != strings.Join(all, ",") {
		t.Errorf("a profile without bios held nodes: granted %s", got)
	}
}

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
