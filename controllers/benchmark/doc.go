// Package benchmark is the LatencyBenchmark controller: per run it validates the suites, checks the
// namespace's opt-in, starts one pinned Job per target node (and the reflector of two-pod
// placement), collects each node's results from its uploader's ConfigMap, judges them
// (internal/bench/judge), records each node's pass in tickstack.io/benchmark-passed, and exports
// metrics and events.
package benchmark
