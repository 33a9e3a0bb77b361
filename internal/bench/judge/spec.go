package judge

import (
	"fmt"

	"github.com/robfig/cron/v3"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// DefaultControlPort is the runner's reflector control port: the port the benchmark's Jobs and
// NetworkPolicy open between the runner pods.
const DefaultControlPort = 11100

// RunnerSuites is the part of a benchmark the runner in each Job gets: the suites with the
// benchmark's stacks, without the tick-to-trade baseline (the controller reads that benchmark).
func RunnerSuites(b *tsv1.LatencyBenchmark) tsv1.BenchmarkSuites {
	s := *b.Spec.Suites.DeepCopy()
	s.Stacks = append([]tsv1.Stack(nil), b.Spec.Stacks...)
	if s.TickToTrade != nil {
		s.TickToTrade.Baseline = nil
	}
	return s
}

// ParseSchedule parses a benchmark's cron schedule (five fields or a descriptor such as @daily).
func ParseSchedule(s string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("spec.schedule %q: %v: write five fields such as \"0 3 * * *\", or @daily, @every 6h", s, err)
	}
	return sched, nil
}

// SpecProblems returns what the benchmark controller refuses in a spec beyond the CRD's rules
// (condition Valid=False, reason InvalidSpec), each naming its field and the fix: the suites and
// thresholds as the runner will read them, the tick-to-trade baseline and the cron schedule. The
// controller and `tickstack validate` both call it.
func SpecProblems(b *tsv1.LatencyBenchmark) []string {
	var problems []string
	spec := RunnerSuites(b)
	if spec.Jitter != nil && spec.Jitter.CPUs == tsv1.JitterCPUsPod {
		spec.Jitter.CPUs = "0" // stands for the runner's CPUs, known only in the pod
	}
	if err := ValidateSuites(spec.Defaulted()); err != nil {
		problems = append(problems, "spec.suites: "+err.Error())
	}
	if err := ValidateThresholds(b.Spec.Thresholds); err != nil {
		problems = append(problems, "spec."+err.Error())
	}
	if t := b.Spec.Suites.TickToTrade; t != nil && t.Baseline != nil && t.Baseline.Benchmark == b.Name {
		problems = append(problems, "spec.suites.tickToTrade.baseline.benchmark: names this benchmark itself: name the LatencyBenchmark that measured the untuned node")
	}
	if b.Spec.Schedule != "" {
		if _, err := ParseSchedule(b.Spec.Schedule); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}
