// Package bench is the benchmark runner, the node side of a LatencyBenchmark: it measures a node
// the way the seed papers measured their systems: sockperf ping-pong by message size, latency
// under load across message rates, microburst tolerance, a mixed-size bursty pattern, OS jitter
// with oslat and cyclictest, and tick-to-trade with the rig of dataplane/t2t (paper 004; with the
// tuned vs untuned comparison); and it samples ptp4l's offset from its master for the whole run.
// It holds the parsers of the tools' output, the suite drivers, the reflector and its control
// protocol, and the stall detection (stalls in a run's per-message log, explained by the bypass
// stack's counters and the scheduler samples). What judges the results (validation, the verdict,
// comparisons, the results document) is the pure package judge below it, which the operator links;
// this package is linked only by cmd/tickstack-bench and the NIC qualification (internal/qualify,
// `tickstack qualify`), as test/architecture checks.
package bench
