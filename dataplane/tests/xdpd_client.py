#!/usr/bin/env python3
"""tests/xdpd_client.py - speaks the pod protocol (src/xdpd_proto.h) to a
tickstack-xdpd pod socket as a hostile or careless process would, for
tests/xdpd.sh: prints the daemon's reply (or the refusal) on stdout.
  xdpd_client.py SOCKET REQUEST [--udp ADDR:PORT | --memfd BYTES | --memfd-cold BYTES]
--udp: create a UDP socket bound to ADDR:PORT and pass it with the request.
--memfd: create a memfd of BYTES, write every page, pass it with the
request ("umem"); --memfd-cold: the same, pages left unwritten. An fd the
reply carries is described after it: "fd=AF_XDP rings=mapped" when it is an
AF_XDP socket whose four rings this process (without any capability) could
map, else "fd=OTHER"."""
import mmap
import os
import socket
import struct
import sys

SOL_XDP = 283
XDP_MMAP_OFFSETS = 1
# XDP_PGOFF_RX_RING, XDP_PGOFF_TX_RING, XDP_UMEM_PGOFF_FILL_RING,
# XDP_UMEM_PGOFF_COMPLETION_RING (linux/if_xdp.h)
PGOFFS = (0, 0x80000000, 0x100000000, 0x180000000)


def describe(fd):
    """What the passed fd is, and whether its rings map."""
    # the family given: Python cannot find an AF_XDP socket's by itself
    x = socket.socket(44, socket.SOCK_RAW, 0, fileno=fd)
    try:
        if x.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN) != 44:
            return "fd=OTHER"
        # struct xdp_mmap_offsets: rx, tx, fr, cr; each producer,
        # consumer, desc, flags (u64)
        off = struct.unpack("16Q", x.getsockopt(SOL_XDP, XDP_MMAP_OFFSETS, 128))
        for i, pg in enumerate(PGOFFS):
            desc = off[i * 4 + 2]
            m = mmap.mmap(fd, desc + 64, mmap.MAP_SHARED,
                          mmap.PROT_READ | mmap.PROT_WRITE, offset=pg)
            m.close()
        return "fd=AF_XDP rings=mapped"
    except OSError as e:
        return "fd=AF_XDP rings=%s" % e
    finally:
        x.close()


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
    elif len(sys.argv) == 5 and sys.argv[3] in ("--memfd", "--memfd-cold"):
        size = int(sys.argv[4])
        mfd = os.memfd_create("umem")
        os.ftruncate(mfd, size)
        if sys.argv[3] == "--memfd":
            with mmap.mmap(mfd, size) as m:
                for off in range(0, size, mmap.PAGESIZE):
                    m[off] = 1
        fds.append(mfd)
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
    got = []
    try:
        rep, got, _, _ = socket.recv_fds(s, 4096, 1)
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
    print(" ".join([rep.decode() if rep else "closed"] + [describe(f) for f in got]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
