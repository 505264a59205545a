"""Several `tablecast serve` nodes on one PostgreSQL database: any node accepts any table's intents, and every
table keeps one order of versions whichever node commits."""
import threading
import uuid

import pytest

from postgres import Nodes
from replica import Replica


def section(*values):
    return {"header": None, "footer": None, "rows": [{"value": v} for v in values]}


def snapshot_values(client, table):
    catch_up, _ = client.subscribe(table)
    assert catch_up[0]["type"] == "snapshot"
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return catch_up[0]["version"], [[row["value"] for row in s["rows"]] for s in catch_up[0]["sections"]]


def write(client, table, values, acks):
    """Sends every insert at once (pipelined), then collects the acks: the node groups them."""
    refs = {}
    for value in values:
        ref = f"{value}-ref"
        refs[ref] = value
        client.send({"type": "insert", "table": table, "at": [0, 0], "value": value, "ref": ref})
    while refs:
        message = client.recv(timeout=30)
        if message.get("ref") in refs:
            assert message["type"] == "ack", message
            acks.append((refs.pop(message["ref"]), message["version"]))


@pytest.mark.parametrize("count", [2, 3])
def test_concurrent_writers_on_every_node_converge(postgres, count):
    nodes = Nodes(postgres, count)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        creator = nodes.nodes[0].client()
        creator.ok({"type": "createTable", "table": table, "sections": [section("seed")]})
        watchers = []
        for node in nodes.nodes:
            watcher = node.client()
            catch_up, _ = watcher.subscribe(table)
            watchers.append((watcher, Replica(catch_up[0])))
        writers = [node.client() for node in nodes.nodes for _ in range(2)]
        acks = []
        threads = [
            threading.Thread(target=write, args=(w, table, [f"w{i}-{n}" for n in range(150)], acks))
            for i, w in enumerate(writers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(acks) == len(writers) * 150
        # Every ack names its own version: no version was given out twice.
        assert len({version for _, version in acks}) == len(acks)
        final = max(version for _, version in acks)
        assert final == len(acks)
        for watcher, replica in watchers:
            while replica.version < final:
                replica.apply(watcher.next("update", timeout=30, keep_others=False))  # asserts no gap, no duplicate
        expected = None
        for node in nodes.nodes:
            version, values = snapshot_values(node.client(), table)
            assert version == final
            expected = expected or values
            assert values == expected, "every node serves the same table"
        for _, replica in watchers:
            assert replica.values() == expected, "every subscriber's replica equals the snapshot"
        rows = expected[0]
        assert sorted(rows) == sorted([value for value, _ in acks] + ["seed"]), "every acked insert exactly once"
    finally:
        nodes.stop()


def test_a_retry_on_another_node_gets_the_original_ack(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        first = nodes.nodes[0].client(client_id="retrier")
        first.ok({"type": "createTable", "table": table, "sections": [section()]})
        message = {"type": "insert", "table": table, "at": [0, 0], "value": "once", "ref": "retry-1"}
        ack = first.ok(message)
        first.close()
        # The client reconnects to the other node and sends the intent again.
        again = nodes.nodes[1].client(client_id="retrier")
        assert again.ok(message) == ack
        assert snapshot_values(again, table) == (1, [["once"]])
    finally:
        nodes.stop()


def test_a_ref_reused_on_another_node_for_another_intent_is_refused(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        first = nodes.nodes[0].client(client_id="reuser")
        first.ok({"type": "createTable", "table": table, "sections": [section()]})
        other = nodes.nodes[1].client(client_id="reuser")
        # Stored by the first node after the second loaded the client's refs: only the store knows it.
        first.ok({"type": "insert", "table": table, "at": [0, 0], "value": "one", "ref": "r-1"})
        error = other.fails({"type": "insert", "table": table, "at": [0, 0], "value": "two", "ref": "r-1"}, "ref_reused")
        assert "r-1" in error["message"]
        assert snapshot_values(other, table) == (1, [["one"]])
    finally:
        nodes.stop()


def test_history_is_read_from_postgresql_on_every_node(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        writer = nodes.nodes[0].client(client_id="historian", name="Hedda")
        writer.ok({"type": "createTable", "table": table, "sections": [section("seed")]})
        acks = [writer.ok({"type": "insert", "table": table, "at": [0, 0], "value": v, "ref": f"h-{v}"}) for v in "ab"]
        # The other node never served the table: it adopts it and reads its history from the shared database.
        reader = nodes.nodes[1].client()
        page = reader.ok({"type": "history", "table": table, "order": "oldest"}, expect="changes")
        assert page["oldest"] == 0 and page["version"] == 2
        assert [e["version"] for e in page["entries"]] == [a["version"] for a in acks]
        assert page["entries"][0]["origin"] == {"client": "historian", "name": "Hedda", "ref": "h-a"}
        past = reader.ok({"type": "snapshotAt", "table": table, "version": 1}, expect="snapshot")
        assert past["historical"] is True and [r["value"] for r in past["sections"][0]["rows"]] == ["a", "seed"]
        reader.fails({"type": "snapshotAt", "table": table, "version": 3}, "out_of_range")
    finally:
        nodes.stop()


def test_a_retry_racing_its_original_on_another_node_is_applied_once(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        a = nodes.nodes[0].client(client_id="racer")
        b = nodes.nodes[1].client(client_id="racer")
        a.ok({"type": "createTable", "table": table, "sections": [section()]})
        snapshot_values(b, table)
        # The same (client, ref) on both nodes at once, many times: each is stored once, and both answers agree.
        for i in range(20):
            message = {"type": "insert", "table": table, "at": [0, 0], "value": f"v{i}", "ref": f"race-{i}"}
            a.send(message)
            b.send(message)
            first = a.next("ack", ref=f"race-{i}", keep_others=False)
            second = b.next("ack", ref=f"race-{i}", keep_others=False)
            assert first == second
        version, values = snapshot_values(a, table)
        assert version == 20 and sorted(values[0]) == sorted(f"v{i}" for i in range(20))
    finally:
        nodes.stop()


def test_tables_created_changed_and_dropped_on_one_node_are_seen_on_the_other(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        a, b = nodes.nodes[0].client(), nodes.nodes[1].client()
        created = a.ok({"type": "createTable", "table": table, "sections": [section("x")]})
        # The other node serves it at once, under the same epoch.
        catch_up, subscribed = b.subscribe(table)
        assert subscribed["epoch"] == created["epoch"]
        b.fails({"type": "createTable", "table": table}, "table_exists")
        listed = b.ok({"type": "listTables"}, expect="tables")
        assert table in [t["table"] for t in listed["tables"]]
        a.ok({"type": "setRules", "table": table, "rules": {"moves": "withinSection"}})
        assert b.next("rules", table=table)["rules"]["moves"] == "withinSection"
        a.ok({"type": "dropTable", "table": table})
        b.next("dropped", table=table)
        b.fails({"type": "insert", "table": table, "at": [0, 0], "value": 1}, "no_such_table")
    finally:
        nodes.stop()


def test_set_rules_on_a_node_behind_on_the_table_acks_its_version_and_keeps_the_other_nodes_rules(postgres):
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        a, b = nodes.nodes[0].client(), nodes.nodes[1].client()
        a.ok({"type": "createTable", "table": table, "sections": [section("x")]})
        for n in range(5):
            a.ok({"type": "insert", "table": table, "at": [0, 0], "value": n})
        for attempt in range(10):
            # Nobody subscribes on b, so b has not followed a's commits; each node patches a field of its own.
            a.ok({"type": "setRules", "table": table, "rules": {"maxRowsPerSection": 100 + attempt}})
            acked = b.ok({"type": "setRules", "table": table, "rules": {"moves": "withinSection" if attempt % 2 else "none"}})
            assert acked["version"] == 5, acked
        for client in (a, b):
            snapshot = next(m for m in client.subscribe(table)[0] if m["type"] == "snapshot")
            rules = snapshot["rules"]
            assert (rules["maxRowsPerSection"], rules["moves"]) == (109, "withinSection"), rules
    finally:
        nodes.stop()


def ana_and_bo(nodes):
    """Ana creates a table on the first node and subscribes, Bo subscribes on the second: (table, ana, her presence
    view, bo, his)."""
    from test_presence import subscribe_with_view
    table = f"t-{uuid.uuid4().hex[:8]}"
    ana = nodes.nodes[0].client(name="Ana")
    ana.ok({"type": "createTable", "table": table, "sections": [section("x")]})
    ana_view = subscribe_with_view(ana, table)
    bo = nodes.nodes[1].client(name="Bo")
    return table, ana, ana_view, bo, subscribe_with_view(bo, table)


def test_presence_spans_nodes_and_a_dead_node_is_cleared_within_seconds(postgres):
    import signal
    import time
    nodes = Nodes(postgres, 2)
    try:
        table, ana, ana_view, bo, bo_view = ana_and_bo(nodes)

        def until(client, view, condition):
            """Applies `client`'s deltas to `view` until `condition(view)` holds."""
            while not condition(view):
                view.apply(client.next("presence", table=table, keep_others=False, timeout=10))

        until(ana, ana_view, lambda v: v.names() == ["Ana", "Bo"])
        until(bo, bo_view, lambda v: v.names() == ["Ana", "Bo"])
        # Keys stay unique across nodes: each node's are prefixed with its id.
        assert len(set(ana_view.clients)) == 2 and ana_view.you in ana_view.clients
        bo.send({"type": "editing", "table": table, "on": True})
        until(ana, ana_view, lambda v: any(c["name"] == "Bo" and c["editing"] for c in v.clients.values()))
        # The second node dies without a word: its people leave everyone's list within a few seconds.
        killed = time.time()
        nodes.nodes[1].process.send_signal(signal.SIGKILL)
        nodes.nodes[1].process.wait()
        until(ana, ana_view, lambda v: v.names() == ["Ana"])
        assert time.time() - killed < 6
    finally:
        nodes.stop()


def test_viewers_are_counted_on_every_node(postgres):
    import time
    from test_presence import subscribe_with_view, until
    nodes = Nodes(postgres, 2)
    try:
        table, ana, ana_view, bo, bo_view = ana_and_bo(nodes)
        # Two viewers on the second node and one on the first: everyone counts three.
        viewers = [nodes.nodes[1].client(hello=False), nodes.nodes[1].client(hello=False), nodes.nodes[0].client(hello=False)]
        for viewer in viewers:
            viewer.subscribe(table)
        until(ana, ana_view, lambda v: v.viewers == 3 and v.names() == ["Ana", "Bo"])
        until(bo, bo_view, lambda v: v.viewers == 3 and v.names() == ["Ana", "Bo"])
        # listTables counts the subscribers of every node, on every node.
        for node in nodes.nodes:
            lister = node.client()
            listed = lister.ok({"type": "listTables"}, expect="tables")["tables"]
            assert [t["subscribers"] for t in listed if t["table"] == table] == [5], listed
            lister.close()
        # A late subscriber on the first node gets the count in its catch-up.
        late = nodes.nodes[0].client(name="Cy")
        deadline = time.time() + 5
        while subscribe_with_view(late, table).viewers != 3:
            assert time.time() < deadline
            late.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
        # A viewer leaving one node is seen on the other; a node's last viewer too.
        viewers[0].close()
        viewers[2].close()
        until(ana, ana_view, lambda v: v.viewers == 1)
        until(bo, bo_view, lambda v: v.viewers == 1)
    finally:
        nodes.stop()


def health(node):
    import json
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/healthz", timeout=5) as response:
        return json.loads(response.read())["status"]


def metric(node, name):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def wait_for(condition, timeout=15):
    import time
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_a_node_reads_only_the_commits_of_tables_it_has_subscribers_on(postgres):
    import time
    nodes = Nodes(postgres, 2)
    quiet, watched = f"q-{uuid.uuid4().hex[:8]}", f"w-{uuid.uuid4().hex[:8]}"
    try:
        writer = nodes.nodes[0].client()
        for table in (quiet, watched):
            writer.ok({"type": "createTable", "table": table, "sections": [section("seed")]})
        watcher = nodes.nodes[1].client()
        watcher.subscribe(watched)
        time.sleep(0.5)
        before = metric(nodes.nodes[1], "tablecast_log_reads_total") or 0
        for n in range(20):
            writer.ok({"type": "insert", "table": quiet, "at": [0, 0], "value": f"q{n}"})
        writer.ok({"type": "insert", "table": watched, "at": [0, 0], "value": "w"})
        assert watcher.next("update", table=watched)["version"] == 1
        time.sleep(0.5)
        # One read for the watched table's commit, none for the quiet table's twenty.
        assert (metric(nodes.nodes[1], "tablecast_log_reads_total") or 0) - before == 1
        # Work on the quiet table there follows first: the intent is resolved on version 20, not rebased.
        other = nodes.nodes[1].client()
        assert other.ok({"type": "insert", "table": quiet, "at": [0, 0], "value": "there"})["version"] == 21
        assert (metric(nodes.nodes[1], "tablecast_rebases_total") or 0) == 0
        # A subscribe there gets the current state, and the commits after it as they come.
        version, values = snapshot_values(nodes.nodes[1].client(), quiet)
        assert version == 21 and values == [["there"] + [f"q{n}" for n in reversed(range(20))] + ["seed"]]
        other.subscribe(quiet)
        writer.ok({"type": "insert", "table": quiet, "at": [0, 0], "value": "after"})
        assert other.next("update", table=quiet)["version"] == 22
    finally:
        nodes.stop()


def test_postgres_stopped_and_started_under_load(postgres):
    """While PostgreSQL is down, intents get `unavailable` and nothing of them is applied; the nodes say
    `degraded`; once it is back they recover by themselves and nothing acked is lost."""
    from postgres import PostgresCluster
    cluster = PostgresCluster()
    nodes = Nodes(cluster, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        a = nodes.nodes[0].client()
        a.ok({"type": "createTable", "table": table, "sections": [section()]})
        acked, refused = [], []

        def insert(i):
            response = a.request({"type": "insert", "table": table, "at": [0, 0], "value": f"v{i}"})
            (acked if response["type"] == "ack" else refused).append((f"v{i}", response))
            return response

        for i in range(50):
            assert insert(i)["type"] == "ack"
        cluster.kill()
        i = 50
        while not refused:
            insert(i)
            i += 1
        assert refused[0][1]["code"] == "unavailable", refused[0]
        wait_for(lambda: all(health(node) == "degraded" for node in nodes.nodes))
        assert metric(nodes.nodes[0], "tablecast_store_up") == 0
        for _ in range(5):
            assert insert(i)["code"] == "unavailable"
            i += 1
        # What the node has is still served at once: the table list, with this node's own counts.
        import time
        started = time.time()
        listed = a.ok({"type": "listTables"}, expect="tables")["tables"]
        assert [t["version"] for t in listed if t["table"] == table] == [len(acked)]
        assert time.time() - started < 1
        cluster.start()

        def recovered():
            nonlocal i
            i += 1
            return insert(i)["type"] == "ack"

        wait_for(recovered, timeout=20)
        wait_for(lambda: all(health(node) == "ok" for node in nodes.nodes))
        for node in nodes.nodes:
            version, values = snapshot_values(node.client(), table)
            assert sorted(values[0]) == sorted(value for value, _ in acked), "every ack kept, nothing refused applied"
            assert version == len(acked)
    finally:
        nodes.stop()
        cluster.stop()


def test_kill_9_of_a_node_mid_load_loses_nothing_acked_and_subscribers_resume_elsewhere(postgres):
    import signal
    import time
    nodes = Nodes(postgres, 2)
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        victim, survivor = nodes.nodes
        creator = survivor.client()
        created = creator.ok({"type": "createTable", "table": table, "sections": [section()]})
        watcher = victim.client()
        catch_up, _ = watcher.subscribe(table)
        replica = Replica(catch_up[0])
        writer = victim.client()
        acked = []

        def load():
            try:
                for i in range(100_000):
                    response = writer.request({"type": "insert", "table": table, "at": [0, 0], "value": f"k{i}"})
                    if response["type"] == "ack":
                        acked.append(f"k{i}")
            except Exception:
                pass  # the node is gone

        thread = threading.Thread(target=load)
        thread.start()
        wait_for(lambda: len(acked) >= 100)
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        thread.join(timeout=30)
        # The watcher read what the victim sent before dying, then resumes on the other node from there.
        try:
            while True:
                replica.apply(watcher.next("update", timeout=1, keep_others=False))
        except Exception:
            pass
        resumed = survivor.client()
        catch_up, subscribed = resumed.subscribe(table, since=replica.version, epoch=created["epoch"])
        for update in catch_up:
            assert update["type"] == "update", "resuming within the history sends updates, not a snapshot"
            replica.apply(update)  # asserts no gap, no duplicate
        assert replica.version == subscribed["version"]
        values = replica.values()[0]
        assert len(values) == len(set(values))
        assert set(acked) <= set(values), "nothing acknowledged is lost"
    finally:
        nodes.stop()


def test_a_node_paused_holding_a_tables_reservation_holds_up_the_other_for_seconds_only(postgres):
    """A node that lost a commit reserves the table; paused there (SIGSTOP: its session stays open), it would stall
    every node's commits of the table. The others end its session once it has sat idle for twice the reservation
    timeout (10 s), and it resumes after SIGCONT without losing anything acknowledged."""
    import signal
    import time
    from postgres import PostgresServer
    url = postgres.create_database()
    database = url.rsplit("/", 1)[1]
    running, paused = PostgresServer(url).start(), PostgresServer(url + "?application_name=paused").start()
    reserving = ("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid WHERE l.locktype = "
                 "'advisory' AND l.granted AND l.objsubid = 2 AND s.application_name = 'paused'")
    table = f"t-{uuid.uuid4().hex[:8]}"
    stop = threading.Event()
    acked = {running: [], paused: []}

    def load(node, prefix):
        client = node.client()
        batch = 0
        try:
            while not stop.is_set():
                write(client, table, [f"{prefix}{batch}-{i}" for i in range(20)], acked[node])
                batch += 1
        except Exception:
            pass  # the paused node's writer may time out; what it had acked is checked below

    try:
        running.client().ok({"type": "createTable", "table": table, "sections": [section()]})
        threads = [threading.Thread(target=load, args=(node, prefix)) for node, prefix in ((running, "r"), (paused, "p"))]
        for thread in threads:
            thread.start()
        wait_for(lambda: len(acked[running]) >= 100 and len(acked[paused]) >= 100)
        # Pause the node at a moment when it holds the reservation (both nodes write, so it often does).
        for _ in range(100):
            paused.process.send_signal(signal.SIGSTOP)
            time.sleep(0.05)
            if int(postgres.psql(reserving, database)) > 0:
                break
            paused.process.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        else:
            pytest.fail("the node was never caught holding a reservation")
        since = time.time()
        before = len(acked[running])
        wait_for(lambda: len(acked[running]) >= before + 100, timeout=25)
        held_up = time.time() - since
        assert 9 < held_up < 25, held_up
        assert int(postgres.psql(reserving, database)) == 0
        paused.process.send_signal(signal.SIGCONT)
        after = len(acked[paused])
        wait_for(lambda: len(acked[paused]) >= after + 20 or not threads[1].is_alive(), timeout=30)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        version, values = snapshot_values(running.client(), table)
        everything = [value for node in acked for value, _ in acked[node]]
        assert sorted(values[0]) == sorted(set(values[0])), "no insert twice"
        assert set(everything) <= set(values[0]), "nothing acknowledged is lost"
        assert version == len(values[0])
    finally:
        stop.set()
        paused.process.send_signal(signal.SIGCONT)
        running.stop()
        paused.stop()


def test_compact_and_backup_work_on_postgresql_while_the_nodes_run(postgres):
    import json
    import os
    import subprocess
    import tempfile
    from conftest import Server, tablecast_binary

    def tablecast(*args, env=None):
        return subprocess.run([tablecast_binary(), *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **(env or {})})

    # The nodes keep every version, so what goes is what compact removes.
    nodes = Nodes(postgres, 2, "--snapshot-every", "10", "--history-retention", "all")
    table = f"t-{uuid.uuid4().hex[:8]}"
    url = nodes.nodes[0].db
    restored = None
    try:
        writer = nodes.nodes[0].client(client_id="keeper")
        writer.ok({"type": "createTable", "table": table, "sections": [section()]})
        acks = [writer.ok({"type": "insert", "table": table, "at": [0, 0], "value": f"v{n}", "ref": f"r-{n}"})
                for n in range(25)]
        # Keep 5 versions readable: the log up to the snapshot at 20 goes.
        done = tablecast("compact", "--db", url, "--history", "0", "--history-retention", "5")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"removed 20 log entries from {url}"
        again = tablecast("compact", "--history", "0", "--history-retention", "5", env={"TABLECAST_DB": url})
        assert again.returncode == 0 and again.stdout.startswith("removed 0 log entries"), again.stderr
        reader = nodes.nodes[1].client()
        page = reader.ok({"type": "history", "table": table, "order": "oldest"}, expect="changes")
        assert page["oldest"] == 20 and [e["version"] for e in page["entries"]] == [21, 22, 23, 24, 25]
        writer.ok({"type": "insert", "table": table, "at": [0, 0], "value": "after"})
        # The backup is a SQLite file that a single server opens as is.
        folder = tempfile.mkdtemp(prefix="tablecast-pg-backup-")
        copy = os.path.join(folder, "tablecast.db")
        done = tablecast("backup", "--db", url, "--to", copy)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["backup"] == copy and report["bytes"] > 0
        assert report["tables"] == [{"table": table, "version": 26}]
        assert tablecast("backup", "--db", url, "--to", copy).returncode == 1, "an existing file is never replaced"
        expected = snapshot_values(nodes.nodes[1].client(), table)
        restored = Server(db_dir=folder).start()
        assert snapshot_values(restored.client(), table) == expected
        # Refs came along: a retry gets the original ack; and so did the history that was kept.
        retrier = restored.client(client_id="keeper")
        retried = retrier.ok({"type": "insert", "table": table, "at": [0, 0], "value": "v3", "ref": "r-3"})
        # The copy's table is another life of it (no client resumes across a copy): its ack names that life.
        restored_epoch = retrier.subscribe(table)[1]["epoch"]
        assert restored_epoch != acks[3]["epoch"]
        assert retried == {**acks[3], "epoch": restored_epoch}
        page = retrier.ok({"type": "history", "table": table, "order": "oldest"}, expect="changes")
        assert [e["version"] for e in page["entries"]] == [21, 22, 23, 24, 25, 26]
    finally:
        if restored:
            restored.stop()
        nodes.stop()


def test_reads_are_served_from_memory_while_postgresql_is_down_and_failures_are_logged_once_per_interval():
    """The issue: while PostgreSQL was down, a node that held the table refused `subscribe` with `unavailable`
    ("could not be reloaded after a storage failure") and logged a `critical` line per request (1,438 in four
    outages, clients retrying every 0.2 s). Now `subscribe`, `refresh` and `history` are served from memory, writes
    get `unavailable` (nothing applied, no store text in the message), and each cause is logged once per 10 s with
    a count. Nothing acked is lost once PostgreSQL is back."""
    import json
    import time
    from postgres import PostgresCluster, PostgresServer
    cluster = PostgresCluster()
    node = None
    table = f"t-{uuid.uuid4().hex[:8]}"
    try:
        node = PostgresServer(cluster.create_database(), "--log-format", "json").start()
        writer = node.client(client_id="outage-writer", name="Wanda")
        epoch = writer.ok({"type": "createTable", "table": table, "sections": [section()]})["epoch"]
        acked = [f"v{n}" for n in range(10)]
        for value in acked:
            writer.ok({"type": "insert", "table": table, "at": [0, 0], "value": value, "ref": value})
        reader = node.client(name="Rita")
        cluster.kill()
        down = time.time()

        def logged():
            return [json.loads(line) for line in node.read_log().splitlines() if line.startswith("{")]

        refused = 0
        while not any(r["message"].startswith("could not store a group of changes (repeated ") for r in logged()):
            assert time.time() - down < 25, "no line with a count within 25 s"
            response = writer.request({"type": "insert", "table": table, "at": [0, 0], "value": f"x{refused}"})
            assert response["type"] == "error" and response["code"] == "unavailable", response
            assert response["message"].startswith(("the change could not be stored, nothing was applied: ",
                                                   "the connection to the database was lost while the change was"))
            assert "127.0.0.1" not in response["message"] and "SQL" not in response["message"], response
            refused += 1
            catch_up, subscribed = reader.subscribe(table)
            assert (catch_up[0]["type"], catch_up[0]["version"], subscribed["epoch"]) == ("snapshot", 10, epoch)
            assert [row["value"] for row in catch_up[0]["sections"][0]["rows"]] == list(reversed(acked))
            reader.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
            reader.send({"type": "refresh", "table": table, "since": 7, "epoch": epoch, "ref": f"f{refused}"})
            assert [reader.next("update", table=table, keep_others=False)["version"] for _ in range(3)] == [8, 9, 10]
            reader.next("refreshed", ref=f"f{refused}")
            page = reader.ok({"type": "history", "table": table, "limit": 4}, expect="changes")
            assert [e["version"] for e in page["entries"]] == [10, 9, 8, 7] and page["next"] == 6, page
            assert page["entries"][0]["origin"] == {"client": "outage-writer", "name": "Wanda", "ref": "v9"}
            time.sleep(0.2)
        # A client that says hello during the outage is welcome, and reads; its intents wait for the store.
        late = node.client(client_id="outage-late", name="Lou")
        catch_up, _ = late.subscribe(table)
        assert catch_up[0]["version"] == 10
        late.fails({"type": "insert", "table": table, "at": [0, 0], "value": "late", "ref": "late-1"}, "unavailable")
        # A table this node does not hold may exist all the same: the store cannot say.
        late.fails({"type": "subscribe", "table": "not-held-here"}, "unavailable")
        failures = [r for r in logged() if r["level"] in ("error", "critical")]
        assert refused >= 30, refused
        # A line per cause when it starts, and one per cause at the end of each 10 s it repeated.
        assert len(failures) <= 8, [r["message"] for r in failures]
        counted = [r["message"] for r in failures if "(repeated " in r["message"]]
        assert any(m.startswith("could not store a group of changes (repeated ") for m in counted), counted

        cluster.start()

        def recovered():
            response = writer.request({"type": "insert", "table": table, "at": [0, 0], "value": "after"})
            return response["type"] == "ack"

        wait_for(recovered, timeout=20)
        assert late.ok({"type": "insert", "table": table, "at": [0, 0], "value": "late", "ref": "late-1"})["version"] == 12
        version, values = snapshot_values(node.client(), table)
        assert version == 12 and values == [["late", "after"] + list(reversed(acked))], "every ack kept, nothing refused applied"
    finally:
        if node:
            node.stop()
        cluster.stop()
