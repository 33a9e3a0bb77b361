// Package bench measures a node the way the seed papers measured their systems: sockperf ping-pong by
// message size, latency under load across message rates, microburst tolerance, a mixed-size bursty
// pattern, OS jitter with oslat and cyclictest, and tick-to-trade with the rig of dataplane/t2t
// (paper 004; with the tuned vs untuned comparison); and it samples ptp4l's offset from its master
// for the whole run. It holds the parsers of the tools' output, the suite drivers the node runner
// executes, the stall detection (stalls in a run's per-message log, explained by the bypass
// stack's counters), the validation of the suites and thresholds, and the verdict logic. The types it reads
// and writes (BenchmarkSuites, BenchmarkResults, Thresholds, Verdict) are API types of
// api/v1alpha1, embedded in the LatencyBenchmark.
package bench
