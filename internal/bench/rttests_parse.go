package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// OslatReport is one CPU column of oslat's final report.
type OslatReport struct {
	CPU int
	// Buckets[i] counts loops whose gap was i us (oslat's bucket labelled i).
	Buckets []int64
	// Overflows is the count of the last bucket, which oslat marks "(including overflows)": gaps
	// of that size or longer.
	Overflows int64
	// MinNs, AvgNs, MaxNs are oslat's Minimum, Average and Maximum.
	MinNs, AvgNs, MaxNs int64
}

var (
	oslatBucketRe = regexp.MustCompile(`^\s*([0-9]+)\s*\(us\):\s*(.*?)\s*(\(including overflows\))?\s*$`)
	oslatFieldRe  = regexp.MustCompile(`^\s*(Core|Minimum|Average|Maximum):\s*(.*?)\s*(\(us\))?\s*$`)
)

// ParseOslat parses oslat's (rt-tests 2.x) text report, one OslatReport per CPU column.
func ParseOslat(output string) ([]OslatReport, error) {
	var cpus []int
	var reps []OslatReport
	fields := func(s string) []string { return strings.Fields(s) }
	for _, raw := range strings.Split(strings.ReplaceAll(output, "\r", ""), "\n") {
		if m := oslatFieldRe.FindStringSubmatch(raw); m != nil {
			vals := fields(m[2])
			switch m[1] {
			case "Core":
				cpus = cpus[:0]
				for _, v := range vals {
					c, err := strconv.Atoi(v)
					if err != nil {
						return nil, fmt.Errorf("oslat: Core line %q: %q is not a CPU", raw, v)
					}
					cpus = append(cpus, c)
				}
				reps = make([]OslatReport, len(cpus))
				for i, c := range cpus {
					reps[i].CPU = c
				}
			default:
				if len(vals) != len(reps) {
					return nil, fmt.Errorf("oslat: %s line has %d values for %d CPUs", m[1], len(vals), len(reps))
				}
				for i, v := range vals {
					ns, err := ParseMicrosToNanos(v)
					if err != nil {
						return nil, fmt.Errorf("oslat: %s %q: %w", m[1], v, err)
					}
					switch m[1] {
					case "Minimum":
						reps[i].MinNs = ns
					case "Average":
						reps[i].AvgNs = ns
					case "Maximum":
						reps[i].MaxNs = ns
					}
				}
			}
			continue
		}
		if m := oslatBucketRe.FindStringSubmatch(raw); m != nil && reps != nil {
			vals := fields(m[2])
			if len(vals) != len(reps) {
				return nil, fmt.Errorf("oslat: bucket line %q has %d values for %d CPUs", strings.TrimSpace(raw), len(vals), len(reps))
			}
			label, err := strconv.Atoi(m[1])
			if err != nil || label > 1<<16 {
				return nil, fmt.Errorf("oslat: bucket line %q: bad bucket label", strings.TrimSpace(raw))
			}
			for i, v := range vals {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("oslat: bucket line %q: %q is not a count", strings.TrimSpace(raw), v)
				}
				if m[3] != "" {
					reps[i].Overflows = n
					continue
				}
				for len(reps[i].Buckets) <= label {
					reps[i].Buckets = append(reps[i].Buckets, 0)
				}
				reps[i].Buckets[label] = n
			}
		}
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("oslat output holds no \"Core:\" report (did it run to the end?)")
	}
	for _, r := range reps {
		if (len(r.Buckets) == 0 && r.Overflows == 0) || r.MaxNs == 0 {
			return nil, fmt.Errorf("oslat output for CPU %d lacks its histogram or Maximum", r.CPU)
		}
	}
	return reps, nil
}

// Stats turns an oslat report into a distribution: bucket i holds gaps of i us; the overflow
// bucket counts at the exact maximum.
func (o OslatReport) Stats() tsv1.LatencyStats {
	return HistogramStats(o.Buckets, 1000, false, o.Overflows, o.MinNs, o.AvgNs, o.MaxNs)
}

// CyclictestReport is one measuring thread of cyclictest.
type CyclictestReport struct {
	// Thread is cyclictest's thread index; CPU is filled by the caller who knows the -a mapping.
	Thread int
	// Histogram[i] counts wake-ups of i us (empty without -h).
	Histogram []int64
	// Overflows counts wake-ups beyond the histogram.
	Overflows int64
	// Cycles is the number of wake-ups measured: the histogram's "# Total" (which leaves the
	// overflows out) or the "C:" count of a thread line.
	Cycles              int64
	MinNs, AvgNs, MaxNs int64
}

var cyclicThreadRe = regexp.MustCompile(`T:\s*([0-9]+)\s*\(\s*[0-9]+\)\s*P:\s*[0-9]+\s*I:\s*[0-9]+\s*C:\s*([0-9]+)\s*Min:\s*([0-9]+)\s*Act:\s*[0-9]+\s*Avg:\s*([0-9]+)\s*Max:\s*([0-9]+)`)

// ParseCyclictest parses cyclictest's output: the histogram form (-h N, with or without -q) or
// the per-thread "T: ..." summary lines.
func ParseCyclictest(output string) ([]CyclictestReport, error) {
	text := strings.ReplaceAll(output, "\r", "")
	var reps []CyclictestReport
	ensure := func(n int) {
		for len(reps) < n {
			reps = append(reps, CyclictestReport{Thread: len(reps)})
		}
	}
	hist := false
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "# Histogram":
			hist = true
		case strings.HasPrefix(line, "# "):
			key, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), ":")
			if !ok {
				continue
			}
			vals := strings.Fields(val)
			var set func(*CyclictestReport, int64)
			switch key {
			case "Total":
				set = func(r *CyclictestReport, v int64) { r.Cycles = v }
			case "Min Latencies":
				set = func(r *CyclictestReport, v int64) { r.MinNs = v * 1000 }
			case "Avg Latencies":
				set = func(r *CyclictestReport, v int64) { r.AvgNs = v * 1000 }
			case "Max Latencies":
				set = func(r *CyclictestReport, v int64) { r.MaxNs = v * 1000 }
			case "Histogram Overflows":
				set = func(r *CyclictestReport, v int64) { r.Overflows = v }
			default:
				continue
			}
			ensure(len(vals))
			for i, v := range vals {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("cyclictest: %q: %q is not a number", line, v)
				}
				set(&reps[i], n)
			}
		case hist && len(line) > 0 && line[0] >= '0' && line[0] <= '9':
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			bucket, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, fmt.Errorf("cyclictest: histogram line %q: bad bucket", line)
			}
			ensure(len(f) - 1)
			for i, v := range f[1:] {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("cyclictest: histogram line %q: %q is not a count", line, v)
				}
				for len(reps[i].Histogram) <= bucket {
					reps[i].Histogram = append(reps[i].Histogram, 0)
				}
				reps[i].Histogram[bucket] = n
			}
		default:
			if m := cyclicThreadRe.FindStringSubmatch(line); m != nil {
				t, _ := strconv.Atoi(m[1])
				ensure(t + 1)
				r := &reps[t]
				r.Cycles, r.MinNs, r.AvgNs, r.MaxNs = atoi64(m[2]), atoi64(m[3])*1000, atoi64(m[4])*1000, atoi64(m[5])*1000
			}
		}
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("cyclictest output holds neither a histogram summary nor \"T:\" thread lines (did it run to the end?)")
	}
	for _, r := range reps {
		if r.Cycles == 0 {
			return nil, fmt.Errorf("cyclictest thread %d measured no cycles", r.Thread)
		}
	}
	return reps, nil
}

// Stats turns a cyclictest report into a distribution. Without a histogram only min, mean and max
// are known; the percentiles are then left 0.
func (c CyclictestReport) Stats() tsv1.LatencyStats {
	if len(c.Histogram) == 0 {
		return tsv1.LatencyStats{Samples: c.Cycles + c.Overflows, MinNs: c.MinNs, MeanNs: c.AvgNs, MaxNs: c.MaxNs}
	}
	return HistogramStats(c.Histogram, 1000, false, c.Overflows, c.MinNs, c.AvgNs, c.MaxNs)
}
