#!/usr/bin/env python3
"""tests/programs.sh (iperf3_run): iperf3 -J's report in brief, what was sent and what arrived; the rate on
stderr. Usage: iperf3_summary.py REPORT.json
"""
import json
import sys
r = json.load(open(sys.argv[1]))
if "error" in r:
    print("iperf3:", r["error"])
e = r.get("end", {})
if r.get("start", {}).get("test_start", {}).get("protocol") == "TCP":
    ts = r["start"]["test_start"]
    s, g, want = e["sum_sent"]["bytes"], e["sum_received"]["bytes"], ts["bytes"]
    # whole blocks: a block more than asked at times, on the kernel too
    print("tcp: sent %s, the receiver counted %s" % (
        "what was asked" if want <= s <= want + 2 * ts["blksize"] else "%d bytes of %d" % (s, want),
        "all or less" if 0 < g <= s else "%d" % g))
    print("rate %.0f Mbit/s" % (e["sum_received"]["bits_per_second"] / 1e6), file=sys.stderr)
else:
    u = e["sum"]
    print("udp: %d datagrams %d bytes, lost %d, out of order %d" % (u["packets"], u["bytes"], u["lost_packets"],
                                                                    u.get("out_of_order", 0)))
