# tests/asyncecho.py - an asyncio TCP echo server and its asyncio client, as
# an application would write them (asyncio.start_server, open_connection,
# StreamReader/StreamWriter on the default event loop: epoll, non-blocking
# sockets), run through the stack by tests/programs.sh and compared with
# the same run on the kernel.
#   asyncecho.py server ADDR PORT CONNS   echo until CONNS connections ended,
#                                         then print what was echoed, exit 0
#   asyncecho.py client ADDR PORT CONNS BYTES
#                                         CONNS concurrent connections, each
#                                         sends BYTES of its own pattern in
#                                         chunks of varying size, half-closes,
#                                         reads the echo to EOF; prints one
#                                         line per connection, exit 0 if every
#                                         echo is byte-exact
import asyncio
import hashlib
import sys


def pattern(i, n):
    """BYTES of connection i's own pseudo-random pattern."""
    out = bytearray()
    h = hashlib.sha256(b"conn %d" % i).digest()
    while len(out) < n:
        out += h
        h = hashlib.sha256(h).digest()
    return bytes(out[:n])


async def server(addr, port, conns):
    done = asyncio.Event()
    ended = []

    async def echo(reader, writer):
        n = 0
        while True:
            data = await reader.read(65536)
            if not data:
                break
            n += len(data)
            writer.write(data)
            await writer.drain()
        writer.close()
        await writer.wait_closed()
        ended.append(n)
        if len(ended) == conns:
            done.set()

    srv = await asyncio.start_server(echo, addr, port, backlog=128)
    print("listening", flush=True)
    async with srv:
        await asyncio.wait_for(done.wait(), 60)
    print("server: %d connections, %d bytes echoed" % (len(ended), sum(ended)), flush=True)


async def one(addr, port, i, size):
    reader, writer = await asyncio.open_connection(addr, port)
    data = pattern(i, size)
    got = bytearray()

    async def send():
        off, step = 0, 1
        while off < len(data):
            # chunks of 1 byte to 64 KiB, so that segments and reads never line up
            step = step * 7 % 65521 + 1
            writer.write(data[off:off + step])
            off += step
            await writer.drain()
        writer.write_eof()

    async def recv():
        while True:
            b = await reader.read(65536)
            if not b:
                return
            got.extend(b)

    await asyncio.gather(send(), recv())
    writer.close()
    await writer.wait_closed()
    ok = bytes(got) == data
    extra = ""
    if not ok:
        j = next((k for k in range(min(len(got), len(data))) if got[k] != data[k]), min(len(got), len(data)))
        # where the echo resumes: the missing piece's length
        rest = bytes(got[j:j + 64])
        at = data.find(rest, j) if rest else -1
        extra = " first difference at %d, resumes at %d" % (j, at)
    return "conn %d: sent %d, echoed %d, %s%s" % (i, size, len(got), "intact" if ok else "DIFFERS", extra), ok


async def client(addr, port, conns, size):
    res = await asyncio.wait_for(asyncio.gather(*(one(addr, port, i, size) for i in range(conns))), 60)
    for line, _ in res:
        print(line)
    return all(ok for _, ok in res)


def main():
    mode, addr, port, conns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "server":
        asyncio.run(server(addr, port, conns))
        return 0
    return 0 if asyncio.run(client(addr, port, conns, int(sys.argv[5]))) else 1


if __name__ == "__main__":
    sys.exit(main())
