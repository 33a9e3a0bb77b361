package agent

import (
	"slices"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/host"
)

// ptp.ownsSystemClock stops the host's clock daemons on a slave or a boundary clock; never on a
// grandmaster (its system clock is the source), and not without the field.
func TestDesiredTimeServices(t *testing.T) {
	for _, tc := range []struct {
		name string
		ptp  *tsv1.PTPTuning
		want []string
	}{
		{"no ptp", nil, nil},
		{"ptp without ownsSystemClock", &tsv1.PTPTuning{Role: tsv1.PTPRoleSlave}, nil},
		{"a slave owning the clock", &tsv1.PTPTuning{Role: tsv1.PTPRoleSlave, OwnsSystemClock: true}, host.TimeServiceUnits},
		{"a boundary clock owning the clock", &tsv1.PTPTuning{Role: tsv1.PTPRoleBoundary, OwnsSystemClock: true}, host.TimeServiceUnits},
		{"a grandmaster", &tsv1.PTPTuning{Role: tsv1.PTPRoleGrandmaster, OwnsSystemClock: true}, nil},
	} {
		d, err := Desired(&tsv1.NodeTuning{PTP: tc.ptp})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.TimeServices, tc.want) {
			t.Errorf("%s: time services %v, want %v", tc.name, d.TimeServices, tc.want)
		}
	}
}
