package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	"github.com/tickstack/tickstack/internal/bench/judge"
)

// WriteText prints one node's results as plain-text tables in the papers' shapes (for
// `tickstack bench` and CI logs): latencies in microseconds with three decimals.
func WriteText(w io.Writer, n NodeResults) error {
	if n.Results == nil {
		return fmt.Errorf("report: node %q has no results", n.Node)
	}
	r := n.Results
	node := n.Node
	if node == "" {
		node = r.Node
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	heading := func(s string) {
		tw.Flush()
		fmt.Fprintf(w, "\n%s\n", s)
	}
	// notes print the stall notes of a table under it, one a line.
	notes := func(ns []string) {
		tw.Flush()
		for _, n := range ns {
			fmt.Fprintf(w, "  stalls: %s\n", n)
		}
	}
	fmt.Fprintf(w, "node %s: %s to %s\n", node, r.StartTime.UTC().Format("2006-01-02 15:04:05"), r.CompletionTime.UTC().Format("15:04:05 MST"))
	if p := r.Path; p != nil {
		via := ""
		if p.Interface != "" {
			via = " on " + p.Interface
		}
		fmt.Fprintf(w, "path: %s%s to reflector %s\n", p.ClientAddress, via, p.ReflectorAddress)
	}
	if v := n.Verdict; v != nil {
		fmt.Fprintf(w, "verdict: %s\n", v.Result)
		for _, c := range v.Reasons {
			if c.Result != tsv1.VerdictPassed {
				fmt.Fprintf(w, "  %s %s: %s\n", c.Result, c.Name, c.Message)
			}
		}
	}
	us := judge.FormatNanosAsMicros
	stats := func(s tsv1.LatencyStats) []string {
		return []string{fmt.Sprint(s.Samples), us(s.MinNs), us(s.MedianNs), us(s.MeanNs), us(s.P95Ns), us(s.P99Ns), us(s.P999Ns), us(s.MaxNs), us(s.StdDevNs)}
	}
	statHead := []string{"samples", "min", "median", "mean", "p95", "p99", "p99.9", "max", "std-dev"}
	for _, st := range r.Stacks {
		if st.Unavailable != "" {
			heading(fmt.Sprintf("%s stack unavailable: %s", st.Stack, st.Unavailable))
			continue
		}
		if p := st.PingPong; p != nil {
			heading(fmt.Sprintf("pingPong, %s stack: half round trip (us)", st.Stack))
			head := append([]string{"protocol", "size"}, append(statHead, "dropped", "stalls")...)
			if st.Stack == tsv1.StackBypass {
				head = append(head, "max check")
			}
			line(head...)
			for _, row := range p.Rows {
				cells := append([]string{string(row.Protocol), fmt.Sprint(row.MessageSize)}, append(stats(row.LatencyStats), fmt.Sprint(row.Dropped), StallCount(row.Stalls))...)
				if st.Stack == tsv1.StackBypass {
					cells = append(cells, MaxCheckCell(row.LatencyStats))
				}
				line(cells...)
			}
			notes(PingPongStallNotes(st.Stack, p.Rows))
			if p.Error != "" {
				heading("  incomplete: " + p.Error)
			}
		}
		if rs := st.RateSweep; rs != nil {
			heading(fmt.Sprintf("rateSweep, %s stack: latency under load (us)", st.Stack))
			bypass := st.Stack == tsv1.StackBypass
			fmt.Fprintf(w, "receive buffer: %s\n", BufferingText(rs.ReceiveBufferBytes, rs.Buffering, bypass))
			for _, n := range BufferingNotes(rs.ReceiveBufferBytes, rs.Buffering, bypass) {
				fmt.Fprintf(w, "  buffers: %s\n", n)
			}
			line(append([]string{"protocol", "size", "target/s", "achieved/s", "sent", "dropped", "sustained"}, append(statHead, "stalls")...)...)
			for _, row := range rs.Rows {
				line(append([]string{string(row.Protocol), fmt.Sprint(row.MessageSize), fmt.Sprint(row.TargetMps), fmt.Sprint(row.AchievedMps),
					fmt.Sprint(row.Sent), fmt.Sprint(row.Dropped), yesNo(row.Sustained)}, append(stats(row.LatencyStats), StallCount(row.Stalls))...)...)
			}
			notes(RateStallNotes(st.Stack, rs.Rows))
			tw.Flush()
			for _, m := range rs.MaxSustained {
				bound := ""
				if m.LimitReached {
					bound = " (the sweep's highest rate: the real limit is higher)"
				}
				fmt.Fprintf(w, "highest rate sustained without drops, %s %d B: %s msg/s%s\n", m.Protocol, m.MessageSize, judge.FormatSearched(m.Mps, m.LimitReached), bound)
			}
			if rs.Error != "" {
				fmt.Fprintf(w, "  incomplete: %s\n", rs.Error)
			}
		}
		if m := st.Microburst; m != nil {
			bypass := st.Stack == tsv1.StackBypass
			heading(fmt.Sprintf("microburst, %s stack: %d B messages, bursts 100 ms apart, by the reflector's receive buffer (bytes)", st.Stack, m.MessageSize))
			line(append(BufferingHead(bypass), "largest burst", fmt.Sprintf("burst time at %d Mb/s (us)", m.LinkSpeedMbps), "trials (burst:dropped)")...)
			var bufNotes []string
			bound := false
			for _, row := range m.Rows {
				line(append(BufferingCells(row.ReceiveBufferBytes, row.Buffering, bypass),
					judge.FormatSearched(row.MaxBurstPackets, row.LimitReached), us(row.BurstTimeNs), TrialsCell(row.Trials))...)
				bufNotes = append(bufNotes, BufferingNotes(row.ReceiveBufferBytes, row.Buffering, bypass)...)
				bound = bound || row.LimitReached
			}
			tw.Flush()
			if bound {
				fmt.Fprintln(w, "  at least N: the search's bound: every burst tried was absorbed, the real limit is higher")
			}
			for _, n := range bufNotes {
				fmt.Fprintf(w, "  buffers: %s\n", n)
			}
			if e := judge.MicroburstError(m); e != "" {
				fmt.Fprintf(w, "  incomplete: %s\n", e)
			}
		}
		if mb := st.MixedBurst; mb != nil {
			heading(fmt.Sprintf("mixedBurst, %s stack: 2/3 at %d B, 1/3 at %d B, one-second bursts every other second (us)", st.Stack, mb.SmallSize, mb.LargeSize))
			line("steady/s", "burst/s", "sent", "dropped", "average", "p99", "std-dev", "stalls")
			for _, row := range mb.Rows {
				line(fmt.Sprint(row.SteadyMps), fmt.Sprint(row.BurstMps), fmt.Sprint(row.Sent), fmt.Sprint(row.Dropped), us(row.MeanNs), us(row.P99Ns), us(row.StdDevNs), StallCount(row.Stalls))
			}
			notes(MixedStallNotes(st.Stack, mb.Rows))
			if mb.Error != "" {
				heading("  incomplete: " + mb.Error)
			}
		}
		if t := st.TickToTrade; t != nil {
			tw.Flush()
			writeTickToTradeText(w, tw, line, st.Stack, t, stats)
		}
	}
	if b := n.TickToTradeBaseline; b != nil {
		tw.Flush()
		heading(fmt.Sprintf("tick-to-trade, tuned vs untuned: %s", BaselineSource(b)))
		if len(b.Rows) > 0 {
			line("stack", "rate/s", "baseline stack", "untuned mean", "tuned mean", "gain %", "untuned median", "tuned median", "gain %", "untuned p99", "tuned p99", "gain %")
			for _, g := range b.Rows {
				line(string(g.Stack), fmt.Sprint(g.RateMps), string(g.BaselineStack), us(g.BaselineMeanNs), us(g.MeanNs), g.MeanGainPercent,
					us(g.BaselineMedianNs), us(g.MedianNs), g.MedianGainPercent, us(g.BaselineP99Ns), us(g.P99Ns), g.P99GainPercent)
			}
			tw.Flush()
		}
		if b.Message != "" {
			fmt.Fprintf(w, "  %s\n", b.Message)
		}
	}
	if cmp := judge.CompareStacks(r); len(cmp) > 0 {
		heading("kernel vs bypass (us)")
		line("suite", "row", "kernel median", "bypass median", "speedup", "kernel p99", "bypass p99", "speedup")
		for _, c := range cmp {
			row := string(c.Protocol)
			if c.MessageSize != 0 {
				row += fmt.Sprintf(" %d B", c.MessageSize)
			}
			if c.TargetMps != 0 {
				row += fmt.Sprintf(" at %d/s", c.TargetMps)
			}
			if c.SteadyMps != 0 {
				row += fmt.Sprintf(" %d+%d/s", c.SteadyMps, c.BurstMps)
			}
			line(string(c.Suite), row, us(c.KernelMedianNs), us(c.BypassMedianNs), c.MedianSpeedup+"x", us(c.KernelP99Ns), us(c.BypassP99Ns), c.P99Speedup+"x")
		}
	}
	if j := r.Jitter; j != nil {
		heading("jitter (us)")
		line(append([]string{"tool", "cpu"}, statHead...)...)
		for _, row := range j.Rows {
			line(append([]string{string(row.Tool), fmt.Sprint(row.CPU)}, stats(row.LatencyStats)...)...)
		}
		if j.Error != "" {
			heading("  incomplete: " + j.Error)
		}
	}
	if p := r.PTP; p != nil {
		heading(fmt.Sprintf("ptp: ptp4l's |offset from master| through %s, domain %d, read every %d ms (us)", p.Socket, p.Domain, p.IntervalMillis))
		line("samples", "not SLAVE", "failed", "median", "p99", "max", "signed min", "signed max", "path delay", "port states")
		line(fmt.Sprint(p.Samples), fmt.Sprint(p.NotSlaveSamples), fmt.Sprint(p.FailedReads), us(p.Offset.MedianNs), us(p.Offset.P99Ns), us(p.Offset.MaxNs),
			us(p.MinOffsetNs), us(p.MaxOffsetNs), us(p.MedianPathDelayNs), PTPStates(p))
		tw.Flush()
		if so := p.SystemOffset; so != nil {
			fmt.Fprintf(w, "  system clock |offset| (the agent's, %d samples): median %s us, p99 %s us, max %s us\n", so.Samples, us(so.MedianNs), us(so.P99Ns), us(so.MaxNs))
		}
		if p.LastFailure != "" {
			fmt.Fprintf(w, "  last failed read: %s\n", p.LastFailure)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "  incomplete: %s\n", p.Error)
		}
	}
	if q := r.Qualify; q != nil {
		writeQualifyText(w, q)
	}
	return tw.Flush()
}

// writeQualifyText prints the qualify suite's verdict with the findings behind it (the whole report
// is in the results: -o json, or tickstack qualify on the node).
func writeQualifyText(w io.Writer, q *tsv1.QualifyReport) {
	fmt.Fprintf(w, "qualify %s: %s (driver %s %s, firmware %s; receive queues %d; XDP native %s, zero-copy %s; hardware timestamps %s)\n",
		q.Interface, q.Verdict, q.Driver, q.DriverVersion, dash(q.Firmware), q.Queues.ReceiveQueues, yesNo(q.XDP.Native.Works), yesNo(q.XDP.ZeroCopy.Works),
		yesNo(q.Timestamping.HardwareRX && q.Timestamping.HardwareTX))
	passed := 0
	for _, c := range q.Conformance {
		if c.Passed {
			passed++
		}
	}
	if len(q.Conformance) > 0 {
		fmt.Fprintf(w, "  conformance: %d of %d cases as the kernel\n", passed, len(q.Conformance))
	}
	for _, p := range q.PingPong {
		if p.Error != "" {
			fmt.Fprintf(w, "  ping-pong %s: not measured: %s\n", p.Stack, p.Error)
		} else {
			fmt.Fprintf(w, "  ping-pong %s, UDP %d B: median %s us, p99 %s us\n", p.Stack, p.MessageSize, us(p.MedianNs), us(p.P99Ns))
		}
	}
	if q.Error != "" {
		fmt.Fprintf(w, "  could not run: %s\n", q.Error)
	}
	for _, r := range q.Reasons {
		fmt.Fprintf(w, "  - %s (%s): %s\n", r.Check, r.Verdict, r.Message)
	}
}

// writeTickToTradeText prints one stack's tickToTrade suite: paper 004's table (BUY, SELL, SD B,
// SD S by rate), every tick's accounting and the path each leg took, then the distributions.
func writeTickToTradeText(w io.Writer, tw *tabwriter.Writer, line func(...string), stack tsv1.Stack, t *tsv1.TickToTradeResult, stats func(tsv1.LatencyStats) []string) {
	feed := fmt.Sprintf("%d B ticks", t.MessageSize)
	if t.Mix == tsv1.TickMixSeed003 {
		feed = "paper 003's mix of 100 B and 600 B ticks"
	}
	fmt.Fprintf(w, "\ntickToTrade, %s stack: %s, a BUY every %d ticks, each filled and closed by a SELL\n", stack, feed, t.OrderEvery)
	if len(t.Rows) > 0 {
		_ = judge.WriteTickToTradeTable(w, string(stack), t.Rows)
		line("rate/s", "burst/s", "achieved/s", "ticks sent", "received", "lost", "out of seq", "orders", "unfilled", "exchange", "market data", "orders via", "accounted")
		for _, row := range t.Rows {
			line(fmt.Sprint(row.RateMps), fmt.Sprint(row.BurstMps), fmt.Sprint(row.AchievedMps), fmt.Sprint(row.TicksSent), fmt.Sprint(row.TicksReceived),
				fmt.Sprint(row.TicksLost), fmt.Sprint(row.TicksOutOfSequence), fmt.Sprint(row.Orders), fmt.Sprint(row.OrdersUnfilled), fmt.Sprint(row.ExchangeOrders),
				dash(string(row.MarketDataPath)), dash(string(row.OrderPath)), yesNo(len(row.Unaccounted) == 0))
		}
		tw.Flush()
		fmt.Fprintf(w, "\ntickToTrade, %s stack: latencies (us)\n", stack)
		line("rate/s", "measure", "samples", "min", "median", "mean", "p95", "p99", "p99.9", "max", "std-dev")
		for _, row := range t.Rows {
			for _, m := range TickToTradeMeasures(row) {
				line(append([]string{fmt.Sprint(row.RateMps), m.Name}, stats(m.Stats)...)...)
			}
		}
		tw.Flush()
		for _, row := range t.Rows {
			for _, u := range row.Unaccounted {
				fmt.Fprintf(w, "  unaccounted at %d msg/s: %s\n", row.RateMps, u)
			}
		}
	}
	if t.Error != "" {
		fmt.Fprintf(w, "  incomplete: %s\n", t.Error)
	}
}

// TickToTradeMeasure is one named distribution of a tickToTrade row.
type TickToTradeMeasure struct {
	Name  string
	Stats tsv1.LatencyStats
}

// TickToTradeMeasures lists a row's distributions in the order the tables show them.
func TickToTradeMeasures(row tsv1.TickToTradeRow) []TickToTradeMeasure {
	return []TickToTradeMeasure{
		{"tick-to-trade", row.TickToTrade},
		{"in-application", row.InApplication},
		{"order->fill", row.OrderToFill},
		{"fill->SELL", row.Sell},
	}
}

// BaselineSource names the baseline measurement of a tuned vs untuned comparison.
func BaselineSource(b *tsv1.TickToTradeComparison) string {
	s := "baseline LatencyBenchmark " + b.Benchmark
	if b.Run != 0 {
		s += fmt.Sprintf(" run %d", b.Run)
	}
	if b.Node != "" {
		s += ", node " + b.Node
	}
	return s + " (gain: how much lower than the baseline, in percent of it)"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PTPStates lists the port states a ptp table saw with their counts, "SLAVE:58,UNCALIBRATED:2"
// ("-" when none was read).
func PTPStates(p *tsv1.PTPResult) string {
	var out []string
	for _, s := range p.PortStates {
		out = append(out, fmt.Sprintf("%s:%d", s.State, s.Samples))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
