package bmc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func i64(v int64) *int64 { return &v }

// testRegistry mirrors a small vendor registry: one of each type and a read-only attribute.
func testRegistry() *Registry {
	return &Registry{ID: "BiosAttributeRegistryT1.v1_0_0", Attributes: map[string]RegistryAttribute{
		"ProcTurboMode":  {Name: "ProcTurboMode", Type: TypeEnumeration, Values: []string{"Enabled", "Disabled"}},
		"ProcCStates":    {Name: "ProcCStates", Type: TypeEnumeration, Values: []string{"Enabled", "Disabled"}},
		"QuietBoot":      {Name: "QuietBoot", Type: TypeBoolean},
		"NumCores":       {Name: "NumCores", Type: TypeInteger, ReadOnly: true, LowerBound: i64(10), UpperBound: i64(20)},
		"MemTestCount":   {Name: "MemTestCount", Type: TypeInteger, LowerBound: i64(0), UpperBound: i64(16), ScalarIncrement: i64(2)},
		"SerialNumber":   {Name: "SerialNumber", Type: TypeString, MaxLength: i64(8)},
		"AssetTag":       {Name: "AssetTag", Type: TypeString, ValueExpression: "[A-Z]{2}[0-9]+"},
		"SecureBootMode": {Name: "SecureBootMode", Type: TypeEnumeration, Immutable: true, Values: []string{"On", "Off"}},
		"SysPassword":    {Name: "SysPassword", Type: TypePassword},
	}}
}

func TestValidate(t *testing.T) {
	current := map[string]any{"ProcTurboMode": "Enabled", "QuietBoot": true, "NumCores": json.Number("10"), "MemTestCount": json.Number("2")}
	tests := []struct {
		name    string
		wanted  Attributes
		reg     *Registry
		wantErr []string // substrings, each must appear; nil = valid
	}{
		{name: "valid enumeration", wanted: Attributes{"ProcTurboMode": "Disabled"}, reg: testRegistry()},
		{name: "boolean from string", wanted: Attributes{"QuietBoot": "false"}, reg: testRegistry()},
		{name: "boolean from bool", wanted: Attributes{"QuietBoot": false}, reg: testRegistry()},
		{name: "integer from string", wanted: Attributes{"MemTestCount": "4"}, reg: testRegistry()},
		{name: "integer from float", wanted: Attributes{"MemTestCount": 6.0}, reg: testRegistry()},
		{name: "string in length", wanted: Attributes{"SerialNumber": "ABC"}, reg: testRegistry()},
		{name: "string matching expression", wanted: Attributes{"AssetTag": "AB12"}, reg: testRegistry()},
		{
			name: "unknown name", wanted: Attributes{"ProcTurbo": "Disabled"}, reg: testRegistry(),
			wantErr: []string{`"ProcTurbo"`, "unknown attribute", "BiosAttributeRegistryT1.v1_0_0"},
		},
		{
			name: "unknown name differing in case suggests the real one", wanted: Attributes{"procturbomode": "Disabled"}, reg: testRegistry(),
			wantErr: []string{`did you mean "ProcTurboMode"`},
		},
		{
			name: "value outside enumeration lists allowed values", wanted: Attributes{"ProcTurboMode": "Off"}, reg: testRegistry(),
			wantErr: []string{`"ProcTurboMode"`, `value "Off" is not allowed`, "allowed: Enabled, Disabled"},
		},
		{
			name: "enumeration given a bool", wanted: Attributes{"ProcTurboMode": true}, reg: testRegistry(),
			wantErr: []string{"wrong type", "allowed: Enabled, Disabled"},
		},
		{
			name: "boolean given a word", wanted: Attributes{"QuietBoot": "yes"}, reg: testRegistry(),
			wantErr: []string{`"QuietBoot"`, "wrong type", "not a Boolean", "allowed: true, false"},
		},
		{
			name: "integer given a word", wanted: Attributes{"MemTestCount": "many"}, reg: testRegistry(),
			wantErr: []string{"wrong type", "not an Integer", "integers 0..16 in steps of 2"},
		},
		{
			name: "integer given a fraction", wanted: Attributes{"MemTestCount": 2.5}, reg: testRegistry(),
			wantErr: []string{"wrong type"},
		},
		{
			name: "integer out of range", wanted: Attributes{"MemTestCount": 18}, reg: testRegistry(),
			wantErr: []string{"value 18 out of range", "integers 0..16"},
		},
		{
			name: "integer off the step", wanted: Attributes{"MemTestCount": 3}, reg: testRegistry(),
			wantErr: []string{"not a step of 2"},
		},
		{
			name: "read-only", wanted: Attributes{"NumCores": 12}, reg: testRegistry(),
			wantErr: []string{`"NumCores"`, "read-only"},
		},
		{
			name: "immutable", wanted: Attributes{"SecureBootMode": "Off"}, reg: testRegistry(),
			wantErr: []string{`"SecureBootMode"`, "read-only"},
		},
		{
			name: "string too long", wanted: Attributes{"SerialNumber": "ABCDEFGHIJ"}, reg: testRegistry(),
			wantErr: []string{"length 10 outside 0..8"},
		},
		{
			name: "string not matching expression", wanted: Attributes{"AssetTag": "ab"}, reg: testRegistry(),
			wantErr: []string{"does not match"},
		},
		{
			name: "password refused", wanted: Attributes{"SysPassword": "hunter2"}, reg: testRegistry(),
			wantErr: []string{"password attributes are not managed"},
		},
		{
			name: "nil value", wanted: Attributes{"ProcTurboMode": nil}, reg: testRegistry(),
			wantErr: []string{"no value given"},
		},
		{
			name: "every problem reported at once", wanted: Attributes{"ProcTurboMode": "Off", "Nope": "1", "NumCores": 11}, reg: testRegistry(),
			wantErr: []string{"3 invalid BIOS attribute(s)", `"Nope"`, `"NumCores"`, `"ProcTurboMode"`},
		},
		// Without a registry: names against current attributes, types from current values.
		{name: "no registry: known name", wanted: Attributes{"ProcTurboMode": "Disabled"}},
		{name: "no registry: bool for bool", wanted: Attributes{"QuietBoot": "false"}},
		{
			name: "no registry: unknown name", wanted: Attributes{"ProcCStates": "Disabled"},
			wantErr: []string{`"ProcCStates"`, "no attribute registry", "the current attributes"},
		},
		{
			name: "no registry: wrong type by current value", wanted: Attributes{"NumCores": "ten"},
			wantErr: []string{"wrong type"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.wanted, tt.reg, current)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %T %v", err, err)
			}
			for _, sub := range tt.wantErr {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q lacks %q", err, sub)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows a password value: %q", err)
			}
		})
	}
}

func TestValidateSendsTheBMCsOwnJSONForm(t *testing.T) {
	reg := testRegistry()
	// sushy-tools reports Boolean and Integer attributes as strings; real BMCs as JSON bool/number.
	asStrings := map[string]any{"QuietBoot": "true", "MemTestCount": "2"}
	asJSON := map[string]any{"QuietBoot": true, "MemTestCount": json.Number("2")}
	for _, tt := range []struct {
		current  map[string]any
		wantBool any
		wantInt  any
	}{
		{asStrings, "false", "4"},
		{asJSON, false, int64(4)},
	} {
		got, err := validate(Attributes{"QuietBoot": "false", "MemTestCount": "4"}, reg, tt.current)
		if err != nil {
			t.Fatal(err)
		}
		if got["QuietBoot"].send != tt.wantBool || got["MemTestCount"].send != tt.wantInt {
			t.Errorf("current %v: sent %#v and %#v, want %#v and %#v", tt.current,
				got["QuietBoot"].send, got["MemTestCount"].send, tt.wantBool, tt.wantInt)
		}
	}
}

func TestParseRegistry(t *testing.T) {
	doc := `{"@odata.type":"#AttributeRegistry.v1_1_1.AttributeRegistry","Id":"R1.v1_0_0",
	  "RegistryEntries":{"Attributes":[
	    {"AttributeName":"ProcTurboMode","Type":"Enumeration","ReadOnly":false,
	     "Value":[{"ValueName":"Enabled","ValueDisplayName":"On"},{"ValueName":"Disabled"}]},
	    {"AttributeName":"NumCores","Type":"Integer","ReadOnly":true,"LowerBound":0,"UpperBound":20},
	    {"AttributeName":"Tag","Type":"String","MaxLength":null}]}}`
	reg, err := ParseRegistry([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if reg.ID != "R1.v1_0_0" || len(reg.Attributes) != 3 {
		t.Fatalf("registry %+v", reg)
	}
	turbo := reg.Attributes["ProcTurboMode"]
	if turbo.Type != TypeEnumeration || strings.Join(turbo.Values, ",") != "Enabled,Disabled" {
		t.Errorf("ProcTurboMode parsed as %+v", turbo)
	}
	cores := reg.Attributes["NumCores"]
	if !cores.ReadOnly || cores.LowerBound == nil || *cores.LowerBound != 0 || *cores.UpperBound != 20 {
		t.Errorf("NumCores parsed as %+v", cores)
	}
	if reg.Attributes["Tag"].MaxLength != nil {
		t.Errorf("null MaxLength parsed as a bound")
	}
	if _, err := ParseRegistry([]byte(`{"@odata.type":"#MessageRegistry.v1_4_0.MessageRegistry","Id":"Base.1.0"}`)); err == nil {
		t.Error("a message registry parsed as an attribute registry")
	}
}
