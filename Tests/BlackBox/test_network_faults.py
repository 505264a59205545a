"""Network faults between a node and PostgreSQL, not only process stops: the path cut for seconds with nothing
answered (the database in a network namespace whose link the test sets down), and delays and stalls (a TCP proxy).
Nothing acknowledged is lost, nothing is acknowledged that was not committed, and the node recovers by itself."""
import json
import threading
import time
import urllib.request
import uuid

import pytest

from network import Namespace, NamespacedPostgres, TcpProxy
from postgres import PostgresServer


@pytest.fixture
def namespaced_postgres():
    """PostgreSQL in a network namespace of its own, with the namespace; both removed even when the test fails."""
    namespace = Namespace()
    cluster = None
    try:
        cluster = NamespacedPostgres(namespace)
        yield namespace, cluster
    finally:
        try:
            if cluster:
                namespace.restore()
                cluster.stop()
        finally:
            namespace.close()


def health(node):
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/healthz", timeout=5) as response:
        return json.loads(response.read())["status"]


def wait_for(condition, timeout, message):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, message
        time.sleep(0.05)


class Writer:
    """Inserts one value after another (each with its own ref), on a thread, recording what was acked and what
    was refused: the table must end up with every acked value, once, and nothing that was never sent."""

    def __init__(self, node, table, prefix="w"):
        self.client = node.client(client_id=f"writer-{uuid.uuid4().hex[:6]}")
        self.table = table
        self.prefix = prefix
        self.acked, self.refused, self.errors = [], [], []
        self.refusals = {}  # value → the refusal's message
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self):
        n = 0
        try:
            while not self._stop.is_set():
                value = f"{self.prefix}{n}"
                self.client.send({"type": "insert", "table": self.table, "at": [0, 0], "value": value, "ref": value})
                # A commit caught by a cut waits for the node to give up on its silent connection (about 10 s).
                response = None
                while response is None:
                    message = self.client.recv(timeout=40)
                    if message.get("ref") == value and message["type"] in ("ack", "error"):
                        response = message
                if response["type"] == "ack":
                    self.acked.append(value)
                else:
                    assert response["code"] == "unavailable", response
                    self.refused.append(value)
                    self.refusals[value] = response["message"]
                    time.sleep(0.2)  # as the clients retried
                n += 1
        except Exception as error:  # reported by stop()
            self.errors.append(error)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the writer is stuck"
        assert not self.errors, self.errors
        self.client.close()


def check_table(node, table, writers, cluster, url):
    """The table holds every acked value once, and values that were sent only (a refusal of a commit whose answer
    the cut lost may have been stored: the client cannot know, and a retry with its ref gets the ack); the node
    serves what PostgreSQL holds."""
    client = node.client()
    catch_up, _ = client.subscribe(table)
    values = [row["value"] for row in catch_up[0]["sections"][0]["rows"]]
    client.close()
    stored = cluster.psql(f"SELECT version FROM tablecast.tables WHERE name = '{table}'", url.rsplit("/", 1)[1])
    assert int(stored) == catch_up[0]["version"], (stored, catch_up[0]["version"])
    writers = writers if isinstance(writers, list) else [writers]
    acked = {value for writer in writers for value in writer.acked}
    refused = {value for writer in writers for value in writer.refused}
    assert len(values) == len(set(values)), "a value stored twice"
    assert acked <= set(values), f"acked values lost: {sorted(acked - set(values))[:5]}"
    assert set(values) <= acked | refused, "a value that was never sent"
    assert catch_up[0]["version"] == len(values)
    return values


def test_the_path_to_postgresql_cut_for_15_s_without_any_answer(namespaced_postgres):
    """The namespace's end of the link goes down for 15 s: the node's connections see silence, not a reset. Writes
    are refused once the node gives up on the silent connection (about 10 s), reads are served from memory, and
    once the link is back the node reconnects and acknowledges again by itself."""
    namespace, cluster = namespaced_postgres
    url = cluster.create_database()
    node = PostgresServer(url).start()
    table = f"t-{uuid.uuid4().hex[:8]}"
    writer = None
    try:
        node.client().ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
        writer = Writer(node, table)
        wait_for(lambda: len(writer.acked) >= 20, 20, "no acks before the cut")
        namespace.cut()
        cut = time.time()
        acked_before = len(writer.acked)
        wait_for(lambda: writer.refused, 30, "no refusal during the cut")
        refused_after = time.time() - cut
        reader = node.client()
        catch_up, _ = reader.subscribe(table)
        assert catch_up[0]["type"] == "snapshot" and catch_up[0]["version"] >= acked_before
        reader.close()
        wait_for(lambda: health(node) == "degraded", 15, "the node does not say degraded")
        # Once the node knows, a new client's hello and subscribe are served from memory at once.
        started = time.time()
        late = node.client(client_id="late-reader")
        catch_up, _ = late.subscribe(table)
        page = late.ok({"type": "history", "table": table, "limit": 5}, expect="changes")
        served_in = time.time() - started
        assert catch_up[0]["type"] == "snapshot" and served_in < 1, served_in
        assert [e["version"] for e in page["entries"]] == list(range(catch_up[0]["version"], catch_up[0]["version"] - 5, -1))
        late.close()
        time.sleep(max(0.0, 15 - (time.time() - cut)))  # the cut lasts 15 s whatever happened meanwhile
        namespace.restore()
        restored = time.time()
        acked_during_cut = len(writer.acked)
        wait_for(lambda: len(writer.acked) >= acked_during_cut + 20, 30, "the node did not recover by itself")
        wait_for(lambda: health(node) == "ok", 15, "the node does not say ok again")
        recovered_in = time.time() - restored
        writer.stop()
        values = check_table(node, table, writer, cluster, url)
        assert len(values) >= len(writer.acked)
        # A commit whose answer the cut lost is refused as possibly stored; a retry with its ref tells, once.
        stored_anyway = [value for value in writer.refused if value in values]
        retrier = node.client(client_id=writer.client.client_id)
        for value in writer.refused:
            message = {"type": "insert", "table": table, "at": [0, 0], "value": value, "ref": value}
            if value in stored_anyway:
                assert "may have been stored" in writer.refusals[value], writer.refusals[value]
                assert retrier.ok(message)["version"] <= len(values), "the retry got the ack of the stored change"
        retrier.close()
        assert check_table(node, table, writer, cluster, url) == values, "the retries applied nothing twice"
        print(f"cut 15 s: {acked_before} acked before, first refusal after {refused_after:.1f} s, "
              f"{len(writer.refused)} refused ({len(stored_anyway)} of them stored all the same), a hello, a "
              f"subscribe and a history page served in {served_in * 1000:.0f} ms during the cut, recovered in "
              f"{recovered_in:.1f} s, {len(writer.acked)} acked in all")
    finally:
        if writer and writer._thread.is_alive():
            writer._stop.set()
        node.stop()


def test_delays_and_stalls_between_the_node_and_postgresql(postgres):
    """Through a proxy: 30 ms each way on every packet, then a 5 s stall (nothing forwarded, nothing closed).
    Commits wait out the stall and are acknowledged after it; nothing acked is lost, nothing is doubled."""
    url = postgres.create_database()
    database = url.rsplit("/", 1)[1]
    proxy = TcpProxy(postgres.port)
    node = PostgresServer(f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}").start()
    table = f"t-{uuid.uuid4().hex[:8]}"
    writer = None
    try:
        node.client().ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
        proxy.delay = 0.03
        writer = Writer(node, table)
        wait_for(lambda: len(writer.acked) >= 20, 20, "no acks through a slow path")
        proxy.stall()
        stalled = time.time()
        time.sleep(0.5)
        during = len(writer.acked)
        time.sleep(4.5)
        assert len(writer.acked) <= during + 1, "acks while nothing reached PostgreSQL"
        proxy.flow()
        flowed = time.time()
        wait_for(lambda: len(writer.acked) > during + 1, 30, "the node did not go on after the stall")
        resumed_in = time.time() - flowed
        wait_for(lambda: len(writer.acked) >= during + 20, 30, "the node did not go on after the stall")
        writer.stop()
        check_table(node, table, writer, postgres, url)
        print(f"stall {flowed - stalled:.1f} s: acks again {resumed_in:.2f} s after it ended; {len(writer.acked)} "
              f"acked, {len(writer.refused)} refused")
    finally:
        proxy.flow()
        if writer and writer._thread.is_alive():
            writer._stop.set()
        node.stop()
        proxy.close()


def test_one_node_stalled_the_other_goes_on_and_both_agree_after(postgres):
    """Two nodes on one table, one of them behind the proxy: its path stalls for 15 s while it holds the table's
    reservation (taken after it lost a commit; its connections stay open and silent). The other node's commits are
    held up until it ends the silent session (idle for 10 s), not for good; once the path flows again the stalled
    node goes on by itself, and every ack of both is in PostgreSQL once."""
    url = postgres.create_database()
    database = url.rsplit("/", 1)[1]
    proxy = TcpProxy(postgres.port)
    direct = PostgresServer(url).start()
    stalled = PostgresServer(f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}?application_name=stalled").start()
    reserving = ("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid WHERE l.locktype = "
                 "'advisory' AND l.granted AND l.objsubid = 2 AND s.application_name = 'stalled'")
    table = f"t-{uuid.uuid4().hex[:8]}"
    writers = []
    try:
        direct.client().ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
        writers = [Writer(direct, table, "d"), Writer(stalled, table, "s")]
        wait_for(lambda: all(len(w.acked) >= 20 for w in writers), 30, "no acks from both nodes")
        for _ in range(200):
            proxy.stall()
            if int(postgres.psql(reserving, database)) > 0:
                break
            proxy.flow()
            time.sleep(0.02)
        else:
            pytest.fail("the node was never caught holding a reservation")
        began = time.time()
        before = len(writers[0].acked)
        wait_for(lambda: len(writers[0].acked) >= before + 20, 30, "the other node stopped acknowledging for good")
        went_on_in = time.time() - began
        assert 8 < went_on_in < 25, f"held up {went_on_in:.1f} s: the silent session's end takes 10 s idle"
        assert int(postgres.psql(reserving, database)) == 0, "the silent session still holds the reservation"
        time.sleep(max(0.0, 15 - (time.time() - began)))
        proxy.flow()
        flowed = time.time()
        after = len(writers[1].acked)
        wait_for(lambda: len(writers[1].acked) >= after + 20, 30, "the stalled node did not go on by itself")
        resumed_in = time.time() - flowed
        for writer in writers:
            writer.stop()
        values = check_table(direct, table, writers, postgres, url)
        print(f"one node stalled 15 s holding a reservation: the other acked 20 more after {went_on_in:.1f} s, the "
              f"stalled one acks again "
              f"{resumed_in:.1f} s after; {len(values)} stored, {sum(len(w.refused) for w in writers)} refused")
    finally:
        proxy.flow()
        for writer in writers:
            if writer._thread.is_alive():
                writer._stop.set()
        direct.stop()
        stalled.stop()
        proxy.close()
