"""The command line as a new user meets it: a refused connection fails at once, reconnects say why, a wrong
ws/wss scheme gets a hint, `tables create` makes a section to insert into, `section add|delete|move`, a strict
`import`, clear `backup` errors, `compact` that counts as `serve` does and shrinks the file, TABLECAST_NAME, the
table named with --table everywhere, and the start-up warnings."""
import json
import os
import re
import sqlite3
import ssl
import subprocess
import threading
import time

import pytest

from conftest import Server, free_port, tablecast_binary


def run(*args, env=None, input=None, timeout=60):
    return subprocess.run([tablecast_binary(), *args], capture_output=True, text=True, input=input, timeout=timeout,
                          env={**os.environ, **(env or {})})


def watch_for(seconds, *args):
    """A `tablecast watch` that is killed after `seconds`, so that a read of its output never waits longer."""
    process = subprocess.Popen([tablecast_binary(), "watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    timer = threading.Timer(seconds, process.kill)
    timer.daemon = True
    timer.start()
    return process


def test_a_refused_connection_fails_at_once_not_after_the_timeout():
    url = f"ws://127.0.0.1:{free_port()}/"
    started = time.monotonic()
    result = run("tables", "list", "--url", url, "--timeout", "10")
    assert time.monotonic() - started < 3
    assert result.returncode == 2
    assert result.stderr.strip() == f"tablecast: cannot connect to {url}: connection refused (nothing listens on " \
                                     f"127.0.0.1:{url.split(':')[2].rstrip('/')})"


def test_watch_says_why_it_is_reconnecting():
    server = Server().start()
    watch = None
    try:
        assert run("tables", "create", "--table", "w", "--url", server.url).returncode == 0
        watch = watch_for(20, "--table", "w", "--url", server.url)
        assert json.loads(watch.stdout.readline())["type"] == "snapshot"
        server.stop()
        lines = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any("connection refused" in line for line in lines):
            line = watch.stderr.readline()
            if not line:
                break
            lines.append(line)
        reconnecting = [line for line in lines if line.startswith("[reconnecting")]
        assert reconnecting, lines
        assert all(re.fullmatch(r"\[reconnecting in \d+\.\ds: .+\]\n", line) for line in reconnecting), reconnecting
        refused = f"connection refused (nothing listens on 127.0.0.1:{server.port}): is the server running?]"
        assert any(line.endswith(refused + "\n") for line in reconnecting), lines
    finally:
        if watch:
            watch.kill()
            watch.wait()
        server.stop()


def test_wss_to_a_plain_server_gets_a_hint():
    server = Server().start()
    try:
        result = run("tables", "list", "--url", f"wss://127.0.0.1:{server.port}/", "--timeout", "2")
        assert result.returncode in (1, 2)
        assert "use ws://" in result.stderr, result.stderr
    finally:
        server.stop()


def test_ws_to_a_tls_server_gets_a_hint(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", "/CN=hint", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    server = Server("--tls-cert", str(cert), "--tls-key", str(key), ssl_context=ssl._create_unverified_context()).start()
    try:
        result = run("tables", "list", "--url", f"ws://127.0.0.1:{server.port}/", "--timeout", "2")
        assert result.returncode == 2
        assert "(if the server serves TLS, use wss://)" in result.stderr, result.stderr
    finally:
        server.stop()


def test_tables_create_makes_one_empty_section_and_section_commands_change_them():
    server = Server().start()
    url = ["--url", server.url]
    try:
        assert run("tables", "create", "--table", "g", *url).returncode == 0
        inserted = run("insert", "--table", "g", "--at", "0,0", "milk", *url)
        assert inserted.returncode == 0, inserted.stderr
        assert run("tables", "create", "none", "--sections", "[]", *url).returncode == 0

        added = run("section", "add", "--table", "g", "--header", "Later", *url)
        assert added.returncode == 0, added.stderr
        assert run("section", "add", "--table", "g", "--at", "0", "--header", "First", *url).returncode == 0
        moved = run("section", "move", "--table", "g", "--from", "2", "--to", "0", *url)
        assert moved.returncode == 0, moved.stderr
        headers = lambda table: [s.get("header") for s in json.loads(run("export", "--table", table, *url).stdout)["sections"]]
        assert headers("g") == ["Later", "First", None]
        assert run("section", "delete", "--table", "g", "--at", "1", *url).returncode == 0
        exported = json.loads(run("export", "g", *url).stdout)  # the argument form still works
        assert [s.get("header") for s in exported["sections"]] == ["Later", None]
        assert exported["sections"][1]["rows"][0]["value"] == "milk"
        assert headers("none") == []
        missing = run("section", "delete", "--table", "g", "--at", "5", *url)
        assert missing.returncode == 1 and "out_of_range" in missing.stderr, missing.stderr
    finally:
        server.stop()


def test_the_table_is_named_with_table_everywhere_and_two_different_names_are_an_error():
    server = Server().start()
    url = ["--url", server.url]
    try:
        assert run("tables", "create", "--table", "n", *url).returncode == 0
        for command in (["export"], ["history"], ["watch", "--updates", "0"]):
            result = run(*command, "--table", "n", *url, timeout=20)
            assert result.returncode == 0, (command, result.stderr)
        both = run("export", "--table", "n", "other", *url)
        assert both.returncode == 64 and "two tables named: --table n and other" in both.stderr
        neither = run("export", *url)
        assert neither.returncode == 64 and "missing --table TABLE" in neither.stderr
        assert run("tables", "drop", "--table", "n", *url).returncode == 0
    finally:
        server.stop()


def test_import_is_as_strict_as_the_protocol():
    server = Server().start()
    try:
        result = run("import", "-", "--url", server.url, input='{"foo":1}')
        assert result.returncode == 64
        assert "not a tablecast export: unknown field foo" in result.stderr
        listed = run("tables", "list", "--url", server.url)
        assert listed.stdout == ""
    finally:
        server.stop()


def test_tablecast_name_names_scripted_edits_in_history():
    server = Server().start()
    url = ["--url", server.url]
    try:
        assert run("tables", "create", "--table", "h", *url).returncode == 0
        assert run("insert", "--table", "h", "--at", "0,0", "x", *url, env={"TABLECAST_NAME": "nightly-job"}).returncode == 0
        history = [json.loads(line) for line in run("history", "--table", "h", *url).stdout.splitlines()]
        assert history[-1]["origin"]["name"] == "nightly-job"
    finally:
        server.stop()


def test_backup_says_what_is_wrong_with_the_paths(tmp_path):
    server = Server().start()
    try:
        missing_folder = tmp_path / "nope" / "copy.db"
        result = run("backup", "--db", server.db, "--to", str(missing_folder))
        assert (result.returncode, result.stderr) == (1, f"tablecast backup: the folder {tmp_path / 'nope'} does not exist\n")
        result = run("backup", "--db", str(tmp_path / "typo.db"), "--to", str(tmp_path / "copy.db"))
        assert (result.returncode, result.stderr) == (1, f"tablecast backup: no database at {tmp_path / 'typo.db'}\n")
        assert not (tmp_path / "typo.db").exists()
    finally:
        server.stop()


def test_compact_keeps_history_counted_from_the_latest_version_and_vacuums(tmp_path):
    server = Server("--snapshot-every", "10", db_dir=str(tmp_path)).start()
    try:
        client = server.client()
        client.ok({"type": "createTable", "table": "c", "sections": [{"rows": []}]})
        for n in range(45):
            client.ok({"type": "insert", "table": "c", "at": [0, 0], "value": "x" * 2000 + str(n)})
        client.close()
    finally:
        server.stop()
    before = os.path.getsize(server.db)
    result = run("compact", "--db", server.db, "--history", "5", "--history-retention", "5")
    assert result.returncode == 0, result.stderr
    # Versions 41–45 are kept: the log keeps what follows the snapshot at 40 and drops the 40 entries at or before it.
    assert result.stdout.splitlines()[0] == f"removed 40 log entries from {server.db}"
    assert result.stdout.splitlines()[1].startswith(f"vacuumed {server.db}: ")
    with sqlite3.connect(server.db) as db:
        assert [v for (v,) in db.execute("SELECT version FROM log ORDER BY version")] == list(range(41, 46))
    assert os.path.getsize(server.db) < before


def test_serve_warns_about_anonymous_public_access_and_a_world_readable_tokens_file(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"tokens": [{"token": "t-1", "role": "admin", "tables": ["*"]}]}')
    tokens.chmod(0o644)

    def log_of(*args):
        server = Server(*args)
        try:
            server.start()
        finally:
            server.stop()
        return server.read_log()

    assert "--allow-anonymous on 0.0.0.0: anyone who reaches port" in log_of("--host", "0.0.0.0", "--allow-anonymous")
    assert f"--tokens {tokens} is readable by every user of this machine" in log_of("--tokens", str(tokens))
    tokens.chmod(0o600)
    assert "readable by every user" not in log_of("--tokens", str(tokens))
