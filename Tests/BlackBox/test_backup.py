"""`tablecast backup`: a consistent copy of a live server's database; restoring is starting a server on it."""
import json
import os
import subprocess
import tempfile
import threading
import time

from conftest import Server, tablecast_binary


def backup(db, to):
    return subprocess.run([tablecast_binary(), "backup", "--db", db, "--to", to], capture_output=True, text=True,
                          timeout=60)


def wait_until(condition, timeout=30, message="condition"):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, message
        time.sleep(0.01)


def test_a_copy_taken_under_write_load_holds_every_change_acknowledged_before_it_began():
    server = Server().start()
    admin = server.client(name="admin")
    admin.ok({"type": "createTable", "table": "ledger", "sections": [{"rows": []}]})
    acked = []  # (version, value), in the order the acks arrived
    stop = threading.Event()
    failures = []

    def write():
        try:
            client = server.client(name="writer")
            number = 0
            while not stop.is_set():
                ack = client.ok({"type": "insert", "table": "ledger", "at": [0, 0], "value": f"v{number}"})
                acked.append((ack["version"], f"v{number}"))
                number += 1
            client.close()
        except Exception as error:  # reported by the test thread
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    restore_dir = tempfile.mkdtemp(prefix="tablecast-restore-")
    copy = os.path.join(restore_dir, "tablecast.db")
    try:
        wait_until(lambda: len(acked) >= 300 or failures, message="the writer made no progress")
        before = list(acked)
        result = backup(server.db, copy)
        during = len(acked)
        # The server kept serving: acknowledgements carry on after the copy.
        wait_until(lambda: len(acked) >= during + 100 or failures, message="writes stopped after the backup")
    finally:
        stop.set()
        writer.join(timeout=30)
        admin.close()
        server.stop()
    assert not failures, failures
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["bytes"] == os.path.getsize(copy) > 0
    [ledger] = [t for t in report["tables"] if t["table"] == "ledger"]
    assert ledger["version"] >= before[-1][0], (ledger, before[-1])
    assert not os.path.exists(copy + ".partial")

    restored = Server(db_dir=restore_dir).start()
    try:
        client = restored.client(name="check")
        catch_up, subscribed = client.subscribe("ledger")
        values = [row["value"] for row in catch_up[0]["sections"][0]["rows"]]
        assert catch_up[0]["version"] == ledger["version"]
        missing = [value for _, value in before if value not in values]
        assert not missing, f"{len(missing)} acknowledged changes are not in the copy, e.g. {missing[:5]}"
        # Exactly the changes up to the copy's version: one commit's view, nothing torn.
        expected = [value for version, value in acked if version <= ledger["version"]]
        assert sorted(values) == sorted(expected)
        client.close()
    finally:
        restored.stop()


def test_backup_refuses_to_replace_a_file_and_to_copy_a_foreign_one():
    directory = tempfile.mkdtemp(prefix="tablecast-backup-")
    server = Server().start()
    server.stop()
    existing = os.path.join(directory, "existing.db")
    open(existing, "w").write("keep me")
    refused = backup(server.db, existing)
    assert refused.returncode == 1 and "already exists" in refused.stderr, refused
    assert open(existing).read() == "keep me"

    foreign = os.path.join(directory, "foreign.db")
    subprocess.run(["sqlite3", foreign, "CREATE TABLE t(x); INSERT INTO t VALUES (1);"], check=True)
    refused = backup(foreign, os.path.join(directory, "copy.db"))
    assert refused.returncode == 3 and "foreign" in refused.stderr, refused
    assert not os.path.exists(os.path.join(directory, "copy.db"))


def test_no_client_resumes_across_a_restored_backup_or_a_copied_file():
    """The issue's copy served after the live server moved on: a client holding the live table at version 17
    resumed on it with `since: 17` and kept rows the copy never had. A copy's tables have new epochs (the backup
    writes them; a copied file gets them when first served), so the client gets a snapshot; a restart keeps
    epochs, so resuming on the original still sends only the missed updates."""
    import shutil
    server = Server().start()
    folders = [tempfile.mkdtemp(prefix="tablecast-copy-") for _ in range(2)]
    served = []
    try:
        writer = server.client(name="writer")
        live = writer.ok({"type": "createTable", "table": "t", "sections": [{"rows": []}]})["epoch"]
        for n in range(17):
            writer.ok({"type": "insert", "table": "t", "at": [0, 0], "value": f"live-{n}"})
        result = backup(server.db, os.path.join(folders[0], "tablecast.db"))
        assert result.returncode == 0, result.stderr
        for n in range(17, 20):
            writer.ok({"type": "insert", "table": "t", "at": [0, 0], "value": f"live-{n}"})
        writer.close()
        server.stop()
        shutil.copy(server.db, os.path.join(folders[1], "tablecast.db"))  # a cold copy of the file, at version 20

        for folder, version in ((folders[0], 17), (folders[1], 20)):
            copy = Server(db_dir=folder).start()
            served.append(copy)
            other = copy.client(name="other")
            acked = other.ok({"type": "insert", "table": "t", "at": [0, 0], "value": "only in the copy"})
            assert acked["version"] == version + 1 and acked["epoch"] != live, acked
            resuming = copy.client(name="resumer")
            catch_up, subscribed = resuming.subscribe("t", since=17, epoch=live)
            assert [m["type"] for m in catch_up] == ["snapshot"], catch_up
            assert subscribed["epoch"] == acked["epoch"] != live
            rows = [row["value"] for row in catch_up[0]["sections"][0]["rows"]]
            assert rows[0] == "only in the copy" and len(rows) == version + 1
            resuming.close()
            other.close()
            copy.stop()

        server.start()
        resuming = server.client(name="resumer")
        catch_up, subscribed = resuming.subscribe("t", since=17, epoch=live)
        assert [(m["type"], m["version"]) for m in catch_up] == [("update", 18), ("update", 19), ("update", 20)]
        assert subscribed["epoch"] == live
        resuming.close()
    finally:
        for copy in served:
            if copy.process and copy.process.poll() is None:
                copy.stop()
        server.stop()
