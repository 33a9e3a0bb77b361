package policy

import (
	"slices"
	"testing"
)

func TestAllowedSysctlsDocumented(t *testing.T) {
	for k, info := range AllowedSysctls() {
		if len(info.Why) < 20 {
			t.Errorf("%s: Why is missing or too short", k)
		}
		if info.Kind == Integer && info.Min > info.Max {
			t.Errorf("%s: Min > Max", k)
		}
	}
	keys := AllowedSysctlKeys()
	if !slices.IsSorted(keys) || len(keys) != len(AllowedSysctls()) {
		t.Fatalf("AllowedSysctlKeys = %v", keys)
	}
}
