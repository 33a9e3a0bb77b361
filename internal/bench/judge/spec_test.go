package judge

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func TestParseScheduleNamesTheField(t *testing.T) {
	for _, s := range []string{"0 3 * * *", "@daily", "@every 6h"} {
		if _, err := ParseSchedule(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	_, err := ParseSchedule("61 * * * *")
	if err == nil || !strings.Contains(err.Error(), "spec.schedule") {
		t.Fatalf("error %v does not name spec.schedule", err)
	}
}

func TestSpecProblemsNameTheirFields(t *testing.T) {
	b := &tsv1.LatencyBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}
	b.Spec.Suites.PingPong = &tsv1.PingPongSpec{}
	if p := SpecProblems(b); len(p) != 0 {
		t.Fatalf("a plain ping-pong benchmark: %v", p)
	}
	b.Spec.Schedule = "61 * * * *"
	b.Spec.Suites.TickToTrade = &tsv1.TickToTradeSpec{Baseline: &tsv1.TickToTradeBaseline{Benchmark: "ci"}}
	got := strings.Join(SpecProblems(b), "\n")
	for _, want := range []string{"spec.schedule", "spec.suites.tickToTrade.baseline.benchmark"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q do not name %s", got, want)
		}
	}
}
