package bench

import (
	"slices"
	"sort"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/internal/bench/judge"
)

// FewSamplesDivisor: a pingPong row with fewer than 1/FewSamplesDivisor of the median sample
// count of its suite's other rows (same stack and protocol) is flagged.
const FewSamplesDivisor = 4

// stretch is a time interval [start, end) of the sockperf clock.
type stretch struct{ start, end int64 }

// DetectStalls finds the stalls of one run in its full log (rows in the log's order, with their
// send and receive times; rows without a send time are left out) given the run's p99.9: messages slower than LatencyStallThreshold
// (from their send to their reply) and pauses between consecutive sends longer than StallFactor x
// the median pause (at least StallMinimum). Stretches that overlap or touch are one stall. The
// report lists the MaxListedStalls longest in time order; offsets are from the first send.
func DetectStalls(rows []FullLogSample, p999Ns int64) *tsv1.StallReport {
	rep := &tsv1.StallReport{LatencyThresholdNs: judge.LatencyStallThreshold(p999Ns)}
	if slices.ContainsFunc(rows, func(r FullLogSample) bool { return r.TxNs <= 0 }) {
		// a row without a send time cannot be placed in the run
		rows = slices.DeleteFunc(slices.Clone(rows), func(r FullLogSample) bool { return r.TxNs <= 0 })
	}
	if len(rows) == 0 {
		return rep
	}
	var found []stretch
	for _, r := range rows {
		if r.LatencyNs > rep.LatencyThresholdNs {
			end := r.RxNs
			if end <= r.TxNs {
				end = r.TxNs + r.LatencyNs
			}
			found = append(found, stretch{r.TxNs, end})
		}
	}
	if len(rows) > 1 {
		pauses := make([]int64, 0, len(rows)-1)
		for i := 1; i < len(rows); i++ {
			if d := rows[i].TxNs - rows[i-1].TxNs; d >= 0 {
				pauses = append(pauses, d)
			}
		}
		if len(pauses) > 0 {
			sorted := slices.Clone(pauses)
			slices.Sort(sorted)
			median := sorted[percentileRank(len(sorted), 50)]
			rep.GapThresholdNs = max(judge.StallFactor*median, int64(judge.StallMinimum))
			for i := 1; i < len(rows); i++ {
				if rows[i].TxNs-rows[i-1].TxNs > rep.GapThresholdNs {
					found = append(found, stretch{rows[i-1].TxNs, rows[i].TxNs})
				}
			}
		}
	}
	if len(found) == 0 {
		return rep
	}
	sort.Slice(found, func(a, b int) bool { return found[a].start < found[b].start })
	merged := []stretch{found[0]}
	for _, s := range found[1:] {
		last := &merged[len(merged)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	first := rows[0].TxNs
	for _, r := range rows {
		first = min(first, r.TxNs)
	}
	stalls := make([]tsv1.Stall, len(merged))
	for i, s := range merged {
		stalls[i] = tsv1.Stall{OffsetNs: s.start - first, DurationNs: s.end - s.start}
		rep.TotalNs += s.end - s.start
	}
	// The slowest message sent during each stall.
	for _, r := range rows {
		i := sort.Search(len(merged), func(i int) bool { return merged[i].end > r.TxNs })
		if i < len(merged) && merged[i].start <= r.TxNs {
			stalls[i].LatencyNs = max(stalls[i].LatencyNs, r.LatencyNs)
		}
	}
	rep.Count = int32(len(stalls))
	if len(stalls) > tsv1.MaxListedStalls {
		longest := slices.Clone(stalls)
		sort.SliceStable(longest, func(a, b int) bool { return longest[a].DurationNs > longest[b].DurationNs })
		stalls = longest[:tsv1.MaxListedStalls]
		sort.Slice(stalls, func(a, b int) bool { return stalls[a].OffsetNs < stalls[b].OffsetNs })
	}
	rep.Stalls = stalls
	return rep
}

// MarkFewSamples compares every pingPong row's sample count with the median of the other rows of
// the same protocol (the rows of one stack's suite, each measured for the same duration) and
// records both in the row's stall report, which it creates when the row has none.
func MarkFewSamples(rows []tsv1.PingPongRow) {
	for i := range rows {
		var others []int64
		for j := range rows {
			if j != i && rows[j].Protocol == rows[i].Protocol && rows[j].Samples > 0 {
				others = append(others, rows[j].Samples)
			}
		}
		if len(others) == 0 {
			continue
		}
		slices.Sort(others)
		median := others[len(others)/2]
		if len(others)%2 == 0 {
			median = (others[len(others)/2-1] + others[len(others)/2]) / 2
		}
		if rows[i].Stalls == nil {
			rows[i].Stalls = DetectStalls(nil, rows[i].P999Ns)
		}
		rows[i].Stalls.NeighbourSamples = median
		rows[i].Stalls.FewSamples = rows[i].Samples*FewSamplesDivisor < median
	}
}
