package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TestValidateCPUPools: the webhook's own rules on cpu.offlined and cpu.shared, which `tickstack
// validate` and `profile suggest` run without the API server: no offlined CPU 0 (also a CEL rule
// of the CRD), and each pool disjoint from the reserved, isolated and other pool's CPUs (the
// kubelet section cpu.shared needs is a CEL rule).
func TestValidateCPUPools(t *testing.T) {
	for _, tt := range []struct {
		offlined, shared tsv1.CPUSet
		field, want      string
	}{
		{"7", "6", "", ""},
		{"0,7", "", "spec.cpu.offlined", "CPU 0 cannot be taken offline"},
		{"1,7", "", "spec.cpu.offlined", "CPUs 1 are also in cpu.reserved"},
		{"3-7", "", "spec.cpu.offlined", "CPUs 3-5 are also in cpu.isolated"},
		{"7-6", "", "spec.cpu.offlined", "not a cpulist"},
		{"7", "1,6", "spec.cpu.shared", "CPUs 1 are also in cpu.reserved"},
		{"7", "5-6", "spec.cpu.shared", "CPUs 5 are also in cpu.isolated"},
		{"7", "6-7", "spec.cpu.shared", "CPUs 7 are also in cpu.offlined"},
		{"7", "6-", "spec.cpu.shared", "not a cpulist"},
	} {
		spec := &tsv1.LatencyProfileSpec{
			CPU:     &tsv1.CPUSpec{Reserved: "0-1", Isolated: "2-5", Offlined: tt.offlined, Shared: tt.shared},
			Kubelet: &tsv1.KubeletSpec{},
		}
		_, errs := ValidateProfileSpec(spec, field.NewPath("spec"))
		got := errs.ToAggregate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("offlined %q shared %q: refused: %v", tt.offlined, tt.shared, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.field) || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("offlined %q shared %q: error %v, want %s ... %q", tt.offlined, tt.shared, got, tt.field, tt.want)
		}
	}
}
