package bench

import (
	"context"
	"fmt"
	"strconv"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// pingPong measures the half round trip by protocol and message size (papers 000, 001).
func (r *Runner) pingPong(ctx context.Context, stack tsv1.Stack, s *tsv1.PingPongSpec) *tsv1.PingPongResult {
	res := &tsv1.PingPongResult{}
	for _, proto := range s.Protocols {
		_, err := r.withServer(stack, proto, false, func(port int) error {
			for _, size := range s.MessageSizes {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				args := append(r.target(proto, port), "-m", strconv.Itoa(int(size)), "-t", strconv.Itoa(int(s.DurationSeconds)))
				var rep *SockperfClientReport
				var samples []int64
				err := r.retry(fmt.Sprintf("pingPong %s %s %d B", stack, proto, size), func() (err error) {
					rep, samples, err = r.clientRun(ctx, stack, s.DurationSeconds, "pp", args...)
					return err
				})
				if err != nil {
					return fmt.Errorf("%d B: %w", size, err)
				}
				st := ComputeStats(samples)
				res.Rows = append(res.Rows, tsv1.PingPongRow{Protocol: proto, MessageSize: size, LatencyStats: st, Dropped: rep.Dropped})
				if res.Curve == nil && proto == s.Protocols[0] {
					res.Curve = &tsv1.PercentileCurve{Protocol: proto, MessageSize: size, Points: ComputeCurve(samples)}
				}
				r.logf("pingPong %s %s %d B: median %s us p99 %s us", stack, proto, size, FormatNanosAsMicros(st.MedianNs), FormatNanosAsMicros(st.P99Ns))
			}
			return nil
		})
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", proto, err))
		}
	}
	return res
}
