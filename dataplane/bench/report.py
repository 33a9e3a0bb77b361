#!/usr/bin/env python3
"""bench/report.py - turns the runs of bench/bench.sh into
docs/bench-dataplane.md (tables, ratios), .json and .svg.

  report.py --check-last MANIFEST     exit 0 if the last run had no drops
                                      (and, under load, reached 95 % of its
                                      target rate)
  report.py --meta META --manifest MANIFEST --out docs/bench-dataplane.md
  report.py --stalls FULL_LOG         the stalls of one run's sockperf full log
                                      (JSON on standard output; bench.sh keeps
                                      it instead of the full log)
  report.py --from-json docs/bench-dataplane.json --out docs/bench-dataplane.md
                                      renders a recorded run again (after a
                                      change of this script)

Writing a report exits 3 when the TCP bulk throughput target (the median of
the alternated pairs' bypass / kernel iperf3 ratios >= TPUT_TARGET) is
missed, and 4 when any other target of the report is marked MISSED (the
latency ratios, the bypass's maximum-rate checks), after writing everything.

Stalls are found as internal/bench/stall.go finds them in the LatencyBenchmark
(docs/benchmark-methods.md "Stalls"), and the stack counters listed with them
are the ones internal/bench/stackstats.go lists.
"""
import argparse
import bisect
import glob
import json
import math
import os
import re
import statistics
import sys

MODES = {
    "kernel": "kernel, blocking",
    "kspin": "kernel, spinning (--nonblocked)",
    "bypass": "tickstack bypass (-p latency)",
    "floor": "raw AF_XDP floor (xsk-floor)",
}
COLORS = {"kernel": "#d62728", "kspin": "#ff7f0e", "bypass": "#1f77b4", "floor": "#2ca02c"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Stalls (docs/benchmark-methods.md "Stalls", internal/bench/stall.go): a message
# slower than STALL_FACTOR x the run's p99.9, or a pause between two consecutive
# sends longer than STALL_FACTOR x the run's median pause, both at least
# STALL_MIN_NS; stretches that overlap or touch are one stall.
STALL_FACTOR = 10
STALL_MIN_NS = 1000000
MAX_LISTED_STALLS = 10
# a ping-pong run with fewer than 1/FEW_DIVISOR of the median sample count of
# its mode's other sizes is flagged
FEW_DIVISOR = 4
# the regression check: a bypass ping-pong's maximum stays under FLOOR_FACTOR x
# the floor tool's median maximum over the sizes of the same run (at least 1 ms)
FLOOR_FACTOR = 4
# the stack's counters that stay zero in an undisturbed run (the same list as
# internal/bench/stackstats.go's stallCounters)
STALL_COUNTERS = [
    "xsk.tx_ring_full", "xsk.fill_ring_empty", "xsk.fill_wakeups", "xsk.tx_kick_errors",
    "xsk.rx_sockq_full", "xsk.rx_no_socket", "xsk.rx_bad", "xsk.rx_bad_csum",
    "xsk.xdp_rx_dropped", "xsk.xdp_rx_ring_full", "xsk.xdp_fill_empty", "xsk.xdp_rx_invalid", "xsk.xdp_tx_invalid",
    "nh.refreshes", "nh.wait_timeouts",
    "process.fallback_events", "process.sockets_kernel", "process.kernel_option", "process.kernel_uring",
    "process.kernel_shared",
    "sock.rx_kernel", "sock.tx_kernel", "sock.rx_drops", "sock.rx_spilled", "sock.rx_filtered",
    "sock.tx_kernel_noroute", "sock.tx_kernel_neigh", "sock.tx_kernel_local", "sock.tx_kernel_oversize",
    "sock.tx_kernel_nostack", "sock.tx_kernel_flags", "sock.tx_kernel_mcloop",
    "tcp.conns_kernel", "tcp.rx_no_netif", "tcp.tx_noroute", "tcp.tx_neigh", "tcp.tx_ring_full",
    "tcp.newreno_rexmits", "tcp.early_rexmits", "tcp.listen_overflow",
]
# TCP bulk throughput (iperf3): the median over the alternated kernel/bypass
# pairs of bypass / kernel stays at least this
TPUT_TARGET = 0.5
EXIT_TPUT_MISSED = 3
EXIT_TARGET_MISSED = 4
STATS_LINES = {"tickstack": "process", "xsk": "xsk", "sock": "sock", "tcp": "tcp", "nh": "nh"}
STATS_IDENTITY = {"pid", "profile", "if", "ifindex", "queue", "mode", "fd", "local", "remote", "accelerated", "closed"}


def read(path):
    try:
        with open(path, errors="replace") as f:
            return ANSI.sub("", f.read())
    except OSError:
        return ""


def num(pattern, text, cast=float):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else None


def parse_latency(text):
    r = {
        "min": num(r"<MIN> observation =\s*([\d.]+)", text),
        "median": num(r"percentile 50\.000 =\s*([\d.]+)", text),
        "p99": num(r"percentile 99\.000 =\s*([\d.]+)", text),
        "p999": num(r"percentile 99\.900 =\s*([\d.]+)", text),
        "max": num(r"<MAX> observation =\s*([\d.]+)", text),
        "stddev": num(r"std-dev=([\d.]+)", text),
        "observations": num(r"Total (\d+) observations", text, int),
    }
    if r["observations"] is None:
        r["observations"] = num(r"observations=(\d+)", text, int)
    return r


def decimal_ns(text, digits):
    """A non-negative decimal number of seconds (digits 9) or microseconds
    (digits 3) as integer nanoseconds, without a float, rounded half up; None
    when it is not one."""
    whole, _, frac = text.strip().partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()):
        return None
    ns = int(whole) * 10 ** digits + int((frac + "0" * digits)[:digits])
    if len(frac) > digits and frac[digits] >= "5":
        ns += 1
    return ns


def read_full_log(path):
    """(tx, rx, latency) in ns of every timed message of a sockperf --full-log,
    in the log's order; rows without a latency (no reply) are left out."""
    rows, in_rows = [], False
    with open(path, errors="replace") as f:
        for line in f:
            t = line.strip()
            if not in_rows:
                in_rows = t.startswith("packet,") and "latency" in t
                continue
            p = t.split(",")
            if len(p) < 4:
                continue
            lat = decimal_ns(p[3], 3)
            if lat is None:
                continue
            rows.append((decimal_ns(p[1], 9) or 0, decimal_ns(p[2], 9) or 0, lat))
    return rows


def nearest_rank(sorted_values, pct):
    n = len(sorted_values)
    return sorted_values[min(max(math.ceil(pct / 100 * n) - 1, 0), n - 1)]


def detect_stalls(rows):
    """The stalls of one run (rows as read_full_log returns them), as
    internal/bench/stall.go's DetectStalls finds them."""
    rows = [r for r in rows if r[0] > 0]
    rep = {"samples": len(rows), "count": 0, "total_ns": 0, "stalls": [], "gap_threshold_ns": 0}
    if not rows:
        rep["latency_threshold_ns"] = STALL_MIN_NS
        return rep
    p999 = nearest_rank(sorted(r[2] for r in rows), 99.9)
    lthr = max(STALL_FACTOR * p999, STALL_MIN_NS)
    rep["p999_ns"], rep["latency_threshold_ns"] = p999, lthr
    found = [(tx, rx if rx > tx else tx + lat) for tx, rx, lat in rows if lat > lthr]
    pauses = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:]) if b[0] >= a[0])
    if pauses:
        gthr = max(STALL_FACTOR * nearest_rank(pauses, 50), STALL_MIN_NS)
        rep["gap_threshold_ns"] = gthr
        found += [(a[0], b[0]) for a, b in zip(rows, rows[1:]) if b[0] - a[0] > gthr]
    if not found:
        return rep
    found.sort()
    merged = [list(found[0])]
    for start, end in found[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    first = min(r[0] for r in rows)
    stalls = [{"offset_ns": a - first, "duration_ns": b - a, "latency_ns": 0} for a, b in merged]
    starts = [a for a, _ in merged]
    for tx, _, lat in rows:
        i = bisect.bisect_right(starts, tx) - 1
        if i >= 0 and tx < merged[i][1]:
            stalls[i]["latency_ns"] = max(stalls[i]["latency_ns"], lat)
    rep["count"], rep["total_ns"] = len(stalls), sum(x["duration_ns"] for x in stalls)
    longest = sorted(stalls, key=lambda x: -x["duration_ns"])[:MAX_LISTED_STALLS]
    rep["stalls"] = sorted(longest, key=lambda x: x["offset_ns"])
    return rep


def read_counters(prefix):
    """The stack's exit counters of the processes whose dumps are prefix-*.txt,
    summed by "<line>.<counter>"; None when there is no dump."""
    files = sorted(glob.glob(prefix + "-*.txt"))
    if not files:
        return None
    out = {}
    for name in files:
        for line in read(name).splitlines():
            f = line.split()
            if not f or f[0] not in STATS_LINES:
                continue
            for kv in f[1:]:
                k, eq, v = kv.partition("=")
                if eq and k not in STATS_IDENTITY and v.isdigit():
                    key = STATS_LINES[f[0]] + "." + k
                    out[key] = out.get(key, 0) + int(v)
    return out


def stall_counters(counters):
    """The counters of STALL_COUNTERS that are not zero, in its order."""
    if counters is None:
        return None
    return [[k, counters[k]] for k in STALL_COUNTERS if counters.get(k)]


def parse_iperf3(text):
    """Bits per second received, the sender's retransmissions and both ends'
    CPU use of an iperf3 -J client report; an error message when it has none."""
    try:
        d = json.loads(text)
    except ValueError:
        return {"error": (text.strip().splitlines() or ["no output"])[-1][:200]}
    end = d.get("end") or {}
    bps = (end.get("sum_received") or {}).get("bits_per_second")
    if not bps:
        return {"error": d.get("error") or "no throughput in the report"}
    cpu = end.get("cpu_utilization_percent") or {}
    return {"bps": bps, "retransmits": (end.get("sum_sent") or {}).get("retransmits"),
            "cpu_client": cpu.get("host_total"), "cpu_server": cpu.get("remote_total")}


# The raw floor's frames (xsk-floor blast: UDP payloads of MTU - 28 bytes,
# IPv4 packets of the MTU) as TCP would fill them: MTU - 52 bytes of payload
# a segment (the MSS, MTU - 40, less the timestamp option), what iperf3
# counts: 1,448 at MTU 1,500
TPUT_MTU = 1500  # the link's MTU of a run that does not say it


def floor_mss(mtu):
    return mtu - 52


def parse_floor_tput(blast, sink, mtu=TPUT_MTU):
    """An xsk-floor blast -> sink run: the frames/s copy-mode TX moved (the
    blast's count, the floor), Mbit/s of IPv4 packets and the TCP payload
    those frames would carry; the sink's count of what its XSK received
    ("delivered_fps": a receiver that other jobs hold off the CPU drops,
    which TCP's flow control would have spared)."""
    m = re.search(r"xsk-floor: blast frames=(\d+) kicks=\d+ seconds=([\d.]+)", blast or "")
    if not m or not int(m.group(1)) or not float(m.group(2)):
        return {"error": "no blast count in the floor's output"}
    fps = int(m.group(1)) / float(m.group(2))
    out = {"fps": fps, "ip_mbps": fps * mtu * 8 / 1e6, "bps": fps * floor_mss(mtu) * 8}
    d = re.search(r"xsk-floor: sink frames=(\d+) bytes=\d+ seconds=([\d.]+)", sink or "")
    if d and float(d.group(2)):
        out["delivered_fps"] = int(d.group(1)) / float(d.group(2))
    return out


def tput_mtus(runs):
    """The link MTUs the throughput runs were made at, smallest first."""
    return sorted({r.get("mtu", TPUT_MTU) for r in runs if r["kind"] in ("tput", "tfloor")})


def tput_pairs(runs, mtu=None):
    """The throughput runs at link MTU mtu (default: the smallest measured)
    as alternated pairs: [{"pair", "kernel", "bypass", "floor", "ratio",
    "floor_ratio"}] (Mbit/s; floor: the raw AF_XDP floor as TCP payload;
    ratio: bypass / kernel, floor_ratio: bypass / floor, None when either
    run failed or did not run)."""
    mtus = tput_mtus(runs)
    if mtu is None and mtus:
        mtu = mtus[0]
    by = {}
    for r in runs:
        if r["kind"] in ("tput", "tfloor") and r.get("mtu", TPUT_MTU) == mtu:
            by.setdefault(r["param"], {})[r["mode"]] = r
    out = []
    for i in sorted(by):
        k, b, f = by[i].get("kernel"), by[i].get("bypass"), by[i].get("floor")
        kb, bb, fb = k and k.get("bps"), b and b.get("bps"), f and f.get("bps")
        out.append({"pair": i, "kernel": kb and kb / 1e6, "bypass": bb and bb / 1e6,
                    "floor": fb and fb / 1e6, "floor_fps": f and f.get("fps"),
                    "floor_delivered_fps": f and f.get("delivered_fps"),
                    "ratio": bb / kb if kb and bb else None,
                    "floor_ratio": bb / fb if fb and bb else None,
                    "floor_over_kernel": fb / kb if fb and kb else None})
    return out


def tput_summary(runs, mtu=None):
    """The throughput row at link MTU mtu (default: the smallest measured,
    the headline: the standard 1,500): the median of the pairs' ratios
    against TPUT_TARGET (a failed run counts as a ratio of 0: it is
    missed); None without throughput runs. The headline carries the rows
    of every MTU measured in "by_mtu"."""
    mtus = tput_mtus(runs)
    if mtu is None and mtus:
        mtu = mtus[0]
    pairs = tput_pairs(runs, mtu)
    if not pairs:
        return None
    ratios = [p["ratio"] or 0.0 for p in pairs]
    med = statistics.median(ratios)
    ks = [p["kernel"] for p in pairs if p["kernel"]]
    bs = [p["bypass"] for p in pairs if p["bypass"]]
    fs = [p["floor"] for p in pairs if p["floor"]]
    frs = [p["floor_ratio"] for p in pairs if p["floor_ratio"]]
    fks = [p["floor_over_kernel"] for p in pairs if p["floor_over_kernel"]]
    out = {"mtu": mtu, "pairs": pairs, "ratio_median": med, "target": TPUT_TARGET, "met": med >= TPUT_TARGET,
           "kernel_median_mbps": statistics.median(ks) if ks else None,
           "bypass_median_mbps": statistics.median(bs) if bs else None,
           "floor_median_mbps": statistics.median(fs) if fs else None,
           "bypass_over_floor_median": statistics.median(frs) if frs else None,
           "floor_over_kernel_median": statistics.median(fks) if fks else None}
    if mtu == mtus[0] and len(mtus) > 1:
        out["by_mtu"] = {str(m): tput_summary(runs, m) for m in mtus[1:]}
    return out


def parse_run(kind, mode, param, cli, srv, stats_cli=None, stats_srv=None, stalls=None, mtu=None):
    c, s = read(cli), read(srv)
    run = {"kind": kind, "mode": mode, "param": int(param)}
    if mtu and mtu != "-":
        run["mtu"] = int(mtu)
    if kind == "tfloor":
        run.update(parse_floor_tput(c, s, run.get("mtu", TPUT_MTU)))
        run["ok"] = "bps" in run
        return run
    if kind == "tput":
        run.update(parse_iperf3(c))
        if mode == "bypass" and stats_cli:
            run["counters_client"] = stall_counters(read_counters(stats_cli))
            run["counters_server"] = stall_counters(read_counters(stats_srv))
        run["ok"] = "bps" in run
        return run
    if stalls and os.path.exists(stalls):
        with open(stalls) as f:
            run["stalls"] = json.load(f)
    if mode == "bypass" and stats_cli:
        run["counters_client"] = stall_counters(read_counters(stats_cli))
        run["counters_server"] = stall_counters(read_counters(stats_srv))
    base = kind[4:] if kind.startswith("tcp_") else kind
    if base in ("pp", "ul", "floor"):
        run.update(parse_latency(c))
    run["dropped_reported"] = num(r"# dropped messages = (\d+)", c, int)
    run["duplicated"] = num(r"# duplicated messages = (\d+)", c, int)
    run["out_of_order"] = num(r"# out-of-order messages = (\d+)", c, int)
    sent = num(r"\[Total Run\].*?SentMessages=(\d+)", c, int)
    if sent is None:
        sent = num(r"Total of (\d+) messages sent", c, int)
    got = num(r"Total (\d+) messages received", s, int)
    run["sent"], run["server_received"] = sent, got
    runtime = num(r"\[Total Run\] RunTime=([\d.]+)", c)
    if base == "ul" and sent and runtime:
        run["achieved_rate"] = round(sent / runtime)
    drops = run["dropped_reported"] or 0
    # a TCP server counts the warm-up messages too; sockperf's own
    # dropped/duplicated/out-of-order counts judge a stream
    if base in ("ul", "burst", "pp") and not kind.startswith("tcp_"):
        if sent is None or got is None:
            drops = None
        else:
            drops += max(0, sent - got)
    if kind == "floor":
        drops = None  # the floor tool times out a lost frame after 1 s; see max
    run["drops"] = drops
    run["ok"] = bool(
        drops == 0
        and (base != "ul" or (run.get("achieved_rate") or 0) >= 0.95 * run["param"])
        and (base not in ("pp", "ul") or run.get("median") is not None)
    )
    return run


def load(manifest):
    """The runs, and the searches' results: maxrate[mode] and
    maxburst[mode][SO_RCVBUF] = {"value": N, "bound": True when the search
    stopped at its bound (the real limit is higher)}."""
    runs, summary = [], {"maxrate": {}, "maxburst": {}}
    with open(manifest) as f:
        for line in f:
            p = line.split()
            if len(p) < 3:
                continue
            if p[0] == "alt":
                summary.setdefault("alternated", []).append(
                    parse_alt(int(p[1]), read(p[2]), p[3].split(",")))
                continue
            if p[0] in ("maxrate", "maxburst"):
                res = {"value": int(p[2]), "bound": len(p) > 3 and p[3] == "bound"}
                if p[0] == "maxrate":
                    summary["maxrate"][p[1]] = res
                else:
                    buf = p[4] if len(p) > 4 and p[4] != "-" else "default"
                    summary["maxburst"].setdefault(buf, {})[p[1]] = res
                continue
            runs.append(parse_run(*p[:9]))
    return runs, summary


def mark_few_samples(runs):
    """Flags the ping-pong runs that timed fewer than 1/FEW_DIVISOR of the
    median of their mode's other sizes."""
    for r in runs:
        if r["kind"] not in ("pp", "tcp_pp") or not r.get("observations"):
            continue
        others = sorted(o["observations"] for o in runs if o is not r and o["kind"] == r["kind"]
                        and o["mode"] == r["mode"] and o.get("observations"))
        if not others:
            continue
        n = len(others)
        median = others[n // 2] if n % 2 else (others[n // 2 - 1] + others[n // 2]) // 2
        r["neighbour_samples"] = median
        r["few_samples"] = r["observations"] * FEW_DIVISOR < median


def max_checks(runs):
    """The regression check: every bypass ping-pong's maximum against
    FLOOR_FACTOR x the floor's median maximum over its sizes (at least 1 ms).
    Returns the floor's median maximum (us; None without floor runs) and the
    checks."""
    floor = sorted(r["max"] for r in runs if r["kind"] == "floor" and r.get("max") is not None)
    if not floor:
        return None, []
    ref = nearest_rank(floor, 50)
    bound = max(FLOOR_FACTOR * ref, STALL_MIN_NS / 1000)
    checks = []
    for r in runs:
        if r["mode"] == "bypass" and r["kind"] in ("pp", "tcp_pp") and r.get("max") is not None:
            checks.append({"kind": r["kind"], "size": r["param"], "max": r["max"], "bound": bound,
                           "ok": r["max"] <= bound})
    return ref, checks


def stall_cell(r):
    """A run's stalls column: the count ("-": no full log kept), "few" for a
    run with few samples."""
    st = r.get("stalls")
    cell = str(st["count"]) if st else "-"
    return cell + (" few" if r.get("few_samples") else "")


def short(ns):
    """Nanoseconds with about three significant digits: "235 ms", "18.7 us"."""
    v, unit = float(ns), "ns"
    for scale, u in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if ns >= scale:
            v, unit = ns / scale, u
            break
    return f"{v:.{0 if v >= 100 else 1 if v >= 10 else 2}f} {unit}"


def stall_notes(label, r):
    """The sentences that explain a run's stalls, as internal/report's
    StallNotes words them."""
    out = []
    st = r.get("stalls")
    if st and st["count"]:
        listed = []
        for x in st["stalls"]:
            what = (f"slowest message {short(x['latency_ns'])}" if x["latency_ns"] > st["latency_threshold_ns"]
                    else "no slow message: a pause between sends")
            listed.append(f"at {x['offset_ns'] / 1e9:.3f} s for {short(x['duration_ns'])} ({what})")
        which = f"; the {len(st['stalls'])} longest" if st["count"] > len(st["stalls"]) else ""
        gap = f" or a pause between sends over {short(st['gap_threshold_ns'])}" if st["gap_threshold_ns"] else ""
        n = "1 stall" if st["count"] == 1 else f"{st['count']} stalls"
        out.append(f"{label}: {n}, {short(st['total_ns'])} in total (a message slower than "
                   f"{short(st['latency_threshold_ns'])}{gap}){which}: {', '.join(listed)}")
    if r.get("few_samples"):
        out.append(f"{label}: {r['observations']} samples, under a quarter of the {r['neighbour_samples']} "
                   "the other sizes timed (their median) in the same time")
    if r["mode"] == "bypass" and "counters_client" in r:
        def counted(cs):
            if cs is None:
                return "no statistics dump"
            return " ".join(f"{k}={v}" for k, v in cs) if cs else "nothing unusual"
        cli, srv = r.get("counters_client"), r.get("counters_server")
        if cli or srv or out or cli is None or srv is None:
            out.append(f"{label}: the bypass stack counted, client: {counted(cli)}; server: {counted(srv)}")
    return out


def searched(res):
    """A search's result: "at least N" when it stopped at its bound."""
    if res is None:
        return "-"
    return f"at least {res['value']} (the search's bound)" if res["bound"] else str(res["value"])


def search_ratio(a, b):
    """a / b of two searches' results, as a lower or upper bound when one of
    them stopped at its bound. No target: at equal buffering the two receivers
    are expected to take similar bursts (seed 002's comparison)."""
    if a is None or b is None or not b["value"]:
        return None, "-"
    r = a["value"] / b["value"]
    if a["bound"] and b["bound"]:
        return None, "- (both searches stopped at their bound)"
    if a["bound"]:
        return r, f">= {r:.1f}x (a lower bound: the bypass's search stopped at its bound)"
    if b["bound"]:
        return r, f"<= {r:.1f}x (an upper bound: the kernel's search stopped at its bound)"
    return r, f"{r:.1f}x"


def fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return a / b


def svg(runs, path):
    """Median and p99.9 half round trip by message size, log scale."""
    sizes = [14, 64, 256, 1024, 1472]
    W, H, L, T, PW, PH = 920, 380, 60, 40, 360, 260
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    pp = [r for r in runs if r["kind"] in ("pp", "floor")]
    vals = [r[k] for r in pp for k in ("median", "p999") if r.get(k)]
    if not vals:
        vals = [1, 10]
    lo, hi = math.log10(max(min(vals) * 0.8, 0.1)), math.log10(max(vals) * 1.25)
    for pi, (key, title) in enumerate((("median", "median"), ("p999", "p99.9"))):
        x0 = L + pi * (PW + 100)
        out.append(f'<text x="{x0 + PW / 2}" y="22" text-anchor="middle" font-weight="bold">'
                   f'{title} half round trip (us, log scale) by message size</text>')
        out.append(f'<rect x="{x0}" y="{T}" width="{PW}" height="{PH}" fill="none" stroke="#888"/>')
        for e in range(math.floor(lo), math.ceil(hi) + 1):
            for mant in (1, 2, 5):
                v = mant * 10 ** e
                if not (lo <= math.log10(v) <= hi):
                    continue
                y = T + PH - (math.log10(v) - lo) / (hi - lo) * PH
                out.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
                out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
        for i, sz in enumerate(sizes):
            x = x0 + 20 + i * (PW - 40) / (len(sizes) - 1)
            out.append(f'<text x="{x:.1f}" y="{T + PH + 16}" text-anchor="middle">{sz} B</text>')
        for mode in ("kernel", "kspin", "bypass", "floor"):
            pts = []
            for i, sz in enumerate(sizes):
                r = next((r for r in pp if r["mode"] == mode and r["param"] == sz and r.get(key)), None)
                if r:
                    x = x0 + 20 + i * (PW - 40) / (len(sizes) - 1)
                    y = T + PH - (math.log10(r[key]) - lo) / (hi - lo) * PH
                    pts.append((x, y))
            if pts:
                out.append(f'<polyline fill="none" stroke="{COLORS[mode]}" stroke-width="2" points="'
                           + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
                for x, y in pts:
                    out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[mode]}"/>')
    for i, mode in enumerate(("kernel", "kspin", "bypass", "floor")):
        x = L + i * 220
        out.append(f'<rect x="{x}" y="{H - 26}" width="12" height="12" fill="{COLORS[mode]}"/>')
        out.append(f'<text x="{x + 16}" y="{H - 16}">{MODES[mode]}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def alt_markdown(alt):
    """The section of the alternated ratios (issue 40's targets)."""
    def rr(a, name):
        x = a["ratios"].get(name)
        return "-" if not x else f"{x['median']:.3f} ({x['min']:.2f}-{x['max']:.2f})"
    L = ["## Ratios on alternated runs: the targets\n",
         "The runs above are minutes apart, and this VM changes speed in between; the targets are judged "
         "here instead. `bench/ab.sh ROUNDS SIZE floor=. floorcopy=. min=. minkernel kernel .` runs, one "
         "after the other and ROUNDS times (in this order in odd rounds and in reverse in even ones, "
         "so that no build gains from its place in the round): the raw AF_XDP floor (`xsk-floor`: no socket layer, headers "
         "swapped in place, the payload never read: the bare ring loop), the floor with the copies every "
         "socket API makes (`XSK_FLOOR_COPY=1`: the payload copied out of its frame into the "
         "application's buffer and back into a fresh frame, as a `recvfrom` and a `sendto` must), "
         "`udp-pp` over the bypass (one `sendto` and one `recvfrom` per message and nothing else: no "
         "event loop, no per-message bookkeeping) and over the kernel (spinning with `MSG_DONTWAIT`), "
         "sockperf on the kernel spinning (`--nonblocked`) and sockperf on the bypass. Each cell is the "
         "median of the per-round ratios of the two medians, with the smallest and largest round in "
         "brackets.\n",
         "| size (B) | rounds | floor (us) | floor + copies (us) | udp-pp bypass (us) | kernel spinning (us) "
         "| bypass (us) | bypass / floor (<= 1.10) | bypass / floor + copies | floor / kernel spinning "
         "| bypass / kernel spinning (<= 0.50) |",
         "|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|"]
    for a in alt:
        m = a["medians"]
        v1, v2 = alt_verdicts(a)
        L.append(f"| {a['size']} | {a['rounds']} | {fmt(m.get('floor'), 3)} | {fmt(m.get('floorcopy'), 3)} | "
                 f"{fmt(m.get('min'), 3)} | {fmt(m.get('kspin'), 3)} | {fmt(m.get('bypass'), 3)} | "
                 f"{rr(a, 'bypass_over_floor')} {v1} | {rr(a, 'bypass_over_floorcopy')} | "
                 f"{rr(a, 'floor_over_kspin')} | {rr(a, 'bypass_over_kspin')} {v2} |")
    L.append("\nWhere the bypass's time over the floor goes, per size (medians of the per-round ratios): "
             "the copies any socket API makes (floor + copies / floor), the stack beyond them with no "
             "benchmark tool's work in it (udp-pp over the bypass / floor + copies), and sockperf's own "
             "per-message work on the bypass and on the kernel (sockperf / udp-pp on the same stack).\n")
    L.append("| size (B) | floor + copies / floor | udp-pp bypass / floor + copies | sockperf / udp-pp, bypass "
             "| sockperf / udp-pp, kernel spinning |")
    L.append("|---:|---|---|---|---|")
    for a in alt:
        L.append(f"| {a['size']} | {rr(a, 'floorcopy_over_floor')} | {rr(a, 'min_over_floorcopy')} | "
                 f"{rr(a, 'bypass_over_min')} | {rr(a, 'kspin_over_minkernel')} |")
    L.append("\nKernel spinning's target is reported missed \"for the veth copy path\" when the floor itself "
             "is above 0.50 of kernel spinning: the floor is the ring loop the bypass is built on, with no "
             "socket layer, so no stack could meet the target on this link; what separates the floor from "
             "the kernel is the copy-mode XSK path both ends of a veth pair go through (docs/dataplane-design.md "
             "\"At the floor\").\n")
    return L


def pp_table(L, pp, modes, drops_title, drops):
    """The ping-pong table (UDP or TCP) of pp, {(mode, size): run}, onto L: a row per mode and size
    run, its drops column headed drops_title and filled by drops(run); the floor tool keeps no
    full log, so its stalls are '-'."""
    L.append(f"| mode | size (B) | min | median | p99 | p99.9 | max | std-dev | {drops_title} | stalls |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in modes:
        for sz in (14, 64, 256, 1024, 1472):
            r = pp.get((mode, sz))
            if not r:
                continue
            L.append(f"| {MODES[mode]} | {sz} | {fmt(r['min'])} | {fmt(r['median'])} | {fmt(r['p99'])} | "
                     f"{fmt(r['p999'])} | {fmt(r['max'])} | {fmt(r['stddev'])} | {drops(r)} | "
                     f"{'-' if mode == 'floor' else stall_cell(r)} |")


def markdown(meta, runs, summary, svg_name):
    L = []
    pp = {(r["mode"], r["param"]): r for r in runs if r["kind"] in ("pp", "floor")}
    ul = [r for r in runs if r["kind"] == "ul"]
    L.append("# Dataplane benchmark: kernel UDP and TCP vs the tickstack AF_XDP bypass\n")
    L.append("Generated by `make -C dataplane bench` (bench/bench.sh + bench/report.py); "
             "do not edit by hand, run it again.\n")
    L.append(f"- run: {meta.get('date', '?')}, kernel {meta.get('kernel', '?')}, {meta.get('cpus', '?')} vCPUs "
             f"({meta.get('cpu_model', '?')}), sockperf {meta.get('sockperf', '?')}, {meta.get('seconds', '?')} s per run")
    if "BENCH_QUICK=1" in meta.get("command", ""):
        L.append(f"- the quick form (`{meta['command']}`): one message size, one rate, a short search "
                 "(the alternated ratios at every size, in fewer rounds); a smoke test of the benchmark, not its "
                 "full tables")
    L.append(f"- machine noise: load average {meta.get('loadavg_start', '?')} at the start, "
             f"{meta.get('loadavg_end', '?')} at the end (1/5/15 min). The VM is shared with other jobs: "
             "medians move by about 20 % between runs and the tails (p99.9, max) by 2-5x; "
             "treat the tails as an upper bound.")
    L.append("- topology: one veth pair between two network namespaces (198.18.30.1 <-> 198.18.30.2), "
             "static neighbours; server pinned to CPU 1, client to CPU 0; AF_XDP in copy mode "
             "(veth refuses zero-copy), native XDP, one `sendto(MSG_DONTWAIT)` kick per datagram.")
    L.append("- latency: sockperf's half round trip in microseconds (statistics skip the first 400 ms and "
             "the last 50 ms); drops = sockperf's dropped count + datagrams the server never received "
             "(client sent - server total).\n")
    L.append(f"![latency by message size]({svg_name})\n")

    L.append("## Ping-pong (half round trip, us)\n")
    pp_table(L, pp, ("kernel", "kspin", "bypass", "floor"), "drops", lambda r: fmt(r['drops']))
    L.append("\nThe floor tool has no socket layer and no drop accounting (a lost frame would show as a "
             "1 s maximum), and keeps no full log: its stalls are not counted. Stalls: see below.\n")

    L.append("## Ratios of the runs above\n")
    if summary.get("alternated"):
        L.append("From the single runs above, minutes apart; the targets are judged on the alternated runs "
                 "below.\n")
    L.append("| size (B) | bypass / floor, median (target <= 1.10) | bypass / kernel spinning, median (<= 0.50) "
             "| bypass / kernel spinning, p99.9 (<= 0.40) |")
    L.append("|---:|---:|---:|---:|")
    ratios = pp_ratios(runs)

    def mark(v, lim):
        return "-" if v is None else f"{v:.2f} {'met' if v <= lim else 'MISSED'}"
    for r in ratios:
        L.append(f"| {r['size']} | {mark(r['bypass_over_floor_median'], 1.10)} | "
                 f"{mark(r['bypass_over_kspin_median'], 0.50)} | {mark(r['bypass_over_kspin_p999'], 0.40)} |")
    L.append("")

    alt = summary.get("alternated") or []
    if alt:
        L.extend(alt_markdown(alt))

    floor_max, checks = max_checks(runs)
    L.append("## Stalls and the bypass regression check\n")
    L.append("bench.sh keeps each ping-pong's sockperf full log (`--full-log`) until report.py has found its "
             "stalls, as the LatencyBenchmark runner does (docs/benchmark-methods.md \"Stalls\"): a message "
             f"slower than {STALL_FACTOR} x the run's p99.9, or a pause between two consecutive sends longer than "
             f"{STALL_FACTOR} x the run's median pause, both at least {STALL_MIN_NS // 1000000} ms; stretches that "
             "overlap or touch are one stall, timed from the run's first timed message (sockperf's measured "
             "window starts 400 ms into the run). The stalls column counts them (\"-\": the run kept no full "
             f"log); \"few\" marks a run that timed fewer than 1/{FEW_DIVISOR} of the median sample count of its "
             "mode's other sizes. For the bypass both sockperf processes dump the stack's counters "
             "(`TICKSTACK_STATS_FILE`); each bypass row below lists those that stay zero in an undisturbed run "
             "and were not (ring full, fill ring empty, drops, kernel fallbacks, next-hop refreshes, failed "
             "wake-ups, TCP retransmissions: docs/dataplane.md \"Statistics\").\n")
    if checks:
        L.append(f"Regression check: every bypass ping-pong's maximum stays under {FLOOR_FACTOR} x the floor "
                 f"tool's median maximum over its sizes in this run ({fmt(floor_max)} us), at least 1 ms: the "
                 "floor has no socket layer, so its maximum is the machine's own pauses in this run (the "
                 "hypervisor, the other tenants), and a bypass maximum far above it is the stack's.\n")
        L.append("| ping-pong | size (B) | max (us) | bound (us) | check |")
        L.append("|---|---:|---:|---:|---|")
        for c in checks:
            L.append(f"| {'UDP' if c['kind'] == 'pp' else 'TCP'} bypass | {c['size']} | {fmt(c['max'])} | "
                     f"{fmt(c['bound'])} | {'met' if c['ok'] else 'MISSED'} |")
        L.append("")
    notes = []
    for r in sorted((r for r in runs if r["kind"] in ("pp", "tcp_pp")),
                    key=lambda r: (r["kind"], list(MODES).index(r["mode"]), r["param"])):
        label = f"{'TCP' if r['kind'] == 'tcp_pp' else 'UDP'} {MODES[r['mode']]} {r['param']} B"
        notes += stall_notes(label, r)
    if not any("stalls" in r for r in runs):
        L.append("This run kept no full logs (it predates the stall detection): its stalls are not known.\n")
    elif not notes:
        L.append("No ping-pong run stalled, and the bypass stack counted nothing unusual.\n")
    if notes:
        L += [f"- {n}" for n in notes] + [""]

    L.append("## Under load (64 B, reply every 100th message; half round trip, us)\n")
    L.append("| mode | target msg/s | achieved msg/s | min | median | p99 | p99.9 | max | std-dev | drops |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(ul, key=lambda r: (list(MODES).index(r["mode"]), r["param"])):
        L.append(f"| {MODES[r['mode']]} | {r['param']} | {fmt(r.get('achieved_rate'))} | {fmt(r['min'])} | "
                 f"{fmt(r['median'])} | {fmt(r['p99'])} | {fmt(r['p999'])} | {fmt(r['max'])} | "
                 f"{fmt(r['stddev'])} | {fmt(r['drops'])} |")
    L.append("\nSustained = zero drops and at least 95 % of the target rate reached by the sending sockperf. "
             "The under-load client of sockperf runs a pacing sender thread and a receiver thread on CPU 0: "
             "for the bypass its receiver sleeps when idle (`TICKSTACK_SPIN_USEC=0`), the server spins "
             "(`-p latency`); kernel spinning uses `--nonblocked` on both ends as sockperf defines it.\n")
    L.append("| mode | highest rate sustained without drops (msg/s) |")
    L.append("|---|---:|")
    for mode in ("kernel", "kspin", "bypass"):
        if mode in summary["maxrate"]:
            L.append(f"| {MODES[mode]} | {searched(summary['maxrate'][mode])} |")
    L.append("\nThe search tries the rates above, then 1,000,000 msg/s when all were sustained; a mode that "
             "sustained every rate tried is reported as at least that rate.\n")

    tpp = {(r["mode"], r["param"]): r for r in runs if r["kind"] == "tcp_pp"}
    tul = [r for r in runs if r["kind"] == "tcp_ul"]
    tratios = []
    if tpp:
        L.append("## TCP ping-pong (sockperf --tcp, half round trip, us)\n")
        L.append("The bypass runs with `TICKSTACK_TCP=1` (lwIP, see docs/dataplane.md). Drops: sockperf's "
                 "dropped, duplicated and out-of-order counts (a stream loses nothing it delivers).\n")
        pp_table(L, tpp, ("kernel", "kspin", "bypass"), "drops/dup/ooo",
                 lambda r: f"{fmt(r['dropped_reported'])}/{fmt(r['duplicated'])}/{fmt(r['out_of_order'])}")
        L.append("\n| size (B) | TCP bypass / UDP bypass, median (target <= 1.25) "
                 "| TCP bypass / TCP kernel spinning, median (<= 0.70) |")
        L.append("|---:|---:|---:|")
        for sz in (14, 64, 256, 1024, 1472):
            b, u, k = tpp.get(("bypass", sz)), pp.get(("bypass", sz)), tpp.get(("kspin", sz))
            if not b:
                continue
            r1 = ratio(b.get("median"), u and u.get("median"))
            r2 = ratio(b.get("median"), k and k.get("median"))
            tratios.append({"size": sz, "tcp_bypass_over_udp_bypass_median": r1,
                            "tcp_bypass_over_tcp_kspin_median": r2})

            def tmark(v, lim):
                return "-" if v is None else f"{v:.2f} {'met' if v <= lim else 'MISSED'}"
            L.append(f"| {sz} | {tmark(r1, 1.25)} | {tmark(r2, 0.70)} |")
        L.append("")
    if tul:
        L.append("## TCP under load (64 B, reply every 100th message; half round trip, us)\n")
        L.append("| mode | target msg/s | achieved msg/s | min | median | p99 | p99.9 | max | std-dev | drops/dup/ooo |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in sorted(tul, key=lambda r: (list(MODES).index(r["mode"]), r["param"])):
            L.append(f"| {MODES[r['mode']]} | {r['param']} | {fmt(r.get('achieved_rate'))} | {fmt(r['min'])} | "
                     f"{fmt(r['median'])} | {fmt(r['p99'])} | {fmt(r['p999'])} | {fmt(r['max'])} | "
                     f"{fmt(r['stddev'])} | "
                     f"{fmt(r['dropped_reported'])}/{fmt(r['duplicated'])}/{fmt(r['out_of_order'])} |")
        L.append("\nAs for UDP, sockperf's pacing and receiving client threads share CPU 0 and the bypass "
                 "receiver sleeps when idle (`TICKSTACK_SPIN_USEC=0`); while it sleeps the stack's helper "
                 "thread watches the XSK and wakes it only for data, as the kernel does (docs/dataplane-design.md "
                 "\"Timers\").\n")

    tp = tput_summary(runs)
    if tp:
        mtus = tput_mtus(runs)
        L.append("## TCP bulk throughput (iperf3, one stream)\n")
        L.append(f"Debian's iperf3 {meta.get('iperf3', '?')}, one TCP stream from CPU 0 to CPU 1 over the same "
                 f"veth pair, {meta.get('tput_seconds', '?')} s after 1 s left out (`-O 1`), the kernel and "
                 "the bypass (`TICKSTACK_TCP=1 TICKSTACK_REQUIRE=1`, both ends, `tickstack-run -p "
                 f"{meta.get('tput_profile', 'latency')}`) alternated pair by pair, so "
                 "that both see the VM alike, at each link MTU in turn ("
                 + ", ".join(f"{m:,}" for m in mtus) + "; both ends of the pair set to it). The bypass "
                 "segments at the MTU less 52 bytes (MSS = MTU - 40, less the timestamp option: 1,448 at "
                 "MTU 1,500, 8,948 at 9,000; a segment longer than a UMEM frame goes out as a chain of "
                 "frames, AF_XDP multi-buffer), while the kernel's TCP hands veth 64 KiB GSO packets at "
                 "any MTU. Retransmissions: the sender's, as iperf3 reads them from `TCP_INFO`. The raw "
                 "floor, run in each pair too: `xsk-floor blast` fills its AF_XDP TX ring (copy mode, as "
                 "the bypass) with IPv4 packets of the MTU (chains of frames above 2,048 bytes), one "
                 "wake-up per ring's worth (the kernel moves 32 descriptors a call), into `xsk-floor "
                 "sink`'s XSK on the other end: no TCP, no ACKs. The packets per second the TX path "
                 "moved, as TCP payload (MTU - 52 bytes a packet), are what a stream of that MTU through "
                 "AF_XDP copy mode on this veth could carry at most; \"delivered\" is what the sink's "
                 "XSK received (a sink that other jobs keep off its CPU drops the rest; TCP's flow "
                 "control would not have sent it). The target is read at MTU "
                 f"{mtus[0]:,}, the link as it comes.\n")
        byp = {(r.get("mtu", TPUT_MTU), r["mode"], r["param"]): r for r in runs
               if r["kind"] in ("tput", "tfloor")}
        rows = [tp] + [tp["by_mtu"][str(m)] for m in mtus[1:] if tp.get("by_mtu", {}).get(str(m))]
        for t in rows:
            mtu = t["mtu"]
            L.append(f"MTU {mtu:,}:\n")
            L.append("| pair | kernel (Mbit/s) | retr | bypass (Mbit/s) | retr | raw floor (packets/s) | "
                     "delivered (packets/s) | raw floor as TCP payload (Mbit/s) | bypass / kernel | "
                     "bypass / raw floor | raw floor / kernel |")
            L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for p in t["pairs"]:
                k, b = byp.get((mtu, "kernel", p["pair"]), {}), byp.get((mtu, "bypass", p["pair"]), {})
                f = byp.get((mtu, "floor", p["pair"]), {})
                L.append(f"| {p['pair']} | {fmt(p['kernel'], 0) if p['kernel'] else k.get('error', '-')} | "
                         f"{fmt(k.get('retransmits'))} | {fmt(p['bypass'], 0) if p['bypass'] else b.get('error', '-')} | "
                         f"{fmt(b.get('retransmits'))} | {fmt(p['floor_fps'], 0) if p['floor_fps'] else f.get('error', '-')} | "
                         f"{fmt(p['floor_delivered_fps'], 0)} | "
                         f"{fmt(p['floor'], 0) if p['floor'] else '-'} | {fmt(p['ratio'])} | "
                         f"{fmt(p['floor_ratio'])} | {fmt(p['floor_over_kernel'])} |")
            L.append("")
        L.append("| MTU | bypass / kernel, iperf3 TCP, median of the pairs (target >= "
                 f"{TPUT_TARGET:.2f}) | bypass / raw floor, median | raw floor / kernel, median | "
                 "kernel median (Mbit/s) | bypass median (Mbit/s) | raw floor median (Mbit/s) |")
        L.append("|---:|---:|---:|---:|---:|---:|---:|")
        for t in rows:
            L.append(f"| {t['mtu']:,} | {t['ratio_median']:.2f} {'met' if t['met'] else 'MISSED'} | "
                     f"{fmt(t['bypass_over_floor_median'])} | {fmt(t['floor_over_kernel_median'])} | "
                     f"{fmt(t['kernel_median_mbps'], 0)} | {fmt(t['bypass_median_mbps'], 0)} | "
                     f"{fmt(t['floor_median_mbps'], 0)} |")
        L.append("")
        notes = []
        for r in sorted((r for r in runs if r["kind"] == "tput" and r["mode"] == "bypass"),
                        key=lambda r: (r.get("mtu", TPUT_MTU), r["param"])):
            notes += stall_notes(f"bypass iperf3, MTU {r.get('mtu', TPUT_MTU):,}, pair {r['param']}", r)
        if notes:
            L += [f"- {n}" for n in notes] + [""]

    L.append("## Microburst (seed 002's method)\n")
    L.append("The largest burst of back-to-back 256-byte datagrams (sockperf throughput mode, `-b N`, "
             "sent by the kernel stack in both cases) that the receiver takes without a drop, at equal "
             "buffering: the receiving socket's `SO_RCVBUF` (sockperf `--buffer-size`), which the bypass "
             "honours as the kernel does (datagrams queued count their true size against it). Below the "
             f"socket the bypass has an RX ring of {meta.get('rx_ring', '?')} descriptors, "
             f"{meta.get('umem_frames', '?')} UMEM frames and a socket queue that holds "
             f"{meta.get('sockq_len', '?')} datagrams in UMEM frames and, with `SO_RCVBUF` set, copies "
             "of those past them up to what `SO_RCVBUF` allows; the kernel clamps SO_RCVBUF to "
             f"net.core.rmem_max = {meta.get('rmem_max', '?')} (net.core.rmem_default = "
             f"{meta.get('rmem_default', '?')}). The search doubles from 64 up to its bound, then bisects; "
             "a receiver that took every burst tried is reported as at least the bound.\n")
    L.append("| SO_RCVBUF (bytes) | kernel receiver | bypass receiver | bypass / kernel |")
    L.append("|---:|---:|---:|---|")
    mb = {}
    for buf in sorted(summary["maxburst"], key=lambda b: (not b.isdigit(), int(b) if b.isdigit() else 0)):
        row = summary["maxburst"][buf]
        r, text = search_ratio(row.get("bypass"), row.get("kernel"))
        mb[buf] = {"ratio": r, "bound": text.startswith((">=", "<=", "- (")), "text": text}
        L.append(f"| {buf} | {searched(row.get('kernel'))} | {searched(row.get('bypass'))} | {text} |")
    L.append("")
    return "\n".join(L) + "\n", ratios + tratios, mb, checks, tp


# issue 40's ping-pong targets, judged on the alternated rounds (bench/ab.sh)
FLOOR_TARGET = 1.10
KSPIN_TARGET = 0.50
# (name, numerator, denominator): the per-round ratios of the alternated table
ALT_RATIOS = [
    ("bypass_over_floor", "bypass", "floor"),
    ("bypass_over_floorcopy", "bypass", "floorcopy"),
    ("floorcopy_over_floor", "floorcopy", "floor"),
    ("min_over_floorcopy", "min", "floorcopy"),
    ("bypass_over_min", "bypass", "min"),
    ("kspin_over_minkernel", "kspin", "minkernel"),
    ("floor_over_kspin", "floor", "kspin"),
    ("bypass_over_kspin", "bypass", "kspin"),
]


def parse_alt(size, text, columns):
    """bench/ab.sh's rounds at one size ("round N: m1 m2 ...", medians in us, columns in the
    order given): each column's median over the rounds, and for each of ALT_RATIOS the median of
    the per-round ratios with their smallest and largest (a round where either side has no figure
    is left out of that ratio)."""
    rounds = []
    for line in text.splitlines():
        m = re.match(r"round \d+:\s+(.*)", line)
        if m:
            v = m.group(1).split()
            if len(v) == len(columns):
                rounds.append({c: (float(x) if x != "none" else None) for c, x in zip(columns, v)})
    out = {"size": size, "rounds": len(rounds), "medians": {}, "ratios": {}}
    for c in columns:
        v = [r[c] for r in rounds if r[c] is not None]
        out["medians"][c] = statistics.median(v) if v else None
    for name, a, b in ALT_RATIOS:
        v = [r[a] / r[b] for r in rounds if r.get(a) and r.get(b)]
        out["ratios"][name] = ({"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
                               if v else None)
    return out


def alt_verdicts(a):
    """The two targets of one size of the alternated table: (bypass / floor, bypass / kernel spinning)
    as text. Kernel spinning's target is missed for the veth copy path when the floor itself, the
    bare ring loop the bypass is built on, is above KSPIN_TARGET of the kernel: no socket layer could
    meet it there."""
    r = a["ratios"]
    bf, bk, fk = r.get("bypass_over_floor"), r.get("bypass_over_kspin"), r.get("floor_over_kspin")
    v1 = "-" if not bf else ("met" if bf["median"] <= FLOOR_TARGET else "MISSED")
    if not bk:
        v2 = "-"
    elif bk["median"] <= KSPIN_TARGET:
        v2 = "met"
    elif fk and fk["median"] > KSPIN_TARGET:
        v2 = f"MISSED, veth copy path: floor / kernel {fk['median']:.2f}"
    else:
        v2 = "MISSED"
    return v1, v2


def pp_ratios(runs):
    """Per ping-pong size of one benchmark run, the bypass against the floor and kernel spinning: the
    ratios the benchmark's targets are stated in (the report's table, and --compare)."""
    pp = {(r["mode"], r["param"]): r for r in runs if r.get("kind") in ("pp", "floor")}
    out = []
    for sz in sorted(s for m, s in pp if m == "bypass"):
        b, f, k = pp[("bypass", sz)], pp.get(("floor", sz)), pp.get(("kspin", sz))
        out.append({"size": sz, "bypass_over_floor_median": ratio(b.get("median"), f and f.get("median")),
                    "bypass_over_kspin_median": ratio(b.get("median"), k and k.get("median")),
                    "bypass_over_kspin_p999": ratio(b.get("p999"), k and k.get("p999"))})
    return out


def compare(labelled):
    """The ping-pong ratios of several benchmark runs of several builds, [(label, runs)] in the
    order they ran: per size and build every run's ratio and their median, and each build's median
    over the first build's. Ratios, not microseconds: the floor and the kernel ran in the same
    run and moved with the VM's speed as the bypass did."""
    labels = list(dict.fromkeys(label for label, _ in labelled))
    per = {}  # (label, size) -> [(over floor, over kspin)]
    for label, runs in labelled:
        for r in pp_ratios(runs):
            per.setdefault((label, r["size"]), []).append(
                (r["bypass_over_floor_median"], r["bypass_over_kspin_median"]))
    sizes = sorted({s for _, s in per})

    def med(label, size, i):
        v = [x[i] for x in per.get((label, size), []) if x[i] is not None]
        return statistics.median(v) if v else None

    L = ["| size (B) | build | runs | bypass / floor, median | per run | bypass / kernel spinning, "
         "median | per run |", "|---:|---|---:|---:|---|---:|---|"]
    for size in sizes:
        for label in labels:
            rs = per.get((label, size), [])
            cells = []
            for i in (0, 1):
                m, base = med(label, size, i), med(labels[0], size, i)
                rel = f" ({m / base:.2f}x {labels[0]})" if label != labels[0] and m and base else ""
                cells += [fmt(m) + rel, " ".join(fmt(x[i]) for x in rs)]
            L.append(f"| {size} | {label} | {len(rs)} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    tps = {}  # label -> [median ratio of a run]
    for label, runs in labelled:
        tp = tput_summary(runs)
        if tp:
            tps.setdefault(label, []).append(tp["ratio_median"])
    if tps:
        L += ["", "| build | runs | TCP throughput bypass / kernel (iperf3), median | per run |",
              "|---|---:|---:|---|"]
        for label in labels:
            v = tps.get(label, [])
            L.append(f"| {label} | {len(v)} | {fmt(statistics.median(v)) if v else '-'} | "
                     f"{' '.join(fmt(x) for x in v)} |")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-last")
    ap.add_argument("--stalls")
    ap.add_argument("--from-json")
    ap.add_argument("--meta")
    ap.add_argument("--manifest")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs="+", metavar="LABEL=JSON",
                    help="the ping-pong ratios of benchmark runs (bench/alternate.sh), in the order they ran")
    a = ap.parse_args()
    if a.compare:
        labelled = []
        for arg in a.compare:
            label, _, path = arg.partition("=")
            with open(path) as f:
                labelled.append((label, json.load(f)["runs"]))
        sys.stdout.write(compare(labelled))
        return 0
    if a.stalls:
        json.dump(detect_stalls(read_full_log(a.stalls)), sys.stdout)
        sys.stdout.write("\n")
        return 0
    if a.check_last:
        with open(a.check_last) as f:
            lines = [line.split() for line in f if line.strip()]
        if not lines:
            return 1
        p = lines[-1]
        r = parse_run(p[0], p[1], p[2], p[3], p[4])
        print(f"bench: {p[0]} {p[1]} {p[2]}: drops={r['drops']} sent={r['sent']} "
              f"received={r['server_received']} rate={r.get('achieved_rate')}", file=sys.stderr)
        return 0 if r["ok"] else 1
    if a.from_json:
        with open(a.from_json) as f:
            recorded = json.load(f)
        meta, runs, summary = recorded["meta"], recorded["runs"], recorded["summary"]
    else:
        meta = {}
        with open(a.meta) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
        runs, summary = load(a.manifest)
    mark_few_samples(runs)
    base = os.path.splitext(a.out)[0]
    svg(runs, base + ".svg")
    md, ratios, mb, checks, tp = markdown(meta, runs, summary, os.path.basename(base) + ".svg")
    with open(a.out, "w") as f:
        f.write(md)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs, "summary": summary, "ratios": ratios,
                   "microburst_bypass_over_kernel": mb, "bypass_max_checks": checks,
                   "tcp_throughput": tp}, f, indent=1)
        f.write("\n")
    print(f"bench: wrote {a.out}, {base}.json, {base}.svg", file=sys.stderr)
    if tp and not tp["met"]:
        print(f"bench: TCP throughput target missed: bypass / kernel {tp['ratio_median']:.2f} "
              f"< {TPUT_TARGET:.2f}", file=sys.stderr)
        return EXIT_TPUT_MISSED
    missed = targets_missed(md)
    if missed:
        print(f"bench: {missed} target(s) marked MISSED in {a.out}", file=sys.stderr)
        return EXIT_TARGET_MISSED
    return 0


def targets_missed(md):
    """The number of targets the report marks MISSED (every table that states a
    target writes "met" or "MISSED" beside the figure)."""
    return md.count("MISSED")


if __name__ == "__main__":
    sys.exit(main())
