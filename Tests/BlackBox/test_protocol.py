"""The wire protocol, message by message, as web-client-protocol/README.md specifies it."""
import json
import time

import pytest

from conftest import Server
from postgres import Nodes
from replica import Replica


@pytest.fixture(scope="module", params=["sqlite", "two-postgres-nodes"])
def server(request):
    """Every test runs against one server on SQLite, and against two nodes on one PostgreSQL database with the
    test's clients spread over both."""
    if request.param == "sqlite":
        s = Server().start()
    else:
        s = Nodes(request.getfixturevalue("postgres"), 2)
    yield s
    s.stop()

STATES = ["Arizona", "California", "Delaware", "New Jersey", "Washington"]


def create(client, table, sections=None, rules=None):
    message = {"type": "createTable", "table": table}
    if sections is not None:
        message["sections"] = sections
    if rules is not None:
        message["rules"] = rules
    return client.ok(message)


def section(*values, header=None, footer=None):
    return {"header": header, "footer": footer, "rows": [{"value": v} for v in values]}


def snapshot_of(client, table):
    catch_up, subscribed = client.subscribe(table)
    assert catch_up and catch_up[0]["type"] == "snapshot"
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return catch_up[0]


def values(snapshot):
    return [[row["value"] for row in s["rows"]] for s in snapshot["sections"]]


def test_hello_is_answered_with_welcome_and_limits(server):
    c = server.client(client_id="bb-hello", name="Ana")
    assert c.welcome["client"] == "bb-hello"
    assert c.welcome["server"]["protocol"] == 1
    assert c.welcome["limits"]["maxBatchEntries"] == 1000
    c.close()


def test_a_client_without_hello_gets_an_anonymous_id(server, table_name):
    c = server.client(hello=False)
    create(c, table_name)
    c.subscribe(table_name)
    c.ok({"type": "insertSection", "table": table_name, "at": 0})
    update = c.next("update")
    assert update["origin"]["client"].startswith("anon-")
    c.close()


def test_no_subprotocol_is_served_the_same(server, table_name):
    c = server.client(subprotocol=None)
    create(c, table_name)
    c.close()


def test_tables_are_created_listed_and_dropped(client, table_name):
    ack = create(client, table_name, [section("a")])
    assert ack["version"] == 0 and ack["epoch"]
    client.fails({"type": "createTable", "table": table_name}, "table_exists")
    listed = client.ok({"type": "listTables"}, expect="tables")["tables"]
    entry = [t for t in listed if t["table"] == table_name]
    assert entry == [{"table": table_name, "version": 0, "epoch": ack["epoch"], "subscribers": 0}]
    client.ok({"type": "dropTable", "table": table_name})
    client.fails({"type": "subscribe", "table": table_name}, "no_such_table")
    again = create(client, table_name)
    assert again["epoch"] != ack["epoch"], "a table created again is a new life: a new epoch"


def test_bad_table_names_are_refused(client):
    for name in ["", "-lead", "a" * 65, "spa ce", "slash/x"]:
        response = client.request({"type": "createTable", "table": name}, check=False)
        assert response["type"] == "error" and response["code"] == "bad_request", (name, response)


def test_subscriber_gets_snapshot_then_updates_then_its_ack(client, table_name):
    create(client, table_name, [section("x", header="H", footer="F")])
    catch_up, subscribed = client.subscribe(table_name)
    snapshot = catch_up[0]
    assert snapshot["version"] == 0 and subscribed["version"] == 0
    assert snapshot["sections"][0]["header"] == "H" and values(snapshot) == [["x"]]
    assert subscribed["rules"]["moves"] == "any"
    client.send({"type": "insert", "table": table_name, "at": [0, 1], "value": {"n": 1}, "ref": "i1"})
    arrivals = [m for m in (client.recv(), client.recv(), client.recv()) if m["type"] != "presence"]
    update = arrivals[0]
    assert update["type"] == "update", "the originator's update comes before its ack"
    assert update["version"] == 1 and update["origin"] == {"client": client.client_id, "ref": "i1"}
    assert update["insertRows"][0]["at"] == [0, 1] and update["insertRows"][0]["row"]["value"] == {"n": 1}
    ack = arrivals[1]
    assert ack == {"type": "ack", "ref": "i1", "table": table_name, "version": 1, "epoch": subscribed["epoch"],
                   "created": [update["insertRows"][0]["row"]["id"]], "resolved": [[0, 1]]}


def test_every_intent_type_and_replica_matches_snapshot(server, table_name):
    a = server.client()
    create(a, table_name, [section("a0", "a1", "a2", header="A"), section("b0", "b1", header="B")])
    watcher = server.client()
    catch_up, _ = watcher.subscribe(table_name)
    replica = Replica(catch_up[0])
    snap = catch_up[0]
    a1 = snap["sections"][0]["rows"][1]["id"]
    a.ok({"type": "insert", "table": table_name, "at": [0, 3], "value": "a3"})
    a.ok({"type": "delete", "table": table_name, "at": [0, 1], "row": a1})
    a.ok({"type": "move", "table": table_name, "from": [0, 0], "to": [1, 2]})
    a.ok({"type": "edit", "table": table_name, "at": [1, 0], "value": "B0!"})
    a.ok({"type": "insertSection", "table": table_name, "at": 2, "header": "C", "rows": [{"value": "c0"}]})
    a.ok({"type": "editSection", "table": table_name, "at": 2, "footer": "end"})
    a.ok({"type": "moveSection", "table": table_name, "from": 2, "to": 0})
    a.ok({"type": "deleteSection", "table": table_name, "at": 1})
    for _ in range(8):
        replica.apply(watcher.next("update"))
    final = snapshot_of(a, table_name)
    assert replica.version == final["version"] == 8
    assert replica.sections == final["sections"]
    assert values(final) == [["c0"], ["B0!", "b1", "a0"]]
    assert [(s["header"], s["footer"]) for s in final["sections"]] == [("C", "end"), ("B", None)]
    a.close()
    watcher.close()


def test_states_example_as_a_batch(client, table_name):
    create(client, table_name, [section(*STATES)])
    ack = client.ok({"type": "batch", "table": table_name, "base": 0,
                     "deleteRows": [{"at": [0, 2]}, {"at": [0, 4]}],
                     "insertRows": [{"at": [0, 0], "value": "Alaska"}, {"at": [0, 3], "value": "Georgia"},
                                    {"at": [0, 5], "value": "Virginia"}]})
    assert ack["version"] == 1 and len(ack["created"]) == 3
    assert values(snapshot_of(client, table_name)) == [
        ["Alaska", "Arizona", "California", "Georgia", "New Jersey", "Virginia"]]


def test_three_sections_of_three_rows_example(client, table_name):
    create(client, table_name, [section("a0", "a1", "a2"), section("b0", "b1", "b2"), section("c0", "c1", "c2")])
    client.ok({"type": "batch", "table": table_name, "deleteRows": [{"at": [0, 1]}], "deleteSections": [{"at": 1}],
               "insertRows": [{"at": [1, 1], "value": "new"}]})
    assert values(snapshot_of(client, table_name)) == [["a0", "a2"], ["c0", "new", "c1", "c2"]]


def test_move_section_zero_to_two(client, table_name):
    create(client, table_name, [section(header="A"), section(header="B"), section(header="C")])
    client.ok({"type": "batch", "table": table_name, "moveSections": [{"from": 0, "to": 2}]})
    assert [s["header"] for s in snapshot_of(client, table_name)["sections"]] == ["B", "C", "A"]


def test_batch_errors_name_the_entry_and_apply_nothing(client, table_name):
    create(client, table_name, [section("a", "b", "c")])
    error = client.fails({"type": "batch", "table": table_name, "deleteRows": [{"at": [0, 0]}, {"at": [0, 5]}]},
                         "out_of_range")
    assert error["at"] == "deleteRows[1]" and "[0,5]" in error["message"]
    error = client.fails({"type": "batch", "table": table_name,
                          "deleteRows": [{"at": [0, 1]}], "moveRows": [{"from": [0, 1], "to": [0, 0]}]}, "invalid_batch")
    assert error["at"]
    client.fails({"type": "batch", "table": table_name,
                  "insertRows": [{"at": [0, 1], "value": 1}, {"at": [0, 1], "value": 2}]}, "invalid_batch")
    client.fails({"type": "batch", "table": table_name, "insertRows": [{"at": [0, 5], "value": 1}]}, "out_of_range")
    snap = snapshot_of(client, table_name)
    assert snap["version"] == 0 and values(snap) == [["a", "b", "c"]]


def test_empty_batch_is_a_noop_without_a_new_version(client, table_name):
    create(client, table_name, [section("a")])
    ack = client.ok({"type": "batch", "table": table_name})
    assert ack["noop"] is True and ack["version"] == 0


def test_flags_and_rules_are_enforced(client, table_name):
    create(client, table_name, [section("locked", "free", "last")], rules={"reserveLastRow": True})
    client.ok({"type": "insert", "table": table_name, "at": [0, 0], "value": "pinned", "editable": False,
               "movable": False})
    client.fails({"type": "delete", "table": table_name, "at": [0, 0]}, "not_editable")
    client.fails({"type": "edit", "table": table_name, "at": [0, 0], "value": 1}, "not_editable")
    client.fails({"type": "move", "table": table_name, "from": [0, 0], "to": [0, 1]}, "not_movable")
    # An admin's edit that sets flags unlocks the row (a plain edit above could not touch it).
    client.ok({"type": "edit", "table": table_name, "at": [0, 0], "value": "unpinned", "editable": True})
    client.ok({"type": "edit", "table": table_name, "at": [0, 0], "value": "pinned", "editable": False})
    # The reserved last row cannot be deleted, and an insert at or after it lands just before it.
    client.fails({"type": "delete", "table": table_name, "at": [0, 3]}, "not_editable")
    ack = client.ok({"type": "insert", "table": table_name, "at": [0, 4], "value": "added"})
    assert ack["resolved"] == [[0, 3]]
    client.ok({"type": "setRules", "table": table_name, "rules": {"moves": "none"}})
    client.fails({"type": "move", "table": table_name, "from": [0, 1], "to": [0, 2]}, "not_movable")


def test_within_section_moves_are_retargeted(client, table_name):
    create(client, table_name, [section("a0", "a1", "a2"), section("b0", "b1")], rules={"moves": "withinSection"})
    ack = client.ok({"type": "move", "table": table_name, "from": [1, 1], "to": [0, 0]})
    assert ack["resolved"] == [[1, 0]], "toward an earlier section: row 0 of the source section"
    ack = client.ok({"type": "move", "table": table_name, "from": [0, 0], "to": [1, 0]})
    assert ack["resolved"] == [[0, 2]], "toward a later section: the last row of the source section"
    assert values(snapshot_of(client, table_name)) == [["a1", "a2", "a0"], ["b1", "b0"]]


def test_value_size_limit(client, table_name):
    create(client, table_name, [section()], rules={"maxValueBytes": 100})
    client.fails({"type": "insert", "table": table_name, "at": [0, 0], "value": "x" * 200}, "limit_exceeded")


def test_stale_base_is_rebased_and_conflicts_are_reported(server, table_name):
    a, b = server.client(), server.client()
    create(a, table_name, [section("a", "b", "c", "d")])
    snap = snapshot_of(a, table_name)
    ids = [r["id"] for r in snap["sections"][0]["rows"]]
    a.ok({"type": "delete", "table": table_name, "base": 0, "at": [0, 0]})
    # b still sees version 0: its edit of "c" at [0,2] is rebased to [0,1].
    b.ok({"type": "edit", "table": table_name, "base": 0, "at": [0, 2], "value": "C", "row": ids[2]})
    # Deleting an already-deleted row is a no-op, not an error.
    ack = b.ok({"type": "delete", "table": table_name, "base": 0, "at": [0, 0], "row": ids[0]})
    assert ack.get("noop") is True
    # Editing a row deleted since base is a conflict.
    b.fails({"type": "edit", "table": table_name, "base": 0, "at": [0, 0], "value": "A"}, "conflict")
    # An id that does not match the row at the index path is a conflict.
    b.fails({"type": "edit", "table": table_name, "at": [0, 0], "value": "B", "row": ids[3]}, "conflict")
    # An insert into the gap after "b" at base 0 stays after "b".
    ack = b.ok({"type": "insert", "table": table_name, "base": 0, "at": [0, 2], "value": "b+"})
    assert ack["resolved"] == [[0, 1]]
    assert values(snapshot_of(a, table_name)) == [["b", "b+", "C", "d"]]
    a.close()
    b.close()


def test_idempotent_retry_returns_the_original_ack(server, table_name):
    a = server.client(client_id="bb-retry")
    create(a, table_name, [section()])
    message = {"type": "insert", "table": table_name, "at": [0, 0], "value": "once", "ref": "retry-1"}
    first = a.ok(message)
    a.close()
    again = server.client(client_id="bb-retry")
    second = again.ok(message)
    assert second == first
    assert values(snapshot_of(again, table_name)) == [["once"]]
    again.close()


def test_a_retry_after_its_client_came_back_while_it_was_being_stored_is_applied_once(table_name):
    """An intent's ref is held in memory from when it is resolved. Here its client's only connection closes while
    the intent waits behind another group's commit (each takes 1.5 s), and the client says hello again, which loads
    its stored refs before the intent is stored: the ref is not among them. Once the intent is stored, the server
    must know the ref all the same, or the retry that follows is applied a second time."""
    server = Server("--debug-commit-delay-ms", "1500").start()
    try:
        other = server.client()
        create(other, table_name, [section()])
        other.subscribe(table_name)
        a = server.client(client_id="bb-came-back")
        other.send({"type": "insert", "table": table_name, "at": [0, 0], "value": "first", "ref": "o-1"})
        time.sleep(0.3)
        message = {"type": "insert", "table": table_name, "at": [0, 0], "value": "once", "ref": "back-1"}
        a.send(message)
        time.sleep(0.3)
        a.close()
        time.sleep(0.3)  # its close is heard: the client has no connection left
        again = server.client(client_id="bb-came-back")
        assert other.next("ack", timeout=10, ref="o-1")["version"] == 1
        other.next("update", timeout=10, version=2)  # the intent is stored: its retry is not answered in flight
        ack = again.ok(message)
        assert ack["version"] == 2, ack
        assert values(snapshot_of(again, table_name)) == [["once", "first"]]
        again.close()
        other.close()
    finally:
        server.stop()


def test_a_ref_names_one_intent_reuse_elsewhere_is_refused(server, table_name):
    """The issue's `--client laptop --ref del-1` on table a, then on table b: b must not get a's ack."""
    a = server.client(client_id="bb-laptop-" + table_name)
    other = table_name + "-b"
    create(a, table_name, [section("a1", "a2")])
    create(a, other, [section("b1", "b2")])
    delete = {"type": "delete", "table": table_name, "at": [0, 0], "ref": "del-1"}
    first = a.ok(delete)
    error = a.fails({**delete, "table": other}, "ref_reused")
    assert "del-1" in error["message"] and table_name in error["message"]
    # Another intent with the same ref on the same table is refused too; the same intent is a retry.
    a.fails({**delete, "at": [0, 1]}, "ref_reused")
    assert a.ok({**delete, "base": 0}) == first
    a.close()
    # Across a reconnect (the refs come from the store then), the same holds.
    again = server.client(client_id="bb-laptop-" + table_name)
    again.fails({**delete, "table": other}, "ref_reused")
    assert again.ok(delete) == first
    assert values(snapshot_of(again, table_name)) == [["a2"]]
    assert values(snapshot_of(again, other)) == [["b1", "b2"]], "nothing was applied to the other table"
    again.close()


def test_every_ack_names_the_life_of_its_table(server, table_name):
    a = server.client()
    epoch = create(a, table_name, [section("x")])["epoch"]
    acks = [
        a.ok({"type": "insert", "table": table_name, "at": [0, 0], "value": "y"}),
        a.ok({"type": "batch", "table": table_name}),
        a.ok({"type": "setRules", "table": table_name, "rules": {"moves": "none"}}),
        a.ok({"type": "dropTable", "table": table_name}),
    ]
    assert [ack["epoch"] for ack in acks] == [epoch] * 4, acks
    assert acks[1].get("noop") is True
    a.close()


def test_a_ref_retried_after_its_table_was_dropped_and_created_again_is_refused(server, table_name):
    """The issue's retry of an old ref after the table was dropped and created again got the old table's ack
    (`version` 6 of a table at version 0). The new table is another life of the name: the ref is refused, nothing
    is applied, and so it stays after a reconnect (the refs then come from the store) and on the other node."""
    client_id = "bb-relife-" + table_name
    a = server.client(client_id=client_id)
    first = create(a, table_name, [section()])["epoch"]
    message = {"type": "insert", "table": table_name, "at": [0, 0], "value": "old", "ref": "r-6"}
    for n in range(5):
        a.ok({"type": "insert", "table": table_name, "at": [0, 0], "value": n, "ref": f"r-{n}"})
    acked = a.ok(message)
    assert (acked["version"], acked["epoch"]) == (6, first)
    assert a.ok(message) == acked, "a retry on the same life of the table gets its ack"
    a.ok({"type": "dropTable", "table": table_name})
    second = create(a, table_name, [section()])["epoch"]
    assert second != first
    error = a.fails(message, "ref_reused")
    assert "r-6" in error["message"]
    a.close()
    again = server.client(client_id=client_id)
    again.fails(message, "ref_reused")
    again.fails({**message, "base": 0}, "ref_reused")
    snapshot = snapshot_of(again, table_name)
    assert (snapshot["version"], snapshot["epoch"], values(snapshot)) == (0, second, [[]])
    # A new ref is a new intent on the new table.
    assert again.ok({**message, "ref": "r-7"})["epoch"] == second
    again.close()


def test_a_ref_sent_to_two_tables_at_once_is_applied_on_one_only(server, table_name):
    """Pipelined, the second may arrive before the first is committed: whichever table claims the ref applies it."""
    a = server.client(client_id="bb-twice-" + table_name)
    tables = [table_name, table_name + "-b"]
    for t in tables:
        create(a, t, [section("x", "y")])
    for t in tables:
        a.send({"type": "delete", "table": t, "at": [0, 0], "ref": "once"})
    answers = []
    while len(answers) < 2:
        message = a.recv()
        if message.get("ref") == "once":
            answers.append(message)
    kinds = sorted((m["type"], m.get("code") or m.get("table")) for m in answers)
    assert [k for k, _ in kinds] == ["ack", "error"] and kinds[1][1] == "ref_reused", answers
    acked = kinds[0][1]
    for t in tables:
        assert values(snapshot_of(a, t)) == ([["y"]] if t == acked else [["x", "y"]])
    a.close()


def test_resume_with_since_and_epoch_sends_only_missed_updates(server, table_name):
    a = server.client()
    ack = create(a, table_name, [section()])
    for i in range(5):
        a.ok({"type": "insert", "table": table_name, "at": [0, i], "value": i})
    catch_up, subscribed = a.subscribe(table_name, since=2, epoch=ack["epoch"])
    assert [m["type"] for m in catch_up] == ["update"] * 3
    assert [m["version"] for m in catch_up] == [3, 4, 5] and subscribed["version"] == 5
    b = server.client()
    catch_up, _ = b.subscribe(table_name, since=2, epoch="not-this-table")
    assert [m["type"] for m in catch_up] == ["snapshot"], "a foreign epoch gets a snapshot"
    a.close()
    b.close()


def test_refresh_catches_up_without_subscribing(client, table_name):
    ack = create(client, table_name, [section("a")])
    client.ok({"type": "insert", "table": table_name, "at": [0, 1], "value": "b"})
    client.send({"type": "refresh", "table": table_name, "since": 0, "epoch": ack["epoch"], "ref": "r1"})
    update = client.next("update")
    refreshed = client.next("refreshed")
    assert update["version"] == 1 and refreshed["version"] == 1 and refreshed["ref"] == "r1"


def test_a_noop_is_answered_after_the_change_it_was_resolved_against(client, table_name):
    """An empty batch right behind an insert is a no-op resolved against the uncommitted insert: its ack must not
    overtake the insert's, however the two fall into commit groups."""
    create(client, table_name, [section()])
    order = []
    for i in range(100):
        client.send({"type": "insert", "table": table_name, "at": [0, 0], "value": i, "ref": f"a{i}"})
        client.send({"type": "batch", "table": table_name, "ref": f"b{i}"})
    while len(order) < 200:
        message = client.recv()
        if message["type"] == "ack":
            order.append(message["ref"])
    for i in range(100):
        assert order.index(f"a{i}") < order.index(f"b{i}"), f"the no-op b{i} was answered before a{i}"


def test_malformed_input_is_answered_and_the_connection_stays_usable(client, table_name):
    client.send_raw("{not json")
    error = client.next("error")
    assert error["code"] == "bad_request"
    client.send_raw(json.dumps({"type": "teleport", "ref": "u"}))
    assert client.next("error")["code"] == "unknown_type"
    client.send_raw(json.dumps({"type": "insert", "table": table_name, "at": "zero", "value": 1, "ref": "w"}))
    error = client.next("error", ref="w")
    assert error["code"] == "bad_request" and "at" in error["message"]
    client.send_raw(json.dumps({"type": "insert", "table": table_name, "value": 1, "ref": "m"}))
    assert client.next("error", ref="m")["code"] == "bad_request"
    client.send_raw(json.dumps({"type": "delete", "table": "nope-" + table_name, "at": [0, 0], "ref": "n"}))
    assert client.next("error", ref="n")["code"] == "no_such_table"
    create(client, table_name)


def test_unknown_fields_are_refused_by_name_and_change_nothing(client, table_name):
    create(client, table_name, [section("a", "b")])
    t = table_name
    # Every client message type with a member it does not have (a valid message each, but for that member).
    messages = [
        {"type": "hello", "client": "c1"}, {"type": "createTable", "table": t + "-x"}, {"type": "dropTable", "table": t},
        {"type": "setRules", "table": t, "rules": {}}, {"type": "listTables"}, {"type": "subscribe", "table": t},
        {"type": "refresh", "table": t}, {"type": "unsubscribe", "table": t}, {"type": "editing", "table": t, "on": True},
        {"type": "beginEditingRow", "table": t, "row": "r1"}, {"type": "endEditingRow", "table": t, "row": "r1"},
        {"type": "insert", "table": t, "at": [0, 0], "value": 1}, {"type": "delete", "table": t, "at": [0, 0]},
        {"type": "move", "table": t, "from": [0, 0], "to": [0, 1]}, {"type": "edit", "table": t, "at": [0, 0], "value": 1},
        {"type": "insertSection", "table": t, "at": 0}, {"type": "deleteSection", "table": t, "at": 0},
        {"type": "moveSection", "table": t, "from": 0, "to": 0}, {"type": "editSection", "table": t, "at": 0},
        {"type": "patch", "table": t, "at": [0, 0], "patch": {}}, {"type": "batch", "table": t},
    ]
    assert len(messages) == 21
    for message in messages:
        error = client.fails({**message, "zzz": 1}, "bad_request", check=False)
        assert error["message"] == f"{message['type']}.zzz: unknown field", error
    # Nested: batch entries, rows of inserted sections, rules.
    entries = {"deleteSections": {"at": 0}, "insertSections": {"at": 0}, "reloadSections": {"at": 0},
               "moveSections": {"from": 0, "to": 0}, "deleteRows": {"at": [0, 0]},
               "insertRows": {"at": [0, 0], "value": 1}, "reloadRows": {"at": [0, 0], "value": 1},
               "moveRows": {"from": [0, 0], "to": [0, 1]}, "patchRows": {"at": [0, 0], "patch": {}}}
    for name, entry in entries.items():
        error = client.fails({"type": "batch", "table": t, name: [{**entry, "id": "x"}]}, "bad_request", check=False)
        assert error["message"] == f"{name}[0].id: unknown field" and error["at"] == f"{name}[0].id", error
    nested = [
        ({"type": "batch", "table": t, "insertSections": [{"at": 0, "rows": [{"value": 1, "id": "r"}]}]},
         "insertSections[0].rows[0].id"),
        ({"type": "createTable", "table": t + "-y", "sections": [{"rows": [], "title": "x"}]}, "createTable.sections[0].title"),
        ({"type": "createTable", "table": t + "-y", "sections": [{"rows": [{"value": 1, "flag": 1}]}]},
         "createTable.sections[0].rows[0].flag"),
        ({"type": "setRules", "table": t, "rules": {"move": "none"}}, "setRules.rules.move"),
        ({"type": "batch", "table": t, "insertRow": [{"at": [0, 0], "value": 1}]}, "batch.insertRow"),
        ({"type": "delete", "table": t, "at": [0, 0], "id": "r1"}, "delete.id"),
    ]
    for message, path in nested:
        assert client.fails(message, "bad_request", check=False)["message"] == f"{path}: unknown field"
    # Nothing was applied: the table is as created, at version 0, with its default rules.
    snapshot = snapshot_of(client, t)
    assert snapshot["version"] == 0 and values(snapshot) == [["a", "b"]] and snapshot["rules"]["moves"] == "any"
    assert [x["table"] for x in client.ok({"type": "listTables"}, expect="tables")["tables"] if x["table"].startswith(t)] == [t]


def test_hundred_bad_messages_in_a_row_close_with_1008(server):
    c = server.client()
    for _ in range(100):
        c.send_raw("nonsense")
    codes = []
    try:
        while True:
            codes.append(c.recv()["code"])
    except Exception:
        pass
    assert c.ws.close_code == 1008
    assert len(codes) >= 99 and set(codes) == {"bad_request"}


def test_a_binary_frame_closes_with_1008(server):
    """The spec's close-code table: binary frames are another protocol, not a malformed message."""
    c = server.client()
    c.ws.send(b"\x7b\x7d")
    try:
        message = c.recv()
    except Exception:
        message = None
    assert message is None, f"expected the connection closed, got {message}"
    assert c.ws.close_code == 1008
    assert "binary" in c.ws.close_reason


def test_too_many_batch_entries(client, table_name):
    create(client, table_name, [section()])
    rows = [{"at": [0, i], "value": i} for i in range(1001)]
    client.fails({"type": "batch", "table": table_name, "insertRows": rows}, "limit_exceeded", check=False)


def test_cookbook_4_7_moving_rows_within_and_across_sections(client, table_name):
    create(client, table_name, [section(*[f"Section {s} Cell {c}" for c in (1, 2, 3)]) for s in (1, 2, 3)])
    client.ok({"type": "batch", "table": table_name, "moveRows": [{"from": [0, 0], "to": [0, 1]}]})
    client.ok({"type": "batch", "table": table_name, "moveRows": [{"from": [0, 1], "to": [1, 0]}]})
    assert values(snapshot_of(client, table_name))[:2] == [
        ["Section 1 Cell 2", "Section 1 Cell 3"],
        ["Section 1 Cell 1", "Section 2 Cell 1", "Section 2 Cell 2", "Section 2 Cell 3"]]


def test_cookbook_4_8_deleting_the_odd_section_and_numbers_above_2(client, table_name):
    numbers = [section(0, 2, 4, 6, header="Even Numbers"), section(1, 3, 5, 7, header="Odd Numbers")]
    create(client, table_name, numbers)
    client.ok({"type": "batch", "table": table_name, "deleteSections": [{"at": 1}]})
    snap = snapshot_of(client, table_name)
    assert [s["header"] for s in snap["sections"]] == ["Even Numbers"] and values(snap) == [[0, 2, 4, 6]]
    other = table_name + "-b"
    create(client, other, numbers)
    client.ok({"type": "batch", "table": other,
               "deleteRows": [{"at": p} for p in ([0, 2], [0, 3], [1, 1], [1, 2], [1, 3])]})
    assert values(snapshot_of(client, other)) == [[0, 2], [1]]


def test_listing_8_1_first_row_cannot_move(client, table_name):
    create(client, table_name, [{"rows": [{"value": "first", "movable": False}, {"value": "second"}, {"value": "third"}]}])
    error = client.fails({"type": "batch", "table": table_name, "moveRows": [{"from": [0, 0], "to": [0, 2]}]},
                         "not_movable")
    assert error["at"] == "moveRows[0]"
    client.ok({"type": "batch", "table": table_name, "moveRows": [{"from": [0, 1], "to": [0, 2]}]})
    assert values(snapshot_of(client, table_name)) == [["first", "third", "second"]]


def test_listing_8_3_retargets_into_the_source_section_before_its_placeholder(client, table_name):
    create(client, table_name, [section("a0", "a1", "add"), section("b0", "b1", "b2", "add"), section("c0", "add")],
           rules={"moves": "withinSection", "reserveLastRow": True})
    ack = client.ok({"type": "batch", "table": table_name, "moveRows": [{"from": [1, 0], "to": [2, 0]}]})
    assert ack["resolved"] == [[1, 2]], "toward a later section: the last row before the placeholder"
    ack = client.ok({"type": "batch", "table": table_name, "moveRows": [{"from": [1, 2], "to": [0, 1]}]})
    assert ack["resolved"] == [[1, 0]], "toward an earlier section: row 0 of the source section"
    assert values(snapshot_of(client, table_name))[1] == ["b0", "b1", "b2", "add"]
    client.fails({"type": "batch", "table": table_name, "deleteRows": [{"at": [0, 2]}]}, "not_editable")
