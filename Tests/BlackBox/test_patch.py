"""Rows with fields (issue 24): `patch` intents and `patchRows` merge RFC 7386 patches into a row's value as the
server has it when it commits them, so concurrent changes of different fields all land; over the wire, on SQLite
and on two PostgreSQL nodes, and through `tablecast patch`."""
import json
import subprocess

import pytest

from conftest import tablecast_binary
# One server on SQLite, and two nodes on one PostgreSQL database, as the protocol's tests run.
from test_protocol import server  # noqa: F401


YOGURT = {"title": "Yogurt", "done": False, "qty": 1}
MILK = {"title": "Milk", "done": False, "tags": {"dairy": True, "cold": True}}


def checklist(client, table, rules=None):
    message = {"type": "createTable", "table": table,
               "sections": [{"header": "Groceries", "rows": [{"value": YOGURT}, {"value": MILK}]}]}
    if rules:
        message["rules"] = rules
    client.ok(message)
    catch_up, _ = client.subscribe(table)
    return [row["id"] for row in catch_up[0]["sections"][0]["rows"]]


def rows(server, table):
    """The table's version and its rows' values, as a new subscriber gets them."""
    reader = server.client()
    catch_up, _ = reader.subscribe(table)
    reader.close()
    return catch_up[0]["version"], [row["value"] for row in catch_up[0]["sections"][0]["rows"]]


def test_patches_of_different_fields_from_one_stale_base_both_land(server, table_name):
    ana, bo = server.client(name="Ana"), server.client(name="Bo")
    ids = checklist(ana, table_name)
    ana.ok({"type": "patch", "table": table_name, "base": 0, "at": [0, 0], "row": ids[0], "patch": {"done": True}})
    ack = bo.ok({"type": "patch", "table": table_name, "base": 0, "at": [0, 0], "row": ids[0], "patch": {"qty": 3}})
    assert ack["version"] == 2
    # Updates carry the merged value as a reload, which every replica already applies.
    first, second = ana.next("update", version=1), ana.next("update", version=2)
    assert first["reloadRows"] == [{"at": [0, 0], "value": {"title": "Yogurt", "done": True, "qty": 1}}]
    assert second["reloadRows"] == [{"at": [0, 0], "value": {"title": "Yogurt", "done": True, "qty": 3}}]
    assert second["origin"]["client"] == bo.client_id
    assert rows(server, table_name) == (2, [{"title": "Yogurt", "done": True, "qty": 3}, MILK])
    ana.close()
    bo.close()


def test_null_removes_a_field_nested_objects_merge_and_other_patches_replace(server, client, table_name):
    checklist(client, table_name)
    client.ok({"type": "patch", "table": table_name, "at": [0, 1],
               "patch": {"done": True, "tags": {"cold": None, "organic": True}}})
    client.ok({"type": "patch", "table": table_name, "at": [0, 0], "patch": {"qty": None, "note": "greek"}})
    assert rows(server, table_name)[1] == [
        {"title": "Yogurt", "done": False, "note": "greek"},
        {"title": "Milk", "done": True, "tags": {"dairy": True, "organic": True}},
    ]
    client.ok({"type": "patch", "table": table_name, "at": [0, 0], "patch": "just text"})
    assert rows(server, table_name)[1][0] == "just text"
    # A patch that changes nothing commits nothing.
    ack = client.ok({"type": "patch", "table": table_name, "at": [0, 1], "patch": {"done": True, "gone": None}})
    assert ack.get("noop") is True


def test_patches_in_a_batch(server, client, table_name):
    ids = checklist(client, table_name)
    client.ok({"type": "insert", "table": table_name, "at": [0, 2], "value": {"title": "Figs"}})
    ack = client.ok({"type": "batch", "table": table_name, "base": 0,
                     "deleteRows": [{"at": [0, 0], "row": ids[0]}],
                     "patchRows": [{"at": [0, 1], "row": ids[1], "patch": {"done": True}}]})
    assert ack["version"] == 2
    update = client.next("update", version=2)
    assert update["deleteRows"] == [[0, 0]]
    assert update["reloadRows"] == [{"at": [0, 1], "value": dict(MILK, done=True)}]
    assert rows(server, table_name)[1] == [dict(MILK, done=True), {"title": "Figs"}]


def test_a_patch_of_a_deleted_row_is_refused_and_nothing_is_applied(server, table_name):
    ana, bo = server.client(), server.client()
    ids = checklist(ana, table_name)
    ana.ok({"type": "delete", "table": table_name, "at": [0, 0], "row": ids[0]})
    error = bo.fails({"type": "patch", "table": table_name, "base": 0, "at": [0, 0], "patch": {"done": True}},
                     "conflict")
    assert error["message"] == "patch: row [0,0] of version 0 has been deleted since"
    error = bo.fails({"type": "batch", "table": table_name, "base": 0,
                      "insertRows": [{"at": [0, 0], "value": {"title": "Bread"}}],
                      "patchRows": [{"at": [0, 1], "patch": {"done": True}}, {"at": [0, 0], "patch": {"qty": 2}}]},
                     "conflict")
    assert error["message"] == "patchRows[1]: row [0,0] of version 0 has been deleted since"
    assert rows(server, table_name) == (1, [MILK])
    ana.close()
    bo.close()


def test_rules_and_limits_apply_to_the_merged_value(server, client, table_name):
    checklist(client, table_name, rules={"maxValueBytes": 70})
    error = client.fails({"type": "patch", "table": table_name, "at": [0, 1], "patch": {"note": "x" * 20}},
                         "limit_exceeded")
    assert error["message"] == "patch: value is 93 bytes, more than the limit of 70"
    client.ok({"type": "patch", "table": table_name, "at": [0, 1], "patch": {"tags": None, "note": "x" * 20}})
    admin_only = {"type": "edit", "table": table_name, "at": [0, 0], "value": YOGURT, "editable": False}
    client.ok(admin_only)
    error = client.fails({"type": "patch", "table": table_name, "at": [0, 0], "patch": {"done": True}},
                         "not_editable")
    assert error["message"] == "patch: row [0,0] is not editable"
    assert rows(server, table_name)[1] == [YOGURT, {"title": "Milk", "done": False, "note": "x" * 20}]


@pytest.mark.parametrize("message, text", [
    ({"at": [0, 0]}, "patch.patch: missing"),
    ({"at": [0, 0], "patch": {}, "value": 1}, "patch.value: unknown field"),
    ({"at": "0,0", "patch": {}}, "patch.at: expected an index path"),
    ({"type": "batch", "patchRows": {"at": [0, 0], "patch": {}}}, "batch.patchRows: expected an array"),
    ({"type": "batch", "patchRows": [{"at": [0, 0]}]}, "patchRows[0].patch: missing"),
])
def test_a_malformed_patch_is_refused_by_name(server, client, table_name, message, text):
    checklist(client, table_name)
    error = client.fails({"type": "patch", "table": table_name, **message}, "bad_request", check=False)
    assert error["message"].startswith(text), error
    assert rows(server, table_name) == (0, [YOGURT, MILK])


def test_tablecast_patch(server, client, table_name):
    checklist(client, table_name)
    url = server.url
    done = subprocess.run([tablecast_binary(), "patch", "--url", url, "--table", table_name, "--at", "0,0",
                           '{"done": true, "qty": null}'], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["version"] == 1
    assert rows(server, table_name)[1][0] == {"title": "Yogurt", "done": True}
    bad = subprocess.run([tablecast_binary(), "patch", "--url", url, "--table", table_name, "--at", "0,0",
                          "{done}"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "the patch is not JSON" in bad.stderr


def test_watch_pretty_shows_the_fields_a_patch_set(server, table_name):
    ana = server.client(name="Ana")
    checklist(ana, table_name)
    watch = subprocess.Popen([tablecast_binary(), "watch", "--url", server.url, "--table", table_name, "--pretty",
                              "--updates", "2", "--name", "watcher"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        # Once the watcher joined it has the snapshot and knows who Ana is (presence).
        while not any(entry["name"] == "watcher" for entry in ana.next("presence", timeout=20)["joined"]):
            pass
        ana.ok({"type": "patch", "table": table_name, "at": [0, 0], "patch": {"done": True}})
        ana.ok({"type": "patch", "table": table_name, "at": [0, 1], "patch": {"tags": None, "note": "oat"}})
        out, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
        watch.wait()
    lines = out.splitlines()
    assert 'v1 by Ana: [0,0] "Yogurt": done → true' in lines, out + err
    assert 'v2 by Ana: [0,1] "Milk": note → "oat", tags removed' in lines, out + err
    ana.close()
