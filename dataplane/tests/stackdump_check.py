#!/usr/bin/env python3
"""tests/inspect.sh (sd_ok): tickstack-stackdump -o json FILE of the server shows its listener on IP:12302 and an
established connection with data both ways, its XSK rings and UMEM. Usage: stackdump_check.py FILE IP
"""
import json
import sys
d = json.load(open(sys.argv[1]))
ip = sys.argv[2]
p = d["processes"][0]
socks = p["sockets"]
lis = [s for s in socks if s["proto"] == "tcp" and s["state"] == "LISTEN" and s["local"] == ip + ":12302"]
est = [s for s in socks if s["proto"] == "tcp" and s["state"] == "ESTABLISHED" and s["local"] == ip + ":12302"]
assert lis, "no listener in %s" % socks
assert est, "no established connection in %s" % socks
t = est[0]["tcp"]
assert t["cwnd"] > 0 and t["mss"] > 0 and t["rcv_wnd"] > 0 and t["snd_wnd"] > 0, t
assert est[0]["rx"] > 0 and est[0]["tx"] > 0, est[0]
assert est[0]["remote"].startswith("198.18.10.1:"), est[0]
x = p["xsks"]
assert x and x[0]["umem_frames"] > 0 and x[0]["ring_size"] > 0, x
assert x[0]["fill"] > 0, "empty fill ring %s" % x
assert x[0]["counters"]["rx_packets"] > 0, x
assert p["counters"]["tcp_conns_accel"] >= 1, p["counters"]
