package testutil

import (
	dto "github.com/prometheus/client_model/go"
)

// SeriesWith returns the series of the metric family f (nil: none) whose labels include labels,
// each with its labels as a map.
func SeriesWith(f *dto.MetricFamily, labels map[string]string) (series []*dto.Metric, labelsOf []map[string]string) {
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		series, labelsOf = append(series, m), append(labelsOf, have)
	}
	return series, labelsOf
}
