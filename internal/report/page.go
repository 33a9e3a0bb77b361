package report

// pageTemplate is the whole page; latencies in tables are microseconds with three decimals, like
// sockperf prints them.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.Passed { color: #176f2c; font-weight: bold; } .Failed { color: #b00020; font-weight: bold; } .Inconclusive { color: #8a6d00; font-weight: bold; }
.note { background: #fff6d6; border: 1px solid #e8d48a; padding: .5em; }
svg.chart { display: block; margin: 1em 0; background: #fff; }
svg .frame { fill: none; stroke: #999; } svg .grid { stroke: #eee; } svg .tick { font-size: 11px; fill: #555; }
svg .axis { font-size: 12px; fill: #333; } svg .title { font-size: 13px; font-weight: bold; fill: #222; }
svg .line { fill: none; stroke-width: 1.8; } svg .pt.open { fill: #fff !important; stroke-width: 1.5; }
svg .legend text { font-size: 11px; fill: #333; }
svg .s0 { stroke: #1f77b4; fill: #1f77b4; } svg .s1 { stroke: #2ca02c; fill: #2ca02c; } svg .s2 { stroke: #9467bd; fill: #9467bd; } svg .s3 { stroke: #8c564b; fill: #8c564b; }
svg .s4 { stroke: #d62728; fill: #d62728; } svg .s5 { stroke: #ff7f0e; fill: #ff7f0e; } svg .s6 { stroke: #e377c2; fill: #e377c2; } svg .s7 { stroke: #bcbd22; fill: #bcbd22; }
svg .line.s0, svg .line.s1, svg .line.s2, svg .line.s3, svg .line.s4, svg .line.s5, svg .line.s6, svg .line.s7 { fill: none; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Generated {{.Generated}}. Latencies are half round trips (sockperf's RTT/2) in microseconds unless marked (tickToTrade's are one way: tick sent to order at the exchange); methods: docs/benchmark-methods.md.</p>
{{range .Nodes}}
<section class="node" id="node-{{.Index}}">
<h2>Node {{.Node}}</h2>
<p>Measured {{.Results.StartTime.UTC.Format "2006-01-02 15:04:05"}} to {{.Results.CompletionTime.UTC.Format "15:04:05"}} UTC{{if .Results.Tools}} with {{range $i, $t := .Results.Tools}}{{if $i}}, {{end}}{{$t}}{{end}}{{end}}.</p>
{{with .Verdict}}
<h3>Verdict: <span class="{{.Result}}">{{.Result}}</span></h3>
<table class="verdict"><tr><th class="l">check</th><th class="l">result</th><th class="l">reason</th></tr>
{{range .Reasons}}<tr><td class="l">{{.Name}}</td><td class="l {{.Result}}">{{.Result}}</td><td class="l">{{.Message}}</td></tr>
{{end}}</table>
{{end}}
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{range .Charts}}{{.}}
{{end}}
{{range .Stacks}}{{if not .Unavailable}}{{$stack := .Stack}}{{$bypass := eq (print .Stack) "bypass"}}
<h3>{{.Stack}} stack</h3>
{{with .PingPong}}
<table class="pingPong"><caption>pingPong (papers 000, 001)</caption>
<tr><th class="l">protocol</th><th>size (B)</th><th>samples</th><th>min</th><th>median</th><th>mean</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>std-dev</th><th>dropped</th><th>stalls</th>{{if $bypass}}<th class="l">max check</th>{{end}}</tr>
{{range .Rows}}<tr><td class="l">{{.Protocol}}</td><td>{{.MessageSize}}</td><td>{{.Samples}}</td><td>{{us .MinNs}}</td><td>{{us .MedianNs}}</td><td>{{us .MeanNs}}</td><td>{{us .P95Ns}}</td><td>{{us .P99Ns}}</td><td>{{us .P999Ns}}</td><td>{{us .MaxNs}}</td><td>{{us .StdDevNs}}</td><td>{{.Dropped}}</td><td>{{stallCount .Stalls}}</td>{{if $bypass}}<td class="l">{{maxCheck .LatencyStats}}</td>{{end}}</tr>
{{end}}</table>
{{with pingPongStalls $stack .Rows}}<ul class="stalls">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Error}}<p class="note">pingPong incomplete: {{.Error}}</p>{{end}}
{{end}}
{{with .RateSweep}}
<p>rateSweep receive buffer: {{bufText .ReceiveBufferBytes .Buffering $bypass}}.</p>
{{range bufNotes .ReceiveBufferBytes .Buffering $bypass}}<p class="note">buffers: {{.}}</p>{{end}}
<table class="rateSweep"><caption>rateSweep: latency under load (papers 000, 001, 002)</caption>
<tr><th class="l">protocol</th><th>size (B)</th><th>target msg/s</th><th>achieved msg/s</th><th>sent</th><th>dropped</th><th class="l">sustained</th><th>samples</th><th>min</th><th>median</th><th>mean</th><th>p99</th><th>max</th><th>std-dev</th><th>stalls</th></tr>
{{range .Rows}}<tr><td class="l">{{.Protocol}}</td><td>{{.MessageSize}}</td><td>{{.TargetMps}}</td><td>{{.AchievedMps}}</td><td>{{.Sent}}</td><td>{{.Dropped}}</td><td class="l">{{if .Sustained}}yes{{else}}no{{end}}</td><td>{{.Samples}}</td><td>{{us .MinNs}}</td><td>{{us .MedianNs}}</td><td>{{us .MeanNs}}</td><td>{{us .P99Ns}}</td><td>{{us .MaxNs}}</td><td>{{us .StdDevNs}}</td><td>{{stallCount .Stalls}}</td></tr>
{{end}}</table>
{{with rateStalls $stack .Rows}}<ul class="stalls">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>Highest rate sustained without drops: {{range $i, $m := .MaxSustained}}{{if $i}}; {{end}}{{$m.MessageSize}} B: {{searched $m.Mps $m.LimitReached}} msg/s{{if $m.LimitReached}} (the sweep's highest rate: the real limit is higher){{end}}{{end}}.</p>
{{if .Error}}<p class="note">rateSweep incomplete: {{.Error}}</p>{{end}}
{{end}}
{{with .Microburst}}
<table class="microburst"><caption>microburst (paper 002): {{.MessageSize}} B messages, bursts 100 ms apart, by the reflector's receive buffer (bytes)</caption>
<tr>{{range bufHead $bypass}}<th>{{.}}</th>{{end}}<th>largest burst (messages)</th><th>burst time</th><th class="l">trials (burst: dropped)</th></tr>
{{range .Rows}}<tr>{{range bufCells .ReceiveBufferBytes .Buffering $bypass}}<td>{{.}}</td>{{end}}<td><b>{{searched .MaxBurstPackets .LimitReached}}</b></td><td>{{burstTime .BurstTimeNs}}</td><td class="l">{{trials .Trials}}</td></tr>
{{end}}</table>
<p>Largest burst absorbed without a drop, by receive buffer; burst time (46 + {{.MessageSize}}) x messages x bit time x 8 at {{.LinkSpeedMbps}} Mb/s. "at least N": the search's bound, every burst tried was absorbed, the real limit is higher. "?": not reported.</p>
{{range .Rows}}{{range bufNotes .ReceiveBufferBytes .Buffering $bypass}}<p class="note">buffers: {{.}}</p>{{end}}{{if .Error}}<p class="note">microburst at SO_RCVBUF {{rcvbuf .ReceiveBufferBytes}} incomplete: {{.Error}}</p>{{end}}{{end}}
{{end}}
{{with .MixedBurst}}
<table class="mixedBurst"><caption>mixedBurst (paper 003): 2/3 at {{.SmallSize}} B, 1/3 at {{.LargeSize}} B, one-second bursts every other second</caption>
<tr><th class="l">pattern</th><th>sent</th><th>dropped</th><th>average</th><th>p99</th><th>std-dev</th><th>median {{.SmallSize}} B</th><th>median {{.LargeSize}} B</th><th>stalls</th></tr>
{{range .Rows}}<tr><td class="l">{{.SteadyMps}} msg/s + {{.BurstMps}} msg/s bursts</td><td>{{.Sent}}</td><td>{{.Dropped}}</td><td>{{us .MeanNs}}</td><td>{{us .P99Ns}}</td><td>{{us .StdDevNs}}</td><td>{{with .Small}}{{us .MedianNs}}{{end}}</td><td>{{with .Large}}{{us .MedianNs}}{{end}}</td><td>{{stallCount .Stalls}}</td></tr>
{{end}}</table>
{{with mixedStalls $stack .Rows}}<ul class="stalls">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Error}}<p class="note">mixedBurst incomplete: {{.Error}}</p>{{end}}
{{end}}
{{with .TickToTrade}}{{$rows := t2tByRate .Rows}}
<table class="tickToTrade"><caption>tickToTrade (paper 004): {{if eq .Mix "seed003"}}paper 003's mix of 100 B and 600 B ticks{{else}}{{.MessageSize}} B ticks{{end}}, a BUY every {{.OrderEvery}} ticks; BUY: mean tick-to-trade, SELL: mean BUY fill to SELL at the exchange, SD: standard deviations (µs; columns: market data msg/s)</caption>
<tr><th></th>{{range $rows}}<th>{{.RateMps}}</th>{{end}}</tr>
<tr><th class="l">BUY</th>{{range $rows}}<td>{{us .TickToTrade.MeanNs}}</td>{{end}}</tr>
<tr><th class="l">SELL</th>{{range $rows}}<td>{{us .Sell.MeanNs}}</td>{{end}}</tr>
<tr><th class="l">SD B</th>{{range $rows}}<td>{{us .TickToTrade.StdDevNs}}</td>{{end}}</tr>
<tr><th class="l">SD S</th>{{range $rows}}<td>{{us .Sell.StdDevNs}}</td>{{end}}</tr>
</table>
<table class="tickToTradeCounts"><caption>tickToTrade: every tick and order accounted for, and the path each leg took</caption>
<tr><th>rate msg/s</th><th>burst msg/s</th><th>achieved msg/s</th><th>ticks sent</th><th>received</th><th>lost</th><th>out of sequence</th><th>orders</th><th>unfilled</th><th>at the exchange</th><th class="l">market data</th><th class="l">orders</th><th class="l">accounted</th></tr>
{{range .Rows}}<tr><td>{{.RateMps}}</td><td>{{.BurstMps}}</td><td>{{.AchievedMps}}</td><td>{{.TicksSent}}</td><td>{{.TicksReceived}}</td><td>{{.TicksLost}}</td><td>{{.TicksOutOfSequence}}</td><td>{{.Orders}}</td><td>{{.OrdersUnfilled}}</td><td>{{.ExchangeOrders}}</td><td class="l">{{dash (print .MarketDataPath)}}</td><td class="l">{{dash (print .OrderPath)}}</td><td class="l {{if .Unaccounted}}Failed{{else}}Passed{{end}}">{{if .Unaccounted}}no: {{range $i, $u := .Unaccounted}}{{if $i}}; {{end}}{{$u}}{{end}}{{else}}yes{{end}}</td></tr>
{{end}}</table>
<table class="tickToTradeLatency"><caption>tickToTrade: latencies (µs)</caption>
<tr><th>rate msg/s</th><th class="l">measure</th><th>samples</th><th>min</th><th>median</th><th>mean</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>std-dev</th></tr>
{{range .Rows}}{{$rate := .RateMps}}{{range measures .}}<tr><td>{{$rate}}</td><td class="l">{{.Name}}</td><td>{{.Stats.Samples}}</td><td>{{us .Stats.MinNs}}</td><td>{{us .Stats.MedianNs}}</td><td>{{us .Stats.MeanNs}}</td><td>{{us .Stats.P95Ns}}</td><td>{{us .Stats.P99Ns}}</td><td>{{us .Stats.P999Ns}}</td><td>{{us .Stats.MaxNs}}</td><td>{{us .Stats.StdDevNs}}</td></tr>
{{end}}{{end}}</table>
{{if .Error}}<p class="note">tickToTrade incomplete: {{.Error}}</p>{{end}}
{{end}}
{{end}}{{end}}
{{with .Baseline}}
<table class="tickToTradeBaseline"><caption>tick-to-trade, tuned vs untuned: {{baselineSource .}}</caption>
<tr><th class="l">stack</th><th>rate msg/s</th><th class="l">baseline stack</th><th>untuned mean</th><th>tuned mean</th><th>gain %</th><th>untuned median</th><th>tuned median</th><th>gain %</th><th>untuned p99</th><th>tuned p99</th><th>gain %</th></tr>
{{range .Rows}}<tr><td class="l">{{.Stack}}</td><td>{{.RateMps}}</td><td class="l">{{.BaselineStack}}</td><td>{{us .BaselineMeanNs}}</td><td>{{us .MeanNs}}</td><td>{{.MeanGainPercent}}</td><td>{{us .BaselineMedianNs}}</td><td>{{us .MedianNs}}</td><td>{{.MedianGainPercent}}</td><td>{{us .BaselineP99Ns}}</td><td>{{us .P99Ns}}</td><td>{{.P99GainPercent}}</td></tr>
{{end}}</table>
{{if .Message}}<p class="note">tuned vs untuned: {{.Message}}</p>{{end}}
{{end}}
{{with .Comparison}}
<table class="comparison"><caption>kernel vs bypass</caption>
<tr><th class="l">suite</th><th class="l">row</th><th>kernel median</th><th>bypass median</th><th>speedup</th><th>kernel p99</th><th>bypass p99</th><th>speedup</th></tr>
{{range .}}<tr><td class="l">{{.Suite}}</td><td class="l">{{.Protocol}}{{if .MessageSize}} {{.MessageSize}} B{{end}}{{if .TargetMps}} at {{.TargetMps}} msg/s{{end}}{{if .SteadyMps}} {{.SteadyMps}}+{{.BurstMps}} msg/s{{end}}</td><td>{{us .KernelMedianNs}}</td><td>{{us .BypassMedianNs}}</td><td>{{.MedianSpeedup}}x</td><td>{{us .KernelP99Ns}}</td><td>{{us .BypassP99Ns}}</td><td>{{.P99Speedup}}x</td></tr>
{{end}}</table>
{{end}}
{{with .Results.Jitter}}
<table class="jitter"><caption>jitter: OS noise (percentiles from the tools' 1 µs histograms)</caption>
<tr><th class="l">tool</th><th>cpu</th><th>samples</th><th>min</th><th>median</th><th>mean</th><th>p99</th><th>p99.9</th><th>max</th><th>std-dev</th></tr>
{{range .Rows}}<tr><td class="l">{{.Tool}}</td><td>{{.CPU}}</td><td>{{.Samples}}</td><td>{{us .MinNs}}</td><td>{{us .MedianNs}}</td><td>{{us .MeanNs}}</td><td>{{us .P99Ns}}</td><td>{{us .P999Ns}}</td><td>{{us .MaxNs}}</td><td>{{us .StdDevNs}}</td></tr>
{{end}}</table>
{{if .Error}}<p class="note">jitter incomplete: {{.Error}}</p>{{end}}
{{end}}
{{with .Results.PTP}}
<table class="ptp"><caption>ptp: ptp4l's |offset from master| through {{.Socket}}, domain {{.Domain}}, read every {{.IntervalMillis}} ms over the whole run</caption>
<tr><th>samples</th><th>not SLAVE</th><th>failed reads</th><th>median</th><th>p99</th><th>max</th><th>signed min</th><th>signed max</th><th>path delay</th><th class="l">port states</th></tr>
<tr><td>{{.Samples}}</td><td>{{.NotSlaveSamples}}</td><td>{{.FailedReads}}</td><td>{{us .Offset.MedianNs}}</td><td>{{us .Offset.P99Ns}}</td><td>{{us .Offset.MaxNs}}</td><td>{{us .MinOffsetNs}}</td><td>{{us .MaxOffsetNs}}</td><td>{{us .MedianPathDelayNs}}</td><td class="l">{{ptpStates .}}</td></tr>
</table>
{{with .SystemOffset}}<p>system clock |offset| (the node agent's, {{.Samples}} samples): median {{us .MedianNs}} us, p99 {{us .P99Ns}} us, max {{us .MaxNs}} us</p>{{end}}
{{if .LastFailure}}<p class="note">last failed ptp read: {{.LastFailure}}</p>{{end}}
{{if .Error}}<p class="note">ptp incomplete: {{.Error}}</p>{{end}}
{{end}}
</section>
{{end}}
</body>
</html>
`
