package bench

import (
	"strings"
	"testing"
)

// testdata/rttests holds oslat and cyclictest (rt-tests 2.x) output captured on this kind of machine.
func TestParseOslat(t *testing.T) {
	cases := []struct {
		file        string
		cpus        []int
		samples     []int64
		min, avg    []int64
		max         []int64
		overflows   []int64
		wantBuckets int
	}{
		{"oslat_1cpu.txt", []int{1}, []int64{78911642}, []int64{1000}, []int64{1002}, []int64{10750000}, []int64{336}, 32},
		{"oslat_2cpu.txt", []int{0, 1}, []int64{8676525, 12534036}, []int64{1000, 1000}, []int64{1088, 1061}, []int64{319973000, 160022000}, []int64{89, 126}, 32},
		// -b 1024 -z: zero buckets are omitted ("..." lines), labels are not consecutive.
		{"oslat_1024_zero_omit.txt", []int{1}, []int64{31400883}, []int64{1000}, []int64{1008}, []int64{8071000}, []int64{67}, 965},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			reps, err := ParseOslat(readTestdata(t, "rttests/"+c.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != len(c.cpus) {
				t.Fatalf("%d reports, want %d", len(reps), len(c.cpus))
			}
			for i, r := range reps {
				st := r.Stats()
				if r.CPU != c.cpus[i] || st.Samples != c.samples[i] || st.MinNs != c.min[i] || st.MeanNs != c.avg[i] || st.MaxNs != c.max[i] || r.Overflows != c.overflows[i] {
					t.Errorf("cpu %d: got cpu %d samples %d min %d mean %d max %d overflows %d", i, r.CPU, st.Samples, st.MinNs, st.MeanNs, st.MaxNs, r.Overflows)
				}
				if len(r.Buckets) != c.wantBuckets {
					t.Errorf("cpu %d: %d buckets, want %d", i, len(r.Buckets), c.wantBuckets)
				}
				if !(st.MinNs <= st.MedianNs && st.MedianNs <= st.P95Ns && st.P95Ns <= st.P99Ns && st.P99Ns <= st.P999Ns && st.P999Ns <= st.MaxNs) {
					t.Errorf("cpu %d: percentiles not monotonic: %+v", i, st)
				}
			}
		})
	}
	for _, bad := range []string{"", "oslat V 2.40\nTest starts...\n", "        Core:\t 1 2\n    001 (us):\t 5\n"} {
		if _, err := ParseOslat(bad); err == nil {
			t.Errorf("ParseOslat(%q) accepted incomplete output", bad)
		}
	}
}

func TestParseCyclictest(t *testing.T) {
	cases := []struct {
		file           string
		cycles         []int64
		overflows      []int64
		min, avg, max  []int64
		p50, p99       []int64
		withPercentile bool
	}{
		{"cyclictest_hist_1thread.txt", []int64{9957}, []int64{9}, []int64{8000}, []int64{24000}, []int64{4522000}, []int64{21000}, []int64{66000}, true},
		{"cyclictest_hist_2threads.txt", []int64{4941, 4937}, []int64{51, 58}, []int64{10000, 7000}, []int64{25000, 26000}, []int64{1552000, 388000}, nil, nil, true},
		{"cyclictest_summary.txt", []int64{4998}, []int64{0}, []int64{9000}, []int64{25000}, []int64{340000}, nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			reps, err := ParseCyclictest(readTestdata(t, "rttests/"+c.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != len(c.cycles) {
				t.Fatalf("%d threads, want %d", len(reps), len(c.cycles))
			}
			for i, r := range reps {
				if r.Cycles != c.cycles[i] || r.Overflows != c.overflows[i] || r.MinNs != c.min[i] || r.AvgNs != c.avg[i] || r.MaxNs != c.max[i] {
					t.Errorf("thread %d: %+v", i, r)
				}
				st := r.Stats()
				if st.Samples != c.cycles[i]+c.overflows[i] {
					t.Errorf("thread %d: samples %d, want histogram total plus overflows %d", i, st.Samples, c.cycles[i]+c.overflows[i])
				}
				if c.p50 != nil && (st.MedianNs != c.p50[i] || st.P99Ns != c.p99[i]) {
					t.Errorf("thread %d: p50 %d p99 %d, want %d %d", i, st.MedianNs, st.P99Ns, c.p50[i], c.p99[i])
				}
				if c.withPercentile && !(st.MinNs <= st.MedianNs && st.MedianNs <= st.P99Ns && st.P99Ns <= st.P999Ns && st.P999Ns <= st.MaxNs) {
					t.Errorf("thread %d: percentiles not monotonic: %+v", i, st)
				}
				if !c.withPercentile && (st.MedianNs != 0 || st.P99Ns != 0) {
					t.Errorf("thread %d: percentiles invented without a histogram: %+v", i, st)
				}
			}
		})
	}
	if _, err := ParseCyclictest("# /dev/cpu_dma_latency set to 0us\n"); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("empty cyclictest output: error %v", err)
	}
}
