#!/usr/bin/env python3
"""make bench (hack/bench.sh): judges the Go benchmarks and the agent's cost and writes docs/benchmarks.md."""
import re
import statistics
import sys
import datetime
import platform
import os
import json
raw, out, count, agentf = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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
a = json.load(open(agentf))
agent_rows = [
    ("time to Applied: a full non-reboot profile (%d settings, %d in effect)"
     % (a["settings"], a["changed"]),
     "%.3f s" % a["applySeconds"], "< 1 s", a["applySeconds"] < 1.0),
    ("restore after the node state is deleted", "%.3f s" % a["restoreSeconds"], "-", None),
    ("CPU while idle, over %.0f s (every thread, /proc/PID/task/*/schedstat)" % a["idleSeconds"],
     "%.4f %%" % a["idleCPUPercent"], "< 0.1 %", a["idleCPUPercent"] < 0.1),
    ("times its threads were scheduled in while idle", "%.1f /s" % a["idleRunsPerSecond"], "-", None),
    ("runs on the isolated CPUs %s while idle (perf, sched:sched_switch)" % a["isolatedCPUs"],
     "%d" % a["isolatedRuns"], "0", a["isolatedRuns"] == 0),
]
if "peakRSSMiB" in a:  # agentcost's JSON before the figure existed has none
    agent_rows.append(("peak resident memory over the run (VmHWM; the chart's limit is 128Mi)",
                       "%d MiB" % a["peakRSSMiB"], "<= 96 MiB", a["peakRSSMiB"] <= 96))
lines += ["## The agent's own cost", "",
          "The real agent binary (`test/agentcost`, run by `make bench` with a 60 s idle window) against a real",
          "kube-apiserver (envtest) applies the sample profile's runtime settings (CPU %s online: CPU 0 reserved, the"
          % a["onlineCPUs"],
          "rest isolated; C-states, governor, IRQs, irqbalance, THP, huge pages, sysctls, RPS/XPS and busy-poll",
          "settings of a veth pair) to this machine's real host, idles, and restores everything. The agent keeps its",
          "own threads on the reserved CPUs while a tuning is in force (`--confine-to-reserved-cpus`, default on).",
          "Absolute figures against the targets of issue 22.", "",
          "| figure | measured | target | met |", "| --- | --- | --- | --- |"]
for what, v, target, ok in agent_rows:
    if ok is not None:
        failed |= not ok
    lines.append("| %s | %s | %s | %s |" % (what, v, target, "-" if ok is None else ("yes" if ok else "NO")))
lines.append("")
# The operator at fleet size (make bench-scale) keeps its own section: carried over as it stands.
try:
    prev = open(out).read()
    a, b = prev.index("<!-- bench-scale -->"), prev.index("<!-- /bench-scale -->")
    lines.append(prev[a:b + len("<!-- /bench-scale -->")])
    lines.append("")
except (OSError, ValueError):
    pass
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
sys.exit(1 if failed else 0)
