package bmc

import (
	"strings"
	"testing"
)

func TestPresetsAreComplete(t *testing.T) {
	allKnobs := LowLatency()
	for _, p := range Presets() {
		if p.Doc == "" {
			t.Errorf("%s: preset without Doc", p.Vendor)
		}
		for knob, m := range p.Knobs {
			if _, ok := allKnobs[knob]; !ok {
				t.Errorf("%s: knob %s is not a known knob", p.Vendor, knob)
			}
			if m.Attribute == "" || len(m.Values) == 0 {
				t.Errorf("%s: knob %s has no attribute or values", p.Vendor, knob)
			}
		}
		// Real vendors cover the whole low-latency recipe (HPE folds C1E into its C-state setting).
		if p.Vendor != VendorSushy {
			want := len(allKnobs)
			if p.Vendor == VendorHPE {
				want--
			}
			if len(p.Knobs) != want {
				t.Errorf("%s: %d knobs, want %d", p.Vendor, len(p.Knobs), want)
			}
		}
		attrs, err := p.LowLatencyAttributes()
		if err != nil {
			t.Errorf("%s: %v", p.Vendor, err)
		}
		for k, v := range p.Requires {
			if attrs[k] != v {
				t.Errorf("%s: low-latency attributes lack required %s=%v", p.Vendor, k, v)
			}
		}
	}
}

func TestPresetAttributes(t *testing.T) {
	dell, err := PresetFor(VendorDell)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dell.LowLatencyAttributes()
	if err != nil {
		t.Fatal(err)
	}
	want := Attributes{
		"SysProfile": "Custom", "ProcCStates": "Disabled", "ProcC1E": "Disabled", "ProcTurboMode": "Enabled",
		"LogicalProc": "Disabled", "ProcPwrPerf": "MaxPerf", "SubNumaCluster": "Disabled", "UncoreFrequency": "MaxUFS",
	}
	if len(got) != len(want) {
		t.Fatalf("Dell low latency = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Dell %s = %v, want %v", k, got[k], v)
		}
	}

	choices := LowLatency()
	choices[KnobTurbo] = SettingDisabled // determinism over peak clock
	hpe, _ := PresetFor(VendorHPE)
	if _, err := hpe.Attributes(choices); err == nil || !strings.Contains(err.Error(), "knob C1E") {
		t.Errorf("HPE with C1E: want an error naming the knob, got %v", err)
	}
	delete(choices, KnobC1E)
	attrs, err := hpe.Attributes(choices)
	if err != nil || attrs["ProcTurbo"] != "Disabled" || attrs["WorkloadProfile"] != "Custom" {
		t.Errorf("HPE attributes %v, %v", attrs, err)
	}

	sushy, _ := PresetFor(VendorSushy)
	if _, err := sushy.Attributes(map[Knob]Setting{KnobTurbo: SettingMaxPerformance}); err == nil ||
		!strings.Contains(err.Error(), "available: Disabled, Enabled") {
		t.Errorf("unsupported setting: %v", err)
	}
	if _, err := PresetFor("Acme"); err == nil || !strings.Contains(err.Error(), "Dell") {
		t.Errorf("unknown vendor: %v", err)
	}
}

func TestVendorOf(t *testing.T) {
	for in, want := range map[string]Vendor{
		"Dell Inc.": VendorDell, "HPE": VendorHPE, "Hewlett Packard Enterprise": VendorHPE, "Lenovo": VendorLenovo,
		"Supermicro": VendorSupermicro, "Sushy Emulator": VendorSushy, "Acme": "",
	} {
		if got := VendorOf(in); got != want {
			t.Errorf("VendorOf(%q) = %q, want %q", in, got, want)
		}
	}
}
