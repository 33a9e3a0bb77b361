package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading testdata: %v", err)
	}
	return string(b)
}

// wrapAt folds every line longer than width at the last space before width, the way a terminal or
// a log shipper with a line limit wraps sockperf's output.
func wrapAt(s string, width int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for len(line) > width {
			cut := strings.LastIndex(line[:width], " ")
			if cut <= 0 {
				break
			}
			out = append(out, line[:cut])
			line = line[cut+1:]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// The files under testdata/sockperf were captured from sockperf 3.7 over a veth pair between two
// network namespaces on this kind of machine (ANSI colour codes included, as sockperf prints them).
func TestParseSockperfClient(t *testing.T) {
	cases := []struct {
		file                             string
		avg, std, min, max, p99, p50     int64
		observations, validSent, dropped int64
		validRunNs                       int64
	}{
		{"pp_udp_64.txt", 10681, 37777, 6369, 2829817, 29248, 8797, 72359, 72359, 0, 1550000000},
		{"pp_multicast_64.txt", 14769, 104588, 6294, 4871665, 35772, 8312, 18586, 18586, 0, 550000000},
		{"pp_tcp_1472.txt", 19201, 102908, 9193, 4163768, 47289, 12172, 14280, 14280, 0, 549000000},
		{"ul_udp_64_20k_drops.txt", 440511, 1465256, 7145, 17270640, 5762398, 13965, 272, 30201, 31, 1530000000},
		{"ul_small.txt", 646100, 1761605, 9233, 12774486, 9829899, 38612, 273, 2721, 0, 544000000},
		// sockperf's signal handler printed "Test end (interrupted by signal 2)" amid the summary.
		{"pb_mixed_interleaved.txt", 122323, 413800, 8627, 5630638, 1985873, 31015, 6000, 6000, 0, 4000000000},
	}
	for _, c := range cases {
		for _, variant := range []string{"as captured", "wrapped at 40 columns", "CRLF line ends"} {
			t.Run(c.file+"/"+variant, func(t *testing.T) {
				text := readTestdata(t, "sockperf/"+c.file)
				switch variant {
				case "wrapped at 40 columns":
					text = wrapAt(text, 40)
				case "CRLF line ends":
					text = strings.ReplaceAll(text, "\n", "\r\n")
				}
				r, err := ParseSockperfClient(text)
				if err != nil {
					t.Fatalf("ParseSockperfClient: %v", err)
				}
				if r.Version != "3.7-no.git" {
					t.Errorf("version %q, want 3.7-no.git", r.Version)
				}
				got := []int64{r.AvgNs, r.StdDevNs, r.MinNs, r.MaxNs, r.Percentiles["99.000"], r.Percentiles["50.000"], r.Observations, r.ValidSent, r.Dropped, r.ValidRunNs}
				want := []int64{c.avg, c.std, c.min, c.max, c.p99, c.p50, c.observations, c.validSent, c.dropped, c.validRunNs}
				names := []string{"avg", "std-dev", "min", "max", "p99", "p50", "observations", "valid sent", "dropped", "valid run"}
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("%s = %d, want %d", names[i], got[i], want[i])
					}
				}
				if len(r.Percentiles) != 8 {
					t.Errorf("got %d percentiles, want sockperf's 8: %v", len(r.Percentiles), r.Percentiles)
				}
				if len(r.Errors) != 0 {
					t.Errorf("unexpected errors %v", r.Errors)
				}
			})
		}
	}
}

func TestParseSockperfClientThroughput(t *testing.T) {
	r, err := ParseSockperfClient(readTestdata(t, "sockperf/tp_burst_2000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.MessagesSent != 4000 || r.MessageRate != 3986 || r.HasLatency {
		t.Errorf("sent %d rate %d hasLatency %v, want 4000 3986 false", r.MessagesSent, r.MessageRate, r.HasLatency)
	}
}

func TestParseSockperfClientErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"pp_no_server.txt", "No messages were received from the server"},
		{"pp_tcp_refused.txt", "Connection refused"},
		{"pp_bad_size.txt", "Invalid message size: 12"},
		// The bypass launcher with --require refuses a socket it cannot accelerate.
		{"pp_bypass_require_multicast.txt", "TICKSTACK_REQUIRE=1: socket fd 4 (0.0.0.0:43697) cannot be accelerated"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, err := ParseSockperfClient(readTestdata(t, "sockperf/"+c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one quoting %q", err, c.want)
			}
		})
	}
	if _, err := ParseSockperfClient(""); err == nil {
		t.Fatal("empty output parsed without error")
	}
}

func TestParseSockperfServer(t *testing.T) {
	cases := []struct {
		file              string
		received, dropped int64
	}{
		{"server_udp.txt", 181394, 0},
		{"server_tcp.txt", 26708, 0},
		{"server_gap_drops.txt", 2117, 648},
		{"server_idle.txt", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := ParseSockperfServer(readTestdata(t, "sockperf/"+c.file))
			if !r.Ready || !r.HasReceived || r.Received != c.received || r.GapDropped != c.dropped || r.Version != "3.7-no.git" {
				t.Errorf("got %+v, want ready, received %d, gap-dropped %d", r, c.received, c.dropped)
			}
		})
	}
	// A server that has not reached its receive loop yet is not ready.
	if r := ParseSockperfServer("sockperf: == version #3.7-no.git ==\nsockperf: [SERVER] listen on:\n"); r.Ready || r.HasReceived {
		t.Errorf("half-started server reported %+v", r)
	}
}

// The full log and the summary of the same run must agree: min and max exactly, the mean to the
// nanosecond sockperf rounds to, and the number of rows equals the observations.
func TestParseFullLogAgreesWithSummary(t *testing.T) {
	for _, name := range []string{"pp_small", "ul_small", "pb_small"} {
		t.Run(name, func(t *testing.T) {
			sum, err := ParseSockperfClient(readTestdata(t, "sockperf/"+name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			rows := readFullLog(t, name)
			if int64(len(rows)) != sum.Observations {
				t.Fatalf("%d rows, summary says %d observations", len(rows), sum.Observations)
			}
			for i, r := range rows {
				if r.Packet != int64(i) {
					t.Fatalf("row %d has packet %d: rows must be in sequence", i, r.Packet)
				}
			}
			samples := make([]int64, len(rows))
			for i, r := range rows {
				samples[i] = r.LatencyNs
			}
			st := ComputeStats(samples)
			// The CSV and the summary round the same latency separately: allow 1 ns.
			if abs(st.MinNs-sum.MinNs) > 1 || abs(st.MaxNs-sum.MaxNs) > 1 {
				t.Errorf("min/max %d/%d, summary %d/%d", st.MinNs, st.MaxNs, sum.MinNs, sum.MaxNs)
			}
			if d := st.MeanNs - sum.AvgNs; d < -1 || d > 1 {
				t.Errorf("mean %d, summary avg %d", st.MeanNs, sum.AvgNs)
			}
			if d := st.StdDevNs - sum.StdDevNs; d < -2 || d > 2 {
				t.Errorf("std-dev %d, summary %d", st.StdDevNs, sum.StdDevNs)
			}
			if !(st.MinNs <= st.MedianNs && st.MedianNs <= st.P95Ns && st.P95Ns <= st.P99Ns && st.P99Ns <= st.P999Ns && st.P999Ns <= st.MaxNs) {
				t.Errorf("percentiles not monotonic: %+v", st)
			}
		})
	}
}

func TestParseFullLogErrors(t *testing.T) {
	if _, err := ParseFullLog(strings.NewReader("sockperf: nothing\n")); err == nil {
		t.Error("a file without the CSV header parsed")
	}
	if _, err := ParseFullLog(strings.NewReader("packet, txTime(sec), rxTime(sec), latency(usec)\n0, 1.0\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("short row: error %v, want one naming line 2", err)
	}
}

func TestParseMicrosToNanos(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"8.638", 8638, false}, {"17270.640", 17270640, false}, {"12", 12000, false}, {"0.5", 500, false},
		{".25", 250, false}, {"1.0005", 1001, false}, {"1.0004", 1000, false}, {" 7.1 ", 7100, false},
		{"", 0, true}, {"-1", 0, true}, {"1e3", 0, true}, {"1.2.3", 0, true}, {"9999999999999", 0, true},
	}
	for _, c := range cases {
		got, err := ParseMicrosToNanos(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseMicrosToNanos(%q) = %d, %v; want %d, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestComputeStats(t *testing.T) {
	s := []int64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	st := ComputeStats(s)
	want := tsv1.LatencyStats{Samples: 10, MinNs: 1, MedianNs: 5, MeanNs: 6, P95Ns: 10, P99Ns: 10, P999Ns: 10, MaxNs: 10, StdDevNs: 3}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	if (ComputeStats(nil) != tsv1.LatencyStats{}) {
		t.Error("empty samples must give zero stats")
	}
	curve := ComputeCurve(s)
	if len(curve) != len(CurvePercentiles()) || curve[0].ValueNs != 1 || curve[len(curve)-1].ValueNs != 10 {
		t.Errorf("curve %+v", curve)
	}
}

// FuzzParseSockperfClient feeds arbitrary text (seeded with every captured output, wrapped and
// not) to the client and server parsers: they must never panic, and whatever they accept must be
// sane (no negative latency, percentiles parsed from sockperf's labels only).
func FuzzParseSockperfClient(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "sockperf"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "sockperf", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 8192 {
			b = b[len(b)-8192:]
		}
		f.Add(string(b))
		f.Add(wrapAt(string(b), 33))
	}
	f.Add("sockperf: \x1b[2;35m====> avg-latency=1.5 (std-dev=\n0.2)\x1b[0m")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseSockperfClient(s)
		if r == nil {
			t.Fatal("nil report")
		}
		if err == nil && !r.HasLatency && r.MessageRate == 0 && r.MessagesSent == 0 {
			t.Fatal("accepted output without any summary")
		}
		for k, v := range r.Percentiles {
			if v < 0 || !strings.Contains(k, ".") {
				t.Fatalf("percentile %q = %d", k, v)
			}
		}
		if r.AvgNs < 0 || r.StdDevNs < 0 || r.MinNs < 0 || r.MaxNs < 0 || r.Dropped < 0 {
			t.Fatalf("negative value in %+v", r)
		}
		srv := ParseSockperfServer(s)
		if srv.GapDropped < 0 || srv.Received < 0 {
			t.Fatalf("negative server counters %+v", srv)
		}
		// Wrapping at whitespace never changes what is understood.
		if w, werr := ParseSockperfClient(wrapAt(s, 50)); err == nil && werr == nil && (w.AvgNs != r.AvgNs || w.MaxNs != r.MaxNs || w.Dropped != r.Dropped) {
			t.Fatalf("wrapping changed the result: %+v vs %+v", w, r)
		}
	})
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// readFullLog parses testdata/sockperf/<name>_fulllog.csv, a full log sockperf wrote.
func readFullLog(t *testing.T, name string) []FullLogSample {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sockperf", name+"_fulllog.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ParseFullLog(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
