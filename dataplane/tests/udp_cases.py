#!/usr/bin/env python3
"""The Python sides of tests/harness.sh's UDP cases: plain Python sockets, run
on the kernel or through the library (tickstack-run), as the case says.

Usage: udp_cases.py CASE ARGS...
  send DST PORT COUNT BYTE SIZE GAP [--bind ADDR] [--ttl TTL]
      COUNT datagrams of SIZE bytes BYTE to DST:PORT, GAP seconds apart
      (from ADDR, with multicast TTL)
  mcshare-holder          a socket on 0.0.0.0:14000 that reads for 3 s
  mcshare-plain GROUP IP  a plain receiver of GROUP:14000 (joined on IP);
                          prints "received N" after 2 s without one
  epollset IP             epoll returns only the fds the program registered
  reuseport IP            two SO_REUSEPORT sockets get 100 datagrams once
  readv IP                readv 20 datagrams of 64 bytes, then writev
  readv-peer IP           the other side of readv
Each server prints "ready" once it listens; a failed check exits non-zero.
"""
import argparse
import os
import select
import socket
import struct
import sys
import time


def send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if a.ttl is not None:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, a.ttl)
    if a.bind:
        s.bind((a.bind, 0))
    for _ in range(a.count):
        s.sendto(a.byte.encode() * a.size, (a.dst, a.port))
        time.sleep(a.gap)


def mcshare_holder(_):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 14000))
    s.settimeout(0.2)
    print("ready", flush=True)
    end = time.time() + 3
    while time.time() < end:
        try:
            s.recv(2000)
        except socket.timeout:
            pass


def mcshare_plain(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.group, 14000))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 struct.pack("4s4s", socket.inet_aton(a.group), socket.inet_aton(a.ip)))
    print("ready", flush=True)
    s.settimeout(2)
    n = 0
    try:
        while True:
            s.recv(2000)
            n += 1
    except socket.timeout:
        pass
    print("received", n)


def epollset(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.ip, 14010))
    r, w = os.pipe()
    ep = select.epoll()
    ep.register(s.fileno(), select.EPOLLIN)
    ep.register(r, select.EPOLLIN)
    ep.poll(0.3)                  # long enough to sleep in the kernel
    ep.unregister(s.fileno())     # the last socket of the library leaves
    print("ready", flush=True)
    bad = []
    end = time.time() + 2
    while time.time() < end:
        for fd, ev in ep.poll(0.2):
            if fd != r:
                bad.append(fd)
            else:
                os.read(r, 1)
    os.write(w, b"x")
    got = [fd for fd, ev in ep.poll(1)]
    if bad or got != [r]:
        print("foreign events", bad, got)
        sys.exit(1)
    print("clean")


def reuseport(a):
    ss = []
    for i in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((a.ip, 14011))
        ss.append(s)
    print("ready", flush=True)
    n = 0
    end = time.time() + 3
    while time.time() < end:
        r, _, _ = select.select(ss, [], [], 0.2)
        for s in r:
            s.recv(2000)
            n += 1
    print("received", n)
    sys.exit(0 if n == 100 else 1)


def readv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.ip, 14012))
    print("ready", flush=True)
    for i in range(20):
        x, y = bytearray(10), bytearray(100)
        n = os.readv(s.fileno(), [x, y])
        assert n == 64 and bytes(x + y)[:64] == b"v" * 64, (n, bytes(x))
    s.connect((a.ip.replace(".2", ".1"), 14013))
    os.writev(s.fileno(), [b"w" * 10, b"w" * 22])
    print("done", flush=True)


def readv_peer(a):
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.bind(("0.0.0.0", 14013))
    r.settimeout(5)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(20):
        s.sendto(b"v" * 64, (a.ip, 14012))
        time.sleep(0.005)
    assert r.recv(100) == b"w" * 32


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="case", required=True)
    c = sub.add_parser("send")
    c.add_argument("dst")
    c.add_argument("port", type=int)
    c.add_argument("count", type=int)
    c.add_argument("byte")
    c.add_argument("size", type=int)
    c.add_argument("gap", type=float)
    c.add_argument("--bind")
    c.add_argument("--ttl", type=int)
    c.set_defaults(run=send)
    sub.add_parser("mcshare-holder").set_defaults(run=mcshare_holder)
    c = sub.add_parser("mcshare-plain")
    c.add_argument("group")
    c.add_argument("ip")
    c.set_defaults(run=mcshare_plain)
    for name, run in (("epollset", epollset), ("reuseport", reuseport), ("readv", readv), ("readv-peer", readv_peer)):
        c = sub.add_parser(name)
        c.add_argument("ip")
        c.set_defaults(run=run)
    a = p.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
