#!/usr/bin/env bash
# bench/alternate.sh - the whole dataplane benchmark (make -C DIR bench) of several builds,
# alternated PASSES times (A B A B ...), then the ping-pong ratios of every run side by side
# (report.py --compare): how issue 13's "medians do not regress" is checked on a shared VM, where
# one run per build cannot tell a regression from the VM changing speed between the runs.
# Usage: bench/alternate.sh PASSES DIR...   (as root; DIR: a dataplane directory; the first is
# the baseline). A revision's directory: git worktree add /tmp/rev REV (its own bench.sh runs).
# Each run's md/json/svg go to ALT_OUT/N-LABEL/ (default build/alternate; LABEL: the directory's
# commit), the table to ALT_OUT/compare.md and stdout. Takes 5-11 minutes per run.
set -uo pipefail

[ $# -ge 2 ] || { echo "usage: $0 PASSES DIR..." >&2; exit 2; }
passes=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
out=${ALT_OUT:-$here/../build/alternate}
[ "$(id -u)" = 0 ] || { echo "alternate: needs root" >&2; exit 1; }
labels=()
for d in "$@"; do
	[ -x "$d/bench/bench.sh" ] || { echo "alternate: $d is not a dataplane directory" >&2; exit 1; }
	l=$(git -C "$d" rev-parse --short HEAD 2>/dev/null || basename "$(dirname "$(cd "$d" && pwd)")")
	git -C "$d" diff --quiet HEAD -- . 2>/dev/null || l="$l+changes"
	for seen in "${labels[@]}"; do [ "$seen" = "$l" ] && l="$l#${#labels[@]}"; done
	labels+=("$l")
done
rm -rf "$out"
mkdir -p "$out"
args=()
n=0
for p in $(seq 1 "$passes"); do
	i=0
	for d in "$@"; do
		l=${labels[$i]}
		i=$((i + 1))
		n=$((n + 1))
		mkdir -p "$out/$n-$l"
		echo "alternate: pass $p, $l ($d) $(date -u +%H:%M:%S)" >&2
		# bench.sh exits 3 when it missed the throughput target and 4 when it
		# missed another, after writing its report: a result to compare, not
		# a failed run (make exits 2 for either)
		BENCH_OUT="$out/$n-$l/bench-dataplane.md" make -C "$d" bench >"$out/$n-$l/log" 2>&1
		rc=$?
		if [ $rc != 0 ] && ! { [ $rc = 2 ] && grep -q "throughput target missed\|target(s) marked MISSED" "$out/$n-$l/log"; }; then
			echo "alternate: the run of $l failed: $out/$n-$l/log" >&2
			tail -n 5 "$out/$n-$l/log" >&2
			exit 1
		fi
		args+=("$l=$out/$n-$l/bench-dataplane.json")
	done
done
python3 "$here/report.py" --compare "${args[@]}" | tee "$out/compare.md"
