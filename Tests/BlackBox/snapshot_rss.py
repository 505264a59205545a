"""Server memory when many subscribers join a big table at once (a figure, not a test).

Starts `tablecast serve`, fills one table with ROWS rows of VALUE_BYTES-byte strings, then opens SUBSCRIBERS raw
WebSocket connections that all subscribe at once (no hello: viewers) and read everything, and samples the server's
resident memory meanwhile. Prints the snapshot's size, the server's RSS before and at its peak, and the peak's
growth per subscriber.

    python3 Tests/BlackBox/snapshot_rss.py [SUBSCRIBERS] [ROWS] [VALUE_BYTES]
"""
import base64
import json
import os
import selectors
import socket
import struct
import sys
import threading
import time

from conftest import Server


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def masked_frame(first, payload):
    mask = os.urandom(4)
    header = bytes([first])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class RawSubscriber:
    """One connection: handshake, subscribe, then counts whole messages (FIN frames) and discards their bytes."""

    def __init__(self, port, table):
        self.sock = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           f"Sec-WebSocket-Protocol: tablecast.v1\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 101"), response[:80]
        self.buffer = bytearray(response.split(b"\r\n\r\n", 1)[1])
        self.subscribe = masked_frame(0x81, json.dumps({"type": "subscribe", "table": table, "ref": "s"}).encode())
        self.pong = None
        self.messages = 0
        self.received = 0
        self.need = None  # bytes of the current frame's payload still to skip
        self.sock.setblocking(False)

    def feed(self, data):
        self.received += len(data)
        self.buffer += data
        while True:
            if self.need is not None:
                skip = min(self.need, len(self.buffer))
                del self.buffer[:skip]
                self.need -= skip
                if self.need:
                    return
                self.need = None
                if self.fin:
                    self.messages += 1
            if len(self.buffer) < 2:
                return
            first, second = self.buffer[0], self.buffer[1]
            length, offset = second & 0x7F, 2
            if length == 126:
                if len(self.buffer) < 4:
                    return
                length, offset = struct.unpack("!H", self.buffer[2:4])[0], 4
            elif length == 127:
                if len(self.buffer) < 10:
                    return
                length, offset = struct.unpack("!Q", self.buffer[2:10])[0], 10
            if first & 0x0F == 0x9:  # ping: answer it, or the server hangs up on an idle-looking peer
                if len(self.buffer) < offset + length:
                    return
                self.pong = masked_frame(0x8A, bytes(self.buffer[offset:offset + length]))
                del self.buffer[:offset + length]
                continue
            del self.buffer[:offset]
            if first & 0x0F == 0x8 and len(self.buffer) >= 2:
                raise SystemExit(f"closed by the server with {struct.unpack('!H', self.buffer[:2])[0]}: "
                                 f"{bytes(self.buffer[2:length])!r} after {self.received} bytes")
            self.fin = bool(first & 0x80)
            self.need = length


def main():
    subscribers = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    value_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    server = Server("--max-message-bytes", str(4 << 20)).start()
    try:
        from test_protocol import create
        from conftest import Client
        admin = Client(server.url)
        create(admin, "big", [{"header": None, "footer": None, "rows": []}], rules={"maxRowsPerSection": 1_000_000})
        value = "x" * value_bytes
        for start in range(0, rows, 1000):
            count = min(1000, rows - start)
            admin.ok({"type": "batch", "table": "big",
                      "insertRows": [{"at": [0, start + i], "value": value} for i in range(count)]})
        pid = server.process.pid
        before = rss_kib(pid)
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        clients = [RawSubscriber(server.port, "big") for _ in range(subscribers)]
        selector = selectors.DefaultSelector()
        started = time.time()
        for client in clients:
            client.sock.sendall(client.subscribe)
            selector.register(client.sock, selectors.EVENT_READ, client)
        waiting = len(clients)
        chunk = bytearray(1 << 20)
        view = memoryview(chunk)
        while waiting:
            for key, _ in selector.select(timeout=30):
                client = key.data
                try:
                    n = client.sock.recv_into(chunk)
                except BlockingIOError:
                    continue
                if n == 0:
                    raise SystemExit(f"a subscriber was closed after {client.received} bytes")
                before_messages = client.messages
                client.feed(view[:n])
                if client.pong:
                    client.sock.setblocking(True)
                    client.sock.sendall(client.pong)
                    client.sock.setblocking(False)
                    client.pong = None
                if before_messages < 2 <= client.messages:  # snapshot and subscribed
                    waiting -= 1
        elapsed = time.time() - started
        done.set()
        sampler.join()
        snapshot_bytes = min(c.received for c in clients)
        print(f"{subscribers} subscribers, {rows} rows of {value_bytes} bytes: snapshot ~{snapshot_bytes / 1e6:.1f} MB "
              f"each, all caught up in {elapsed:.1f} s")
        print(f"server RSS before {before / 1024:.0f} MiB, peak {peak[0] / 1024:.0f} MiB, "
              f"growth {(peak[0] - before) / 1024:.0f} MiB = {(peak[0] - before) / subscribers:.0f} KiB per subscriber")
        for client in clients:
            client.sock.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
