package shared

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// BIOSHash identifies a profile's bios section: the node state's spec.firmware.hash says which one
// the BIOS reconciler has handled. Empty for a profile without one.
func BIOSHash(spec *tsv1.BIOSSpec) string {
	if spec == nil {
		return ""
	}
	attrs := append([]tsv1.BIOSAttribute(nil), spec.Attributes...)
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].Name < attrs[j].Name })
	preset := spec.Preset
	if preset == "" {
		preset = tsv1.BIOSPresetNone
	}
	data, _ := json.Marshal(struct {
		Preset     tsv1.BIOSPreset      `json:"p"`
		Attributes []tsv1.BIOSAttribute `json:"a"`
	}{preset, attrs})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// BIOSHeld reports whether a node must not get a reboot slot yet: its profile has a bios section
// the BIOS reconciler has not handled for this node (validated and staged, found in effect, or
// refused). Granting earlier could reboot the node before its BIOS settings are staged, and the
// settings would cost a second reboot.
func BIOSHeld(profile *tsv1.LatencyProfile, lns *tsv1.LatencyNodeState) bool {
	if profile == nil || profile.Spec.BIOS == nil {
		return false
	}
	return lns.Spec.Firmware == nil || lns.Spec.Firmware.Hash != BIOSHash(profile.Spec.BIOS)
}

// HoldForBIOS drops from grant the nodes whose BIOS settings are not staged yet; they are granted
// on a later reconcile (the node state's spec.firmware change triggers one).
func HoldForBIOS(profile *tsv1.LatencyProfile, states []*tsv1.LatencyNodeState, grant []string) []string {
	byName := map[string]*tsv1.LatencyNodeState{}
	for _, lns := range states {
		byName[lns.Name] = lns
	}
	out := grant[:0:0]
	for _, name := range grant {
		if lns := byName[name]; lns != nil && BIOSHeld(profile, lns) {
			continue
		}
		out = append(out, name)
	}
	return out
}
