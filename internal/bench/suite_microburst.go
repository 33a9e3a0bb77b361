package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// microburst finds the largest back-to-back burst absorbed without a drop, doubling then
// bisecting the burst length (paper 002).
func (r *Runner) microburst(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec) *tsv1.MicroburstResult {
	res := &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: s.MessageSize, LinkSpeedMbps: s.LinkSpeedMbps}
	trial := func(n int64) (bool, error) {
		var rep *SockperfClientReport
		var counters *ReflectorCounters
		err := r.retry(fmt.Sprintf("microburst %s %d x %d B", stack, n, s.MessageSize), func() (err error) {
			counters, err = r.burstTrial(ctx, stack, s, n, &rep)
			return err
		})
		if err != nil {
			return false, err
		}
		t := tsv1.BurstTrial{Packets: n, Sent: rep.MessagesSent, Bursts: rep.MessagesSent / n}
		// Gap detection sees every loss followed by a later message; a loss at the very end of the
		// last burst only shows as fewer messages received (the count includes warm-up messages).
		t.Dropped = max(counters.GapDropped, rep.MessagesSent-counters.Received, 0)
		res.Trials = append(res.Trials, t)
		r.logf("microburst %s %d x %d B: sent %d, dropped %d", stack, n, s.MessageSize, t.Sent, t.Dropped)
		return t.Dropped == 0 && t.Sent > 0, nil
	}
	var lo, hi int64 // largest burst absorbed, smallest burst that dropped (0: none yet)
	n := min(int64(64), s.MaxBurstPackets)
	for i := int32(0); i < s.MaxTrials; i++ {
		if ctx.Err() != nil {
			res.Error = ctx.Err().Error()
			break
		}
		if hi != 0 {
			if hi-lo <= max(1, lo/32) {
				break
			}
			n = (lo + hi) / 2
		}
		ok, err := trial(n)
		if err != nil {
			res.Error = fmt.Sprintf("burst of %d: %v", n, err)
			break
		}
		switch {
		case ok && hi == 0 && n >= s.MaxBurstPackets:
			lo = n
			res.LimitReached = true
		case ok:
			lo = n
			if hi == 0 {
				n = min(n*2, s.MaxBurstPackets)
			}
		default:
			hi = n
		}
		if res.LimitReached {
			break
		}
	}
	// every burst tried was absorbed (the bound, or the trials ran out first): a lower bound
	if hi == 0 && lo > 0 {
		res.LimitReached = true
	}
	res.MaxBurstPackets = lo
	res.BurstTimeNs = BurstTimeNs(s.MessageSize, lo, s.LinkSpeedMbps)
	return res
}

// burstTrial sends bursts of n messages against a fresh gap-detecting reflector and returns the
// reflector's counters; *rep receives the client's report.
func (r *Runner) burstTrial(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec, n int64, rep **SockperfClientReport) (*ReflectorCounters, error) {
	return r.withServer(stack, tsv1.ProtocolUDP, true, 0, func(port int) error {
		sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
		if err != nil {
			return err
		}
		args := append([]string{"tp"}, r.target(tsv1.ProtocolUDP, port)...)
		args = append(args, "-m", strconv.Itoa(int(s.MessageSize)), "-t", strconv.Itoa(int(s.TrialSeconds)),
			"-b", strconv.FormatInt(n, 10), "--mps", strconv.FormatInt(n*BurstsPerSecond, 10))
		cmd, err := r.Tools.command(ctx, stack, r.CPUs, sp, args...)
		if err != nil {
			return err
		}
		r.logf("%s", strings.Join(cmd.Args, " "))
		out, err := runTool(ctx, cmd, time.Duration(s.TrialSeconds)*time.Second+60*time.Second)
		if err != nil {
			if rp, perr := ParseSockperfClient(out); perr != nil && len(rp.Errors) > 0 {
				return perr
			}
			return err
		}
		rp, err := ParseSockperfClient(out)
		if rp != nil && rp.Version != "" {
			r.noteTool("sockperf " + rp.Version)
		}
		if errors.Is(err, ErrNoSummary) {
			return fmt.Errorf("%w; its output ends: %s", err, tail(out, 300))
		}
		*rep = rp
		return err
	})
}
