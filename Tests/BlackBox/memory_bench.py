"""Memory figures for issue 19's attacks, against any `tablecast` binary (TABLECAST_BIN, e.g. a release build),
so that a build before the memory budget and one after can be measured side by side:

    TABLECAST_BIN=.build/release/tablecast python3 Tests/BlackBox/memory_bench.py [versions|joiners|flood|all]

Prints, per scenario, the server's RSS (from /proc) before and after and what each scenario measures besides.
Figures and how they were taken: MEMORY.md beside this file.
"""
import statistics
import sys
import time

from conftest import Server
from history_flood import SERVER_FLAGS, percentile, run as run_flood
from memory import Editing, metrics, rss_bytes, write_big_versions
from snapshot_rss import RawSubscriber
from test_memory import fill_table

MiB = 1 << 20


def versions(count=1000):
    """One writer commits `count` versions of ~0.9 MB (15 rows of 60 KB reloaded); then the server restarts."""
    server = Server("--sync", "normal").start()
    try:
        client = server.client()
        client.ok({"type": "createTable", "table": "big", "sections": [{"rows": [{"value": "x"}] * 15}]})
        before = rss_bytes(server.process.pid)
        started = time.time()
        write_big_versions(client, "big", count)
        after = rss_bytes(server.process.pid)
        seconds = time.time() - started
        client.close()
        server.stop()
        server.start()
        restarted = rss_bytes(server.process.pid)
        print(f"versions: {count} of ~0.9 MB in {seconds:.0f} s: RSS {before / MiB:.0f} MiB -> {after / MiB:.0f} MiB; "
              f"after a restart {restarted / MiB:.0f} MiB")
    finally:
        server.stop()


def joiners(count=200, rows=100_000):
    """`count` subscribers that never read join a `rows`-row table (~12 MB snapshot) one every 10 ms while a writer
    edits it 60 times a second; then they close."""
    server = Server("--sync", "normal").start()
    writer = server.client()
    subscribers = []
    try:
        fill_table(writer, "busy", rows)
        pid = server.process.pid
        before = rss_bytes(pid)
        peak = before
        with Editing(writer, "busy"):
            for _ in range(count):
                subscriber = RawSubscriber(server.port, "busy")
                subscriber.sock.sendall(subscriber.subscribe)
                subscribers.append(subscriber)
                time.sleep(0.01)
                peak = max(peak, rss_bytes(pid))
            for _ in range(50):
                peak = max(peak, rss_bytes(pid))
                time.sleep(0.1)
            for subscriber in subscribers:
                subscriber.sock.close()
            time.sleep(5)
        closed = rss_bytes(pid)
        encoded = metrics(server).get("tablecast_snapshots_encoded_total", float("nan"))
        print(f"joiners: {count} joiners of a {rows:,}-row table at 60 edits/s: RSS {before / MiB:.0f} MiB -> peak "
              f"{peak / MiB:.0f} MiB (+{(peak - before) / MiB:.0f}); {closed / MiB:.0f} MiB 5 s after they closed; "
              f"{encoded:.0f} snapshots encoded")
    finally:
        writer.close()
        server.stop()


def flood(flooders=30, seconds=20):
    """`flooders` connections replay a 10,000-row table at random versions while a probe reads a one-row table."""
    server = Server(*SERVER_FLAGS).start()
    try:
        before = rss_bytes(server.process.pid)
        latencies, replies = run_flood(server, flooders, seconds)
        after = rss_bytes(server.process.pid)
    finally:
        server.stop()
    print(f"flood: {flooders} flooders, {replies} replays in {seconds} s; probe p50 "
          f"{statistics.median(latencies):.1f} ms, p99 {percentile(latencies, 99):.1f} ms, max {max(latencies):.1f} ms "
          f"over {len(latencies)} reads; RSS {before / MiB:.0f} -> {after / MiB:.0f} MiB")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    for name, scenario in [("versions", versions), ("joiners", joiners), ("flood", flood)]:
        if which in (name, "all"):
            scenario()
