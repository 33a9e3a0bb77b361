package resolve

import (
	"fmt"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/config/crd"
)

// The API's PTP defaults (tsv1.DefaultPTP*), which resolve gives a node's PTPTuning and
// internal/ptp its Config, are the defaults the CRD stores in a profile: one value each, written
// twice only because a marker cannot name a Go constant.
func TestPTPDefaultsAreTheCRDs(t *testing.T) {
	raw, err := crd.Bases.ReadFile("bases/tickstack.io_latencyprofiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties struct {
									PTP struct {
										Properties map[string]struct {
											Default any `yaml:"default"`
										} `yaml:"properties"`
									} `yaml:"ptp"`
								} `yaml:"properties"`
							} `yaml:"spec"`
						} `yaml:"properties"`
					} `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Spec.Versions) == 0 {
		t.Fatal("the LatencyProfile CRD has no version")
	}
	props := doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties.PTP.Properties
	for field, want := range map[string]string{
		"role":              string(tsv1.DefaultPTPRole),
		"transport":         string(tsv1.DefaultPTPTransport),
		"timestamping":      string(tsv1.DefaultPTPTimestamping),
		"maxOffsetNs":       fmt.Sprint(tsv1.DefaultPTPMaxOffsetNs),
		"maxSystemOffsetNs": fmt.Sprint(tsv1.DefaultPTPMaxSystemOffsetNs),
		"schedulingPolicy":  string(tsv1.DefaultPTPSchedulingPolicy),
		"holdTime":          tsv1.DefaultPTPHoldTime.String(),
	} {
		p, ok := props[field]
		if !ok {
			t.Errorf("the CRD has no spec.ptp.%s", field)
			continue
		}
		got := fmt.Sprint(p.Default)
		if field == "holdTime" {
			if d, err := time.ParseDuration(got); err == nil {
				got = d.String()
			}
		}
		if got != want {
			t.Errorf("spec.ptp.%s: the CRD defaults to %q, the API's constant is %q: make the +kubebuilder:default marker and tsv1.DefaultPTP* agree", field, got, want)
		}
	}
	// schedulingPriority has no CRD default (it applies to SCHED_FIFO only): resolve gives it.
	got, err := ptpTuning(&tsv1.PTPSpec{Interface: "ens1f0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.SchedulingPriority != tsv1.DefaultPTPSchedulingPriority || got.Role != tsv1.DefaultPTPRole || got.HoldTime.Duration != tsv1.DefaultPTPHoldTime {
		t.Errorf("resolve's defaults %+v", got)
	}
}
