package bmc

import (
	"fmt"
	"sort"
	"strings"
)

// Knob is a vendor-neutral BIOS setting that matters for latency. Vendors spell each one differently;
// a Preset maps knobs to one vendor's attribute names and values.
type Knob string

// The knobs of the common low-latency BIOS recipe (vendor tuning guides for financial trading and
// the seed papers: power saving off first).
const (
	// KnobCStates: processor idle states deeper than C1 (C3, C6). Off avoids wake-up latency of tens
	// of microseconds.
	KnobCStates Knob = "CStates"
	// KnobC1E: enhanced halt, which lowers voltage and frequency in C1. Off avoids the ramp-up delay.
	KnobC1E Knob = "C1E"
	// KnobTurbo: opportunistic frequency above base. On gives the fastest cores; some desks turn it off
	// for steadier frequency (less jitter) at a lower clock.
	KnobTurbo Knob = "Turbo"
	// KnobSMT: simultaneous multithreading (Hyper-Threading). Off gives each isolated core its caches
	// and execution units alone.
	KnobSMT Knob = "SMT"
	// KnobPowerProfile: the platform power/performance profile. MaxPerformance pins P-states high and
	// disables the BIOS's own power management.
	KnobPowerProfile Knob = "PowerProfile"
	// KnobSubNUMA: sub-NUMA clustering (SNC) splits a socket into NUMA domains. Off keeps one domain per
	// socket, so the LLC is shared and pinning stays simple; on can lower local memory latency for a
	// well-partitioned workload.
	KnobSubNUMA Knob = "SubNUMAClustering"
	// KnobUncoreFrequency: uncore (mesh, LLC, memory controller) frequency scaling. MaxPerformance
	// fixes it at its maximum, avoiding the latency of uncore ramp-up.
	KnobUncoreFrequency Knob = "UncoreFrequency"
)

// Setting is a vendor-neutral state of a knob.
type Setting string

// The states a knob can be put in. Not every knob has every state.
const (
	SettingEnabled        Setting = "Enabled"
	SettingDisabled       Setting = "Disabled"
	SettingMaxPerformance Setting = "MaxPerformance"
)

// LowLatency is the vendor-neutral low-latency choice for every knob: C-states and C1E off, turbo on,
// SMT off, maximum-performance power profile, SNC off, uncore at maximum frequency. Callers change
// entries (turbo off for determinism, SMT on for throughput) before passing it to Preset.Attributes.
func LowLatency() map[Knob]Setting {
	return map[Knob]Setting{
		KnobCStates:         SettingDisabled,
		KnobC1E:             SettingDisabled,
		KnobTurbo:           SettingEnabled,
		KnobSMT:             SettingDisabled,
		KnobPowerProfile:    SettingMaxPerformance,
		KnobSubNUMA:         SettingDisabled,
		KnobUncoreFrequency: SettingMaxPerformance,
	}
}

// Vendor names a BMC/BIOS family with its own attribute names.
type Vendor string

// The vendors with presets.
const (
	VendorDell       Vendor = "Dell"
	VendorHPE        Vendor = "HPE"
	VendorLenovo     Vendor = "Lenovo"
	VendorSupermicro Vendor = "Supermicro"
	// VendorSushy is OpenStack's sushy-tools emulator (libvirt driver), used by the tests. It is no
	// value of the API's BIOSPreset enum: only Auto reaches it, from the emulator's manufacturer.
	VendorSushy Vendor = "SushyEmulator"
)

// VendorOf guesses the vendor from a ComputerSystem's Manufacturer; "" when unknown.
func VendorOf(manufacturer string) Vendor {
	m := strings.ToLower(manufacturer)
	switch {
	case strings.Contains(m, "dell"):
		return VendorDell
	case strings.Contains(m, "hpe"), strings.Contains(m, "hewlett"):
		return VendorHPE
	case strings.Contains(m, "lenovo"):
		return VendorLenovo
	case strings.Contains(m, "supermicro"), strings.Contains(m, "super micro"):
		return VendorSupermicro
	case strings.Contains(m, "sushy"):
		return VendorSushy
	}
	return ""
}

// KnobMapping is how one vendor spells one knob.
type KnobMapping struct {
	// Attribute is the BIOS attribute name.
	Attribute string
	// Values maps each supported Setting to the attribute's value (a registry ValueName).
	Values map[Setting]string
}

// Preset is one vendor's spelling of the latency knobs. The names come from the vendors' published
// BIOS attribute references for recent Intel Xeon platforms; BIOS generations rename attributes and
// values, so a plan always validates the result against the BMC's own registry, and a name that BIOS
// does not have is refused there with the registry's allowed values, before anything changes.
type Preset struct {
	// Vendor is the BMC family.
	Vendor Vendor
	// Doc says where the names come from and what the vendor needs besides them.
	Doc string
	// Knobs maps each knob the vendor has to its attribute.
	Knobs map[Knob]KnobMapping
	// Requires are attributes that must be set for the knobs to be writable (a "custom" system
	// profile); Attributes adds them whenever it sets a knob.
	Requires Attributes
}

func onOff(attr, on, off string) KnobMapping {
	return KnobMapping{Attribute: attr, Values: map[Setting]string{SettingEnabled: on, SettingDisabled: off}}
}

// perf is a knob with a maximum-performance state and an enabled (managed) one.
func perf(attr, maxPerf, enabled string) KnobMapping {
	return KnobMapping{Attribute: attr, Values: map[Setting]string{SettingMaxPerformance: maxPerf, SettingEnabled: enabled}}
}

// switches maps each knob to its attribute taking the vendor's one pair of on/off words, plus the
// knobs in more that take other values.
func switches(on, off string, attrs map[Knob]string, more map[Knob]KnobMapping) map[Knob]KnobMapping {
	out := make(map[Knob]KnobMapping, len(attrs)+len(more))
	for k, attr := range attrs {
		out[k] = onOff(attr, on, off)
	}
	for k, m := range more {
		out[k] = m
	}
	return out
}

// Presets returns every vendor preset, freshly built (callers may modify them).
func Presets() []Preset {
	return []Preset{
		{
			Vendor: VendorDell,
			Doc: "Dell PowerEdge (iDRAC 9, 14G-16G Intel). The processor power knobs are read-only unless " +
				"the system profile SysProfile is Custom, so the preset sets it; ProcPwrPerf MaxPerf is the " +
				"'Maximum Performance' CPU power management. PowerEdge BIOSes need a reboot to apply; the " +
				"PATCH asks for ApplyTime OnReset, which makes iDRAC schedule the configuration job.",
			Requires: Attributes{"SysProfile": "Custom"},
			Knobs: switches("Enabled", "Disabled", map[Knob]string{
				KnobCStates: "ProcCStates", KnobC1E: "ProcC1E", KnobTurbo: "ProcTurboMode",
				KnobSMT: "LogicalProc", KnobSubNUMA: "SubNumaCluster",
			}, map[Knob]KnobMapping{
				KnobPowerProfile:    perf("ProcPwrPerf", "MaxPerf", "SysDbpm"),
				KnobUncoreFrequency: perf("UncoreFrequency", "MaxUFS", "DynamicUFS"),
			}),
		},
		{
			Vendor: VendorHPE,
			Doc: "HPE ProLiant (iLO 5/6, Gen10/Gen11 Intel). Workload-profile-controlled options are " +
				"read-only unless WorkloadProfile is Custom, so the preset sets it. HPE has no separate C1E " +
				"switch: MinProcIdlePower NoCStates disables C1E with the other C-states. PowerRegulator " +
				"StaticHighPerf is 'Static High Performance Mode'.",
			Requires: Attributes{"WorkloadProfile": "Custom"},
			Knobs: switches("Enabled", "Disabled", map[Knob]string{
				KnobTurbo: "ProcTurbo", KnobSMT: "ProcHyperthreading", KnobSubNUMA: "SubNumaClustering",
			}, map[Knob]KnobMapping{
				KnobCStates:         onOff("MinProcIdlePower", "C6", "NoCStates"),
				KnobPowerProfile:    perf("PowerRegulator", "StaticHighPerf", "DynamicPowerSavings"),
				KnobUncoreFrequency: perf("UncoreFreqScaling", "Maximum", "Auto"),
			}),
		},
		{
			Vendor: VendorLenovo,
			Doc: "Lenovo ThinkSystem (XCC, V2/V3 Intel). Attribute names are Menu_Setting; values are " +
				"Enable/Disable. Individual processor settings are writable only in the custom operating " +
				"mode, so the preset sets OperatingModes_ChooseOperatingMode CustomMode. Uncore frequency " +
				"scaling Disable keeps the uncore at its maximum.",
			Requires: Attributes{"OperatingModes_ChooseOperatingMode": "CustomMode"},
			Knobs: switches("Enable", "Disable", map[Knob]string{
				KnobC1E: "Processors_C1EnhancedMode", KnobTurbo: "Processors_TurboMode",
				KnobSMT: "Processors_HyperThreading", KnobSubNUMA: "Memory_SNC",
			}, map[Knob]KnobMapping{
				KnobCStates:         onOff("Processors_CStates", "Legacy", "Disable"),
				KnobPowerProfile:    perf("Power_PlatformControlledType", "MaximumPerformance", "EfficiencyFavorPerformance"),
				KnobUncoreFrequency: perf("Processors_UncoreFrequencyScaling", "Disable", "Enable"),
			}),
		},
		{
			Vendor: VendorSupermicro,
			Doc: "Supermicro X12/X13 (Redfish BIOS). Names follow the setup labels with spaces and " +
				"punctuation removed; some firmware appends a suffix such as '#0012' to keep names unique, " +
				"in which case the registry check names the attribute that is missing: copy the real name " +
				"from the BMC's registry into explicit attributes. Uncore frequency scaling Disable keeps the " +
				"uncore at its maximum.",
			Knobs: switches("Enable", "Disable", map[Knob]string{
				KnobCStates: "CPUC6Report", KnobC1E: "EnhancedHaltStateC1E", KnobTurbo: "IntelTurboBoostTechnology",
				KnobSMT: "HyperThreadingALL", KnobSubNUMA: "SNC",
			}, map[Knob]KnobMapping{
				KnobPowerProfile:    perf("ENERGY_PERF_BIAS_CFGMode", "Maximum Performance", "Balanced Performance"),
				KnobUncoreFrequency: perf("UncoreFrequencyScaling", "Disable", "Enable"),
			}),
		},
		{
			Vendor: VendorSushy,
			Doc: "sushy-tools 2.2.0 libvirt driver: its fixed registry has ProcTurboMode only among the " +
				"latency knobs (the others are refused by validation, which is what the tests check).",
			Knobs: map[Knob]KnobMapping{
				KnobTurbo: onOff("ProcTurboMode", "Enabled", "Disabled"),
			},
		},
	}
}

// PresetFor returns the vendor's preset.
func PresetFor(v Vendor) (Preset, error) {
	for _, p := range Presets() {
		if p.Vendor == v {
			return p, nil
		}
	}
	names := []string{}
	for _, p := range Presets() {
		names = append(names, string(p.Vendor))
	}
	return Preset{}, fmt.Errorf("no BIOS preset for vendor %q; presets exist for %s", v, strings.Join(names, ", "))
}

// Attributes turns knob choices into this vendor's attributes, with Requires added. A knob the vendor
// lacks, or a state the knob lacks, is an error naming what exists.
func (p Preset) Attributes(choices map[Knob]Setting) (Attributes, error) {
	out := Attributes{}
	var problems []string
	knobs := make([]string, 0, len(choices))
	for k := range choices {
		knobs = append(knobs, string(k))
	}
	sort.Strings(knobs)
	for _, k := range knobs {
		knob, setting := Knob(k), choices[Knob(k)]
		m, ok := p.Knobs[knob]
		if !ok {
			problems = append(problems, fmt.Sprintf("knob %s: %s has no such BIOS setting (it has %s)", knob, p.Vendor, p.knobNames()))
			continue
		}
		v, ok := m.Values[setting]
		if !ok {
			problems = append(problems, fmt.Sprintf("knob %s: setting %s not available for %s (available: %s)", knob, setting, m.Attribute, settingNames(m)))
			continue
		}
		if prev, dup := out[m.Attribute]; dup && prev != v {
			problems = append(problems, fmt.Sprintf("knob %s: attribute %s already set to %v by another knob", knob, m.Attribute, prev))
			continue
		}
		out[m.Attribute] = v
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("preset %s: %s", p.Vendor, strings.Join(problems, "; "))
	}
	if len(out) > 0 {
		for k, v := range p.Requires {
			out[k] = v
		}
	}
	return out, nil
}

// LowLatencyAttributes is Attributes(LowLatency()) restricted to the knobs this vendor has.
func (p Preset) LowLatencyAttributes() (Attributes, error) {
	choices := map[Knob]Setting{}
	for k, s := range LowLatency() {
		if m, ok := p.Knobs[k]; ok {
			if _, ok := m.Values[s]; ok {
				choices[k] = s
			}
		}
	}
	return p.Attributes(choices)
}

func (p Preset) knobNames() string {
	names := make([]string, 0, len(p.Knobs))
	for k := range p.Knobs {
		names = append(names, string(k))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func settingNames(m KnobMapping) string {
	names := make([]string, 0, len(m.Values))
	for s := range m.Values {
		names = append(names, string(s))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
