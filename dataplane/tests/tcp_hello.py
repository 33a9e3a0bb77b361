#!/usr/bin/env python3
"""tests/tcp.sh (prefork): connect to IP:PORT and print the first 8 bytes the server sends.
Usage: tcp_hello.py IP PORT"""
import socket
import sys

c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=8)
print(c.recv(8).decode())
