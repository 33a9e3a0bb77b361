package bench

import (
	"context"
	"fmt"
	"strconv"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// pingPong measures the half round trip by protocol and message size (papers 000, 001).
func (r *Runner) pingPong(ctx context.Context, stack tsv1.Stack, s *tsv1.PingPongSpec) *tsv1.PingPongResult {
	res := &tsv1.PingPongResult{}
	for _, proto := range s.Protocols {
		for _, size := range s.MessageSizes {
			if ctx.Err() != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", proto, ctx.Err()))
				break
			}
			row, sorted, err := r.pingPongRow(ctx, stack, proto, size, s.DurationSeconds)
			if err != nil {
				// the protocol's later sizes would fail the same way (e.g. multicast on the bypass)
				res.Error = joinErr(res.Error, fmt.Sprintf("%s: %d B: %v", proto, size, err))
				break
			}
			res.Rows = append(res.Rows, row)
			if res.Curve == nil && proto == s.Protocols[0] {
				res.Curve = &tsv1.PercentileCurve{Protocol: proto, MessageSize: size, Points: ComputeCurve(sorted)}
			}
			r.logf("pingPong %s %s %d B: median %s us p99 %s us, %s", stack, proto, size,
				judge.FormatNanosAsMicros(row.MedianNs), judge.FormatNanosAsMicros(row.P99Ns), judge.StallSummary(row.Stalls))
		}
	}
	MarkFewSamples(res.Rows)
	return res
}

// pingPongRow measures one protocol and size against a reflector server of its own, so that the
// server's stack counters are this row's. It returns the row and its latencies, sorted.
func (r *Runner) pingPongRow(ctx context.Context, stack tsv1.Stack, proto tsv1.Protocol, size, seconds int32) (tsv1.PingPongRow, []int64, error) {
	var run clientOutcome
	refl, err := r.withServer(stack, proto, false, 0, func(port int) error {
		args := append(r.target(proto, port), "-m", strconv.Itoa(int(size)), "-t", strconv.Itoa(int(seconds)))
		return r.retry(fmt.Sprintf("pingPong %s %s %d B", stack, proto, size), func() (err error) {
			run, err = r.clientRun(ctx, stack, seconds, "pp", args...)
			return err
		})
	})
	if err != nil {
		return tsv1.PingPongRow{}, nil, err
	}
	samples := latencies(run.rows)
	st := ComputeStats(samples)
	return tsv1.PingPongRow{Protocol: proto, MessageSize: size, LatencyStats: st, Dropped: run.rep.Dropped,
		Stalls: r.stallReport(stack, run, st.P999Ns, refl)}, samples, nil
}
