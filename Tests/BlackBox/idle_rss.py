"""Server memory per idle connection, plain and over TLS (a figure, not a test).

Starts `tablecast serve` twice, plain and with a throwaway certificate, opens CONNECTIONS WebSocket connections that
each say hello and then stay idle, and prints the server's resident memory (VmRSS from /proc) before and after,
and the growth per connection.

    python3 Tests/BlackBox/idle_rss.py [CONNECTIONS]
"""
import json
import resource
import shutil
import socket
import ssl
import sys
import tempfile
import time

from conftest import Server
from test_tls import make_certificate
from test_transport import HELLO, UPGRADE, masked, read_frame, read_response_head


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settled_rss(pid):
    """RSS once it stops changing (the server has handled everything sent to it)."""
    last = rss_kib(pid)
    while True:
        time.sleep(0.5)
        now = rss_kib(pid)
        if now == last:
            return now
        last = now


def measure(count, *args, context=None):
    server = Server(*args, ssl_context=context)
    sockets = []
    try:
        server.start()
        pid = server.process.pid
        # Warm up: one connection's worth of lazily allocated state (TLS contexts, buffers) is not per connection.
        for _ in range(2):
            sockets.append(open_idle(server, context))
        before = settled_rss(pid)
        for _ in range(count):
            sockets.append(open_idle(server, context))
        after = settled_rss(pid)
        return before, after
    finally:
        for sock in sockets:
            sock.close()
        server.stop()


def open_idle(server, context):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    if context:
        sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
    sock.sendall(UPGRADE + masked(HELLO))
    read_response_head(sock)
    opcode, payload = read_frame(sock)
    assert opcode == 0x1 and json.loads(payload)["type"] == "welcome"
    return sock


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    directory = tempfile.mkdtemp(prefix="tablecast-idle-rss-")
    try:
        cert, key = make_certificate(directory, "server")
        for name, args, context in (
                ("plain", (), None),
                ("tls", ("--tls-cert", cert, "--tls-key", key), ssl.create_default_context(cafile=cert))):
            before, after = measure(count, *args, context=context)
            print(f"{name}: {count} idle connections: RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB, "
                  f"{(after - before) / count:.1f} KiB per connection")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
