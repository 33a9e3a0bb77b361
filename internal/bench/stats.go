package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// ParseMicrosToNanos parses a non-negative decimal number of microseconds ("8.638", "17270.640",
// "12") into integer nanoseconds without going through a float; digits beyond the nanosecond are
// rounded half up.
func ParseMicrosToNanos(s string) (int64, error) {
	s = strings.TrimSpace(s)
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return 0, fmt.Errorf("empty number")
	}
	if intPart == "" {
		intPart = "0"
	}
	for _, part := range []string{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%q is not a non-negative decimal number", s)
			}
		}
	}
	if len(intPart) > 12 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	whole, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	ns := whole * 1000
	round := false
	if len(frac) > 3 {
		round = frac[3] >= '5'
		frac = frac[:3]
	}
	for len(frac) < 3 {
		frac += "0"
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	ns += f
	if round {
		ns++
	}
	return ns, nil
}

// percentileRank returns the nearest-rank index into n sorted samples for percentile p (0..100).
func percentileRank(n int, p float64) int {
	if n == 0 {
		return 0
	}
	r := int(math.Ceil(p/100*float64(n))) - 1
	if r < 0 {
		r = 0
	}
	if r >= n {
		r = n - 1
	}
	return r
}

// ComputeStats computes the distribution of samples (nanoseconds). The slice is sorted in place.
// Percentiles use the nearest-rank method; the standard deviation is the sample one (n-1), as
// sockperf computes it.
func ComputeStats(samples []int64) tsv1.LatencyStats {
	n := len(samples)
	if n == 0 {
		return tsv1.LatencyStats{}
	}
	sort.Slice(samples, func(a, b int) bool { return samples[a] < samples[b] })
	var sum float64
	for _, v := range samples {
		sum += float64(v)
	}
	mean := sum / float64(n)
	var sq float64
	for _, v := range samples {
		d := float64(v) - mean
		sq += d * d
	}
	at := func(p float64) int64 { return samples[percentileRank(n, p)] }
	return tsv1.LatencyStats{
		Samples:  int64(n),
		MinNs:    samples[0],
		MedianNs: at(50),
		MeanNs:   int64(math.Round(mean)),
		P95Ns:    at(95),
		P99Ns:    at(99),
		P999Ns:   at(99.9),
		MaxNs:    samples[n-1],
		StdDevNs: int64(math.Round(math.Sqrt(sq / float64(max(n-1, 1))))),
	}
}

// CurvePercentiles returns the percentiles a PercentileCurve is sampled at.
func CurvePercentiles() []string {
	return []string{"0", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "100"}
}

// ComputeCurve samples sorted samples (as left by ComputeStats) at fixed percentiles.
func ComputeCurve(sorted []int64) []tsv1.PercentilePoint {
	if len(sorted) == 0 {
		return nil
	}
	ps := CurvePercentiles()
	out := make([]tsv1.PercentilePoint, 0, len(ps))
	for _, p := range ps {
		f, _ := strconv.ParseFloat(p, 64)
		idx := percentileRank(len(sorted), f)
		out = append(out, tsv1.PercentilePoint{Percentile: p, ValueNs: sorted[idx]})
	}
	return out
}

// HistogramStats computes a distribution from a histogram of 1 us buckets (counts[i] is the number
// of observations of i us, or of at most i+1 us with upperBound true), plus the tool's exact min,
// mean and max. Percentiles landing in the overflow are reported as the exact maximum.
func HistogramStats(counts []int64, bucketNs int64, upperBound bool, overflows, minNs, meanNs, maxNs int64) tsv1.LatencyStats {
	var total int64
	for _, c := range counts {
		total += c
	}
	total += overflows
	st := tsv1.LatencyStats{Samples: total, MinNs: minNs, MeanNs: meanNs, MaxNs: maxNs}
	if total == 0 {
		return st
	}
	value := func(i int) int64 {
		v := int64(i) * bucketNs
		if upperBound {
			v += bucketNs
		}
		if v > maxNs && maxNs > 0 {
			v = maxNs
		}
		if v < minNs {
			v = minNs
		}
		return v
	}
	at := func(p float64) int64 {
		rank := int64(math.Ceil(p / 100 * float64(total)))
		if rank < 1 {
			rank = 1
		}
		var cum int64
		for i, c := range counts {
			cum += c
			if cum >= rank {
				return value(i)
			}
		}
		return maxNs
	}
	st.MedianNs, st.P95Ns, st.P99Ns, st.P999Ns = at(50), at(95), at(99), at(99.9)
	// Standard deviation from bucket values; overflow observations count at the maximum.
	mean := float64(meanNs)
	var sq float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		d := float64(value(i)) - mean
		sq += float64(c) * d * d
	}
	if overflows > 0 {
		d := float64(maxNs) - mean
		sq += float64(overflows) * d * d
	}
	st.StdDevNs = int64(math.Round(math.Sqrt(sq / float64(total))))
	return st
}
