#!/usr/bin/env bash
# make bench: every benchmark of the project, each reported as a ratio against a baseline measured in
# the same run (never an absolute time: this is a shared 2-vCPU VM). Writes docs/benchmarks.md; the
# dataplane's own benchmark writes docs/bench-dataplane.md (skip it with BENCH_SKIP_DATAPLANE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/benchmarks.md
count=${BENCH_COUNT:-7}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

go test -run '^$' -bench 'BenchmarkResolveNode|BenchmarkBaselineCopyFacts' -benchmem -count "$count" ./internal/resolve/ | tee "$raw" >&2

python3 - "$raw" "$out" "$count" <<'PY'
import re, statistics, sys, datetime, platform, os
raw, out, count = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}
for line in open(raw):
    m = re.match(r'^(Benchmark\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op', line)
    if m:
        runs.setdefault(m.group(1), []).append((float(m.group(3)), int(m.group(4)), int(m.group(5))))
def med(name, i):
    return statistics.median(r[i] for r in runs[name])
# (benchmark, baseline, target ratio, what it says)
pairs = [("BenchmarkResolveNode", "BenchmarkBaselineCopyFacts", 40.0,
          "resolving a profile for a 256-CPU, 64-interface node costs at most 40 copies of its facts")]
lines = ["# Benchmarks", "",
         "Made by `make bench` (hack/bench.sh) on %s, %s, %d vCPUs; each figure is the median of %s runs." % (
             datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), count),
         "Targets are ratios against a baseline measured in the same run, so a noisy shared machine moves",
         "both sides alike. The dataplane's latency figures are in [bench-dataplane.md](bench-dataplane.md).", "",
         "| benchmark | median ns/op | B/op | allocs/op | baseline | baseline ns/op | ratio | target | met |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
failed = False
for b, base, target, _ in pairs:
    r = med(b, 0) / med(base, 0)
    ok = r <= target
    failed |= not ok
    lines.append("| %s | %.0f | %d | %d | %s | %.0f | %.1fx | <= %.0fx | %s |" % (
        b, med(b, 0), med(b, 1), med(b, 2), base, med(base, 0), r, target, "yes" if ok else "NO"))
lines += ["", "What each target means:", ""] + ["- %s: %s." % (b, why) for b, _, _, why in pairs] + [""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
sys.exit(1 if failed else 0)
PY

if [ "${BENCH_SKIP_DATAPLANE:-0}" != 1 ]; then
  make -C dataplane bench
fi
