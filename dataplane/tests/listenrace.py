#!/usr/bin/env python3
"""listenrace.py HOST PORT BYTES READY: connect to HOST:PORT as fast as refusals
come back until a connection is made (the server is starting, so most
attempts are refused), then send BYTES bytes and read them echoed back.
Creates the file READY once the first attempt is refused (the harness
then starts the server). Prints "attempts N, echoed M of BYTES, intact" when every byte came back in
order; exits 1 on a reset, an early EOF, a corrupt echo or no connection
within 20 s. A client that reached the kernel's listener before the
stack's steering existed loses its connection once the steering starts:
that is what the harness case tcp_listen_race looks for."""
import os
import socket
import sys
import time


def main():
    host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ready = sys.argv[4]
    deadline = time.monotonic() + 20
    attempts = 0
    while True:
        attempts += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # a SYN that met no answer (the link coming up) is tried again
        # rather than retransmitted a second later
        s.settimeout(0.2)
        try:
            s.connect((host, port))
            break
        except (ConnectionRefusedError, socket.timeout):
            s.close()
            if attempts == 1:
                open(ready, "w").close()
            if time.monotonic() > deadline:
                print(f"no connection after {attempts} attempts")
                return 1
    s.settimeout(10)
    data = os.urandom(total)
    got = bytearray()
    sent = 0
    try:
        while len(got) < total:
            if sent < total:
                sent += s.send(data[sent:sent + 16384])
            chunk = s.recv(65536)
            if not chunk:
                print(f"attempts {attempts}: EOF after {len(got)} of {total} bytes")
                return 1
            got += chunk
    except OSError as e:
        print(f"attempts {attempts}: {e} after {len(got)} of {total} bytes")
        return 1
    s.close()
    if bytes(got) != data:
        print(f"attempts {attempts}: echo differs")
        return 1
    print(f"attempts {attempts}, echoed {len(got)} of {total}, intact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
