package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// The tick-to-trade rig (dataplane/t2t, docs/benchmark-methods.md "Tick-to-trade") prints one JSON
// line per program. These types are that format; T2TRun is one run of the three at one rate.

// T2TStats is one latency distribution of the rig, in nanoseconds (nearest-rank percentiles,
// sample standard deviation).
type T2TStats struct {
	Count  int64   `json:"count"`
	Min    int64   `json:"min"`
	Median int64   `json:"median"`
	P95    int64   `json:"p95"`
	P99    int64   `json:"p99"`
	P999   int64   `json:"p999"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
}

// LatencyStats converts the rig's distribution into the results' shape (mean and standard
// deviation rounded to the nanosecond).
func (s T2TStats) LatencyStats() tsv1.LatencyStats {
	return tsv1.LatencyStats{Samples: s.Count, MinNs: s.Min, MedianNs: s.Median, MeanNs: int64(math.Round(s.Mean)),
		P95Ns: s.P95, P99Ns: s.P99, P999Ns: s.P999, MaxNs: s.Max, StdDevNs: int64(math.Round(s.StdDev))}
}

// T2TPublisher is t2t-pub's line.
type T2TPublisher struct {
	Sent       int64   `json:"sent"`
	SendErrors int64   `json:"send_errors"`
	Rate       int64   `json:"rate"`
	Burst      int64   `json:"burst"`
	Mix        string  `json:"mix"`
	Seconds    float64 `json:"seconds"`
	LateMaxNs  int64   `json:"late_max_ns"`
}

// T2TStrategy is t2t-strategy's line.
type T2TStrategy struct {
	OK    bool `json:"ok"`
	Ticks struct {
		Sent          int64 `json:"sent"`
		Received      int64 `json:"received"`
		Lost          int64 `json:"lost"`
		OutOfSequence int64 `json:"out_of_sequence"`
		EndMarker     bool  `json:"end_marker"`
		Bytes         int64 `json:"bytes"`
	} `json:"ticks"`
	Orders struct {
		Sent     int64 `json:"sent"`
		Buy      int64 `json:"buy"`
		Sell     int64 `json:"sell"`
		Unfilled int64 `json:"unfilled"`
		Every    int64 `json:"every"`
	} `json:"orders"`
	FIX struct {
		SeqErrors  int64 `json:"seq_errors"`
		Recovery   int64 `json:"recovery"`
		BadReports int64 `json:"bad_reports"`
		SendErrors int64 `json:"send_errors"`
	} `json:"fix"`
	Latency struct {
		TickToTrade T2TStats `json:"tick_to_trade"`
		InApp       T2TStats `json:"in_app"`
		RoundTrip   T2TStats `json:"round_trip"`
		Sell        T2TStats `json:"sell"`
	} `json:"latency_ns"`
}

// T2TExchange is t2t-exchange's line.
type T2TExchange struct {
	Orders       int64 `json:"orders"`
	Buy          int64 `json:"buy"`
	Sell         int64 `json:"sell"`
	FixSeqErrors int64 `json:"fix_seq_errors"`
	FixRecovery  int64 `json:"fix_recovery"`
	FixLastSeq   int64 `json:"fix_last_seq"`
}

// T2TRun is one run of the rig: the three programs' lines and the stack it ran on.
type T2TRun struct {
	Stack     string
	Publisher T2TPublisher
	Strategy  T2TStrategy
	Exchange  T2TExchange
}

func decodeStrict(name string, b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%s's JSON line: %w", name, err)
	}
	return nil
}

// ParseT2TRun reads the three programs' JSON lines; an unknown field is an error (the rig and this
// parser changed apart).
func ParseT2TRun(stack string, pub, strategy, exchange []byte) (T2TRun, error) {
	r := T2TRun{Stack: stack}
	if err := decodeStrict("t2t-pub", pub, &r.Publisher); err != nil {
		return r, err
	}
	if err := decodeStrict("t2t-strategy", strategy, &r.Strategy); err != nil {
		return r, err
	}
	if err := decodeStrict("t2t-exchange", exchange, &r.Exchange); err != nil {
		return r, err
	}
	return r, nil
}

// Unaccounted lists what the run did not account for, empty when every tick the publisher sent
// was received in sequence, every BUY the rule asked for was sent, filled and closed by a filled
// SELL, the exchange saw each order, and both FIX ends saw their sequence numbers in order.
func (r T2TRun) Unaccounted() []string {
	var out []string
	p, s, x := r.Publisher, r.Strategy, r.Exchange
	if p.SendErrors != 0 {
		out = append(out, fmt.Sprintf("publisher: %d sends failed", p.SendErrors))
	}
	if !s.Ticks.EndMarker {
		out = append(out, "strategy: no end marker (the feed stopped or its end was lost)")
	}
	if s.Ticks.Sent != p.Sent || s.Ticks.Received != p.Sent {
		out = append(out, fmt.Sprintf("ticks: %d published, the end marker says %d, %d received", p.Sent, s.Ticks.Sent, s.Ticks.Received))
	}
	if s.Ticks.Lost != 0 || s.Ticks.OutOfSequence != 0 {
		out = append(out, fmt.Sprintf("ticks: %d lost, %d out of sequence", s.Ticks.Lost, s.Ticks.OutOfSequence))
	}
	if s.Orders.Every > 0 {
		if want := p.Sent / s.Orders.Every; s.Orders.Buy != want {
			out = append(out, fmt.Sprintf("orders: %d BUY filled, the rule asks for %d", s.Orders.Buy, want))
		}
	}
	if s.Orders.Sell != s.Orders.Buy || s.Orders.Unfilled != 0 {
		out = append(out, fmt.Sprintf("orders: %d BUY, %d SELL, %d without a fill", s.Orders.Buy, s.Orders.Sell, s.Orders.Unfilled))
	}
	if x.Orders != s.Orders.Sent || x.Buy != s.Orders.Buy || x.Sell != s.Orders.Sell {
		out = append(out, fmt.Sprintf("exchange: %d orders (%d BUY, %d SELL), the strategy sent %d", x.Orders, x.Buy, x.Sell, s.Orders.Sent))
	}
	if s.FIX.SeqErrors+s.FIX.Recovery+s.FIX.BadReports+s.FIX.SendErrors+x.FixSeqErrors+x.FixRecovery != 0 {
		out = append(out, fmt.Sprintf("FIX: strategy %d sequence errors, %d recovery messages, %d bad reports, %d failed sends; exchange %d sequence errors, %d recovery messages",
			s.FIX.SeqErrors, s.FIX.Recovery, s.FIX.BadReports, s.FIX.SendErrors, x.FixSeqErrors, x.FixRecovery))
	}
	return out
}

// Row is the run as a tickToTrade row of the results, with what it did not account for. The
// paths each leg took are the caller's to set (they come from the stack's counters).
func (r T2TRun) Row() tsv1.TickToTradeRow {
	p, s, x := r.Publisher, r.Strategy, r.Exchange
	row := tsv1.TickToTradeRow{
		RateMps: p.Rate, BurstMps: p.Burst, TicksSent: p.Sent,
		TicksReceived: s.Ticks.Received, TicksLost: s.Ticks.Lost, TicksOutOfSequence: s.Ticks.OutOfSequence,
		Orders: s.Orders.Sent, OrdersUnfilled: s.Orders.Unfilled, ExchangeOrders: x.Orders,
		TickToTrade: s.Latency.TickToTrade.LatencyStats(), InApplication: s.Latency.InApp.LatencyStats(),
		OrderToFill: s.Latency.RoundTrip.LatencyStats(), Sell: s.Latency.Sell.LatencyStats(),
		Unaccounted: r.Unaccounted(),
	}
	if p.Seconds > 0 {
		row.AchievedMps = int64(math.Round(float64(p.Sent) / p.Seconds))
	}
	return row
}

// WriteT2TTable prints paper 004's table for each stack of the runs (WriteTickToTradeTable), the
// stacks in the order they first appear.
func WriteT2TTable(w io.Writer, runs []T2TRun) error {
	byStack := map[string][]tsv1.TickToTradeRow{}
	var stacks []string
	for _, r := range runs {
		if _, ok := byStack[r.Stack]; !ok {
			stacks = append(stacks, r.Stack)
		}
		byStack[r.Stack] = append(byStack[r.Stack], r.Row())
	}
	for _, st := range stacks {
		if err := judge.WriteTickToTradeTable(w, st, byStack[st]); err != nil {
			return err
		}
	}
	return nil
}
