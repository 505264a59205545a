"""A flood of `snapshotAt` replays of a big table from many connections, and a probe reading a small table
meanwhile: the probe's latency is what fair history readers protect. A test uses it (test_memory.py), and it prints
figures when run by hand:

    python3 Tests/BlackBox/history_flood.py [FLOODERS] [SECONDS]
"""
import json
import os
import multiprocessing
import random
import selectors
import statistics
import sys
import time

from conftest import Server
from snapshot_rss import RawSubscriber, masked_frame


# The preparation sends 2,000 edits as fast as the server acks them.
SERVER_FLAGS = ("--sync", "normal", "--intents-per-second", "100000")


def prepare(client, rows=10_000, changes=2_000):
    """A `big` table of `rows` rows edited `changes` times, and a one-row `small` table."""
    from test_memory import fill_table
    fill_table(client, "big", rows)
    base = client.ok({"type": "listTables"}, expect="tables")
    version = [t for t in base["tables"] if t["table"] == "big"][0]["version"]
    outstanding = 0
    for n in range(changes):
        client.send({"type": "edit", "table": "big", "at": [0, n % rows], "value": f"edit {n}", "ref": f"e{n}"},
                    check=False)
        outstanding += 1
        while outstanding >= 32 or (n == changes - 1 and outstanding):
            message = client.recv(timeout=60)
            if message.get("ref", "").startswith("e"):
                assert message["type"] == "ack", message
                outstanding -= 1
    client.ok({"type": "createTable", "table": "small", "sections": [{"rows": [{"value": "one"}]}]})
    return version, version + changes


def flood(port, flooders, lowest, highest, stop, replies):
    """`flooders` connections, each keeping one `snapshotAt` of `big` at a random version in flight, reading
    (and discarding) the replies; puts the number of replies they got in `replies`. It runs at the lowest CPU
    priority: its parsing stands for clients on other machines, and must not take the probe's or the server's core."""
    os.nice(19)
    selector = selectors.DefaultSelector()
    clients = []
    for _ in range(flooders):
        client = RawSubscriber(port, "big")
        client.answered = 0
        selector.register(client.sock, selectors.EVENT_READ, client)
        clients.append(client)

    def ask(client):
        request = {"type": "snapshotAt", "table": "big", "version": random.randint(lowest, highest)}
        client.sock.setblocking(True)
        client.sock.sendall(masked_frame(0x81, json.dumps(request).encode()))
        client.sock.setblocking(False)

    for client in clients:
        ask(client)
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.2):
            client = key.data
            try:
                data = client.sock.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                continue
            before = client.messages
            client.feed(data)
            if client.pong:
                client.sock.sendall(client.pong)
                client.pong = None
            for _ in range(client.messages - before):
                ask(client)
    for client in clients:
        client.sock.close()
    replies.put(sum(client.messages for client in clients))


def probe(server, seconds):
    """`snapshotAt` of the small table every 50 ms for `seconds`; returns each one's latency in ms."""
    client = server.client()
    latencies = []
    try:
        deadline = time.time() + seconds
        while time.time() < deadline:
            started = time.perf_counter()
            client.ok({"type": "snapshotAt", "table": "small", "version": 0}, expect="snapshot")
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    finally:
        client.close()
    return latencies


def run(server, flooders=30, seconds=8):
    """Floods and probes; returns (probe latencies in ms, flood replies)."""
    admin = server.client()
    try:
        lowest, highest = prepare(admin)
    finally:
        admin.close()
    # The flood runs in a process of its own, so that its parsing never holds up the probe's thread.
    stop = multiprocessing.Event()
    replies = multiprocessing.Queue()
    flooding = multiprocessing.Process(target=flood, args=(server.port, flooders, lowest, highest, stop, replies))
    flooding.start()
    try:
        time.sleep(1)
        latencies = probe(server, seconds)
    finally:
        stop.set()
        flooding.join(timeout=30)
    return latencies, replies.get(timeout=5)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


if __name__ == "__main__":
    flooders = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20
    server = Server(*SERVER_FLAGS).start()
    try:
        latencies, replies = run(server, flooders, seconds)
    finally:
        server.stop()
    print(f"{flooders} flooders: {replies} replays in {seconds:.0f} s; probe p50 {statistics.median(latencies):.1f} ms, "
          f"p99 {percentile(latencies, 99):.1f} ms, max {max(latencies):.1f} ms over {len(latencies)} reads")
