#!/usr/bin/env python3
"""tests/xdpd_client.py - speaks the pod protocol (src/xdpd_proto.h) to a
tickstack-xdpd pod socket as a hostile or careless process would, for
tests/xdpd.sh: prints the daemon's reply (or the refusal) on stdout.
  xdpd_client.py SOCKET REQUEST [--udp ADDR:PORT]
--udp: create a UDP socket bound to ADDR:PORT and pass it with the request."""
import socket
import sys


def main():
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    path, req = sys.argv[1], sys.argv[2]
    fds = []
    if len(sys.argv) == 5 and sys.argv[3] == "--udp":
        addr, port = sys.argv[4].rsplit(":", 1)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind((addr, int(port)))
        fds.append(u.fileno())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError as e:
        print("connect-error %s" % e)
        return 0
    try:
        socket.send_fds(s, [req.encode()], fds)
    except OSError:
        pass  # a refusal closes the connection: its reply is still queued
    try:
        rep = s.recv(4096)
    except ConnectionResetError:
        # the daemon closed with our request unread: the reset comes
        # first, its reply is still queued behind it
        try:
            rep = s.recv(4096)
        except OSError as e:
            print("recv-error %s" % e)
            return 0
    except OSError as e:
        print("recv-error %s" % e)
        return 0
    print(rep.decode() if rep else "closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
