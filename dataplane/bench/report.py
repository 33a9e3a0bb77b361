#!/usr/bin/env python3
"""bench/report.py - turns the runs of bench/bench.sh into
docs/bench-dataplane.md (tables, ratios), .json and .svg.

  report.py --check-last MANIFEST     exit 0 if the last run had no drops
                                      (and, under load, reached 95 % of its
                                      target rate)
  report.py --meta META --manifest MANIFEST --out docs/bench-dataplane.md
"""
import argparse
import json
import math
import os
import re
import sys

MODES = {
    "kernel": "kernel, blocking",
    "kspin": "kernel, spinning (--nonblocked)",
    "bypass": "tickstack bypass (-p latency)",
    "floor": "raw AF_XDP floor (xsk-floor)",
}
COLORS = {"kernel": "#d62728", "kspin": "#ff7f0e", "bypass": "#1f77b4", "floor": "#2ca02c"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


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


def parse_run(kind, mode, param, cli, srv):
    c, s = read(cli), read(srv)
    run = {"kind": kind, "mode": mode, "param": int(param)}
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
            if p[0] in ("maxrate", "maxburst"):
                res = {"value": int(p[2]), "bound": len(p) > 3 and p[3] == "bound"}
                if p[0] == "maxrate":
                    summary["maxrate"][p[1]] = res
                else:
                    buf = p[4] if len(p) > 4 and p[4] != "-" else "default"
                    summary["maxburst"].setdefault(buf, {})[p[1]] = res
                continue
            runs.append(parse_run(p[0], p[1], p[2], p[3], p[4]))
    return runs, summary


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


def markdown(meta, runs, summary, svg_name):
    L = []
    pp = {(r["mode"], r["param"]): r for r in runs if r["kind"] in ("pp", "floor")}
    ul = [r for r in runs if r["kind"] == "ul"]
    L.append("# Dataplane benchmark: kernel UDP and TCP vs the tickstack AF_XDP bypass\n")
    L.append("Generated by `make -C dataplane bench` (bench/bench.sh + bench/report.py); "
             "do not edit by hand, run it again.\n")
    L.append(f"- run: {meta.get('date', '?')}, kernel {meta.get('kernel', '?')}, {meta.get('cpus', '?')} vCPUs "
             f"({meta.get('cpu_model', '?')}), sockperf {meta.get('sockperf', '?')}, {meta.get('seconds', '?')} s per run")
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
    L.append("| mode | size (B) | min | median | p99 | p99.9 | max | std-dev | drops |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in ("kernel", "kspin", "bypass", "floor"):
        for sz in (14, 64, 256, 1024, 1472):
            r = pp.get((mode, sz))
            if not r:
                continue
            L.append(f"| {MODES[mode]} | {sz} | {fmt(r['min'])} | {fmt(r['median'])} | {fmt(r['p99'])} | "
                     f"{fmt(r['p999'])} | {fmt(r['max'])} | {fmt(r['stddev'])} | {fmt(r['drops'])} |")
    L.append("\nThe floor tool has no socket layer and no drop accounting (a lost frame would show as a "
             "1 s maximum).\n")

    L.append("## Ratios and targets\n")
    L.append("| size (B) | bypass / floor, median (target <= 1.10) | bypass / kernel spinning, median (<= 0.50) "
             "| bypass / kernel spinning, p99.9 (<= 0.40) |")
    L.append("|---:|---:|---:|---:|")
    ratios = []
    for sz in (14, 64, 256, 1024, 1472):
        b, f, k = pp.get(("bypass", sz)), pp.get(("floor", sz)), pp.get(("kspin", sz))
        if not b:
            continue
        r1 = ratio(b.get("median"), f and f.get("median"))
        r2 = ratio(b.get("median"), k and k.get("median"))
        r3 = ratio(b.get("p999"), k and k.get("p999"))
        ratios.append({"size": sz, "bypass_over_floor_median": r1,
                       "bypass_over_kspin_median": r2, "bypass_over_kspin_p999": r3})

        def mark(v, lim):
            return "-" if v is None else f"{v:.2f} {'met' if v <= lim else 'MISSED'}"
        L.append(f"| {sz} | {mark(r1, 1.10)} | {mark(r2, 0.50)} | {mark(r3, 0.40)} |")
    L.append("")

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
        L.append("| mode | size (B) | min | median | p99 | p99.9 | max | std-dev | drops/dup/ooo |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for mode in ("kernel", "kspin", "bypass"):
            for sz in (14, 64, 256, 1024, 1472):
                r = tpp.get((mode, sz))
                if not r:
                    continue
                L.append(f"| {MODES[mode]} | {sz} | {fmt(r['min'])} | {fmt(r['median'])} | {fmt(r['p99'])} | "
                         f"{fmt(r['p999'])} | {fmt(r['max'])} | {fmt(r['stddev'])} | "
                         f"{fmt(r['dropped_reported'])}/{fmt(r['duplicated'])}/{fmt(r['out_of_order'])} |")
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
                 "receiver sleeps when idle: a TCP reply that another thread of the process took from the "
                 "XSK reaches the sleeping receiver through a wake-up on that shared CPU, which costs hundreds "
                 "of microseconds here (see docs/dataplane.md).\n")

    L.append("## Microburst (seed 002's method)\n")
    L.append("The largest burst of back-to-back 256-byte datagrams (sockperf throughput mode, `-b N`, "
             "sent by the kernel stack in both cases) that the receiver takes without a drop, at equal "
             "buffering: the receiving socket's `SO_RCVBUF` (sockperf `--buffer-size`), which the bypass "
             "honours as the kernel does (datagrams queued count their true size against it). Below the "
             f"socket the bypass has an RX ring of {meta.get('rx_ring', '?')} descriptors, "
             f"{meta.get('umem_frames', '?')} UMEM frames and a socket queue of at most "
             f"{meta.get('sockq_len', '?')} datagrams; the kernel clamps SO_RCVBUF to "
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
    return "\n".join(L) + "\n", ratios + tratios, mb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-last")
    ap.add_argument("--meta")
    ap.add_argument("--manifest")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.check_last:
        with open(a.check_last) as f:
            lines = [l.split() for l in f if l.strip()]
        if not lines:
            return 1
        p = lines[-1]
        r = parse_run(p[0], p[1], p[2], p[3], p[4])
        print(f"bench: {p[0]} {p[1]} {p[2]}: drops={r['drops']} sent={r['sent']} "
              f"received={r['server_received']} rate={r.get('achieved_rate')}", file=sys.stderr)
        return 0 if r["ok"] else 1
    meta = {}
    with open(a.meta) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    runs, summary = load(a.manifest)
    base = os.path.splitext(a.out)[0]
    svg(runs, base + ".svg")
    md, ratios, mb = markdown(meta, runs, summary, os.path.basename(base) + ".svg")
    with open(a.out, "w") as f:
        f.write(md)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs, "summary": summary, "ratios": ratios,
                   "microburst_bypass_over_kernel": mb}, f, indent=1)
        f.write("\n")
    print(f"bench: wrote {a.out}, {base}.json, {base}.svg", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
