#!/usr/bin/env python3
"""dataplane/bench/ab.sh: the alternated A/B rounds' medians and ratios."""
import statistics
import sys
rows = [line.split(":", 1)[1].split() for line in open(sys.argv[1])]
dirs = sys.argv[2:]
for i, d in enumerate(dirs):
    v = [float(r[i]) for r in rows if r[i] != "none"]
    rat = [float(r[i]) / float(r[0]) for r in rows if "none" not in (r[i], r[0])]
    line = "%-40s median %.3f us  min %.3f us  ratio to the first %.3f" % (
        d, statistics.median(v), min(v), statistics.median(rat))
    if "kernel" in dirs:  # per-round ratio to the kernel (spinning) run
        k = dirs.index("kernel")
        rk = [float(r[i]) / float(r[k]) for r in rows if "none" not in (r[i], r[k])]
        line += "  to kernel %.3f" % statistics.median(rk)
    print(line)
