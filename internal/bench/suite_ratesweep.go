package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// rateSweep measures latency under load across message rates and finds the highest rate each
// message size sustains without a drop (papers 000, 001, 002).
func (r *Runner) rateSweep(ctx context.Context, stack tsv1.Stack, s *tsv1.RateSweepSpec) *tsv1.RateSweepResult {
	res := &tsv1.RateSweepResult{ReceiveBufferBytes: s.ReceiveBufferBytes}
	for _, size := range s.MessageSizes {
		best := tsv1.SustainedRate{Protocol: s.Protocol, MessageSize: size}
		stillSustained := true
		for _, rate := range s.RatesMps {
			if ctx.Err() != nil {
				res.Error = joinErr(res.Error, ctx.Err().Error())
				return res
			}
			row := tsv1.RateRow{Protocol: s.Protocol, MessageSize: size, TargetMps: rate}
			var run clientOutcome
			var runErr error
			var counters *ReflectorCounters
			// Each attempt gets a fresh reflector, so its gap count covers that attempt only.
			err := r.retry(fmt.Sprintf("rateSweep %s %d B at %d msg/s", stack, size, rate), func() error {
				var err error
				counters, err = r.withServer(stack, s.Protocol, true, s.ReceiveBufferBytes, func(port int) error {
					args := append(r.target(s.Protocol, port), "-m", strconv.Itoa(int(size)), "-t", strconv.Itoa(int(s.DurationSeconds)),
						"--mps", strconv.FormatInt(rate, 10), "--reply-every", strconv.Itoa(int(s.ReplyEvery)))
					run, runErr = r.clientRun(ctx, stack, s.DurationSeconds, "ul", args...)
					return nil
				})
				if err != nil {
					return err
				}
				return runErr
			})
			if res.Buffering == nil {
				res.Buffering = bufferingOf(counters)
			}
			rep := run.rep
			if err != nil && (counters == nil || rep == nil || rep.ValidSent == 0) {
				// Not measured: it cannot count as sustained either.
				res.Error = joinErr(res.Error, fmt.Sprintf("%d B at %d msg/s: %v", size, rate, err))
				stillSustained = false
				continue
			}
			// A run whose replies all went missing still measured a rate that was not sustained.
			row.Sent = rep.ValidSent
			if rep.ValidRunNs > 0 {
				row.AchievedMps = rep.ValidSent * 1000000000 / rep.ValidRunNs
			}
			row.Dropped = rep.Dropped + counters.GapDropped
			if runErr != nil && row.Dropped == 0 {
				row.Dropped = rep.ValidSent / int64(s.ReplyEvery)
			}
			row.LatencyStats = ComputeStats(latencies(run.rows))
			row.Stalls = r.stallReport(stack, run, row.P999Ns, counters)
			row.Sustained = row.Dropped == 0 && row.AchievedMps*100 >= rate*95
			res.Rows = append(res.Rows, row)
			if stillSustained && row.Sustained {
				best.Mps = rate
			} else {
				stillSustained = false
			}
			r.logf("rateSweep %s %d B at %d msg/s: achieved %d, dropped %d, median %s us, %s", stack, size, rate, row.AchievedMps, row.Dropped, judge.FormatNanosAsMicros(row.MedianNs), judge.StallSummary(row.Stalls))
		}
		// every rate sustained: the sweep found its bound, not the limit
		best.LimitReached = stillSustained && best.Mps > 0 && best.Mps == slices.Max(s.RatesMps)
		res.MaxSustained = append(res.MaxSustained, best)
	}
	return res
}
