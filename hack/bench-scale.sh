#!/usr/bin/env bash
# make bench-scale: the operator at fleet size (issue 20). Builds kwok (sigs.k8s.io/kwok, the
# version pinned below) into the cache, runs test/scale at 100, 1,000 and 5,000 simulated nodes
# against a real kube-apiserver (the envtest assets), and writes docs/bench-scale.md (the table, the
# targets, the fitted growth exponents), docs/bench-scale.json and docs/bench-scale.svg.
# BENCH_SCALE_SIZES overrides the sizes; BENCH_SCALE_MANAGER_ARGS adds manager flags (to compare):
# by default (the manager's --resolve-on-node) the load generator's agents resolve their own node
# and the report judges issue 45's targets (docs/architecture.md, "Fleet scale"); with
# --resolve-on-node=false the manager writes every node's tuning, the generator's agents do not
# resolve and the report judges issue 20's. BENCH_SCALE_OUT writes the report's
# files to another directory than docs/ (a trial run, a loaded machine). It exits 1 when a target
# the report prints is missed (as make bench), after writing the report.
# BENCH_SCALE_ONLY=benchmark runs only the LatencyBenchmark step after the profile's create (no
# updates, drift or rollout) and the report judges only the benchmark's targets (a trial run).
# BENCH_SCALE_PROFILE=DIR writes CPU profiles of the manager and the API server taken 20 s into
# the benchmark step there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?run it as make bench-scale, which builds the envtest assets}"
KWOK_VERSION=v0.8.0
cache=${TICKSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickstack}/kwok/$KWOK_VERSION
if [ ! -x "$cache/kwok" ]; then
  mkdir -p "$cache"
  echo "bench-scale: building kwok $KWOK_VERSION" >&2
  GOBIN="$cache" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi
sizes=${BENCH_SCALE_SIZES:-100,1000,5000}
out=${BENCH_SCALE_OUT:-docs}
mkdir -p "$out"
json=$out/bench-scale.json
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# BENCH_SCALE_REPORT_ONLY=1: render the report again from docs/bench-scale.json.
if [ -z "${BENCH_SCALE_REPORT_ONLY:-}" ]; then
  go test -tags scale -count=1 -timeout 120m -run TestScale -v ./test/scale/ \
    -args -scale.kwok="$cache/kwok" -scale.sizes="$sizes" -scale.out="$tmp" \
    -scale.manager-args="${BENCH_SCALE_MANAGER_ARGS:-}" -scale.only="${BENCH_SCALE_ONLY:-}" \
    -scale.profile="${BENCH_SCALE_PROFILE:-}" >&2
  cp "$tmp" "$json"
fi

# The report's exit status is the run's: 1 when a target it prints is MISSED.
status=0
python3 hack/bench-scale-report.py "$json" "$out/bench-scale.md" "$out/bench-scale.svg" "$KWOK_VERSION" "${BENCH_SCALE_MANAGER_ARGS:-}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "bench-scale: a target was missed (see $out/bench-scale.md); exit $status" >&2
fi
exit "$status"
