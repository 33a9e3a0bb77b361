#!/usr/bin/env python3
"""tests/xdpd_fuzz.py - a hostile pod against a live tickstack-xdpd, for
tests/xdpd.sh. Run in the pod's network namespace as the pod's uid (with
CAP_NET_RAW, to pass AF_XDP sockets). Exits 1 on the first reply that
breaks the protocol (src/xdpd_proto.h) or a daemon that stops answering.

  xdpd_fuzz.py fuzz SOCKET IFNAME ITERATIONS SEED
      random sessions: messages of random text, bytes and sizes (empty to
      70000 bytes, NUL bytes), 0 to 9 fds of several kinds per message
      (UDP, TCP, AF_XDP, pipe, eventfd, memfd, unix socket, /dev/null),
      split over two SCM_RIGHTS headers or with SCM_CREDENTIALS beside
      them, bursts past the connection limit, connections closed or
      half-closed mid-request; then one well-formed hello.
  xdpd_fuzz.py conns SOCKET N
      N connections held open at once, a hello on each: prints
      "ok=K refused=R" (refused: the connection limit's error 24).
  xdpd_fuzz.py entries SOCKET IFNAME CONNS PER
      CONNS connections, each with an XSK on queue 1.. and PER steering
      entries asked for (the last connection: one), at distinct addresses
      in 198.18.64.0/18 with one UDP socket bound to the wildcard address
      as proof: prints per connection "conn I ok=K last=REPLY".
  xdpd_fuzz.py umems SOCKET IFNAME CONNS BYTES
      CONNS connections at once, connection I asking for an XSK on queue I
      made from a memfd of BYTES, every page written ("umem"), each XSK
      received and held until the end: prints per connection
      "conn I REPLY".
  xdpd_fuzz.py proto SOCKET IFNAME
      oversized messages, several fds, truncated control data, a NUL byte,
      an empty line, each on one connection, then a hello on it: prints
      "CASE: REPLY".
"""
import array
import errno
import ipaddress
import mmap
import os
import random
import re
import socket
import struct
import sys
import time

AF_XDP = 44
MSG_MAX = 511  # TS_XDPD_MSG_MAX - 1
LIMIT = b"error 24 refused: pod "  # the connection limit, at connect
REPLY = re.compile(rb"^(ok|ok .*|error [1-9][0-9]* .+)$", re.S)


class Bad(Exception):
    pass


def connect(path):
    """Connected, blocking for at most 5 s (a unix socket's connect waits
    for room in the listen backlog, bounded by the send timeout; a socket
    with a Python timeout would be nonblocking and fail at once)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 5, 0))
    s.connect(path)
    s.settimeout(5)
    return s


def check(rep, what):
    """A reply is "ok[ ...]" or "error ERRNO TEXT", one message of at most
    MSG_MAX bytes."""
    if rep is None or not REPLY.match(rep) or len(rep) > MSG_MAX:
        raise Bad("%s: malformed reply %r" % (what, rep[:120] if rep else rep))
    return rep


def recv(s):
    """The reply, b"" when the daemon closed, None on a reset with no
    reply queued behind it (a refused connection whose requests were
    not all read)."""
    try:
        return s.recv(70000)
    except ConnectionResetError:
        try:
            return s.recv(70000)
        except OSError:
            return None
    except socket.timeout:
        raise Bad("no reply within 5 s: the daemon hangs")


def ask(s, data, fds=(), anc=None):
    anc = list(anc or [])
    if fds:
        anc.insert(0, (socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds)))
    s.sendmsg([data], anc)
    return recv(s)


# ---------------------------------------------------------------- fds

class Pool:
    """fds of every kind a hostile process can pass, recreated per session
    so nothing the daemon could keep stays shared."""

    def __init__(self, rnd):
        self.rnd = rnd
        self.objs = []

    def _keep(self, o):
        self.objs.append(o)
        return o.fileno() if hasattr(o, "fileno") else o

    def xsk(self):
        try:
            return self._keep(socket.socket(AF_XDP, socket.SOCK_RAW, 0))
        except OSError:  # no CAP_NET_RAW
            return self._keep(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))

    def umem(self):
        """A UMEM memfd the daemon accepts: 32 frames, every page written."""
        f = os.memfd_create("xdpd-fuzz-umem")
        self.objs.append(f)
        os.ftruncate(f, 32 * 2048)
        os.pwrite(f, b"\1" * (32 * 2048), 0)
        return f

    def one(self):
        k = self.rnd.randrange(9)
        try:
            if k == 0 or k == 1:
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                if k == 0:
                    u.bind(("0.0.0.0", self.rnd.randrange(20000, 60000)))
                return self._keep(u)
            if k == 2:
                t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                t.bind(("0.0.0.0", 0))
                return self._keep(t)
            if k == 3:
                return self.xsk()
            if k == 4:
                r, w = os.pipe()
                self.objs.append(w)
                self.objs.append(r)
                return r
            if k == 5:
                f = os.eventfd(0)
                self.objs.append(f)
                return f
            if k == 6:
                f = os.memfd_create("xdpd-fuzz")
                self.objs.append(f)
                return f
            if k == 7:
                a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.objs.append(b)
                return self._keep(a)
            f = os.open("/dev/null", os.O_RDONLY)
            self.objs.append(f)
            return f
        except OSError:
            # a port taken, or no CAP_NET_RAW: a plain socket instead
            return self._keep(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))

    def close(self):
        for o in self.objs:
            if isinstance(o, int):
                os.close(o)
            else:
                o.close()
        self.objs = []


# ---------------------------------------------------------------- messages

OPS = ["hello", "busy", "xsk", "umem", "add", "del", "share", "shared"]


def token(rnd, ifname):
    k = rnd.randrange(12)
    if k == 0:
        return rnd.choice(OPS)
    if k == 1:
        return rnd.choice([ifname, "lo", "eth0", ifname * 3, "", "../" + ifname])
    if k == 2:
        return rnd.choice(["udp", "tcp", "icmp", "UDP"])
    if k == 3:
        return str(ipaddress.IPv4Address(0xC6120000 + rnd.randrange(1 << 17)))  # 198.18.0.0/15
    if k == 4:
        return rnd.choice(["0.0.0.0", "255.255.255.255", "198.18.0", "::1", "x" * 40])
    if k == 5:
        return str(rnd.choice([rnd.randrange(1, 65536), 0, 65536, -1, 2 ** 40]))
    if k == 6:
        return str(rnd.choice([rnd.randrange(0, 70), -1, 64, 63]))
    if k == 7:
        return rnd.choice(["0x10", "1e3", "+5", " ", "\t", "%s%n%x"])
    return "".join(chr(rnd.randrange(33, 127)) for _ in range(rnd.randrange(1, 40)))


def payload(rnd, ifname):
    k = rnd.random()
    if k < 0.45:  # grammar: an op and fields, right or wrong
        words = [rnd.choice(OPS), ifname]
        n = rnd.choice([0, 1, 2, 3, 3, 3, 4, 5])
        shape = [["udp", "tcp"], None, None]
        for i in range(n):
            if i < 3 and shape[i] and rnd.random() < 0.7:
                words.append(rnd.choice(shape[i]))
            elif i == 1 and rnd.random() < 0.6:
                words.append(rnd.choice(["0.0.0.0", "198.18.12.2", "198.18.200.1"]))
            elif i == 2 and rnd.random() < 0.6:
                words.append(str(rnd.randrange(1, 65536)))
            else:
                words.append(token(rnd, ifname))
        if rnd.random() < 0.3:
            words[0] = token(rnd, ifname)
        sep = rnd.choice([" ", " ", " ", "  ", "\t", "\n"])
        return (sep.join(words) + rnd.choice(["", "", "\n", " "])).encode()
    if k < 0.70:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 600)))
    if k < 0.85:  # oversized: past the daemon's buffer
        n = rnd.choice([MSG_MAX + 1, MSG_MAX + 2, 4096, 65535, 70000, rnd.randrange(512, 70000)])
        return bytes([rnd.randrange(256)]) * n
    if k < 0.98:  # a NUL byte in a request
        b = bytearray(b"hello" if rnd.random() < 0.5 else ("add %s udp 0.0.0.0 5" % ifname).encode())
        b.insert(rnd.randrange(len(b) + 1), 0)
        return bytes(b)
    return b""  # length 0: the daemon takes it for the end of the connection


def ancillary(rnd, pool):
    """(fds, extra headers): usually none or one fd, sometimes many, split
    over two SCM_RIGHTS headers, or with credentials beside them."""
    k = rnd.random()
    n = 0 if k < 0.4 else 1 if k < 0.75 else rnd.randrange(2, 10)
    fds = [pool.one() for _ in range(n)]
    extra = []
    if n >= 2 and rnd.random() < 0.3:
        cut = rnd.randrange(1, n)
        extra.append((socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds[cut:])))
        fds = fds[:cut]
    if rnd.random() < 0.1:
        cred = array.array("i", [os.getpid(), os.getuid(), os.getgid()])
        extra.append((socket.SOL_SOCKET, socket.SCM_CREDENTIALS, cred))
    return fds, extra


# ---------------------------------------------------------------- modes

def valid(rnd, ifname, pool, proofs):
    """A well-formed request with the fd it needs: the daemon's state
    (queues, entries, their owners, shared marks) changes for real."""
    op = rnd.choice(["hello", "busy", "xsk", "xsk", "umem", "add", "add", "add", "share", "shared", "del", "del"])
    q = rnd.randrange(0, 4)
    if op == "hello":
        return b"hello", []
    if op == "busy":
        return ("busy %s %d" % (ifname, q)).encode(), []
    if op == "xsk":
        return ("xsk %s %d" % (ifname, q)).encode(), [pool.xsk()]
    if op == "umem":
        return ("umem %s %d 2048 64" % (ifname, q)).encode(), [pool.umem()]
    proto, port = rnd.choice(list(proofs))
    addr = rnd.choice(["0.0.0.0", "198.18.12.2", "198.18.%d.%d" % (rnd.randrange(256), rnd.randrange(256))])
    req = ("%s %s %s %s %d" % (op, ifname, proto, addr, port)).encode()
    return req, [proofs[(proto, port)].fileno()] if op in ("add", "share") else []


def session(path, ifname, rnd, stats):
    """One to three connections of one process, a dozen messages over
    them: well-formed requests (the same proof socket on several
    connections, as after a fork) among random ones."""
    pool = Pool(rnd)
    proofs = {}
    for proto, kind in (("udp", socket.SOCK_DGRAM), ("tcp", socket.SOCK_STREAM)):
        for _ in range(2):
            p = socket.socket(socket.AF_INET, kind)
            try:
                p.bind(("0.0.0.0", 0))
            except OSError:
                p.close()
                continue
            proofs[(proto, p.getsockname()[1])] = p
    conns = [connect(path) for _ in range(rnd.choice([1, 1, 2, 3]))]
    try:
        for _ in range(rnd.randrange(1, 13)):
            if not conns:
                return
            s = rnd.choice(conns)
            if proofs and rnd.random() < 0.4:
                data, fds = valid(rnd, ifname, pool, proofs)
                extra = []
            else:
                data = payload(rnd, ifname)
                fds, extra = ancillary(rnd, pool)
            try:
                rep = ask(s, data, fds, extra)
            except OSError as e:
                if e.errno == errno.EMSGSIZE:  # bigger than the send buffer
                    stats["emsgsize"] += 1
                    continue
                if e.errno in (errno.EPIPE, errno.ECONNRESET):
                    rep = recv(s)  # refused at connect: its reply is queued
                    if rep and rep.startswith(LIMIT):
                        stats["limited"] += 1
                        conns.remove(s)
                        continue
                raise Bad("sending %d bytes with %d fds: %s" % (len(data), len(fds), e))
            if rep and rep.startswith(LIMIT):
                # refused at connect: the daemon has not yet seen the
                # close of earlier connections (a burst's)
                stats["limited"] += 1
                conns.remove(s)
                continue
            nfds = len(fds) + sum(len(x[2]) for x in extra if x[2].typecode == "i" and x[1] == socket.SCM_RIGHTS)
            stats["messages"] += 1
            stats["fds"] += nfds
            if data == b"":
                if rep != b"":
                    raise Bad("a message of length 0 was answered %r: it ends the connection" % rep)
                stats["closed"] += 1
                conns.remove(s)
                s.close()
                continue
            check(rep, "reply to %r (%d fds)" % (data[:60], nfds))
            stats["ok" if rep.startswith(b"ok") else "error"] += 1
            if len(data) > MSG_MAX or nfds > 1:
                if not rep.startswith(b"error 71 "):
                    raise Bad("%d bytes with %d fds answered %r, want error 71" % (len(data), nfds, rep))
            elif b"\0" in data and not rep.startswith(b"error 74 "):
                raise Bad("a NUL byte answered %r, want error 74" % rep)
    finally:
        for s in conns:
            s.close()
        for p in proofs.values():
            p.close()
        pool.close()


def burst(path, rnd, stats):
    """Past the connection limit: every reply is ok or the limit's error;
    refused connections send more than the daemon reads back."""
    conns = [connect(path) for _ in range(rnd.randrange(60, 81))]
    ok = refused = 0
    try:
        for s in conns:
            try:
                for _ in range(rnd.choice([1, 1, 8])):
                    s.send(b"hello")
            except OSError:
                pass  # refused and closed meanwhile
        for s in conns:
            rep = recv(s)
            if rep is None or rep == b"":
                refused += 1  # its extra requests unread: the reset hid the reply
                continue
            check(rep, "burst")
            if rep.startswith(b"ok"):
                ok += 1
            elif rep.startswith(LIMIT):
                refused += 1
            else:
                raise Bad("burst: %r" % rep)
    finally:
        for s in conns:
            s.close()
    if ok > 64:
        raise Bad("burst: %d connections accepted, the limit is 64" % ok)
    stats["burst_ok"] += ok
    stats["burst_refused"] += refused


def abrupt(path, ifname, rnd, stats):
    s = connect(path)
    k = rnd.randrange(3)
    if k == 1:
        s.send(("add %s udp 0.0.0.0 9" % ifname).encode())
    elif k == 2:
        s.shutdown(socket.SHUT_WR)
        rep = recv(s)
        if rep not in (b"", None) and not rep.startswith(LIMIT):
            raise Bad("half-closed connection answered %r" % rep)
    s.close()
    stats["abrupt"] += 1


def fuzz(path, ifname, iters, seed):
    rnd = random.Random(seed)
    stats = dict.fromkeys(["messages", "fds", "ok", "error", "closed", "emsgsize", "abrupt",
                           "burst_ok", "burst_refused", "limited"], 0)
    start = time.monotonic()
    try:
        for i in range(iters):
            k = rnd.random()
            if k < 0.02:
                burst(path, rnd, stats)
            elif k < 0.12:
                abrupt(path, ifname, rnd, stats)
            else:
                session(path, ifname, rnd, stats)
        with connect(path) as s:
            rep = check(ask(s, b"hello"), "the final hello")
            if rep.split()[0] != b"ok" or ifname.encode() not in rep.split()[1:]:
                raise Bad("the final hello: %r, want ok and %s" % (rep, ifname))
    except (Bad, OSError) as e:
        print("xdpd_fuzz: seed %d iteration %d: FAIL: %s" % (seed, i, e))
        return 1
    print("xdpd_fuzz: seed %d: %d iterations in %.1f s: %s" % (
        seed, iters, time.monotonic() - start, " ".join("%s=%d" % kv for kv in stats.items())))
    return 0


def conns(path, n):
    socks = [connect(path) for _ in range(n)]
    ok = refused = 0
    for s in socks:
        try:
            s.send(b"hello")
        except OSError:
            pass  # refused and closed already: the reply is queued
    for s in socks:
        rep = check(recv(s), "hello")
        if rep.startswith(b"ok"):
            ok += 1
        elif rep.startswith(LIMIT) and b"64 connections" in rep:
            refused += 1
        else:
            print("unexpected: %r" % rep)
            return 1
    print("ok=%d refused=%d" % (ok, refused))
    for s in socks:
        s.close()
    return 0


def entries(path, ifname, nconn, per):
    held = []
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", 11299))
    base = 0xC6124000  # 198.18.64.0
    for i in range(nconn):
        s = connect(path)
        x = socket.socket(AF_XDP, socket.SOCK_RAW, 0)
        rep = check(ask(s, ("xsk %s %d" % (ifname, i + 1)).encode(), [x.fileno()]), "xsk")
        if not rep.startswith(b"ok"):
            print("conn %d xsk: %s" % (i, rep.decode()))
            return 1
        ok, last = 0, b""
        for j in range(per if i < nconn - 1 else 1):
            a = ipaddress.IPv4Address(base + i * per + j)
            last = check(ask(s, ("add %s udp %s 11299" % (ifname, a)).encode(), [u.fileno()]), "add")
            ok += last.startswith(b"ok")
        print("conn %d ok=%d last=%s" % (i, ok, last.decode()))
        held.append((s, x))
    for s, x in held:
        s.close()
        x.close()
    return 0


def umems(path, ifname, nconn, size):
    held = []
    for i in range(nconn):
        s = connect(path)
        f = os.memfd_create("xdpd-umem")
        os.ftruncate(f, size)
        with mmap.mmap(f, size) as m:
            for off in range(0, size, mmap.PAGESIZE):
                m[off] = 1
        s.sendmsg([("umem %s %d 2048 64" % (ifname, i)).encode()],
                  [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [f]))])
        rep, fds, _, _ = socket.recv_fds(s, MSG_MAX + 1, 1)
        os.close(f)
        print("conn %d %s" % (i, check(rep, "umem").decode()))
        held.append((s, fds))
    for s, fds in held:
        s.close()
        for f in fds:
            os.close(f)
    return 0


def proto(path, ifname):
    """Each case on one connection, then a hello on the same connection:
    a malformed message is refused and the connection stays usable."""
    us = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(9)]
    fds = [u.fileno() for u in us]

    def hdr(f):
        return (socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", f))
    cases = [
        ("bytes-%d" % (MSG_MAX + 1), b"h" * (MSG_MAX + 1), []),
        ("bytes-65000", b"h" * 65000, []),
        ("fds-3", b"hello", [hdr(fds[:3])]),
        ("fds-1+1", b"hello", [hdr(fds[:1]), hdr(fds[1:2])]),
        ("fds-9", b"hello", [hdr(fds)]),  # control data truncated at the daemon
        ("nul", b"hel\0lo", []),
        ("nul-fd", b"add %s udp 0.0.0.0 9\0" % ifname.encode(), [hdr(fds[:1])]),
        # a line with nothing on it is a bad request, not the end of the
        # connection (it was, and its fd leaked: found by fuzz_xdpd)
        ("newline-fd", b"\n", [hdr(fds[:1])]),
    ]
    with connect(path) as s:
        for name, data, anc in cases:
            s.sendmsg([data], anc)
            print("%s: %s" % (name, check(recv(s), name).decode()))
            print("%s then hello: %s" % (name, check(ask(s, b"hello"), name).decode()))
    return 0


def main():
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "fuzz":
        return fuzz(a[1], a[2], int(a[3]), int(a[4]))
    if len(a) == 3 and a[0] == "conns":
        return conns(a[1], int(a[2]))
    if len(a) == 5 and a[0] == "entries":
        return entries(a[1], a[2], int(a[3]), int(a[4]))
    if len(a) == 5 and a[0] == "umems":
        return umems(a[1], a[2], int(a[3]), int(a[4]))
    if len(a) == 3 and a[0] == "proto":
        return proto(a[1], a[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
