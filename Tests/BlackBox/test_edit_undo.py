"""`tablecast edit` answers at once and undoes: keys typed in a burst compose, and `u` brings back what `d` `y`
deleted, for everyone (two editors in tmux on a real server, as in test_edit.py)."""
import uuid

from conftest import tablecast_binary
from test_edit import Tmux, body, line_with, save_stty, setup  # noqa: F401 (setup is a fixture)

LETTERS = ["a", "b", "c", "d", "e"]


def rows(screen):
    return [line for line in body(screen) if line in LETTERS]


def test_burst_of_moves_and_undo_of_a_delete(setup):  # noqa: F811
    server, tmux = setup
    table = f"t-{uuid.uuid4().hex[:8]}"
    admin = server.client()
    admin.ok({"type": "createTable", "table": table,
              "sections": [{"header": "List", "rows": [{"value": v} for v in LETTERS]}]})
    admin.close()
    binary = tablecast_binary()
    for window in ("alice", "bob"):
        save_stty(tmux, window)
        tmux.type(window, f"{binary} edit {table} --url {server.url} --name {window}")
        tmux.keys(window, "Enter")
    for window in ("alice", "bob"):
        tmux.wait_for(window, "● live")
        tmux.wait(window, lambda s: rows(s) == LETTERS, "the table")

    tmux.keys("alice", "?")
    tmux.wait_for("alice", "undo your last change / redo it")
    tmux.keys("alice", "x")
    tmux.wait("alice", lambda s: "Keys" not in s and rows(s) == LETTERS, "help closed")

    tmux.keys("alice", "g", "j")
    tmux.wait("alice", lambda s: "▶" in line_with(s, " a"), "cursor on a")
    # Three moves pressed at once: each is made against the one before, so the row moves three places.
    tmux.keys("alice", "J", "J", "J")
    for window in ("alice", "bob"):
        tmux.wait(window, lambda s: rows(s) == ["b", "c", "d", "a", "e"], "a moved three places")

    # Delete it (d, y), then undo: it comes back where it was, for both editors.
    tmux.keys("alice", "d")
    tmux.wait_for("alice", "“a”: [y] Delete")
    tmux.keys("alice", "y")
    for window in ("alice", "bob"):
        tmux.wait(window, lambda s: rows(s) == ["b", "c", "d", "e"], "a deleted")
    tmux.keys("alice", "u")
    for window in ("alice", "bob"):
        tmux.wait(window, lambda s: rows(s) == ["b", "c", "d", "a", "e"], "a back after undo")
    tmux.wait_for("alice", "undo: done")
    # Redo deletes it again; a second redo has nothing to do.
    tmux.keys("alice", "U")
    tmux.wait("bob", lambda s: rows(s) == ["b", "c", "d", "e"], "a deleted again by redo")
    tmux.keys("alice", "U")
    tmux.wait_for("alice", "nothing to redo")
    tmux.keys("alice", "q")
    tmux.keys("bob", "q")
