"""A full disk: the server refuses what it cannot store, acknowledges nothing else, keeps serving reads, and
recovers when space returns. The database lives on a real 4 MiB tmpfs that the test fills."""
import os
import subprocess
import tempfile

import pytest

from conftest import Server


@pytest.fixture
def small_disk():
    path = tempfile.mkdtemp(prefix="tablecast-disk-")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M", "tmpfs", path], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield path
    subprocess.run(["umount", "-l", path], check=True)


def fill(path):
    """Writes a filler file until the disk is full; returns its path."""
    filler = os.path.join(path, "filler")
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def rows_of(client, table):
    catch_up, _ = client.subscribe(table)
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return [row["value"] for row in catch_up[0]["sections"][0]["rows"]]


def test_disk_full_refuses_without_acking_and_recovers(small_disk):
    logs = tempfile.mkdtemp(prefix="tablecast-disk-logs-")
    server = Server(db_dir=small_disk)
    server.db = os.path.join(small_disk, "tablecast.db")
    server.dir = logs  # keep the server's log off the full disk
    server.start()
    c = server.client()
    c.ok({"type": "createTable", "table": "full", "sections": [{"rows": []}]})
    acked = []
    c.ok({"type": "insert", "table": "full", "at": [0, 0], "value": "before"})
    acked.append("before")
    filler = fill(small_disk)
    refused = None
    for i in range(200):
        value = f"{i:04d}" + "x" * 20_000
        response = c.request({"type": "insert", "table": "full", "at": [0, 0], "value": value})
        if response["type"] == "ack":
            acked.append(value)
        else:
            refused = response
            break
    assert refused is not None, "the disk never filled up"
    assert refused["code"] == "unavailable", refused
    assert "could not be stored" in refused["message"]
    # Reads still work, and show exactly what was acknowledged.
    reader = server.client()
    assert sorted(rows_of(reader, "full")) == sorted(acked)

    os.remove(filler)
    c.ok({"type": "insert", "table": "full", "at": [0, 0], "value": "after"})
    acked.append("after")
    c.close()
    reader.close()
    server.stop()
    assert "could not store" in server.read_log()

    server.start()
    d = server.client()
    assert sorted(rows_of(d, "full")) == sorted(acked), "after a restart: everything acked, nothing else"
    d.close()
    server.stop()


def test_disk_full_under_pipelined_bursts_acks_only_what_was_stored(small_disk):
    """Bursts keep a group in flight and another resolved behind it when the disk fills: both are refused, and
    exactly the acknowledged intents survive, in memory and after a restart."""
    logs = tempfile.mkdtemp(prefix="tablecast-disk-logs-")
    server = Server(db_dir=small_disk)
    server.db = os.path.join(small_disk, "tablecast.db")
    server.dir = logs
    server.start()
    c = server.client()
    c.ok({"type": "createTable", "table": "burst", "sections": [{"rows": []}]})
    filler = fill(small_disk)
    os.truncate(filler, os.path.getsize(filler) - 1_500_000)  # leave room for a few bursts
    acked, refused = [], 0
    for burst in range(40):
        refs = {}
        for i in range(25):
            ref = f"b{burst}-{i}"
            refs[ref] = f"{burst:02d}-{i:02d}" + "x" * 8_000
            c.send({"type": "insert", "table": "burst", "at": [0, 0], "value": refs[ref], "ref": ref})
        while refs:
            response = c.recv()
            if response["type"] not in ("ack", "error") or response.get("ref") not in refs:
                continue
            value = refs.pop(response["ref"])
            if response["type"] == "ack":
                acked.append(value)
            else:
                assert response["code"] == "unavailable", response
                refused += 1
        if refused:
            break
    assert refused, "the disk never filled up"
    reader = server.client()
    assert sorted(rows_of(reader, "burst")) == sorted(acked)

    os.remove(filler)
    c.ok({"type": "insert", "table": "burst", "at": [0, 0], "value": "after"})
    acked.append("after")
    c.close()
    reader.close()
    server.stop()
    server.start()
    d = server.client()
    assert sorted(rows_of(d, "burst")) == sorted(acked), "after a restart: everything acked, nothing else"
    d.close()
    server.stop()
