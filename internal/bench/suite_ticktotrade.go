package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// t2tStrategyReady is what t2t-strategy prints on stderr once it is logged on to the exchange and
// subscribed to the feed.
const t2tStrategyReady = "t2t-strategy: logged on, subscribed"

// t2tIdleSeconds is the strategy's --idle: it gives up after this long without a tick.
const t2tIdleSeconds = 20

// tickToTrade runs the tick-to-trade rig at each market-data rate (paper 004): the exchange
// simulator and the publisher on the reflector (the venue), the strategy here (the trading host).
// A rate whose run did not complete is recorded in the suite's error; a run that completed with
// ticks or orders unaccounted for is a row whose unaccounted list says so (its check fails).
func (r *Runner) tickToTrade(ctx context.Context, stack tsv1.Stack, s *tsv1.TickToTradeSpec) *tsv1.TickToTradeResult {
	res := &tsv1.TickToTradeResult{Mix: s.Mix, OrderEvery: s.OrderEvery}
	if s.Mix != tsv1.TickMixSeed003 {
		res.MessageSize = s.MessageSize
	}
	if u := r.Reflector.Hello.T2TUnavailable; u != "" {
		res.Error = "reflector side: " + u
		return res
	}
	strategy, err := r.Tools.t2tPath(t2tStrategyName, r.Tools.T2TStrategy)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	r.noteTool("tick-to-trade rig (dataplane/t2t, QuickFIX)")
	for _, rate := range s.RatesMps {
		if ctx.Err() != nil {
			res.Error = joinErr(res.Error, ctx.Err().Error())
			return res
		}
		row, err := r.t2tRun(ctx, stack, s, strategy, rate)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("%d msg/s: %v", rate, err))
			continue
		}
		res.Rows = append(res.Rows, row)
		r.logf("tickToTrade %s at %d msg/s: %d ticks, %d orders, tick-to-trade median %s us p99 %s us, market data on %s, orders on %s%s",
			stack, rate, row.TicksSent, row.Orders, judge.FormatNanosAsMicros(row.TickToTrade.MedianNs), judge.FormatNanosAsMicros(row.TickToTrade.P99Ns),
			orDashStack(row.MarketDataPath), orDashStack(row.OrderPath), unaccountedNote(row.Unaccounted))
	}
	return res
}

func orDashStack(s tsv1.Stack) string {
	if s == "" {
		return "-"
	}
	return string(s)
}

func unaccountedNote(u []string) string {
	if len(u) == 0 {
		return ""
	}
	return "; UNACCOUNTED: " + strings.Join(u, "; ")
}

// t2tRun is one run of the rig at one rate.
func (r *Runner) t2tRun(ctx context.Context, stack tsv1.Stack, s *tsv1.TickToTradeSpec, strategy string, rate int64) (tsv1.TickToTradeRow, error) {
	var row tsv1.TickToTradeRow
	exPort, feedPort := r.port(), r.port()
	// The exchange waits for the logon and then the logout: the whole run plus the strategy's
	// fill and logout waits.
	exID, err := r.Reflector.StartT2TExchange(T2TExchangeSpec{Port: exPort, TimeoutSeconds: s.DurationSeconds + 180})
	if err != nil {
		return row, fmt.Errorf("starting the exchange simulator: %w", err)
	}
	collected := false
	defer func() {
		if !collected {
			_, _ = r.Reflector.CollectT2T(exID, 0)
		}
	}()

	args := []string{"--every", strconv.Itoa(int(s.OrderEvery)), "--if", r.LocalAddress, "--idle", strconv.Itoa(t2tIdleSeconds),
		r.group(), strconv.Itoa(feedPort), r.Reflector.Hello.DataAddress, strconv.Itoa(exPort)}
	cmd, err := r.Tools.command(ctx, stack, r.CPUs, strategy, args...)
	if err != nil {
		return row, err
	}
	// On the bypass stack, the counters at exit say which path each leg took.
	statsDir, err := withStatsDir(cmd, stack, r.WorkDir, "t2t-stats-*")
	if err != nil {
		return row, err
	}
	if statsDir != "" {
		defer os.RemoveAll(statsDir)
	}
	var stdout, stderr SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r.logf("%s", strings.Join(cmd.Args, " "))
	if err := cmd.Start(); err != nil {
		return row, fmt.Errorf("starting t2t-strategy: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var stratErr error
	finished := false
	wait := func(d time.Duration) bool {
		if finished {
			return true
		}
		select {
		case stratErr = <-done:
			finished = true
		case <-time.After(d):
		}
		return finished
	}
	defer func() {
		if !finished {
			_ = cmd.Cancel()
			if !wait(10 * time.Second) {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				wait(time.Minute)
			}
		}
	}()
	// Logged on and subscribed (the join is made before the logon) before the first tick.
	deadline := time.Now().Add(45 * time.Second)
	for !strings.Contains(stderr.String(), t2tStrategyReady) {
		if wait(20 * time.Millisecond) {
			return row, fmt.Errorf("t2t-strategy exited before it was logged on and subscribed (%v): %s", stratErr, tail(stderr.String(), 600))
		}
		if time.Now().After(deadline) {
			return row, fmt.Errorf("t2t-strategy not logged on to the exchange at %s:%d after 45s: %s", r.Reflector.Hello.DataAddress, exPort, tail(stderr.String(), 600))
		}
	}

	pubSpec := T2TPublishSpec{Stack: stack, Group: r.group(), Port: feedPort, RateMps: rate, Seconds: s.DurationSeconds, Mix: s.Mix, BurstMps: s.BurstMps,
		Loop: r.LocalAddress == r.Reflector.Hello.DataAddress}
	if s.Mix != tsv1.TickMixSeed003 {
		pubSpec.Size = s.MessageSize
	}
	pub, perr := r.Reflector.PublishT2T(pubSpec)
	if pub == nil || jsonLine(pub.Stdout) == nil {
		if perr == nil {
			perr = errors.New("it printed no JSON line")
		}
		return row, fmt.Errorf("the publisher: %w", perr)
	}
	// After the end marker the strategy waits up to 30 s for fills and 10 s for the logout.
	if !wait(time.Duration(t2tIdleSeconds+60) * time.Second) {
		return row, fmt.Errorf("t2t-strategy did not finish within %d s of the publisher's end: %s", t2tIdleSeconds+60, tail(stderr.String(), 600))
	}
	strategyLine := jsonLine(stdout.String())
	if strategyLine == nil {
		return row, fmt.Errorf("t2t-strategy printed no JSON line (%v): %s", stratErr, tail(stderr.String(), 600))
	}
	ex, err := r.Reflector.CollectT2T(exID, 30*time.Second)
	collected = true
	if err != nil {
		return row, fmt.Errorf("collecting the exchange simulator's line: %w", err)
	}
	exLine := jsonLine(ex.Stdout)
	if exLine == nil {
		return row, fmt.Errorf("t2t-exchange printed no JSON line (exit code %d): %s", ex.ExitCode, ex.Stderr)
	}
	run, err := ParseT2TRun(string(stack), jsonLine(pub.Stdout), strategyLine, exLine)
	if err != nil {
		return row, err
	}
	row = run.Row()
	row.MarketDataPath, row.OrderPath = tsv1.StackKernel, tsv1.StackKernel
	if stack == tsv1.StackBypass {
		row.MarketDataPath, row.OrderPath = "", ""
		if md, ord, err := T2TPathsFromStats(statsDir, feedPort); err != nil {
			row.Unaccounted = append(row.Unaccounted, "paths: "+err.Error())
		} else {
			row.MarketDataPath, row.OrderPath = md, ord
		}
	}
	return row, nil
}

// T2TPathsFromStats reads the strategy's exit counters (the dumps TICKSTACK_STATS_FILE wrote
// into dir, stackstats.go) and says which path each leg took: the market data is bypass when the
// feed's socket (local port feedPort) received datagrams through the XSK, the orders when a TCP
// connection was carried by the stack. The per-socket lines are read, not the sums
// ParseStackStats makes: the FIX connection's socket counts rx_accel too (in bytes).
func T2TPathsFromStats(dir string, feedPort int) (marketData, orders tsv1.Stack, err error) {
	var rxAccel, conns int64
	suffix := ":" + strconv.Itoa(feedPort)
	err = scanStatsDir(dir, func(first string, fields []string) {
		kv := map[string]string{}
		for _, f := range fields {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		switch first {
		case "sock":
			if strings.HasSuffix(kv["local"], suffix) {
				n, _ := strconv.ParseInt(kv["rx_accel"], 10, 64)
				rxAccel += n
			}
		case "tcp":
			n, _ := strconv.ParseInt(kv["conns_accel"], 10, 64)
			conns += n
		}
	})
	if errors.Is(err, errNoStatsDump) {
		return "", "", fmt.Errorf("the strategy's statistics: %w: the bypass library did not run in it to the end", err)
	}
	if err != nil {
		return "", "", err
	}
	marketData, orders = tsv1.StackKernel, tsv1.StackKernel
	if rxAccel > 0 {
		marketData = tsv1.StackBypass
	}
	if conns > 0 {
		orders = tsv1.StackBypass
	}
	return marketData, orders, nil
}
