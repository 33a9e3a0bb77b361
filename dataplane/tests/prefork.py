# tests/prefork.py PORT ADDR - a pre-fork server: listen, fork one child
# that accepts one connection and answers "hi"; prints what the child saw.
import errno
import os
import socket
import sys

port, addr = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(8)
print("listening", flush=True)
pid = os.fork()
if pid == 0:
    s.settimeout(20)
    try:
        c, _ = s.accept()
        c.sendall(b"hi")
        c.close()
        print("child: accepted", flush=True)
    except OSError as e:
        print("child: accept", errno.errorcode.get(e.errno, e), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
