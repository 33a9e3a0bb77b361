# tests/xdpd_rebind.py ADDR PORT1 PORT2 TRIGGER - a UDP echo process of a
# bypass pod that opens a socket later: it echoes on ADDR:PORT1 and, once
# the file TRIGGER exists, binds a second socket to ADDR:PORT2 and echoes
# there too (tests/xdpd.sh, xdpd_recover: a socket opened after the node
# daemon restarted). Prints "ready" and "bound PORT2"; a bind refused
# (TICKSTACK_REQUIRE=1) ends it with the error and exit status 1.
import os
import select
import socket
import sys

addr, p1, p2, trigger = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)]
socks[0].bind((addr, p1))
print("ready", flush=True)
while True:
    r, _, _ = select.select(socks, [], [], 0.05)
    for s in r:
        data, peer = s.recvfrom(9216)
        s.sendto(data, peer)
    if len(socks) == 1 and os.path.exists(trigger):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind((addr, p2))
        except OSError as e:
            print("bind %d: %s" % (p2, e), flush=True)
            sys.exit(1)
        socks.append(s)
        print("bound %d" % p2, flush=True)
