package policy

import (
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestParsePodControls(t *testing.T) {
	good := []struct {
		ann  map[string]string
		want PodControlRequest
	}{
		{nil, PodControlRequest{}},
		{map[string]string{tsv1.IRQLoadBalancingAnnotation: "housekeeping"}, PodControlRequest{IRQLoadBalancing: "housekeeping"}},
		{map[string]string{tsv1.CPUCStatesAnnotation: "max_latency:20"}, PodControlRequest{CStates: "max_latency", CStateMaxLatencyMicroseconds: 20}},
		{map[string]string{tsv1.CPUCStatesAnnotation: "disable", tsv1.CPUFreqGovernorAnnotation: "performance", tsv1.CPUQuotaAnnotation: "disable"},
			PodControlRequest{CStates: "disable", Governor: "performance", DisableCPUQuota: true}},
	}
	for _, g := range good {
		got, err := ParsePodControls(g.ann)
		if err != nil || got != g.want {
			t.Errorf("ParsePodControls(%v) = %+v, %v; want %+v", g.ann, got, err, g.want)
		}
	}
	bad := map[string]string{
		tsv1.IRQLoadBalancingAnnotation: "enable",
		tsv1.CPUCStatesAnnotation:       "max_latency:-1",
		tsv1.CPUFreqGovernorAnnotation:  "../../x",
		tsv1.CPUQuotaAnnotation:         "enable",
	}
	for k, v := range bad {
		_, err := ParsePodControls(map[string]string{k: v})
		if err == nil || !strings.Contains(err.Error(), "annotation "+k) {
			t.Errorf("%s=%s: error %v does not name the annotation", k, v, err)
		}
	}
	r, _ := ParsePodControls(map[string]string{tsv1.CPUQuotaAnnotation: "disable", tsv1.CPUCStatesAnnotation: "enable"})
	if err := PodControlsNotAllowed(r, []tsv1.PodControl{tsv1.PodControlCPUCStates}, "node n"); err == nil || !strings.Contains(err.Error(), tsv1.CPUQuotaAnnotation) {
		t.Errorf("cpu-quota not allowed: %v", err)
	}
	if err := PodControlsNotAllowed(r, []tsv1.PodControl{tsv1.PodControlCPUCStates, tsv1.PodControlCPUQuota}, "node n"); err != nil {
		t.Errorf("all allowed: %v", err)
	}
}
