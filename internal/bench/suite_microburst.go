package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// microburst finds the largest back-to-back burst absorbed without a drop, doubling then
// bisecting the burst length (paper 002), once per receive buffer size of the spec (one search
// at the socket's default when it names none).
func (r *Runner) microburst(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec) *tsv1.MicroburstResult {
	res := &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: s.MessageSize, LinkSpeedMbps: s.LinkSpeedMbps}
	sizes := s.ReceiveBufferBytes
	if len(sizes) == 0 {
		sizes = []int64{0}
	}
	for _, rcvbuf := range sizes {
		row := r.burstSearch(ctx, stack, s, rcvbuf)
		r.logf("microburst %s %s: %s messages of %d B%s", stack, judge.ReceiveBufferLabel(rcvbuf), judge.FormatSearched(row.MaxBurstPackets, row.LimitReached), s.MessageSize, errSuffix(row.Error))
		res.Rows = append(res.Rows, row)
	}
	return res
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (incomplete: " + e + ")"
}

// burstSearch is one row: the search at one receive buffer size of the reflector's server.
func (r *Runner) burstSearch(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec, rcvbuf int64) tsv1.MicroburstRow {
	row := tsv1.MicroburstRow{ReceiveBufferBytes: rcvbuf}
	trial := func(n int64) (bool, error) {
		var rep *SockperfClientReport
		var counters *ReflectorCounters
		err := r.retry(fmt.Sprintf("microburst %s %d x %d B, %s", stack, n, s.MessageSize, judge.ReceiveBufferLabel(rcvbuf)), func() (err error) {
			counters, err = r.burstTrial(ctx, stack, s, n, rcvbuf, &rep)
			return err
		})
		if row.Buffering == nil {
			row.Buffering = bufferingOf(counters)
		}
		if err != nil {
			return false, err
		}
		t := tsv1.BurstTrial{Packets: n, Sent: rep.MessagesSent, Bursts: rep.MessagesSent / n}
		// Gap detection sees every loss followed by a later message; a loss at the very end of the
		// last burst only shows as fewer messages received (the count includes warm-up messages).
		t.Dropped = max(counters.GapDropped, rep.MessagesSent-counters.Received, 0)
		row.Trials = append(row.Trials, t)
		r.logf("microburst %s %d x %d B, %s: sent %d, dropped %d", stack, n, s.MessageSize, judge.ReceiveBufferLabel(rcvbuf), t.Sent, t.Dropped)
		return t.Dropped == 0 && t.Sent > 0, nil
	}
	// A length that dropped is tried once more and fails only when both trials dropped: one
	// pause of a shared machine during one trial does not end the search there. Both trials are
	// kept in the row.
	absorbed := func(n int64) (bool, error) {
		ok, err := trial(n)
		if ok || err != nil {
			return ok, err
		}
		r.logf("microburst %s %d x %d B, %s: dropped, once more", stack, n, s.MessageSize, judge.ReceiveBufferLabel(rcvbuf))
		return trial(n)
	}
	var lo, hi int64 // largest burst absorbed, smallest burst that dropped (0: none yet)
	n := min(int64(64), s.MaxBurstPackets)
	for i := int32(0); i < s.MaxTrials; i++ {
		if ctx.Err() != nil {
			row.Error = ctx.Err().Error()
			break
		}
		if hi != 0 {
			if hi-lo <= max(1, lo/32) {
				break
			}
			n = (lo + hi) / 2
		}
		ok, err := absorbed(n)
		if err != nil {
			row.Error = fmt.Sprintf("burst of %d: %v", n, err)
			break
		}
		switch {
		case ok && hi == 0 && n >= s.MaxBurstPackets:
			lo = n
			row.LimitReached = true
		case ok:
			lo = n
			if hi == 0 {
				n = min(n*2, s.MaxBurstPackets)
			}
		default:
			hi = n
		}
		if row.LimitReached {
			break
		}
	}
	// every burst tried was absorbed (the bound, or the trials ran out first): a lower bound
	if hi == 0 && lo > 0 {
		row.LimitReached = true
	}
	row.MaxBurstPackets = lo
	row.BurstTimeNs = judge.BurstTimeNs(s.MessageSize, lo, s.LinkSpeedMbps)
	return row
}

// burstTrial sends bursts of n messages against a fresh gap-detecting reflector server with a
// receive buffer of rcvbuf bytes (0: the default) and returns the reflector's counters; *rep
// receives the client's report.
func (r *Runner) burstTrial(ctx context.Context, stack tsv1.Stack, s *tsv1.MicroburstSpec, n, rcvbuf int64, rep **SockperfClientReport) (*ReflectorCounters, error) {
	return r.withServer(stack, tsv1.ProtocolUDP, true, rcvbuf, func(port int) error {
		sp, err := r.Tools.path("sockperf", r.Tools.Sockperf)
		if err != nil {
			return err
		}
		args := append([]string{"tp"}, r.target(tsv1.ProtocolUDP, port)...)
		args = append(args, "-m", strconv.Itoa(int(s.MessageSize)), "-t", strconv.Itoa(int(s.TrialSeconds)),
			"-b", strconv.FormatInt(n, 10), "--mps", strconv.FormatInt(n*judge.BurstsPerSecond, 10))
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
