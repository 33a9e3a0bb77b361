package judge

import (
	"fmt"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// What "far" means for a stall (docs/benchmark-methods.md "Stalls"): a message is a stall when its
// latency is above StallFactor x the run's p99.9, and a pause between the sends of two consecutive
// timed messages is one when it is above StallFactor x the run's median pause; both at least
// StallMinimum, so that a run with a tight tail does not report every scheduler tick. The runner
// finds the stalls (bench.DetectStalls); the bounds are here because the report checks against
// them too (MaxCheck).
const (
	StallFactor  = 10
	StallMinimum = time.Millisecond
)

// LatencyStallThreshold is the latency above which a message of a run with this p99.9 is a stall.
// It is also the bound of the bypass pingPong's regression check (MaxCheck).
func LatencyStallThreshold(p999Ns int64) int64 {
	return max(StallFactor*p999Ns, int64(StallMinimum))
}

// MaxCheck is the regression check the benchmark reports for the bypass stack's pingPong rows:
// the row's maximum against a bound derived from the same run. The in-cluster runner has no
// floor tool (dataplane/bench/bench.sh has xsk-floor), so the bound is the run's own latency
// stall threshold; ok is false exactly when the run had a message slow enough to be a stall.
func MaxCheck(st tsv1.LatencyStats) (boundNs int64, ok bool) {
	b := LatencyStallThreshold(st.P999Ns)
	return b, st.MaxNs <= b
}

// StallSummary is a stall report in a few words for a row's log line and table notes:
// "0 stalls", "12 stalls (10 listed: 7 preempted, 2 steal, 1 unexplained)", or without the
// parenthesis when the listed stalls have no cause.
func StallSummary(rep *tsv1.StallReport) string {
	if rep == nil {
		return "stalls not looked for"
	}
	n := fmt.Sprintf("%d stalls", rep.Count)
	if rep.Count == 1 {
		n = "1 stall"
	}
	counts := map[tsv1.StallCause]int{}
	attributed := 0
	for _, s := range rep.Stalls {
		if s.Cause != "" {
			counts[s.Cause]++
			attributed++
		}
	}
	if attributed == 0 {
		return n
	}
	var parts []string
	for _, c := range []tsv1.StallCause{tsv1.StallPreempted, tsv1.StallSteal, tsv1.StallUnexplained} {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		}
	}
	listed := ""
	if int(rep.Count) > len(rep.Stalls) {
		listed = fmt.Sprintf("%d listed: ", len(rep.Stalls))
	}
	return fmt.Sprintf("%s (%s%s)", n, listed, strings.Join(parts, ", "))
}
