"""`tablecast edit`, the live terminal editor, driven through tmux like a person at a keyboard.

Two editors (alice and bob) run in two windows of one tmux session (fixed 100x30) on one table of a real server.
Keys go in with `tmux send-keys`, screens come out with `tmux capture-pane -p`; every check polls the screen with a
timeout rather than sleeping. Each editor must see the other's insert, edit, move and confirmed delete, presence
must show the other person (and the row they are editing), a server error must reach the status line, and quitting
must give the shell back its screen and a cooked (not raw) terminal.
"""
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import Server, tablecast_binary

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One private tmux server (its own socket) with one session of fixed size."""

    def __init__(self):
        self.socket = f"tablecast-edit-{uuid.uuid4().hex[:8]}"
        self.session = "edit"
        # A plain shell with a known prompt, so the test can see when the shell has the terminal back.
        self.shell = "env -i PATH=/usr/bin:/bin TERM=xterm-256color PS1='READY$ ' bash --norc --noprofile"
        self.run("new-session", "-d", "-x", "100", "-y", "30", "-s", self.session, "-n", "alice", self.shell)
        self.run("new-window", "-t", self.session, "-n", "bob", self.shell)

    def run(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def keys(self, window, *keys):
        self.run("send-keys", "-t", f"{self.session}:{window}", *keys)

    def type(self, window, text):
        self.run("send-keys", "-t", f"{self.session}:{window}", "-l", text)

    def screen(self, window):
        return self.run("capture-pane", "-p", "-t", f"{self.session}:{window}")

    def display(self, window, fmt):
        return self.run("display-message", "-p", "-t", f"{self.session}:{window}", fmt).strip()

    def wait(self, window, predicate, what, timeout=10):
        """Polls the screen until `predicate(screen)` holds; fails with the last screen after `timeout` s."""
        deadline = time.time() + timeout
        while True:
            screen = self.screen(window)
            if predicate(screen):
                return screen
            if time.time() > deadline:
                pytest.fail(f"{window}: no {what} within {timeout}s; screen:\n{screen}")
            time.sleep(0.05)

    def wait_for(self, window, text, timeout=10):
        return self.wait(window, lambda s: text in s, repr(text), timeout)

    def kill(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def body(screen):
    """The table part of an editor screen: the lines between the separator and the status line, stripped, without
    the cursor mark."""
    lines = screen.split("\n")
    return [line.replace("▶", " ").strip() for line in lines[3:27] if line.strip()]


def save_stty(tmux, window):
    """Remembers the shell's terminal settings (cooked) before an editor runs."""
    tmux.type(window, "SAVED=$(stty -g); clear")
    tmux.keys(window, "Enter")


def assert_cooked(tmux, window):
    """The terminal settings are exactly those saved before the editor ran (no raw mode left behind)."""
    tmux.type(window, 'test "$(stty -g)" = "$SAVED" && echo RESTORED$((40+2)) || echo CHANGED$((40+2))')
    tmux.keys(window, "Enter")
    screen = tmux.wait(window, lambda s: "RESTORED42" in s or "CHANGED42" in s, "the stty check")
    assert "RESTORED42" in screen, screen


def line_with(screen, text):
    """The first table line (not the presence line) that contains `text`."""
    return next((line for line in screen.split("\n")[3:27] if text in line), "")


@pytest.fixture
def setup():
    server = Server().start()
    tmux = Tmux()
    yield server, tmux
    tmux.kill()
    server.stop()


def test_two_editors_see_each_others_edits_live(setup):
    server, tmux = setup
    table = f"t-{uuid.uuid4().hex[:8]}"
    admin = server.client()
    admin.ok({"type": "createTable", "table": table, "rules": {"deleteConfirmationTitle": "Remove", "maxSections": 2},
              "sections": [
        {"header": "Fruit", "footer": "fresh today", "rows": [
            {"value": "apple"}, {"value": "banana"}, {"value": "pinned", "editable": False, "movable": False}]},
        {"header": "Dairy", "footer": None, "rows": [{"value": "milk"}]},
    ]})
    admin.close()

    binary = tablecast_binary()
    for window, name in (("alice", "alice"), ("bob", "bob")):
        save_stty(tmux, window)
        tmux.type(window, f"{binary} edit {table} --url {server.url} --name {name}")
        tmux.keys(window, "Enter")
    for window in ("alice", "bob"):
        # "live" can show a moment before the snapshot is drawn: wait for the table itself.
        tmux.wait_for(window, "● live")
        screen = tmux.wait_for(window, "▼ Dairy")
        assert "▼ Fruit" in screen and "fresh today" in screen
        assert tmux.display(window, "#{alternate_on}") == "1"
    # Presence: each sees the other.
    tmux.wait_for("alice", "here: bob")
    tmux.wait_for("bob", "here: alice")

    # The help overlay lists the keys; any key closes it.
    tmux.keys("alice", "?")
    tmux.wait_for("alice", "delete all selected rows in one batch")
    tmux.keys("alice", "x")
    tmux.wait("alice", lambda s: "Keys" not in s and "apple" in s, "help closed")

    # Insert: alice adds "kiwi" after apple; bob sees it.
    tmux.keys("alice", "j", "a")
    tmux.wait_for("alice", "New row:")
    tmux.type("alice", "kiwi")
    tmux.keys("alice", "Enter")
    tmux.wait("bob", lambda s: body(s)[1:4] == ["apple", "kiwi", "banana"], "kiwi after apple")

    # Edit in place: while bob edits apple, alice sees him on that row; then the new value.
    tmux.keys("bob", "j", "e")
    tmux.wait_for("bob", "Edit: apple")
    screen = tmux.wait("alice", lambda s: "✎ bob" in line_with(s, "apple"), "bob editing apple")
    assert "here: bob ✎ apple" in screen
    tmux.keys("bob", "C-u")
    tmux.type("bob", "apricot")
    tmux.keys("bob", "Enter")
    tmux.wait("alice", lambda s: "apricot" in s and "✎" not in line_with(s, "apricot"), "apricot, editing ended")

    # Move: alice moves kiwi (her cursor is on the row she added) up, then into the next section.
    tmux.keys("alice", "K")
    tmux.wait("bob", lambda s: body(s)[1:3] == ["kiwi", "apricot"], "kiwi moved up")
    tmux.keys("alice", "]")
    tmux.wait("bob", lambda s: body(s)[-3:] == ["▼ Dairy", "kiwi", "milk"], "kiwi moved into Dairy")
    # Bob's cursor stayed on his row (apricot) through alice's changes.
    assert "▶" in line_with(tmux.screen("bob"), "apricot")

    # Delete with the one-key confirmation showing the table's title; alice sees bob on the row meanwhile.
    tmux.keys("bob", "j", "d")
    tmux.wait_for("bob", "“banana”: [y] Remove")
    tmux.wait("alice", lambda s: "✎ bob" in line_with(s, "banana"), "bob deleting banana")
    tmux.keys("bob", "y")
    for window in ("alice", "bob"):
        tmux.wait(window, lambda s: "banana" not in s, "banana deleted")

    # What the editor knows the server refuses it refuses at once: moving or deleting the locked row.
    tmux.keys("alice", "g", "j", "j")
    tmux.wait("alice", lambda s: "▶" in line_with(s, "pinned"), "cursor on pinned")
    tmux.keys("alice", "K")
    tmux.wait_for("alice", "✗ this row cannot be moved")
    tmux.keys("alice", "d")
    screen = tmux.wait_for("alice", "✗ this row is locked: it cannot be deleted")
    assert "[y] Remove" not in screen
    # A refused intent: the server's error reaches the status line and the table stays as it is.
    tmux.keys("alice", "A")
    tmux.type("alice", "Bakery")
    tmux.keys("alice", "Enter")
    screen = tmux.wait_for("alice", "new section failed: limit_exceeded")
    assert body(screen)[1:3] == ["apricot", "pinned  (locked)"] and "Bakery" not in screen

    # Refresh shows refreshing… until refreshed.
    tmux.keys("bob", "r")
    tmux.wait_for("bob", "refreshed at v")

    # Quitting gives the shell its screen back, in cooked mode.
    for window in ("alice", "bob"):
        tmux.keys(window, "q")
    for window in ("alice", "bob"):
        tmux.wait(window, lambda s: s.rstrip().endswith("READY$") and "▼ Fruit" not in s, "the shell prompt")
        assert tmux.display(window, "#{alternate_on}") == "0"
        assert tmux.display(window, "#{cursor_flag}") == "1"
        assert_cooked(tmux, window)


@pytest.mark.parametrize("signal_name,status", [("TERM", 143), ("INT", 130), ("SEGV", 139), ("ABRT", 134)])
def test_edit_restores_the_terminal_when_killed(setup, signal_name, status):
    """SIGTERM, SIGINT and the crash signals restore termios and leave the alternate screen, then the signal takes
    its course (the shell sees 128 + the signal's number)."""
    server, tmux = setup
    tmux.type("alice", "ulimit -c 0")  # no core files from SIGSEGV/SIGABRT
    tmux.keys("alice", "Enter")
    admin = server.client()
    admin.ok({"type": "createTable", "table": "killed", "sections": [{"header": None, "footer": None,
                                                                      "rows": [{"value": "x"}]}]})
    admin.close()
    save_stty(tmux, "alice")
    tmux.type("alice", f"{tablecast_binary()} edit killed --url {server.url}")
    tmux.keys("alice", "Enter")
    tmux.wait_for("alice", "● live")
    pid = tmux.display("alice", "#{pane_pid}")
    editor = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
    assert editor, "the editor process is not found"
    subprocess.run(["kill", f"-{signal_name}", editor[0]], check=True)
    # (bash drops the rest of a command line whose command died of SIGINT, so the status is asked afterwards.)
    tmux.wait("alice", lambda s: s.rstrip().endswith("READY$") and "● live" not in s, "the shell prompt")
    tmux.type("alice", "echo EXIT=$?")
    tmux.keys("alice", "Enter")
    tmux.wait_for("alice", f"EXIT={status}")
    assert tmux.display("alice", "#{alternate_on}") == "0"
    assert_cooked(tmux, "alice")


def test_edit_without_the_table_exits_with_the_servers_error(setup):
    server, tmux = setup
    tmux.type("alice", f"{tablecast_binary()} edit nope --url {server.url}; echo EXIT=$?")
    tmux.keys("alice", "Enter")
    screen = tmux.wait_for("alice", "EXIT=1")
    assert "no_such_table" in screen
    assert tmux.display("alice", "#{alternate_on}") == "0"


def width(text):
    """Terminal columns of `text` as tmux lays it out: wide (CJK, emoji) 2, combining marks 0."""
    import unicodedata
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_wide_characters_resize_and_reconnect(setup):
    server, tmux = setup
    wide = "苹果 🍰 e\u0301clair"
    admin = server.client()
    ack = admin.ok({"type": "createTable", "table": "wide", "sections": [
        {"header": "食べ物", "footer": None, "rows": [{"value": wide}, {"value": {"qty": 2}}]}]})
    # Someone else (a protocol client) is editing the wide row: its ✎ mark goes flush right.
    catch_up, _ = admin.subscribe("wide")
    row_id = catch_up[0]["sections"][0]["rows"][0]["id"]
    admin.send({"type": "beginEditingRow", "table": "wide", "row": row_id})

    tmux.type("alice", f"{tablecast_binary()} edit wide --url {server.url} --name alice")
    tmux.keys("alice", "Enter")
    screen = tmux.wait("alice", lambda s: "✎ tester" in line_with(s, "clair"), "the other editor's mark")
    line = line_with(screen, "clair")
    assert line.startswith("    苹果 🍰 e\u0301clair") and line.endswith("✎ tester")
    assert width(line) == 100, (line, width(line))
    assert '{"qty":2}' in screen  # non-string values as compact JSON
    assert "▼ 食べ物" in screen

    # A narrower terminal: everything is redrawn to the new width; long lines are cut with an ellipsis.
    tmux.run("resize-window", "-t", f"{tmux.session}:alice", "-x", "30", "-y", "12")
    # capture-pane may catch a frame half written: wait for the separator and the row both redrawn.
    screen = tmux.wait(
        window="alice", predicate=lambda s: s.split("\n")[2] == "─" * 30 and line_with(s, "苹果").endswith("✎ tester"),
        what="a 30-column redraw")
    line = line_with(screen, "苹果")
    assert width(line) == 30 and line.endswith("✎ tester"), line
    assert all(width(l) <= 30 for l in screen.split("\n"))
    assert "…" in screen.split("\n")[0]  # the title line is cut to fit
    tmux.run("resize-window", "-t", f"{tmux.session}:alice", "-x", "100", "-y", "30")
    tmux.wait("alice", lambda s: s.split("\n")[2] == "─" * 100, "a 100-column redraw")

    # The server goes away and comes back: reconnecting in Ns and why, then live again on the same table.
    admin.close()
    port = server.port
    server.stop()
    tmux.wait("alice", lambda s: re.search(r"reconnecting in \d+s: connection refused", s.split("\n")[0]),
              "reconnecting, and why")
    server.start(port=port)
    screen = tmux.wait("alice", lambda s: "● live" in s, "live again", timeout=20)
    assert "clair" in screen
    tmux.keys("alice", "q")
    tmux.wait("alice", lambda s: s.rstrip().endswith("READY$"), "the shell prompt")


TOKENS = {"tokens": [{"token": "writer", "role": "write", "tables": ["*"]},
                     {"token": "admin", "role": "admin", "tables": ["*"]}]}


def test_sections_placeholders_and_copy_paste_as_a_writer(tmp_path):
    """A writer's editor: rows it cannot delete are refused at once and show their editing control, a copied
    locked row pastes as a plain row (a writer may not send flags), `A` puts the cursor on the new section so
    that `f` edits its footer, and sections are moved and deleted from their line."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(__import__("json").dumps(TOKENS))
    server = Server("--tokens", str(tokens)).start()
    tmux = Tmux()
    try:
        admin = server.client(token="admin")
        admin.ok({"type": "createTable", "table": "styled", "sections": [
            {"header": "Fruit", "footer": None, "rows": [
                {"value": "apple"}, {"value": "Add fruit…", "editingStyle": "insert"},
                {"value": "water", "editingStyle": "none"}, {"value": "pinned", "editable": False}]},
            {"header": "Dairy", "footer": None, "rows": [{"value": "milk"}]}]})
        tmux.type("alice", f"{tablecast_binary()} edit styled --url {server.url} --name alice --token writer")
        tmux.keys("alice", "Enter")
        screen = tmux.wait_for("alice", "▼ Dairy")
        assert line_with(screen, "Add fruit").strip() == "⊕ Add fruit…"

        # c on a section line says why nothing was copied.
        tmux.keys("alice", "c")
        tmux.wait_for("alice", "✗ put the cursor on a row to copy it")
        # The placeholder and the none row: d is refused at once, with no confirmation prompt.
        tmux.keys("alice", "j", "j", "d")
        screen = tmux.wait_for("alice", "✗ this row is an add-item placeholder: it cannot be deleted")
        assert "[y] Delete" not in screen
        tmux.keys("alice", "j", "d")
        tmux.wait_for("alice", "✗ this row cannot be deleted")
        # Copy the locked row and paste it after milk: the paste is a plain row, accepted for a writer.
        tmux.keys("alice", "j", "c")
        tmux.wait_for("alice", "copied “pinned”: p pastes it after the cursor")
        tmux.keys("alice", "G", "p")
        screen = tmux.wait_for("alice", "paste: done")
        assert body(screen)[-3:] == ["▼ Dairy", "milk", "pinned"]
        assert body(screen)[4] == "pinned  (locked)"

        # Editing mode: ⊖ only on deletable rows, ⊕ on the placeholder, nothing on the none and locked rows;
        # Space selects without moving the cursor.
        tmux.keys("alice", "E", "g", "j", "Space")
        screen = tmux.wait("alice", lambda s: "[x] ⊖ apple" in s, "apple selected")
        assert "▶" in line_with(screen, "apple")
        assert line_with(screen, "Add fruit").strip() == "⊕ Add fruit…"
        assert line_with(screen, "water").split() == ["water", "≡"]
        assert line_with(screen, "pinned  (locked)").split() == ["pinned", "(locked)", "≡"]
        tmux.keys("alice", "Space", "E")

        # A new section after Fruit gets the cursor: f edits its footer, not Fruit's.
        tmux.keys("alice", "A")
        tmux.type("alice", "Bakery")
        tmux.keys("alice", "Enter")
        tmux.wait("alice", lambda s: "▶" in line_with(s, "▼ Bakery"), "the cursor on the new section")
        tmux.keys("alice", "f")
        tmux.type("alice", "baked daily")
        tmux.keys("alice", "Enter")
        screen = tmux.wait_for("alice", "└ baked daily")
        assert body(screen)[4:8] == ["pinned  (locked)", "▼ Bakery", "(no rows)", "└ baked daily"]

        # K on a section line moves the section; d deletes it after a confirmation naming it.
        tmux.keys("alice", "K")
        screen = tmux.wait("alice", lambda s: body(s)[0] == "▼ Bakery", "Bakery moved up")
        assert [line for line in body(screen) if line.startswith("▼")] == ["▼ Bakery", "▼ Fruit", "▼ Dairy"]
        tmux.keys("alice", "d")
        tmux.wait_for("alice", "Section “Bakery” and its 0 rows: [y] Delete")
        tmux.keys("alice", "y")
        screen = tmux.wait("alice", lambda s: "Bakery" not in s and "delete section: done" in s, "Bakery deleted")

        # Enter on the placeholder is its insertion control: the new row goes just above it.
        tmux.keys("alice", "g", "j", "j")
        tmux.wait("alice", lambda s: "▶" in line_with(s, "Add fruit"), "the cursor on the placeholder")
        tmux.keys("alice", "Enter")
        tmux.wait_for("alice", "New row:")
        tmux.type("alice", "kiwi")
        tmux.keys("alice", "Enter")
        tmux.wait("alice", lambda s: body(s)[1:4] == ["apple", "kiwi", "⊕ Add fruit…"], "kiwi above the placeholder")

        catch_up, _ = admin.subscribe("styled")
        rows = [[(r["value"], r.get("editable", True)) for r in sec["rows"]] for sec in catch_up[0]["sections"]]
        assert rows == [[("apple", True), ("kiwi", True), ("Add fruit…", True), ("water", True), ("pinned", False)],
                        [("milk", True), ("pinned", True)]]
        admin.close()
        tmux.keys("alice", "q")
        tmux.wait("alice", lambda s: s.rstrip().endswith("READY$"), "the shell prompt")
    finally:
        tmux.kill()
        server.stop()
