package bmc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func state(current, settings map[string]any, applyTimes ...string) *BIOSState {
	st := &BIOSState{SystemID: "S1", Registry: testRegistry(), Current: current, Settings: settings,
		SettingsURI: "/redfish/v1/Systems/S1/Bios/Settings", ApplyTimes: applyTimes}
	st.Pending = pending(st)
	return st
}

func TestPending(t *testing.T) {
	// Settings objects that repeat every attribute (sushy-tools) and ones that hold only staged
	// changes (iDRAC) must both yield only the real differences.
	st := state(
		map[string]any{"ProcTurboMode": "Enabled", "QuietBoot": true, "MemTestCount": json.Number("2")},
		map[string]any{"ProcTurboMode": "Disabled", "QuietBoot": "true", "MemTestCount": "2"},
	)
	if len(st.Pending) != 1 || st.Pending["ProcTurboMode"] != "Disabled" {
		t.Fatalf("pending = %v, want only ProcTurboMode=Disabled", st.Pending)
	}
}

func TestComputePlan(t *testing.T) {
	tests := []struct {
		name       string
		current    map[string]any
		settings   map[string]any
		wanted     Attributes
		wantAction map[string]Action
		wantPatch  map[string]any
		wantReset  bool
	}{
		{
			name:       "in sync",
			current:    map[string]any{"ProcTurboMode": "Enabled", "QuietBoot": true},
			wanted:     Attributes{"ProcTurboMode": "Enabled", "QuietBoot": "true"},
			wantAction: map[string]Action{"ProcTurboMode": ActionNone, "QuietBoot": ActionNone},
			wantPatch:  map[string]any{},
		},
		{
			name:       "change",
			current:    map[string]any{"ProcTurboMode": "Enabled", "ProcCStates": "Enabled"},
			wanted:     Attributes{"ProcTurboMode": "Disabled", "ProcCStates": "Enabled"},
			wantAction: map[string]Action{"ProcTurboMode": ActionSet, "ProcCStates": ActionNone},
			wantPatch:  map[string]any{"ProcTurboMode": "Disabled"},
			wantReset:  true,
		},
		{
			name:       "already pending: reset only",
			current:    map[string]any{"ProcTurboMode": "Enabled"},
			settings:   map[string]any{"ProcTurboMode": "Disabled"},
			wanted:     Attributes{"ProcTurboMode": "Disabled"},
			wantAction: map[string]Action{"ProcTurboMode": ActionAlreadyPending},
			wantPatch:  map[string]any{},
			wantReset:  true,
		},
		{
			name:       "someone staged another value: override it",
			current:    map[string]any{"ProcTurboMode": "Enabled"},
			settings:   map[string]any{"ProcTurboMode": "Disabled"},
			wanted:     Attributes{"ProcTurboMode": "Enabled"},
			wantAction: map[string]Action{"ProcTurboMode": ActionOverridePending},
			wantPatch:  map[string]any{"ProcTurboMode": "Enabled"},
		},
		{
			name:       "pending differs from wanted and current: set",
			current:    map[string]any{"MemTestCount": json.Number("2")},
			settings:   map[string]any{"MemTestCount": json.Number("8")},
			wanted:     Attributes{"MemTestCount": "4"},
			wantAction: map[string]Action{"MemTestCount": ActionSet},
			wantPatch:  map[string]any{"MemTestCount": int64(4)},
			wantReset:  true,
		},
		{
			name:       "attribute not reported yet: set",
			current:    map[string]any{},
			wanted:     Attributes{"ProcCStates": "Disabled"},
			wantAction: map[string]Action{"ProcCStates": ActionSet},
			wantPatch:  map[string]any{"ProcCStates": "Disabled"},
			wantReset:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ComputePlan(state(tt.current, tt.settings), tt.wanted)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Changes) != len(tt.wanted) {
				t.Fatalf("%d changes for %d wanted", len(p.Changes), len(tt.wanted))
			}
			for _, ch := range p.Changes {
				if ch.Action != tt.wantAction[ch.Attribute] {
					t.Errorf("%s: action %s, want %s", ch.Attribute, ch.Action, tt.wantAction[ch.Attribute])
				}
			}
			if len(p.patch) != len(tt.wantPatch) {
				t.Errorf("patch %v, want %v", p.patch, tt.wantPatch)
			}
			for k, v := range tt.wantPatch {
				if p.patch[k] != v {
					t.Errorf("patch[%s] = %#v, want %#v", k, p.patch[k], v)
				}
			}
			if p.ResetRequired != tt.wantReset {
				t.Errorf("ResetRequired = %v, want %v", p.ResetRequired, tt.wantReset)
			}
			if p.InSync() != (len(tt.wantPatch) == 0 && !tt.wantReset) {
				t.Errorf("InSync = %v", p.InSync())
			}
		})
	}
}

func TestComputePlanRefusesInvalidBeforeAnything(t *testing.T) {
	p, err := ComputePlan(state(map[string]any{"ProcTurboMode": "Enabled"}, nil), Attributes{"ProcTurboMode": "Disabled", "Bogus": "x"})
	var ve *ValidationError
	if !errors.As(err, &ve) || p != nil {
		t.Fatalf("want a ValidationError and no plan, got %v, %v", p, err)
	}
	if len(ve.Problems) != 1 || ve.Problems[0].Attribute != "Bogus" {
		t.Errorf("problems %+v", ve.Problems)
	}
}

func TestComputePlanApplyTime(t *testing.T) {
	p, err := ComputePlan(state(map[string]any{"ProcTurboMode": "Enabled"}, nil, "Immediate", "OnReset"), Attributes{"ProcTurboMode": "Disabled"})
	if err != nil {
		t.Fatal(err)
	}
	if p.applyTime != "OnReset" {
		t.Errorf("applyTime %q, want OnReset when the BMC supports it", p.applyTime)
	}
	if !strings.Contains(p.Summary(), "ProcTurboMode Enabled->Disabled (Set)") || !strings.Contains(p.Summary(), "reset required") {
		t.Errorf("summary %q", p.Summary())
	}
}

func TestVerifyState(t *testing.T) {
	st := state(
		map[string]any{"ProcTurboMode": "Disabled", "ProcCStates": "Enabled", "QuietBoot": "false", "MemTestCount": json.Number("2")},
		map[string]any{"ProcCStates": "Disabled"},
	)
	v := VerifyState(st, Attributes{
		"ProcTurboMode": "Disabled", // applied
		"ProcCStates":   "Disabled", // staged, not in effect
		"QuietBoot":     true,       // applied (string "false" vs bool: compared as Boolean) -> mismatch
		"MemTestCount":  "2",        // applied
		"SerialNumber":  "X",        // not reported
	})
	want := map[string]AttributeState{
		"ProcTurboMode": StateApplied, "ProcCStates": StatePending, "QuietBoot": StateMismatch,
		"MemTestCount": StateApplied, "SerialNumber": StateMissing,
	}
	for _, r := range v.Results {
		if r.State != want[r.Attribute] {
			t.Errorf("%s: %s (desired %q observed %q), want %s", r.Attribute, r.State, r.Desired, r.Observed, want[r.Attribute])
		}
	}
	if v.AllApplied() {
		t.Error("AllApplied with a pending and a mismatching attribute")
	}
	drift := v.Drifted()
	if len(drift) != 2 || drift[0].Attribute != "QuietBoot" || drift[1].Attribute != "SerialNumber" {
		t.Errorf("drift %+v, want QuietBoot and SerialNumber", drift)
	}
	if q := v.Results[3]; q.Attribute != "QuietBoot" || q.Desired != "true" || q.Observed != "false" {
		t.Errorf("QuietBoot result %+v", q)
	}
	ok := VerifyState(st, Attributes{"ProcTurboMode": "Disabled"})
	if !ok.AllApplied() || len(ok.Drifted()) != 0 {
		t.Errorf("single applied attribute: %+v", ok.Results)
	}
}

func TestComputePlanWithoutRegistry(t *testing.T) {
	// A BMC without an attribute registry: names are checked against the current attributes and the
	// JSON types of their values; enumeration values cannot be checked and are passed through.
	st := &BIOSState{SystemID: "S1", RegistryNote: "none published", SettingsURI: "/s",
		Current: map[string]any{"ProcTurboMode": "Enabled", "QuietBoot": true}}
	st.Pending = pending(st)
	p, err := ComputePlan(st, Attributes{"ProcTurboMode": "Disabled", "QuietBoot": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Registry != "" || p.patch["ProcTurboMode"] != "Disabled" || len(p.patch) != 1 || !p.ResetRequired {
		t.Errorf("plan %s, patch %v", p.Summary(), p.patch)
	}
	_, err = ComputePlan(st, Attributes{"ProcCStates": "Disabled"})
	if err == nil || !strings.Contains(err.Error(), "publishes no attribute registry") {
		t.Errorf("unknown name without registry: %v", err)
	}
}
