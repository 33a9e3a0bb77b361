package judge

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// FormatNanosAsMicros renders nanoseconds as microseconds with three decimals ("8.638").
func FormatNanosAsMicros(ns int64) string {
	sign := ""
	if ns < 0 {
		sign = "-"
		ns = -ns
	}
	return fmt.Sprintf("%s%d.%03d", sign, ns/1000, ns%1000)
}

// FormatGainPercent renders a T2TGainPercent as the status holds it: one decimal ("23.4").
func FormatGainPercent(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// ReceiveBufferLabel names a requested receive buffer (0: the socket's default) in the log and
// in the errors of a microburst row.
func ReceiveBufferLabel(rcvbuf int64) string {
	if rcvbuf == 0 {
		return "SO_RCVBUF default"
	}
	return fmt.Sprintf("SO_RCVBUF %d", rcvbuf)
}

// MicroburstError joins the errors of a microburst result's rows, each with its receive buffer
// ("" when every row completed).
func MicroburstError(m *tsv1.MicroburstResult) string {
	var errs []string
	for _, row := range m.Rows {
		if row.Error != "" {
			errs = append(errs, ReceiveBufferLabel(row.ReceiveBufferBytes)+": "+row.Error)
		}
	}
	return strings.Join(errs, "; ")
}

// TickToTradeLine is a row of paper 004's tick-to-trade table: its name and its value in a rate's
// row of results.
type TickToTradeLine struct {
	Name  string
	Value func(tsv1.TickToTradeRow) int64
}

// TickToTradeLines are the rows of paper 004's table, in its order: BUY (mean tick-to-trade),
// SELL (mean BUY fill -> SELL at the exchange), SD B and SD S (their standard deviations).
func TickToTradeLines() []TickToTradeLine {
	return []TickToTradeLine{
		{"BUY", func(r tsv1.TickToTradeRow) int64 { return r.TickToTrade.MeanNs }},
		{"SELL", func(r tsv1.TickToTradeRow) int64 { return r.Sell.MeanNs }},
		{"SD B", func(r tsv1.TickToTradeRow) int64 { return r.TickToTrade.StdDevNs }},
		{"SD S", func(r tsv1.TickToTradeRow) int64 { return r.Sell.StdDevNs }},
	}
}

// WriteTickToTradeTable prints paper 004's table for one stack: rows BUY (mean tick-to-trade),
// SELL (mean BUY fill -> SELL at the exchange), SD B, SD S, in microseconds; one column per rate,
// highest first, as the paper's; then a blank line.
func WriteTickToTradeTable(w io.Writer, stack string, rows []tsv1.TickToTradeRow) error {
	rs := append([]tsv1.TickToTradeRow(nil), rows...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].RateMps > rs[j].RateMps })
	var b strings.Builder
	fmt.Fprintf(&b, "tick-to-trade, %s stack (us; columns: market data msg/s)\n", stack)
	fmt.Fprintf(&b, "%-6s", "")
	for _, r := range rs {
		fmt.Fprintf(&b, " %10d", r.RateMps)
	}
	b.WriteString("\n")
	for _, l := range TickToTradeLines() {
		fmt.Fprintf(&b, "%-6s", l.Name)
		for _, r := range rs {
			fmt.Fprintf(&b, " %10s", FormatNanosAsMicros(l.Value(r)))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
