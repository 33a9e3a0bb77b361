#!/usr/bin/env python3
"""layers.py: the data plane's layer check (docs/dataplane-design.md, "Layers").

Over `nm` of each object of the library (build/obj/*.o), it fails on
  - an upward reference: an object using a function or variable that an
    object of a higher layer defines (a lower layer reaches a higher one only
    through a table of handlers the higher one registered at start), and
  - a self-call through an interposed libc name: an object other than the
    interposer referring to a name the library exports (src/libtickstack.map:
    read, close, fcntl, syscall, ...). The library is not linked -Bsymbolic,
    so such a call binds back to the library's own interposer; the library
    calls libc through the real-libc table (ts_real_read, ...).
An object the table below does not place is an error too: a new file says
which layer it belongs to.

Usage: layers.py [--map src/libtickstack.map] [--allow FILE] OBJECT...
The allow-list names known violations, one a line with its reason
("caller.o -> symbol: reason"); a listed pair that no longer occurs is an
error as well, so the list only shrinks. test/lint shows that the check fails
on fixture objects with an upward call and with a self-call.
"""

import argparse
import os
import re
import subprocess
import sys

# Bottom to top. An object may use what its own layer and the layers below
# define.
LAYERS = [
    # lwip_mem: the TCP engine's allocator (libc's malloc behind a cache of
    # freed blocks), nothing of the library's below it
    ("core", ["core", "config", "stats", "fallback", "lwip_mem"]),
    ("packet and route", ["pkt", "route", "nexthop", "ctl", "xdpd", "capture"]),
    ("stack", ["stack", "wait"]),
    # lwIP's glue (netif, input queue, timer thread) and its ISN hook: the
    # TCP engine the stream sockets (tcp.c) sit on
    ("TCP engine", ["tcp_lwip", "tcp_isn"]),
    ("sockets", ["sock", "rx", "tx", "tcp"]),
    ("poll/select and epoll", ["poll", "epoll"]),
    ("interposer", ["interpose"]),
]
INTERPOSER = "interpose"
RANK = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
DEFINED = set("TDBRCVWGS")


def nm(obj):
    """The global symbols obj defines and those it needs."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undefined.add(f[0])
        elif f[1] in DEFINED:
            defined.add(f[0])
    return defined, undefined


def exported(mapfile):
    """The names the library's version script exports: what it interposes."""
    with open(mapfile) as fh:
        text = re.sub(r"/\*.*?\*/", "", fh.read(), flags=re.S)
    m = re.search(r"global:(.*?)local:", text, flags=re.S)
    if not m:
        sys.exit("layers: no global: section in " + mapfile)
    return {n.strip() for n in m.group(1).split(";") if n.strip()}


def read_allow(path):
    allow = {}
    if not path:
        return allow
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"(\S+\.o) -> (\S+): (.+)$", line)
            if not m:
                sys.exit(f"layers: {path}:{n}: want 'caller.o -> symbol: "
                         f"reason', got {line!r}")
            allow[(m.group(1), m.group(2))] = m.group(3)
    return allow


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--map", default=os.path.join(here, "..", "src",
                                                  "libtickstack.map"))
    ap.add_argument("--allow", default=None)
    ap.add_argument("objects", nargs="+")
    a = ap.parse_args()

    interposed = exported(a.map)
    allow = read_allow(a.allow)
    objs = {}
    problems = []
    for path in a.objects:
        base = os.path.basename(path)
        stem = base[:-2] if base.endswith(".o") else base
        if stem not in RANK:
            problems.append(f"{base}: in no layer: add it to LAYERS in "
                            f"{os.path.relpath(__file__)}")
            continue
        objs[base] = (RANK[stem], stem) + nm(path)
    owner = {}
    for base, (_, _, defined, _) in objs.items():
        for sym in defined:
            owner[sym] = base

    found = []  # (caller, symbol, message)
    for base, (rank, stem, _, undefined) in sorted(objs.items()):
        for sym in sorted(undefined):
            if stem != INTERPOSER and sym in interposed:
                found.append((base, sym, f"{base} calls {sym}: binds back to "
                              f"the interposer; call ts_real_{sym}"))
                continue
            where = owner.get(sym)
            if where is None or where == base:
                continue
            wrank = objs[where][0]
            if wrank > rank:
                found.append((base, sym, f"{base} ({LAYERS[rank][0]}) uses "
                              f"{sym} of {where} ({LAYERS[wrank][0]}): "
                              f"upward"))
    allowed = 0
    for caller, sym, msg in found:
        if (caller, sym) in allow:
            allowed += 1
            continue
        problems.append(msg)
    seen = {(c, s) for c, s, _ in found}
    for key in sorted(set(allow) - seen):
        problems.append(f"{a.allow}: {key[0]} -> {key[1]} no longer occurs: "
                        f"drop it from the list")
    for p in problems:
        print("layers: " + p, file=sys.stderr)
    print(f"layers: {len(objs)} objects, {len(found)} violations "
          f"({allowed} on the allow-list), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
