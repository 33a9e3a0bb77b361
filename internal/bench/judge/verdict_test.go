package judge

import (
	"reflect"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func stats(median, p99 int64) tsv1.LatencyStats {
	return tsv1.LatencyStats{Samples: 1000, MinNs: median / 2, MedianNs: median, MeanNs: median + 100, P95Ns: p99 - 1, P99Ns: p99, P999Ns: p99 * 2, MaxNs: p99 * 4, StdDevNs: 500}
}

func ptr[T any](v T) *T { return &v }

// sampleResults is a kernel + bypass run shaped like the runner's output.
func sampleResults() *tsv1.BenchmarkResults {
	return &tsv1.BenchmarkResults{
		SchemaVersion: tsv1.BenchmarkResultsSchemaVersion,
		Stacks: []tsv1.StackResults{
			{
				Stack: tsv1.StackKernel,
				PingPong: &tsv1.PingPongResult{Rows: []tsv1.PingPongRow{
					{Protocol: tsv1.ProtocolUDP, MessageSize: 64, LatencyStats: stats(10000, 30000)},
					{Protocol: tsv1.ProtocolUDP, MessageSize: 1472, LatencyStats: stats(20000, 60000)},
					{Protocol: tsv1.ProtocolTCP, MessageSize: 64, LatencyStats: stats(12000, 40000), Dropped: 0},
				}},
				RateSweep: &tsv1.RateSweepResult{
					Rows: []tsv1.RateRow{
						{Protocol: tsv1.ProtocolUDP, MessageSize: 64, TargetMps: 10000, AchievedMps: 10000, Sustained: true, LatencyStats: stats(15000, 50000)},
						{Protocol: tsv1.ProtocolUDP, MessageSize: 64, TargetMps: 100000, AchievedMps: 60000, Dropped: 12, LatencyStats: stats(90000, 900000)},
					},
					MaxSustained: []tsv1.SustainedRate{{Protocol: tsv1.ProtocolUDP, MessageSize: 64, Mps: 10000}},
				},
				// two receive buffer sizes: the larger absorbs the longer burst
				Microburst: &tsv1.MicroburstResult{Protocol: tsv1.ProtocolUDP, MessageSize: 256, LinkSpeedMbps: 10000, Rows: []tsv1.MicroburstRow{
					{ReceiveBufferBytes: 65536, MaxBurstPackets: 224, BurstTimeNs: BurstTimeNs(256, 224, 10000),
						Trials: []tsv1.BurstTrial{{Packets: 64, Sent: 640}, {Packets: 256, Sent: 2560, Dropped: 3}, {Packets: 224, Sent: 2240}}},
					{ReceiveBufferBytes: 212992, MaxBurstPackets: 900, BurstTimeNs: BurstTimeNs(256, 900, 10000),
						Trials: []tsv1.BurstTrial{{Packets: 512, Sent: 5120}, {Packets: 1024, Sent: 10240, Dropped: 40}, {Packets: 900, Sent: 9000}}},
				}},
				MixedBurst: &tsv1.MixedBurstResult{Protocol: tsv1.ProtocolUDP, SmallSize: 100, LargeSize: 600, Rows: []tsv1.MixedBurstRow{
					{SteadyMps: 1000, BurstMps: 1000, Sent: 3000, LatencyStats: stats(25000, 70000), Small: ptr(stats(24000, 65000)), Large: ptr(stats(27000, 80000))},
				}},
				TickToTrade: &tsv1.TickToTradeResult{Mix: tsv1.TickMixSteady, MessageSize: 32, OrderEvery: 100, Rows: []tsv1.TickToTradeRow{
					t2tRow(500, stats(40000, 90000)), t2tRow(10000, stats(45000, 120000)),
				}},
			},
			{
				Stack: tsv1.StackBypass,
				PingPong: &tsv1.PingPongResult{Rows: []tsv1.PingPongRow{
					{Protocol: tsv1.ProtocolUDP, MessageSize: 64, LatencyStats: stats(4000, 9000)},
					{Protocol: tsv1.ProtocolUDP, MessageSize: 1472, LatencyStats: stats(8000, 20000)},
				}},
			},
		},
		Jitter: &tsv1.JitterResult{Rows: []tsv1.JitterRow{
			{Tool: tsv1.JitterOslat, CPU: 1, LatencyStats: tsv1.LatencyStats{Samples: 100, MinNs: 1000, MedianNs: 1000, MeanNs: 1001, P95Ns: 1000, P99Ns: 1000, P999Ns: 2000, MaxNs: 12000}},
			{Tool: tsv1.JitterCyclictest, CPU: 1, LatencyStats: tsv1.LatencyStats{Samples: 100, MinNs: 6000, MedianNs: 19000, MeanNs: 22000, P95Ns: 34000, P99Ns: 65000, P999Ns: 194000, MaxNs: 300000}},
		}},
	}
}

// t2tRow is an accounted tickToTrade row of 4 s at rate, a BUY every 100 ticks.
func t2tRow(rate int64, tt tsv1.LatencyStats) tsv1.TickToTradeRow {
	buys := rate * 4 / 100
	tt.Samples = buys
	return tsv1.TickToTradeRow{RateMps: rate, AchievedMps: rate, TicksSent: rate * 4, TicksReceived: rate * 4, Orders: 2 * buys, ExchangeOrders: 2 * buys,
		TickToTrade: tt, InApplication: stats(5000, 20000), OrderToFill: stats(30000, 80000), Sell: stats(35000, 85000),
		MarketDataPath: tsv1.StackKernel, OrderPath: tsv1.StackKernel}
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*tsv1.BenchmarkResults)
		th   tsv1.Thresholds
		want tsv1.VerdictResult
		// first names the first reason (failed ones come first); msg is a fragment of its message.
		first, msg string
	}{
		{name: "no thresholds pass", th: tsv1.Thresholds{}, want: tsv1.VerdictPassed},
		{name: "pingPong p99 within", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "60us"}}}, want: tsv1.VerdictPassed,
			first: "pingPong/p99", msg: "worst p99 60.000 us at udp 1472 B on kernel"},
		{name: "pingPong p99 exceeded", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "59.999us"}}}, want: tsv1.VerdictFailed,
			first: "pingPong/p99", msg: "p99 60.000 us at udp 1472 B on kernel exceeds 59.999us"},
		{name: "narrowed to bypass", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Stack: tsv1.StackBypass, Statistic: tsv1.StatMedian, Max: "8us"}}}, want: tsv1.VerdictPassed,
			first: "pingPong/bypass/median"},
		{name: "narrowed to tcp 64 B", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Protocol: tsv1.ProtocolTCP, MessageSize: 64, Statistic: tsv1.StatMean, Max: "12us"}}}, want: tsv1.VerdictFailed,
			first: "pingPong/mean/tcp/64B", msg: "12.100 us"},
		{name: "selector matching nothing is inconclusive", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Protocol: tsv1.ProtocolUDPMulticast, Statistic: tsv1.StatP99, Max: "1ms"}}}, want: tsv1.VerdictInconclusive,
			first: "pingPong/p99/udpMulticast", msg: "no measured pingPong row"},
		{name: "rateSweep ignores unsustained rates", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteRateSweep, Statistic: tsv1.StatP99, Max: "50us"}}}, want: tsv1.VerdictPassed,
			msg: "1 rows checked"},
		{name: "mixedBurst large messages", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteMixedBurst, MessageSize: 600, Statistic: tsv1.StatP99, Max: "79us"}}}, want: tsv1.VerdictFailed,
			msg: "1000+1000 msg/s 600 B"},
		{name: "jitter max by tool", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteJitter, Tool: tsv1.JitterOslat, Statistic: tsv1.StatMax, Max: "20us"}}}, want: tsv1.VerdictPassed, msg: "oslat cpu 1"},
		{name: "jitter both tools", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteJitter, Statistic: tsv1.StatMax, Max: "20us"}}}, want: tsv1.VerdictFailed, msg: "cyclictest cpu 1"},
		{name: "drops", th: tsv1.Thresholds{MaxDropped: ptr(int64(0))}, mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].PingPong.Rows[2].Dropped = 3 }, want: tsv1.VerdictFailed,
			first: "drops/kernel", msg: "3 messages dropped in pingPong tcp 64 B"},
		{name: "sustained rate met", th: tsv1.Thresholds{MinSustainedMps: ptr(int64(10000))}, want: tsv1.VerdictPassed},
		{name: "sustained rate missed", th: tsv1.Thresholds{MinSustainedMps: ptr(int64(100000))}, want: tsv1.VerdictFailed, msg: "sustained only 10000 msg/s"},
		{name: "microburst met", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(200))}, want: tsv1.VerdictPassed,
			first: "microburst/kernel/rcvbuf65536", msg: "Mb/s) at SO_RCVBUF 65536 >= 200"},
		{name: "microburst missed", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(1000))}, want: tsv1.VerdictFailed,
			first: "microburst/kernel/rcvbuf65536", msg: "largest burst absorbed without a drop at SO_RCVBUF 65536 is 224"},
		// the threshold applies to every receive buffer size: the small buffer's row fails alone
		{name: "microburst judged per buffer size", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(500))}, want: tsv1.VerdictFailed,
			first: "microburst/kernel/rcvbuf65536", msg: "at SO_RCVBUF 65536 is 224 messages of 256 B, need 500"},
		{name: "microburst at the default buffer keeps its name", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(200))},
			mod: func(r *tsv1.BenchmarkResults) {
				r.Stacks[0].Microburst.Rows = r.Stacks[0].Microburst.Rows[:1]
				r.Stacks[0].Microburst.Rows[0].ReceiveBufferBytes = 0
			}, want: tsv1.VerdictPassed, first: "microburst/kernel", msg: "at SO_RCVBUF default"},
		// a search that stopped at its bound measured a lower bound: above the threshold it passes,
		// below it says nothing either way, in each row
		{name: "microburst bound above the threshold", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(200))},
			mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].Microburst.Rows[0].LimitReached = true }, want: tsv1.VerdictPassed, msg: "absorbed at least 224"},
		{name: "microburst bound below the threshold", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(500))},
			mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].Microburst.Rows[0].LimitReached = true }, want: tsv1.VerdictInconclusive,
			first: "microburst/kernel/rcvbuf65536", msg: "at SO_RCVBUF 65536, up to the search's bound of 224 messages, which is below 500: raise suites.microburst.maxBurstPackets"},
		{name: "microburst bound below the threshold in one row, a failure in the other", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(1000))},
			mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].Microburst.Rows[0].LimitReached = true }, want: tsv1.VerdictFailed,
			first: "microburst/kernel/rcvbuf212992", msg: "is 900 messages"},
		{name: "microburst row cut short is inconclusive", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(500))},
			mod: func(r *tsv1.BenchmarkResults) {
				r.Stacks[0].Microburst.Rows[0].Error = "reflector gone"
			}, want: tsv1.VerdictInconclusive, first: "suite/microburst/kernel", msg: "microburst on kernel did not complete: SO_RCVBUF 65536: reflector gone"},
		{name: "sustained bound above the threshold", th: tsv1.Thresholds{MinSustainedMps: ptr(int64(10000))},
			mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].RateSweep.MaxSustained[0].LimitReached = true }, want: tsv1.VerdictPassed, msg: "sustained at least 10000 msg/s"},
		{name: "sustained bound below the threshold", th: tsv1.Thresholds{MinSustainedMps: ptr(int64(100000))},
			mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].RateSweep.MaxSustained[0].LimitReached = true }, want: tsv1.VerdictInconclusive, msg: "add higher rates"},
		{name: "bypass speedup met", th: tsv1.Thresholds{MinBypassSpeedup: "2.5"}, want: tsv1.VerdictPassed, msg: "2.500x"},
		{name: "bypass speedup missed", th: tsv1.Thresholds{MinBypassSpeedup: "2.6"}, want: tsv1.VerdictFailed, msg: "only 2.500x faster than kernel at udp 64 B"},
		{name: "bypass unavailable", th: tsv1.Thresholds{MinBypassSpeedup: "1.5"}, mod: func(r *tsv1.BenchmarkResults) {
			r.Stacks[1] = tsv1.StackResults{Stack: tsv1.StackBypass, Unavailable: "launcher not found"}
		}, want: tsv1.VerdictInconclusive, first: "stack/bypass", msg: "launcher not found"},
		{name: "suite error alone is inconclusive", mod: func(r *tsv1.BenchmarkResults) { r.Stacks[0].RateSweep.Error = "reflector gone" }, want: tsv1.VerdictInconclusive,
			first: "suite/rateSweep/kernel", msg: "reflector gone"},
		{name: "failure outranks inconclusive", th: tsv1.Thresholds{MinMicroburstPackets: ptr(int64(1000))}, mod: func(r *tsv1.BenchmarkResults) { r.Jitter.Error = "oslat missing" }, want: tsv1.VerdictFailed,
			first: "microburst/kernel/rcvbuf65536"},
		{name: "invalid rule fails loudly", th: tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: "p42", Max: "1us"}}}, want: tsv1.VerdictFailed, msg: "thresholds.latency[0] is invalid"},
		{name: "ptp all SLAVE passes without thresholds", mod: withPTP(lockedPTP()), want: tsv1.VerdictPassed,
			first: "ptp/slave", msg: "all 200 samples of /run/tickstack/ptp/ptp4l.sock in SLAVE state"},
		{name: "ptp p99 within", th: ptpLimit(tsv1.StatP99, "900ns"), mod: withPTP(lockedPTP()), want: tsv1.VerdictPassed,
			msg: "worst p99 0.900 us at |offset from master| over 200 SLAVE samples is within 900ns"},
		{name: "ptp p99 exceeded", th: ptpLimit(tsv1.StatP99, "899ns"), mod: withPTP(lockedPTP()), want: tsv1.VerdictFailed,
			first: "ptp/p99", msg: "p99 0.900 us at |offset from master| over 200 SLAVE samples exceeds 899ns"},
		{name: "ptp max bounds the largest offset", th: ptpLimit(tsv1.StatMax, "1us"), mod: withPTP(lockedPTP()), want: tsv1.VerdictFailed,
			first: "ptp/max", msg: "max 1.500 us"},
		{name: "ptp samples outside SLAVE fail", mod: withPTP(func(p *tsv1.PTPResult) {
			p.NotSlaveSamples, p.PortStates = 2, append(p.PortStates, tsv1.PTPPortStateCount{State: "UNCALIBRATED", Samples: 2})
			p.Samples += 2
		}), want: tsv1.VerdictFailed, first: "ptp/slave", msg: "2 of 202 samples of /run/tickstack/ptp/ptp4l.sock not in SLAVE state (SLAVE 200, UNCALIBRATED 2)"},
		{name: "ptp unanswered reads fail", mod: withPTP(func(p *tsv1.PTPResult) {
			p.FailedReads, p.Samples, p.LastFailure = 1, 201, "no response from ptp4l"
		}), want: tsv1.VerdictFailed, first: "ptp/slave", msg: "1 reads unanswered, last: no response from ptp4l"},
		{name: "ptp never answered is inconclusive", th: ptpLimit(tsv1.StatP99, "1us"), mod: withPTP(func(p *tsv1.PTPResult) {
			*p = tsv1.PTPResult{Socket: tsv1.DefaultPTPSocket, Samples: 5, FailedReads: 5, Error: "none of 5 reads was answered"}
		}), want: tsv1.VerdictInconclusive, first: "suite/ptp", msg: "ptp did not complete: none of 5 reads was answered"},
		{name: "ptp limit without the suite is inconclusive", th: ptpLimit(tsv1.StatP99, "1us"), want: tsv1.VerdictInconclusive,
			first: "ptp/p99", msg: "no offset was measured in SLAVE state"},
		{name: "tickToTrade rows accounted pass without thresholds", want: tsv1.VerdictPassed,
			msg: "at 10000 msg/s on kernel every tick is accounted for: 40000 sent and received in sequence, 800 orders filled"},
		{name: "tickToTrade unaccounted ticks fail the row", mod: func(r *tsv1.BenchmarkResults) {
			row := &r.Stacks[0].TickToTrade.Rows[1]
			row.TicksReceived--
			row.TicksLost = 1
			row.Unaccounted = []string{"ticks: 1 lost, 0 out of sequence"}
		}, want: tsv1.VerdictFailed, first: "tickToTrade/kernel/10000msgps/accounted", msg: "at 10000 msg/s on kernel not every tick and order is accounted for: ticks: 1 lost"},
		{name: "tickToTrade p99 within", th: t2tLimit("", 0, "120us"), want: tsv1.VerdictPassed,
			first: "tickToTrade/p99", msg: "worst p99 120.000 us at tick-to-trade at 10000 msg/s on kernel is within 120us (2 rows checked)"},
		{name: "tickToTrade p99 exceeded", th: t2tLimit("", 0, "119us"), want: tsv1.VerdictFailed,
			first: "tickToTrade/p99", msg: "p99 120.000 us at tick-to-trade at 10000 msg/s on kernel exceeds 119us"},
		{name: "tickToTrade narrowed to one rate", th: t2tLimit(tsv1.StackKernel, 500, "90us"), want: tsv1.VerdictPassed,
			first: "tickToTrade/kernel/p99/500msgps", msg: "(1 rows checked)"},
		{name: "tickToTrade limit on a stack not measured", th: t2tLimit(tsv1.StackBypass, 0, "1ms"), want: tsv1.VerdictInconclusive,
			first: "tickToTrade/bypass/p99", msg: "no measured tickToTrade row"},
		{name: "tickToTrade unaccounted rows are not judged on latency", th: t2tLimit("", 0, "100us"), mod: func(r *tsv1.BenchmarkResults) {
			r.Stacks[0].TickToTrade.Rows[1].Unaccounted = []string{"orders: 400 BUY, 399 SELL, 1 without a fill"}
		}, want: tsv1.VerdictFailed, first: "tickToTrade/kernel/10000msgps/accounted", msg: "worst p99 90.000 us at tick-to-trade at 500 msg/s on kernel is within 100us (1 rows checked)"},
		{name: "tickToTrade suite error is inconclusive", mod: func(r *tsv1.BenchmarkResults) {
			r.Stacks[0].TickToTrade.Error = "50000 msg/s: t2t-strategy exited before it was logged on"
		}, want: tsv1.VerdictInconclusive, first: "suite/tickToTrade/kernel", msg: "tickToTrade on kernel did not complete: 50000 msg/s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sampleResults()
			if c.mod != nil {
				c.mod(r)
			}
			v := Evaluate(r, c.th)
			if v.Result != c.want {
				t.Fatalf("result %s, want %s; reasons %+v", v.Result, c.want, v.Reasons)
			}
			if c.first != "" && (len(v.Reasons) == 0 || v.Reasons[0].Name != c.first) {
				t.Errorf("first reason %+v, want name %q", v.Reasons, c.first)
			}
			if c.msg != "" {
				found := false
				for _, r := range v.Reasons {
					found = found || strings.Contains(r.Message, c.msg)
				}
				if !found {
					t.Errorf("no reason mentions %q: %+v", c.msg, v.Reasons)
				}
			}
			for i := 1; i < len(v.Reasons); i++ {
				if rank(v.Reasons[i].Result) < rank(v.Reasons[i-1].Result) {
					t.Errorf("reasons not ordered failed, inconclusive, passed: %+v", v.Reasons)
				}
			}
		})
	}
}

// lockedPTP is 200 SLAVE samples with |offset| up to 784 ns, then 850, 900, 1200 and 1500 ns:
// p99 is 900 ns, the maximum 1.5 us.
func lockedPTP() func(*tsv1.PTPResult) {
	return func(p *tsv1.PTPResult) {
		// the statistics of |offset| 4, 8, ... 784, 850, 900, 1200, 1500 ns as the runner computes them
		abs := tsv1.LatencyStats{Samples: 200, MinNs: 4, MedianNs: 400, MeanNs: 408, P95Ns: 760, P99Ns: 900, P999Ns: 1500, MaxNs: 1500, StdDevNs: 249}
		*p = tsv1.PTPResult{Socket: tsv1.DefaultPTPSocket, Domain: 24, IntervalMillis: 1000, Samples: 200, Offset: abs,
			MinOffsetNs: -1500, MaxOffsetNs: 1200, PortStates: []tsv1.PTPPortStateCount{{State: "SLAVE", Samples: 200}}}
	}
}

// withPTP gives the results a ptp table built by lockedPTP, then changed by mods.
func withPTP(mods ...func(*tsv1.PTPResult)) func(*tsv1.BenchmarkResults) {
	return func(r *tsv1.BenchmarkResults) {
		r.PTP = &tsv1.PTPResult{}
		lockedPTP()(r.PTP)
		for _, m := range mods {
			m(r.PTP)
		}
	}
}

func t2tLimit(stack tsv1.Stack, rate int64, max string) tsv1.Thresholds {
	return tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Stack: stack, RateMps: rate, Statistic: tsv1.StatP99, Max: max}}}
}

func ptpLimit(st tsv1.Statistic, max string) tsv1.Thresholds {
	return tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: st, Max: max}}}
}

func rank(r tsv1.VerdictResult) int {
	switch r {
	case tsv1.VerdictFailed:
		return 0
	case tsv1.VerdictInconclusive:
		return 1
	}
	return 2
}

func TestThresholdsValidate(t *testing.T) {
	good := tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP999, Max: "1.5ms"}, {Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "1us"},
		{Suite: tsv1.SuiteTickToTrade, Stack: tsv1.StackBypass, RateMps: 100000, Statistic: tsv1.StatP99, Max: "50us"}, {Suite: tsv1.SuiteRateSweep, RateMps: 10000, Statistic: tsv1.StatMedian, Max: "20us"}},
		MinBypassSpeedup: "1.25", MaxDropped: ptr(int64(0))}
	if err := ValidateThresholds(good); err != nil {
		t.Fatalf("valid thresholds refused: %v", err)
	}
	cases := []struct {
		th   tsv1.Thresholds
		want string
	}{
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteMicroburst, Statistic: tsv1.StatP99, Max: "1us"}}}, "thresholds.latency[0].suite"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: "p50", Max: "1us"}}}, "thresholds.latency[0].statistic"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "25"}}}, `thresholds.latency[0].max: "25" is not a positive duration`},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "1us", Stack: "dpdk"}}}, "thresholds.latency[0].stack"},
		{tsv1.Thresholds{MinBypassSpeedup: "fast"}, "thresholds.minBypassSpeedup"},
		{tsv1.Thresholds{MaxDropped: ptr(int64(-1))}, "thresholds.maxDropped"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "1us", Protocol: tsv1.ProtocolUDP}}}, "thresholds.latency[0].protocol: does not apply to suite ptp"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "1us", Stack: tsv1.StackKernel}}}, "thresholds.latency[0].stack: does not apply to suite ptp"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePTP, Statistic: tsv1.StatP99, Max: "-1us"}}}, "thresholds.latency[0].max"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Statistic: tsv1.StatP99, Max: "1ms", MessageSize: 64}}}, "thresholds.latency[0].messageSize: does not apply to suite tickToTrade"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Statistic: tsv1.StatP99, Max: "1ms", Protocol: tsv1.ProtocolUDP}}}, "thresholds.latency[0].protocol: does not apply to suite tickToTrade"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong, Statistic: tsv1.StatP99, Max: "1ms", RateMps: 1000}}}, "thresholds.latency[0].rateMps: 1000: narrows rateSweep and tickToTrade rows"},
		{tsv1.Thresholds{Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuiteTickToTrade, Statistic: tsv1.StatP99, Max: "1ms", RateMps: -1}}}, "thresholds.latency[0].rateMps: -1"},
	}
	for _, c := range cases {
		err := ValidateThresholds(c.th)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.th, err, c.want)
		}
	}
}

func TestCompareStacks(t *testing.T) {
	cmp := CompareStacks(sampleResults())
	if len(cmp) != 2 {
		t.Fatalf("%d comparisons, want the 2 pingPong rows measured on both stacks: %+v", len(cmp), cmp)
	}
	if cmp[0].MedianSpeedup != "2.500" || cmp[0].P99Speedup != "3.333" || cmp[1].MedianSpeedup != "2.500" || cmp[1].P99Speedup != "3.000" {
		t.Errorf("speedups %+v", cmp)
	}
	r := sampleResults()
	r.Stacks = r.Stacks[:1]
	if CompareStacks(r) != nil {
		t.Error("comparison without a bypass stack")
	}
}

func TestCompareStacksTickToTrade(t *testing.T) {
	r := sampleResults()
	r.Stacks[1].TickToTrade = &tsv1.TickToTradeResult{Mix: tsv1.TickMixSteady, OrderEvery: 100, Rows: []tsv1.TickToTradeRow{t2tRow(10000, stats(15000, 40000))}}
	var got []tsv1.StackComparison
	for _, c := range CompareStacks(r) {
		if c.Suite == tsv1.SuiteTickToTrade {
			got = append(got, c)
		}
	}
	want := []tsv1.StackComparison{{Suite: tsv1.SuiteTickToTrade, Protocol: tsv1.ProtocolUDPMulticast, TargetMps: 10000,
		KernelMedianNs: 45000, BypassMedianNs: 15000, KernelP99Ns: 120000, BypassP99Ns: 40000, MedianSpeedup: "3.000", P99Speedup: "3.000"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tickToTrade comparisons %+v, want the one rate measured on both stacks: %+v", got, want)
	}
}

func TestBurstTimeNs(t *testing.T) {
	cases := []struct {
		size    int32
		packets int64
		mbps    int64
		want    int64
	}{
		// Paper 002's two examples.
		{64, 23000, 10000, 2024000},
		{64, 400, 10000, 35200},
		{256, 224, 10000, 54118}, // (46+256)*224*8/10 = 54118.4
		{14, 1, 1000, 480},
		{64, 0, 10000, 0},
		{64, 10, 0, 0},
	}
	for _, c := range cases {
		if got := BurstTimeNs(c.size, c.packets, c.mbps); got != c.want {
			t.Errorf("BurstTimeNs(%d, %d, %d) = %d, want %d", c.size, c.packets, c.mbps, got, c.want)
		}
	}
}

func TestRatio(t *testing.T) {
	if Ratio(10, 4) != "2.500" || Ratio(1, 3) != "0.333" || Ratio(2, 3) != "0.667" || Ratio(1, 0) != "" {
		t.Errorf("Ratio: %q %q %q %q", Ratio(10, 4), Ratio(1, 3), Ratio(2, 3), Ratio(1, 0))
	}
	if v, err := ParseRatio("1.5"); err != nil || v != 1500 {
		t.Errorf("ParseRatio(1.5) = %d, %v", v, err)
	}
	if _, err := ParseRatio("-1"); err == nil {
		t.Error("negative ratio accepted")
	}
}

func TestEvaluateQualify(t *testing.T) {
	for _, tc := range []struct {
		v    tsv1.QualifyVerdict
		want tsv1.VerdictResult
		msg  string
	}{
		{tsv1.QualifySupported, tsv1.VerdictPassed, "interface lat0 is supported (driver ice)"},
		{tsv1.QualifyDegraded, tsv1.VerdictPassed, "interface lat0 is degraded: zeroCopy: copy mode"},
		{tsv1.QualifyUnsupported, tsv1.VerdictFailed, "interface lat0 is unsupported: zeroCopy: copy mode"},
		{"", tsv1.VerdictInconclusive, "the qualification gave no verdict"},
	} {
		r := &tsv1.BenchmarkResults{Qualify: &tsv1.QualifyReport{Interface: "lat0", Driver: "ice", Verdict: tc.v,
			Reasons: []tsv1.QualifyReason{{Check: "zeroCopy", Verdict: tsv1.QualifyDegraded, Message: "copy mode"}}}}
		if tc.v == tsv1.QualifySupported {
			r.Qualify.Reasons = nil
		}
		v := Evaluate(r, tsv1.Thresholds{})
		if v.Result != tc.want || len(v.Reasons) != 1 || v.Reasons[0].Name != "qualify/lat0" || !strings.Contains(v.Reasons[0].Message, tc.msg) {
			t.Errorf("%q: verdict %+v, want %s with %q", tc.v, v, tc.want, tc.msg)
		}
	}
}
