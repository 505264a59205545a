"""The table-view rules over a real server: limits lowered below a table's content (live and across a restart
on the same SQLite file), last writer wins for concurrent edits of one row, and retargeting in a batch."""
import json
import urllib.request

from conftest import Server
from replica import Replica
from test_operations import snapshot, values


def section(*values):
    return {"rows": [{"value": v} for v in values]}


def healthy(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as response:
        return response.status == 200


def test_an_intent_on_a_table_over_its_section_limit_does_not_crash_the_server(server):
    a = server.client()
    a.ok({"type": "createTable", "table": "few", "sections": [section("a", "b"), section("c")]})
    a.ok({"type": "setRules", "table": "few", "rules": {"maxSections": 1}})
    # A plain delete used to kill the whole server (index out of range while labelling a limit error).
    a.ok({"type": "delete", "table": "few", "at": [0, 0]})
    refused = a.fails({"type": "insertSection", "table": "few", "at": 0}, "limit_exceeded")
    assert refused["at"] == "insertSection"
    assert healthy(server)
    assert values(snapshot(a, "few")) == [["b"], ["c"]]
    a.close()


def test_limits_lowered_below_the_content_apply_only_to_growth_live_and_after_a_restart():
    server = Server().start()
    a = server.client()
    a.ok({"type": "createTable", "table": "over", "sections": [section("a", "b"), section("0123456789"), section()]})
    # Log entries committed under the old limits, which start-up replays under the new ones.
    a.ok({"type": "insert", "table": "over", "at": [0, 2], "value": "c"})
    a.ok({"type": "insertSection", "table": "over", "at": 3, "rows": [{"value": "d"}]})
    a.ok({"type": "setRules", "table": "over", "rules": {"maxSections": 2, "maxRowsPerSection": 2, "maxValueBytes": 5}})
    a.close()
    server.stop()

    server.start()
    b = server.client()
    b.ok({"type": "delete", "table": "over", "at": [0, 0]})
    assert values(snapshot(b, "over")) == [["b", "c"], ["0123456789"], [], ["d"]]
    # Deletes, edits and moves do not grow anything, so they work while the table is over its limits.
    b.ok({"type": "edit", "table": "over", "at": [0, 0], "value": "B"})
    b.ok({"type": "move", "table": "over", "from": [0, 0], "to": [0, 1]})
    b.ok({"type": "edit", "table": "over", "at": [1, 0], "value": "9876543210"})  # no bigger than before
    b.ok({"type": "move", "table": "over", "from": [3, 0], "to": [2, 0]})
    b.ok({"type": "deleteSection", "table": "over", "at": 3})
    # Growing past a limit is refused, naming the entry and the limit.
    refused = b.fails({"type": "insertSection", "table": "over", "at": 0}, "limit_exceeded")
    assert refused["message"] == "insertSection: table would have 4 sections, more than the limit of 2"
    refused = b.fails({"type": "insert", "table": "over", "at": [0, 0], "value": "x"}, "limit_exceeded")
    assert refused["message"] == "insert: section 0 would have 3 rows, more than the limit of 2"
    refused = b.fails({"type": "edit", "table": "over", "at": [0, 0], "value": "0123456789"}, "limit_exceeded")
    assert refused["message"] == "edit: value is 12 bytes, more than the limit of 5"
    b.ok({"type": "insert", "table": "over", "at": [2, 1], "value": "e"})
    expected = [["c", "B"], ["9876543210"], ["d", "e"]]
    assert values(snapshot(b, "over")) == expected
    b.close()
    server.stop()

    # And again, with entries committed under the lowered limits in the log.
    server.start()
    c = server.client()
    assert values(snapshot(c, "over")) == expected
    c.close()
    server.stop()


def test_concurrent_edits_of_one_row_last_writer_wins(server):
    alice, bob = server.client(), server.client()
    alice.ok({"type": "createTable", "table": "lww", "sections": [section("milk", "eggs")]})
    catch_up, subscribed = bob.subscribe("lww")
    base = subscribed["version"]
    row = catch_up[0]["sections"][0]["rows"][1]["id"]
    # Both edit the same row from the same base: no conflict, the later commit is the row's value.
    first = alice.ok({"type": "edit", "table": "lww", "base": base, "at": [0, 1], "row": row, "value": "2 eggs"})
    second = bob.ok({"type": "edit", "table": "lww", "base": base, "at": [0, 1], "row": row, "value": "6 eggs"})
    assert second["version"] == first["version"] + 1
    assert [bob.next("update")["reloadRows"] for _ in range(2)] == [
        [{"at": [0, 1], "value": "2 eggs"}], [{"at": [0, 1], "value": "6 eggs"}]]
    assert values(snapshot(alice, "lww")) == [["milk", "6 eggs"]]
    # A row deleted since the base is a conflict.
    alice.ok({"type": "delete", "table": "lww", "at": [0, 1]})
    refused = bob.fails({"type": "edit", "table": "lww", "base": base, "at": [0, 1], "value": "12 eggs"}, "conflict")
    assert refused["message"] == f"edit: row [0,1] of version {base} has been deleted since"
    alice.close()
    bob.close()


def test_a_batch_whose_moves_are_retargeted_into_one_section_is_accepted(server):
    c = server.client()
    c.ok({"type": "createTable", "table": "within", "rules": {"moves": "withinSection"},
          "sections": [section("a0"), section("b0", "b1", "b2"), section("c0")]})
    ack = c.ok({"type": "batch", "table": "within", "moveRows": [
        {"from": [1, 1], "to": [0, 0]}, {"from": [1, 2], "to": [0, 1]},  # toward an earlier section: first rows
    ]})
    assert ack["resolved"] == [[1, 0], [1, 1]]
    ack = c.ok({"type": "batch", "table": "within", "moveRows": [
        {"from": [1, 0], "to": [2, 0]}, {"from": [1, 1], "to": [2, 1]},  # toward a later section: last rows
    ]})
    assert ack["resolved"] == [[1, 1], [1, 2]]
    assert values(snapshot(c, "within")) == [["a0"], ["b0", "b1", "b2"], ["c0"]]
    c.close()


def test_a_section_reload_with_rows_replaces_them_for_every_replica(server):
    editor, watcher = server.client(), server.client()
    editor.ok({"type": "createTable", "table": "reload", "sections": [
        {"header": "Packing", "rows": [{"value": "tent"}, {"value": "stove"}]}, section("rice")]})
    catch_up, subscribed = watcher.subscribe("reload")
    replica = Replica(catch_up[0])
    base = subscribed["version"]
    ack = editor.ok({"type": "editSection", "table": "reload", "base": base, "at": 0, "header": "Pack",
                     "rows": [{"value": "tent"}, {"value": "lamp"}, {"value": "map"}]})
    assert len(ack["created"]) == 3
    update = watcher.next("update")
    assert update["deleteRows"] == [[0, 0], [0, 1]] and update["reloadSections"] == [{"at": 0, "header": "Pack", "footer": None}]
    replica.apply(update)
    # A stale edit of a replaced row meets a deleted row; a stale delete of one is a no-op.
    refused = editor.fails({"type": "edit", "table": "reload", "base": base, "at": [0, 1], "value": "x"}, "conflict")
    assert refused["message"] == f"edit: row [0,1] of version {base} has been deleted since"
    assert editor.ok({"type": "delete", "table": "reload", "base": base, "at": [0, 1]}).get("noop") is True
    editor.fails({"type": "batch", "table": "reload", "reloadSections": [{"at": 1, "rows": []}],
                  "insertRows": [{"at": [1, 0], "value": "tea"}]}, "invalid_batch")
    editor.ok({"type": "batch", "table": "reload", "reloadSections": [{"at": 1, "rows": [{"value": "tea"}]}]})
    replica.apply(watcher.next("update"))
    final = snapshot(editor, "reload")
    assert values(final) == [["tent", "lamp", "map"], ["tea"]]
    assert replica.sections == final["sections"] and replica.version == final["version"]
    editor.close()
    watcher.close()


def test_locked_rows_in_a_section_reload_need_the_admin_role(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"token": "writer", "role": "write", "tables": ["*"]}, {"token": "admin", "role": "admin", "tables": ["*"]}]}))
    server = Server("--tokens", str(tokens)).start()
    admin, writer = server.client(token="admin"), server.client(token="writer")
    admin.ok({"type": "createTable", "table": "locks", "sections": [section("a")]})
    locked = [{"value": "b", "editable": False}]
    writer.fails({"type": "editSection", "table": "locks", "at": 0, "rows": locked}, "forbidden")
    writer.fails({"type": "batch", "table": "locks", "reloadSections": [{"at": 0, "rows": locked}]}, "forbidden")
    writer.ok({"type": "editSection", "table": "locks", "at": 0, "rows": [{"value": "b"}]})
    admin.ok({"type": "editSection", "table": "locks", "at": 0, "rows": locked})
    assert snapshot(admin, "locks")["sections"][0]["rows"][0]["editable"] is False
    admin.close()
    writer.close()
    server.stop()
