package resolve

import (
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestTuningHash(t *testing.T) {
	if got := TuningHash(nil); got != "" {
		t.Fatalf("TuningHash(nil) = %q, want empty", got)
	}
	a := &tsv1.NodeTuning{Sysctls: map[string]string{"kernel.a": "1", "vm.b": "2"}}
	b := &tsv1.NodeTuning{Sysctls: map[string]string{"vm.b": "2", "kernel.a": "1"}}
	c := &tsv1.NodeTuning{Sysctls: map[string]string{"kernel.a": "1", "vm.b": "3"}}
	if TuningHash(a) != TuningHash(b) {
		t.Errorf("equal tunings hash differently: %s %s", TuningHash(a), TuningHash(b))
	}
	if TuningHash(a) == TuningHash(c) {
		t.Errorf("different tunings hash equal: %s", TuningHash(a))
	}
	if n := len(TuningHash(a)); n != 32 {
		t.Errorf("hash length %d, want 32 (the field allows 64)", n)
	}
}
