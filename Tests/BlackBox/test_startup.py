"""`serve` and `compact` start-up, run as the real binary: one database file has one owner, a mistyped path
creates nothing, and every reason not to start is one line that says what is wrong."""
import os
import socket
import subprocess
import tempfile

import pytest

from conftest import Server, free_port, tablecast_binary


def run(*args, env=None):
    return subprocess.run([tablecast_binary(), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def serve(*args):
    """Runs `serve` that is expected to fail at start-up; returns (exit code, its one critical line)."""
    if "--port" not in args:
        args = ("--port", str(free_port()), *args)
    result = run("serve", *args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    return result.returncode, lines[0]


def test_a_second_server_on_the_same_database_refuses_and_names_the_first():
    first = Server().start()
    try:
        c = first.client()
        c.ok({"type": "createTable", "table": "only", "sections": [{"rows": []}]})
        code, line = serve("--db", first.db)
        assert code == 1
        assert first.db in line and f"pid {first.process.pid}" in line, line

        compact = run("compact", "--db", first.db)
        assert compact.returncode == 1, compact
        assert first.db in compact.stderr and f"pid {first.process.pid}" in compact.stderr, compact.stderr

        # The first server still serves and commits.
        c.ok({"type": "insert", "table": "only", "at": [0, 0], "value": "still here"})
        c.close()
    finally:
        first.stop()
    assert run("compact", "--db", first.db).returncode == 0
    Server(db_dir=first.dir).start().stop()


def test_compact_of_a_missing_file_fails_and_creates_nothing():
    folder = tempfile.mkdtemp(prefix="tablecast-compact-")
    path = os.path.join(folder, "typo.db")
    result = run("compact", "--db", path)
    assert result.returncode == 1, result
    assert f"no database at {path}" in result.stderr
    assert os.listdir(folder) == []


def test_port_in_use_says_so():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        folder = tempfile.mkdtemp()
        code, line = serve("--port", str(port), "--db", os.path.join(folder, "t.db"))
    assert code == 1
    assert f"port {port} is already in use" in line, line
    assert os.listdir(folder) == [], "nothing is created before the port is known to be free"


def test_port_out_of_range_shows_the_serve_usage():
    result = run("serve", "--port", "70000")
    assert result.returncode == 64, result
    assert "70000" in result.stderr.splitlines()[0]
    assert "Usage: tablecast serve" in result.stderr, result.stderr


def test_a_missing_database_folder_is_an_io_problem():
    code, line = serve("--db", "/nonexistent-tablecast-dir/x.db")
    assert code == 1
    assert "/nonexistent-tablecast-dir does not exist" in line, line
    assert "not a" not in line


def test_unreadable_tokens_and_batch_files_say_why():
    code, line = serve("--tokens", "/nonexistent-tokens.json")
    assert code == 1
    assert "/nonexistent-tokens.json: No such file or directory" in line, line
    code, line = serve("--tokens", tempfile.mkdtemp())
    assert code == 1 and "Is a directory" in line, line

    result = run("batch", "--table", "t", "/nonexistent-batch.json")
    assert result.returncode == 1, result
    assert "cannot read /nonexistent-batch.json: No such file or directory" in result.stderr, result.stderr


def test_a_subcommands_validation_error_shows_its_own_usage():
    """Found while running, before connecting: the table name is checked with the server's own rules."""
    result = run("tables", "create", "bad name!")
    assert result.returncode == 64, result
    assert "is not valid" in result.stderr
    assert "Usage: tablecast tables create" in result.stderr, result.stderr
    assert "tablecast <subcommand>" not in result.stderr


SUBCOMMANDS = ["serve", "compact", "watch", "insert", "delete", "move", "edit", "patch", "batch", "tables", "export",
               "import", "load"]


@pytest.mark.parametrize("width", [80, 120])
def test_help_text_wraps_at_word_boundaries(width):
    """Greedy wrapping: within a paragraph, no line would have had room for the next line's first word (ArgumentParser
    keeps lines shorter than the width)."""
    for command in SUBCOMMANDS:
        result = run(command, "--help", env={"COLUMNS": str(width)})
        assert result.returncode == 0, result
        overview = result.stdout.split("USAGE:")[0].splitlines()
        for line, following in zip(overview, overview[1:]):
            if not line.strip() or not following.strip():
                continue
            assert len(line) <= width, f"{command}: {line!r}"
            first_word = following.split()[0]
            assert len(line) + 1 + len(first_word) >= width, \
                f"{command} --help at {width} columns breaks early:\n{line}\n{following}"


def make_database(folder):
    """A real Tablecast database with one table, made by a server that then stops."""
    server = Server(db_dir=folder)
    server.dir = tempfile.mkdtemp(prefix="tablecast-logs-")  # the log stays writable
    server.db = os.path.join(folder, "tablecast.db")
    server.start()
    c = server.client()
    c.ok({"type": "createTable", "table": "kept", "sections": [{"rows": []}]})
    c.close()
    server.stop()
    return server.db


def test_a_read_only_database_file_says_read_only():
    """An immutable file (chattr +i), which even root cannot write."""
    path = make_database(tempfile.mkdtemp(prefix="tablecast-rofile-"))
    if subprocess.run(["chattr", "+i", path], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        code, line = serve("--db", path)
    finally:
        subprocess.run(["chattr", "-i", path], check=True)
    assert code == 1
    assert "read-only" in line and "I/O error" not in line, line


@pytest.fixture
def read_only_folder():
    """A tmpfs holding a database, remounted read-only (which binds root too)."""
    path = tempfile.mkdtemp(prefix="tablecast-rofs-")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M", "tmpfs", path], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        make_database(path)
        subprocess.run(["mount", "-o", "remount,ro", path], check=True)
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=True)


def test_a_database_in_a_read_only_folder_says_read_only(read_only_folder):
    for name in ["tablecast.db", "new.db"]:
        code, line = serve("--db", os.path.join(read_only_folder, name))
        assert code == 1
        assert "read-only" in line and "I/O error" not in line, line
    result = run("compact", "--db", os.path.join(read_only_folder, "tablecast.db"))
    assert result.returncode == 1 and "read-only" in result.stderr, result
