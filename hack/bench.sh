#!/usr/bin/env bash
# make bench: every benchmark of the project, each reported as a ratio against a baseline measured in
# the same run (never an absolute time: this is a shared 2-vCPU VM), and the node agent's own cost
# against the absolute targets of issue 22 (root: it tunes and restores this host). Writes
# docs/benchmarks.md; the dataplane's own benchmark writes docs/bench-dataplane.md (skip it with
# BENCH_SKIP_DATAPLANE=1). BENCH_AGENT_IDLE sets the agent's idle window (default 60s).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/benchmarks.md
count=${BENCH_COUNT:-7}
raw=$(mktemp)
agent=$(mktemp)
trap 'rm -f "$raw" "$agent"' EXIT
: "${KUBEBUILDER_ASSETS:?run it as make bench, which builds the envtest assets}"

go test -run '^$' -bench 'BenchmarkResolveNode|BenchmarkBaselineCopyFacts' -benchmem -count "$count" ./internal/resolve/ | tee "$raw" >&2

# The agent's own cost (issue 22): the real agent applies a full non-reboot profile to this host
# (root), then idles for a minute (test/agentcost).
go test -count=1 -run TestAgentCost -v ./test/agentcost/ \
  -args -agentcost.idle="${BENCH_AGENT_IDLE:-60s}" -agentcost.out="$agent" >&2

python3 hack/bench-report.py "$raw" "$out" "$count" "$agent"

if [ "${BENCH_SKIP_DATAPLANE:-0}" != 1 ]; then
  make -C dataplane bench
fi
