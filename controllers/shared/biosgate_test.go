package shared

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
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
	if got := strings.Join(HoldForBIOS(profile, states, all), ","); got != "staged,refused" {
		t.Errorf("granted %s, want staged,refused", got)
	}
	if got := strings.Join(HoldForBIOS(&tsv1.LatencyProfile{}, states, all), ","); got != strings.Join(all, ",") {
		t.Errorf("a profile without bios held nodes: granted %s", got)
	}
}
