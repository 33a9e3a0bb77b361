package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// mixedSize is the size of message i of a mixedBurst playback: two small, then one large.
func mixedSize(i int64, small, large int32) int32 {
	if i%3 == 2 {
		return large
	}
	return small
}

// WritePlayback writes a sockperf playback file (--data-file: "seconds, size" a line) for paper
// 003's pattern: steadyMps all the time plus burstMps during every second second, messages evenly
// spaced within each second, sizes cycling small, small, large (2/3 and 1/3). It returns the
// number of messages.
func WritePlayback(path string, p tsv1.MixedBurstPattern, seconds int32, small, large int32) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("creating playback file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var i int64
	const start = 1.0 // sockperf starts the timeline after its warm-up
	for sec := int32(0); sec < seconds; sec++ {
		rate := p.SteadyMps
		if sec%2 == 1 {
			rate += p.BurstMps
		}
		for k := int64(0); k < rate; k++ {
			// Integer nanoseconds keep the timeline exact.
			ns := int64(sec)*1000000000 + k*1000000000/rate
			t := start + float64(ns)/1e9
			if _, err := fmt.Fprintf(w, "%.9f, %d\n", t, mixedSize(i, small, large)); err != nil {
				f.Close()
				return 0, fmt.Errorf("writing playback file: %w", err)
			}
			i++
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, fmt.Errorf("writing playback file: %w", err)
	}
	return i, f.Close()
}

// mixedBurst plays paper 003's mixed-size pattern: a steady rate plus one-second bursts.
func (r *Runner) mixedBurst(ctx context.Context, stack tsv1.Stack, s *tsv1.MixedBurstSpec) *tsv1.MixedBurstResult {
	res := &tsv1.MixedBurstResult{Protocol: tsv1.ProtocolUDP, SmallSize: s.SmallSize, LargeSize: s.LargeSize}
	for _, p := range s.Patterns {
		if ctx.Err() != nil {
			res.Error = joinErr(res.Error, ctx.Err().Error())
			return res
		}
		label := fmt.Sprintf("%d+%d msg/s", p.SteadyMps, p.BurstMps)
		pb := filepath.Join(r.WorkDir, fmt.Sprintf("playback-%d-%d.csv", p.SteadyMps, p.BurstMps))
		total, err := WritePlayback(pb, p, s.DurationSeconds, s.SmallSize, s.LargeSize)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		var run clientOutcome
		var counters *ReflectorCounters
		err = r.retry(fmt.Sprintf("mixedBurst %s %s", stack, label), func() (err error) {
			counters, err = r.withServer(stack, tsv1.ProtocolUDP, true, 0, func(port int) error {
				args := append(r.target(tsv1.ProtocolUDP, port), "--data-file", pb, "--reply-every", strconv.Itoa(int(s.ReplyEvery)))
				var err error
				run, err = r.clientRun(ctx, stack, s.DurationSeconds, "pb", args...)
				return err
			})
			return err
		})
		os.Remove(pb)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		rep, rows := run.rep, run.rows
		// Sent counts the whole playback ([Total Run]); sockperf's measured window may leave the
		// last few messages out of the samples.
		row := tsv1.MixedBurstRow{SteadyMps: p.SteadyMps, BurstMps: p.BurstMps, Sent: rep.TotalSent, Dropped: rep.Dropped + counters.GapDropped}
		if row.Sent == 0 {
			row.Sent = total
		}
		if s.ReplyEvery == 1 {
			// Every message is timed and its full-log sequence number is its line in the playback
			// file, which says its size.
			var sm, lg []int64
			for _, fr := range rows {
				if mixedSize(fr.Packet, s.SmallSize, s.LargeSize) == s.LargeSize {
					lg = append(lg, fr.LatencyNs)
				} else {
					sm = append(sm, fr.LatencyNs)
				}
			}
			sst, lst := ComputeStats(sm), ComputeStats(lg)
			row.Small, row.Large = &sst, &lst
		}
		row.LatencyStats = ComputeStats(latencies(rows))
		row.Stalls = r.stallReport(stack, run, row.P999Ns, counters)
		res.Rows = append(res.Rows, row)
		r.logf("mixedBurst %s %s: sent %d, dropped %d, mean %s us, p99 %s us, std-dev %s us, %s", stack, label, row.Sent, row.Dropped,
			judge.FormatNanosAsMicros(row.MeanNs), judge.FormatNanosAsMicros(row.P99Ns), judge.FormatNanosAsMicros(row.StdDevNs), judge.StallSummary(row.Stalls))
	}
	return res
}
