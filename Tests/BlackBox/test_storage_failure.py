"""Storage failures. A full disk: the server refuses what it cannot store, acknowledges nothing else, keeps serving
reads, and recovers when space returns (the database lives on a real 4 MiB tmpfs that the test fills). A damaged
page: a retry whose stored ack cannot be read is refused, never applied again."""
import os
import re
import sqlite3
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
    # The client is told why in plain words, with the incident that finds the full error in the log, and never the
    # database's path, SQL or SQLite's own words.
    message = refused["message"]
    assert "disk or the database is full" in message, message
    for internal in (small_disk, "tablecast.db", "SQLite", "INSERT", "COMMIT", "code 13"):
        assert internal not in message, f"{internal!r} in {message!r}"
    incident = re.search(r"incident ([0-9a-f]{8}) in the server's log", message)
    assert incident, message
    # Reads still work, and show exactly what was acknowledged.
    reader = server.client()
    assert sorted(rows_of(reader, "full")) == sorted(acked)

    os.remove(filler)
    c.ok({"type": "insert", "table": "full", "at": [0, 0], "value": "after"})
    acked.append("after")
    c.close()
    reader.close()
    server.stop()
    log = server.read_log()
    assert "could not store" in log
    # The incident's line holds the full error: the file and SQLite's words.
    [line] = [line for line in log.splitlines() if incident.group(1) in line and "could not store" in line]
    assert small_disk in line and "SQLite" in line, line

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


def overflow_pages(db, table):
    """The numbers of the overflow pages of `table`'s b-tree, and the page size (read through SQLite's dbstat)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        pages = [row[0] for row in c.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'overflow'", (table,))]
        return pages, c.execute("PRAGMA page_size").fetchone()[0]


def test_a_retry_whose_ref_cannot_be_read_is_refused_not_applied_again():
    """The stored ack of a retried intent cannot be read (its pages are damaged on disk): the retry is answered
    `unavailable` and not applied a second time, and others' intents are unaffected."""
    server = Server().start()
    c = server.client(client_id="bb-damaged-ref")
    c.ok({"type": "createTable", "table": "d", "sections": [{"rows": []}]})
    # 800 rows make an ack of several KB, whose end lies on overflow pages of the refs table.
    batch = {"type": "batch", "table": "d", "insertRows": [{"at": [0, i], "value": i} for i in range(800)], "ref": "big"}
    first = c.ok(batch)
    c.close()
    server.stop()  # checkpoints: every page is in the database file now
    server.start()
    # The client's refs are loaded when it says hello, before the damage: its retry is known, and its stored ack
    # must be read from the store.
    retry = server.client(client_id="bb-damaged-ref")
    pages, page_size = overflow_pages(server.db, "refs")
    assert pages, "the ack should span overflow pages"
    with open(server.db, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * page_size)
            f.write(b"\xff" * page_size)
        f.flush()
        os.fsync(f.fileno())
    # A write by another connection makes the server drop its page cache, so it reads the damaged pages.
    with sqlite3.connect(server.db, isolation_level=None) as other:
        other.execute("INSERT INTO snapshots (table_name, version, body) VALUES ('zz-other', 0, '')")
        other.execute("DELETE FROM snapshots WHERE table_name = 'zz-other'")

    bystander = server.client(hello=False)  # anonymous: its refs are not stored, so it needs no refs page
    retry.send(batch)
    bystander.send({"type": "insert", "table": "d", "at": [0, 0], "value": "other", "ref": "o"})
    refused = retry.next("error", ref="big")
    assert refused["code"] == "unavailable" and "could not be looked up" in refused["message"], refused
    assert bystander.next("ack", ref="o")["version"] == first["version"] + 1
    rows = rows_of(bystander, "d")
    assert len(rows) == 801 and rows.count("other") == 1, "the batch was applied once, the bystander's insert once"
    retry.close()
    bystander.close()
    server.stop()
