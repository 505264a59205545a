"""Per-row editing style (`editingStyleForRowAt`) over the wire: who may set it, what it refuses, that it lasts.

`delete` is the default; `none` rows cannot be deleted; `insert` rows are add-item placeholders wherever they are:
not deleted, not moved, and rows go next to them where they are put.
"""
import json

from conftest import Server

TOKENS = {"tokens": [
    {"token": "writer", "role": "write", "tables": ["*"]},
    {"token": "admin", "role": "admin", "tables": ["*"]},
]}


def snapshot_rows(client, table):
    catch_up, _ = client.subscribe(table)
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return catch_up[0]["sections"][0]["rows"]


def styles(rows):
    return [(row["value"], row.get("editingStyle", "delete")) for row in rows]


def test_editing_style_is_set_by_admins_enforced_for_everyone_and_kept_across_a_restart(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = Server("--tokens", str(tokens)).start()
    admin = server.client(token="admin")
    admin.ok({"type": "createTable", "table": "list", "sections": [{"header": "List", "rows": [
        {"value": "Bread"}, {"value": "Add item", "editingStyle": "insert"}, {"value": "Water", "editingStyle": "none"}]}]})
    writer = server.client(token="writer")

    # Setting a style is an admin's decision, like the other row flags; the default may be sent by anyone.
    writer.fails({"type": "insert", "table": "list", "at": [0, 0], "value": "x", "editingStyle": "insert"}, "forbidden")
    writer.fails({"type": "edit", "table": "list", "at": [0, 0], "value": "Bread", "editingStyle": "none"}, "forbidden")
    writer.fails({"type": "batch", "table": "list",
                  "reloadRows": [{"at": [0, 0], "value": "Bread", "editingStyle": "delete"}]}, "forbidden")
    writer.ok({"type": "insert", "table": "list", "at": [0, 0], "value": "Jam", "editingStyle": "delete"})
    admin.fails({"type": "edit", "table": "list", "at": [0, 0], "value": "Jam", "editingStyle": "swipe"}, "bad_request",
                check=False)

    # [Jam, Bread, Add item (insert), Water (none)]: the placeholder and the none row are never deleted, even by an
    # admin; the placeholder is not moved; rows go right next to it, on either side.
    error = writer.fails({"type": "delete", "table": "list", "at": [0, 2]}, "not_editable")
    assert error["message"] == "delete: row [0,2] is an add-item placeholder (editingStyle insert)"
    error = admin.fails({"type": "batch", "table": "list", "deleteRows": [{"at": [0, 0]}, {"at": [0, 3]}]}, "not_editable")
    assert error["message"] == "deleteRows[1]: row [0,3] cannot be deleted (editingStyle none)"
    writer.fails({"type": "move", "table": "list", "from": [0, 2], "to": [0, 0]}, "not_movable")
    assert writer.ok({"type": "insert", "table": "list", "at": [0, 3], "value": "Tea"})["resolved"] == [[0, 3]]
    assert writer.ok({"type": "move", "table": "list", "from": [0, 3], "to": [0, 2]})["resolved"] == [[0, 2]]
    writer.ok({"type": "edit", "table": "list", "at": [0, 4], "value": "Sparkling water"})
    assert styles(snapshot_rows(writer, "list")) == [
        ("Jam", "delete"), ("Bread", "delete"), ("Tea", "delete"), ("Add item", "insert"), ("Sparkling water", "none")]

    # An admin changes a style with an edit; subscribers get it in the update.
    catch_up, _ = writer.subscribe("list")
    admin.ok({"type": "edit", "table": "list", "at": [0, 4], "value": "Sparkling water", "editingStyle": "delete"})
    update = writer.next("update")
    assert update["reloadRows"] == [{"at": [0, 4], "value": "Sparkling water", "editingStyle": "delete"}]
    writer.ok({"type": "delete", "table": "list", "at": [0, 4]})
    writer.close()
    admin.close()
    server.stop()

    # The styles are stored: after a restart (snapshot plus replayed log) they are the same.
    server.start()
    again = server.client(token="admin")
    assert styles(snapshot_rows(again, "list")) == [
        ("Jam", "delete"), ("Bread", "delete"), ("Tea", "delete"), ("Add item", "insert")]
    again.close()
    server.stop()
