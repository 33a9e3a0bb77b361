// Package judge is the pure half of the benchmarks: what the operator, `tickstack validate`,
// `tickstack report` and the runner all read. It validates a LatencyBenchmark's suites and
// thresholds (the limits of the tools included), judges results against thresholds into a
// Verdict, compares the kernel and bypass stacks and a tuned run with its untuned baseline, holds
// the paper formulas (burst time, ratios), the stall bounds and summaries the report prints, and
// reads and writes the results document (the runner's log block, the results file). It runs no
// tool and reads no host: the node-side runner (package bench, linked only by cmd/tickstack-bench
// and the NIC qualification of the CLI) measures, and this package judges. The types it reads and
// writes (BenchmarkSuites, BenchmarkResults, Thresholds, Verdict) are API types of api/v1alpha1.
package judge
