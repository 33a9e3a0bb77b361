package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestValidateOfflined: the webhook's own rules on cpu.offlined, which `tickstack validate` and
// `profile suggest` run without the API server (CPU 0 is also a CEL rule of the CRD).
func TestValidateOfflined(t *testing.T) {
	for _, tt := range []struct {
		offlined tsv1.CPUSet
		want     string
	}{
		{"6-7", ""},
		{"0,6", "CPU 0 cannot be taken offline"},
		{"1,6", "CPUs 1 are also in cpu.reserved"},
		{"3-7", "CPUs 3-5 are also in cpu.isolated"},
		{"7-6", "not a cpulist"},
	} {
		spec := &tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Offlined: tt.offlined}}
		_, errs := ValidateProfileSpec(spec, field.NewPath("spec"))
		got := errs.ToAggregate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("offlined %q: refused: %v", tt.offlined, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), "spec.cpu.offlined") || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("offlined %q: error %v, want spec.cpu.offlined ... %q", tt.offlined, got, tt.want)
		}
	}
}

// TestValidateShared: the shared pool must be disjoint from the reserved, isolated and offlined
// CPUs (the kubelet section it needs is a CEL rule of the CRD).
func TestValidateShared(t *testing.T) {
	for _, tt := range []struct {
		shared tsv1.CPUSet
		want   string
	}{
		{"6", ""},
		{"1,6", "CPUs 1 are also in cpu.reserved"},
		{"5-6", "CPUs 5 are also in cpu.isolated"},
		{"6-7", "CPUs 7 are also in cpu.offlined"},
		{"6-", "not a cpulist"},
	} {
		spec := &tsv1.LatencyProfileSpec{CPU: &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Offlined: "7", Shared: tt.shared}, Kubelet: &tsv1.KubeletSpec{}}
		_, errs := ValidateProfileSpec(spec, field.NewPath("spec"))
		got := errs.ToAggregate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("shared %q: refused: %v", tt.shared, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), "spec.cpu.shared") || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("shared %q: error %v, want spec.cpu.shared ... %q", tt.shared, got, tt.want)
		}
	}
}
