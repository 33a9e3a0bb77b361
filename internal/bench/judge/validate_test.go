package judge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSpecDefaultsAreValid(t *testing.T) {
	s := tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{}, RateSweep: &tsv1.RateSweepSpec{}, Microburst: &tsv1.MicroburstSpec{}, MixedBurst: &tsv1.MixedBurstSpec{}, Jitter: &tsv1.JitterSpec{CPUs: "1"}, PTP: &tsv1.PTPSuite{},
		TickToTrade: &tsv1.TickToTradeSpec{}}.Defaulted()
	if err := ValidateSuites(s); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if !reflect.DeepEqual(s.PingPong.MessageSizes, []int32{14, 32, 64, 128, 256, 400, 800, 1024, 1472}) {
		t.Errorf("pingPong sizes %v, want paper 001's with 14 for 12", s.PingPong.MessageSizes)
	}
	if s.MixedBurst.Patterns[0] != (tsv1.MixedBurstPattern{SteadyMps: 500000, BurstMps: 500000}) || s.MixedBurst.SmallSize != 100 || s.MixedBurst.LargeSize != 600 {
		t.Errorf("mixedBurst defaults %+v, want paper 003's", s.MixedBurst)
	}
	if *s.PTP != (tsv1.PTPSuite{Socket: "/run/tickstack/ptp/ptp4l.sock", IntervalMillis: 1000, DurationSeconds: 30}) {
		t.Errorf("ptp defaults %+v, want the agent's socket, 1 s, 30 s and the domain left to ptp4l.conf", s.PTP)
	}
	if tt := s.TickToTrade; !reflect.DeepEqual(tt.RatesMps, []int64{500, 1000, 10000, 50000, 100000}) || tt.DurationSeconds != 4 || tt.OrderEvery != 100 ||
		tt.MessageSize != 32 || tt.Mix != tsv1.TickMixSteady || tt.BurstMps != 0 {
		t.Errorf("tickToTrade defaults %+v, want paper 004's rates, 4 s, a BUY every 100 ticks of 32 B, steady", tt)
	}
	if len(s.Stacks) != 1 || s.Stacks[0] != tsv1.StackKernel {
		t.Errorf("stacks %v", s.Stacks)
	}
	if !(tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{}}).NetworkSuites() {
		t.Error("tickToTrade asks for no reflector, but its publisher and exchange simulator run there")
	}
}

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		spec tsv1.BenchmarkSuites
		want string
	}{
		{tsv1.BenchmarkSuites{}, "no suite selected"},
		{tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{MessageSizes: []int32{12}}}, "pingPong.messageSizes[0]: message size 12 out of range: use 14..1472"},
		{tsv1.BenchmarkSuites{PingPong: &tsv1.PingPongSpec{Protocols: []tsv1.Protocol{"sctp"}}}, `pingPong.protocols[0]: "sctp" is not a protocol`},
		{tsv1.BenchmarkSuites{Stacks: []tsv1.Stack{"dpdk"}, PingPong: &tsv1.PingPongSpec{}}, `stacks[0]: "dpdk" is not a stack`},
		{tsv1.BenchmarkSuites{RateSweep: &tsv1.RateSweepSpec{RatesMps: []int64{1000, 500}}}, "rateSweep.ratesMps: rates must increase"},
		{tsv1.BenchmarkSuites{RateSweep: &tsv1.RateSweepSpec{Protocol: tsv1.ProtocolTCP}}, "rateSweep.protocol: tcp has no message drops"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{LinkSpeedMbps: -1}}, "microburst.linkSpeedMbps"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{2048}}}, "microburst.receiveBufferBytes[0]: 2048 out of range: use 4096..67108864 bytes"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{65536, 1 << 27}}}, "microburst.receiveBufferBytes[1]: 134217728 out of range"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{212992, 65536}}}, "microburst.receiveBufferBytes: sizes must increase, each once: sort them"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{65536, 65536}}}, "microburst.receiveBufferBytes: sizes must increase, each once"},
		{tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}}}, "microburst.receiveBufferBytes: 9 sizes: use at most 8"},
		{tsv1.BenchmarkSuites{RateSweep: &tsv1.RateSweepSpec{ReceiveBufferBytes: -1}}, "rateSweep.receiveBufferBytes: -1 out of range: use 4096..67108864 bytes"},
		{tsv1.BenchmarkSuites{MixedBurst: &tsv1.MixedBurstSpec{DurationSeconds: 3}}, "mixedBurst.durationSeconds: 3 is odd"},
		{tsv1.BenchmarkSuites{MixedBurst: &tsv1.MixedBurstSpec{Patterns: []tsv1.MixedBurstPattern{{SteadyMps: 5000000, BurstMps: 5000000}}}}, "exceed the 20000000 a playback file may hold"},
		{tsv1.BenchmarkSuites{Jitter: &tsv1.JitterSpec{}}, "jitter.cpus: empty CPU list"},
		{tsv1.BenchmarkSuites{Jitter: &tsv1.JitterSpec{CPUs: "3-1"}}, `jitter.cpus: CPU list "3-1"`},
		{tsv1.BenchmarkSuites{Jitter: &tsv1.JitterSpec{CPUs: "1", CyclictestPriority: 100}}, "jitter.cyclictestPriority: 100 out of range"},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: "ptp4l.sock"}}, `ptp.socket: "ptp4l.sock" is not a clean absolute path: give the read-only socket the node agent serves, e.g. /run/tickstack/ptp/ptp4l.sock`},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: "/run/tickstack/../ptp4l.sock"}}, `ptp.socket: "/run/tickstack/../ptp4l.sock" is not a clean absolute path`},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Socket: "/" + strings.Repeat("s", 107)}}, "is longer than 107 bytes, the longest UNIX socket path"},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Domain: ptr(int32(128))}}, "ptp.domain: 128 out of range: use 0..127"},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{IntervalMillis: 10}}, "ptp.intervalMillis: 10 out of range: use 100..60000 milliseconds"},
		{tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{DurationSeconds: -1}}, "ptp.durationSeconds: -1 out of range: use 1..86400 seconds"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{1000, 500}}}, "tickToTrade.ratesMps: rates must increase"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{0}}}, "tickToTrade.ratesMps[0]: 0 out of range: use 1..10000000"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{MessageSize: 16}}, "tickToTrade.messageSize: 16 out of range: use 32..1472 bytes"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{Mix: "bursty"}}, `tickToTrade.mix: "bursty" is not a mix`},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{BurstMps: 1000, DurationSeconds: 3}}, "tickToTrade.durationSeconds: 3 is odd: with burstMps use an even number"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{RatesMps: []int64{10}, DurationSeconds: 2, OrderEvery: 100}}, "tickToTrade.orderEvery: 100 is more than the 20 ticks of the lowest rate"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{OrderEvery: -1}}, "tickToTrade.orderEvery: -1 out of range"},
		{tsv1.BenchmarkSuites{TickToTrade: &tsv1.TickToTradeSpec{DurationSeconds: 3601}}, "tickToTrade.durationSeconds: 3601 out of range: use 1..3600 seconds"},
	}
	for _, c := range cases {
		err := ValidateSuites(c.spec.Defaulted())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.spec, err, c.want)
		}
	}
}

// Receive buffer sizes within the range, increasing, are taken as given; none stays none (the
// socket's default, not a size the defaults invent).
func TestSpecReceiveBuffers(t *testing.T) {
	s := tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{ReceiveBufferBytes: []int64{MinReceiveBufferBytes, 65536, 212992, MaxReceiveBufferBytes}},
		RateSweep: &tsv1.RateSweepSpec{ReceiveBufferBytes: 212992}}.Defaulted()
	if err := ValidateSuites(s); err != nil {
		t.Errorf("valid receive buffers refused: %v", err)
	}
	d := tsv1.BenchmarkSuites{Microburst: &tsv1.MicroburstSpec{}, RateSweep: &tsv1.RateSweepSpec{}}.Defaulted()
	if d.Microburst.ReceiveBufferBytes != nil || d.RateSweep.ReceiveBufferBytes != 0 {
		t.Errorf("defaults ask for receive buffers: %v, %d", d.Microburst.ReceiveBufferBytes, d.RateSweep.ReceiveBufferBytes)
	}
}

func TestSpecPTPAloneIsASuite(t *testing.T) {
	s := tsv1.BenchmarkSuites{PTP: &tsv1.PTPSuite{Domain: ptr(int32(0))}}.Defaulted()
	if err := ValidateSuites(s); err != nil {
		t.Errorf("ptp alone refused: %v", err)
	}
	if s.NetworkSuites() {
		t.Error("ptp alone needs a reflector")
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("3, 1-2,2")
	if err != nil || !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("ParseCPUList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "a", "1-", "-1", "5000"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestResultsLogRoundTrip(t *testing.T) {
	r := sampleResults()
	r.Node = "node-a"
	r.StartTime = metav1.NewTime(time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	r.CompletionTime = metav1.NewTime(time.Date(2026, 11, 22, 1, 2, 0, 0, time.UTC))
	r.Stacks[0].PingPong.Error = strings.Repeat("long error text ", 400) // forces several chunks
	var log bytes.Buffer
	log.WriteString("starting\nsome progress line\n")
	if err := WriteResultsLog(&log, r); err != nil {
		t.Fatal(err)
	}
	// kubectl logs --timestamps puts a prefix on every line.
	var stamped bytes.Buffer
	chunks := 0
	for _, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if strings.HasPrefix(line, LogChunkPrefix) {
			chunks++
			if len(line) > LogChunkSize+len(LogChunkPrefix) {
				t.Fatalf("log line of %d bytes exceeds the chunk size", len(line))
			}
		}
		stamped.WriteString("2026-11-22T01:02:03.000000000Z " + line + "\n")
	}
	if chunks < 3 {
		t.Fatalf("%d chunk lines, want the document split across several", chunks)
	}
	for name, in := range map[string]string{"plain": log.String(), "timestamped": stamped.String()} {
		got, err := ReadResultsLog(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, r) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(r)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: round trip changed the results", name)
			}
		}
	}
	// A truncated block (the pod was killed mid-print) is refused, an earlier intact one is used.
	full := log.String()
	cut := full[:strings.LastIndex(full, LogChunkPrefix)] + LogEndMarker + "\n"
	if _, err := ReadResultsLog(strings.NewReader(cut)); err == nil || !strings.Contains(err.Error(), "no intact results block") {
		t.Errorf("truncated block: %v", err)
	}
	if got, err := ReadResultsLog(strings.NewReader(full + cut)); err != nil || got.Node != "node-a" {
		t.Errorf("intact block followed by a truncated one: %v", err)
	}
	if _, err := ReadResultsLog(strings.NewReader("nothing here\n")); err == nil || !strings.Contains(err.Error(), "did the runner finish") {
		t.Errorf("no block: %v", err)
	}
	// A document of another schema is refused with the fix.
	bad := strings.Replace(full, tsv1.BenchmarkResultsSchemaVersion, "bench.tickstack.io/v9", 1)
	if _, err := ReadResultsLog(strings.NewReader(bad)); err == nil {
		t.Error("tampered block accepted")
	}
	file := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResultsFile(file, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(bytes.TrimSpace(b), []byte("\n")) != 0 {
		t.Error("results file is not compact JSON")
	}
	if got, err := UnmarshalResults(b); err != nil || got.Node != "node-a" {
		t.Errorf("results file: %v", err)
	}
}

// An older runner's microburst (one search at the socket's default, its answer beside the
// protocol) reads as the one row it is, its buffering unknown and said so.
func TestResultsFromAnOlderRunner(t *testing.T) {
	doc := `{"schemaVersion":"bench.tickstack.io/v1alpha1","startTime":"2026-11-22T00:54:03Z","completionTime":"2026-11-22T00:54:49Z",
		"stacks":[{"stack":"kernel","microburst":{"protocol":"udp","messageSize":256,"linkSpeedMbps":10000,
		"trials":[{"packets":64,"bursts":10,"sent":681,"dropped":0},{"packets":128,"bursts":10,"sent":1280,"dropped":180}],
		"maxBurstPackets":64,"burstTimeNs":15462,"limitReached":false}},{"stack":"bypass","unavailable":"no launcher"}]}`
	r, err := UnmarshalResults([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Stack(tsv1.StackKernel).Microburst
	if m == nil || len(m.Rows) != 1 {
		t.Fatalf("microburst %+v", m)
	}
	row := m.Rows[0]
	if row.ReceiveBufferBytes != 0 || len(row.Trials) != 2 || row.MaxBurstPackets != 64 || row.BurstTimeNs != 15462 || row.LimitReached ||
		row.Buffering == nil || row.Buffering.GrantedBytes != nil || !strings.Contains(row.Buffering.Missing, "older tickstack-bench") {
		t.Errorf("row %+v", row)
	}
	// a current document is read as it is
	b, err := MarshalResults(r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := UnmarshalResults(b)
	if err != nil || !reflect.DeepEqual(again.Stack(tsv1.StackKernel).Microburst, m) {
		t.Errorf("round trip: %+v, %v", again, err)
	}
}

// The result types will be embedded in the CRD status: no floats anywhere, camelCase JSON names.
func TestResultTypesAreAPIShaped(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		switch tp.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
			t.Errorf("%s is a float: use int64 nanoseconds or a decimal string", path)
		case reflect.Struct:
			if seen[tp] || tp.PkgPath() != reflect.TypeOf(tsv1.BenchmarkResults{}).PkgPath() {
				return
			}
			seen[tp] = true
			for i := 0; i < tp.NumField(); i++ {
				f := tp.Field(i)
				tag := f.Tag.Get("json")
				name, _, _ := strings.Cut(tag, ",")
				if tag == "" || (name == "" && !f.Anonymous) {
					t.Errorf("%s.%s has no json name", tp.Name(), f.Name)
				}
				if name != "" && (name[0] < 'a' || name[0] > 'z' || strings.ContainsAny(name, "_-")) {
					t.Errorf("%s.%s json name %q is not camelCase", tp.Name(), f.Name, name)
				}
				walk(f.Type, tp.Name()+"."+f.Name)
			}
		}
	}
	for _, v := range []any{tsv1.BenchmarkResults{}, tsv1.BenchmarkSuites{}, tsv1.Thresholds{}, tsv1.Verdict{}, tsv1.StackComparison{}, tsv1.TickToTradeComparison{}} {
		walk(reflect.TypeOf(v), reflect.TypeOf(v).Name())
	}
	if len(seen) < 20 {
		t.Fatalf("walked only %d types", len(seen))
	}
}

// The generated deep copies must not share slices or pointers with the original (the controller
// embeds these types in the CRD status).
func TestResultsDeepCopy(t *testing.T) {
	orig := sampleResults()
	cp := orig.DeepCopy()
	cp.Stacks[0].PingPong.Rows[0].MedianNs = 1
	cp.Stacks[0].MixedBurst.Rows[0].Small.P99Ns = 1
	cp.Jitter.Rows[0].MaxNs = 1
	cp.Stacks[0].TickToTrade.Rows[0].TickToTrade.P99Ns = 1
	cp.Stacks[0].TickToTrade.Rows[1].Unaccounted = append(cp.Stacks[0].TickToTrade.Rows[1].Unaccounted, "x")
	if orig.Stacks[0].PingPong.Rows[0].MedianNs == 1 || orig.Stacks[0].MixedBurst.Rows[0].Small.P99Ns == 1 || orig.Jitter.Rows[0].MaxNs == 1 ||
		orig.Stacks[0].TickToTrade.Rows[0].TickToTrade.P99Ns == 1 || len(orig.Stacks[0].TickToTrade.Rows[1].Unaccounted) != 0 {
		t.Fatal("DeepCopy shares memory with the original")
	}
	th := tsv1.Thresholds{MaxDropped: ptr(int64(0)), Latency: []tsv1.LatencyLimit{{Suite: tsv1.SuitePingPong}}}
	tc := th.DeepCopy()
	*tc.MaxDropped = 5
	tc.Latency[0].Suite = tsv1.SuiteJitter
	if *th.MaxDropped != 0 || th.Latency[0].Suite != tsv1.SuitePingPong {
		t.Fatal("Thresholds.DeepCopy shares memory")
	}
}
