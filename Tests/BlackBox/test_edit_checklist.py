"""The terminal editor with items (issue 24): `[x] title`, `x` toggles `done` with a patch of that field alone, so
a change of another field made meanwhile (by a page, a script, another editor) stays; driven through tmux."""
import shutil
import uuid

import pytest

from conftest import tablecast_binary
from test_edit import Tmux, assert_cooked, line_with, save_stty, setup  # noqa: F401 (setup is a fixture)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def values(client, table):
    catch_up, _ = client.subscribe(table)
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return [row["value"] for row in catch_up[0]["sections"][0]["rows"]]


def test_x_ticks_an_item_with_a_patch_and_others_changes_stay(setup):  # noqa: F811
    server, tmux = setup
    table = f"t-{uuid.uuid4().hex[:8]}"
    admin = server.client()
    admin.ok({"type": "createTable", "table": table, "sections": [{"header": "Groceries", "footer": None, "rows": [
        {"value": {"title": "Yogurt", "done": False, "qty": 1}},
        {"value": {"title": "Milk", "done": True, "note": "oat"}},
    ]}]})
    save_stty(tmux, "alice")
    tmux.type("alice", f"{tablecast_binary()} edit {table} --url {server.url} --name alice")
    tmux.keys("alice", "Enter")
    screen = tmux.wait_for("alice", "[ ] Yogurt")
    assert "[x] Milk — oat" in screen

    # x on Yogurt ticks it; someone else's change of its quantity meanwhile stays, and shows nowhere as a clash.
    admin.ok({"type": "patch", "table": table, "at": [0, 0], "patch": {"qty": 6}})
    tmux.keys("alice", "j", "x")
    tmux.wait("alice", lambda s: "[x] Yogurt" in line_with(s, "Yogurt"), "Yogurt ticked")
    assert values(admin, table)[0] == {"title": "Yogurt", "done": True, "qty": 6}
    # x again unticks; on Milk it unticks that one.
    tmux.keys("alice", "x")
    tmux.wait("alice", lambda s: "[ ] Yogurt" in line_with(s, "Yogurt"), "Yogurt unticked")
    tmux.keys("alice", "j", "x")
    tmux.wait("alice", lambda s: "[ ] Milk" in line_with(s, "Milk"), "Milk unticked")
    # Editing an item edits its title only.
    tmux.keys("alice", "e")
    tmux.wait_for("alice", "Edit: Milk")
    tmux.keys("alice", "C-u")
    tmux.type("alice", "Oat milk")
    tmux.keys("alice", "Enter")
    tmux.wait("alice", lambda s: "[ ] Oat milk — oat" in s, "the new title")
    assert values(admin, table) == [{"title": "Yogurt", "done": False, "qty": 6},
                                    {"title": "Oat milk", "done": False, "note": "oat"}]
    tmux.keys("alice", "q")
    tmux.wait("alice", lambda s: s.rstrip().endswith("READY$") and "Oat milk" not in s, "the shell prompt")
    assert_cooked(tmux, "alice")
    admin.close()
