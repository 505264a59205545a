"""History over the wire and the command line: `history` pages of who changed what and when, `snapshotAt` (the
table as it was at a kept version), `tablecast history` and `tablecast export --at-version`, and the retention
that bounds them (`--history-retention`), against a real server and its SQLite file."""
import json
import os
import subprocess

import pytest

from conftest import folded, Server, tablecast_binary

LISTS = ["deleteSections", "insertSections", "reloadSections", "moveSections",
         "deleteRows", "insertRows", "reloadRows", "moveRows"]


def current(client, table):
    """The table's sections as a fresh refresh shows them."""
    ref = "cur"
    client.send({"type": "refresh", "table": table, "ref": ref})
    catch_up = []
    while (message := client.recv())["type"] != "refreshed":
        if message["type"] in ("snapshot", "update") and message["table"] == table:
            catch_up.append(message)
    [snap] = folded(catch_up)
    return snap["version"], snap["sections"]


def scripted(server, table):
    """Alice and Bob edit `table` in turns; returns the acks (with who sent them) and the table after each version."""
    alice = server.client(client_id="alice-laptop", name="alice")
    bob = server.client(client_id="bob-phone", name="bob")
    alice.ok({"type": "createTable", "table": table, "sections": [{"header": "Fruit", "rows": [{"value": "fig"}]}]})
    states = {0: current(alice, table)[1]}
    steps = [
        (alice, {"type": "insert", "at": [0, 1], "value": "milk"}),
        (bob, {"type": "insert", "at": [0, 0], "value": "bread"}),
        (alice, {"type": "edit", "at": [0, 2], "value": {"item": "milk", "qty": 2}}),
        (bob, {"type": "move", "from": [0, 2], "to": [0, 0]}),
        (alice, {"type": "insertSection", "at": 1, "header": "Veg", "rows": [{"value": "leek"}]}),
        (bob, {"type": "batch", "deleteRows": [{"at": [0, 1]}], "insertRows": [{"at": [1, 0], "value": "kale"}]}),
        (alice, {"type": "delete", "at": [0, 0]}),
        (bob, {"type": "editSection", "at": 1, "header": "Greens"}),
    ]
    acks = []
    for number, (who, intent) in enumerate(steps):
        ack = who.ok({**intent, "table": table, "ref": f"{table}-{number}"})
        acks.append((who.client_id, "alice" if who is alice else "bob", ack))
        version, sections = current(alice, table)
        assert version == ack["version"]
        states[version] = sections
    alice.close()
    bob.close()
    return acks, states


def run(*args, check=True):
    result = subprocess.run([tablecast_binary(), *args], capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, f"{args} exited {result.returncode}: {result.stderr}"
    return result


@pytest.fixture(scope="module")
def server():
    s = Server().start()
    yield s
    s.stop()


def test_the_table_at_every_version_is_what_it_was_then(server, table_name):
    acks, states = scripted(server, table_name)
    reader = server.client()
    live = json.loads(run("export", table_name, "--url", server.url).stdout)
    for version, sections in states.items():
        snap = reader.ok({"type": "snapshotAt", "table": table_name, "version": version}, expect="snapshot")
        assert snap["historical"] is True and snap["version"] == version
        assert snap["sections"] == sections, f"version {version}"
        exported = json.loads(run("export", table_name, "--at-version", str(version), "--url", server.url).stdout)
        assert exported["version"] == version
        assert set(exported) == set(live) and exported["rules"] == live["rules"]
        assert [(s["header"], s["footer"], [r["value"] for r in s["rows"]]) for s in exported["sections"]] == \
            [(s["header"], s["footer"], [r["value"] for r in s["rows"]]) for s in sections]
    # import restores an export of the past as a new table.
    path = os.path.join(server.dir, "v3.json")
    with open(path, "w") as f:
        f.write(run("export", table_name, "--at-version", "3", "--url", server.url).stdout)
    run("import", path, "--as", f"{table_name}-v3", "--url", server.url)
    version, restored = current(reader, f"{table_name}-v3")
    assert version == 0
    assert [[r["value"] for r in s["rows"]] for s in restored] == [[r["value"] for r in s["rows"]] for s in states[3]]
    error = run("export", table_name, "--at-version", "99", "--url", server.url, check=False)
    assert error.returncode == 1 and '"code":"out_of_range"' in error.stderr, error.stderr
    reader.close()


def test_history_lists_every_version_with_who_and_when_matching_the_acks(server, table_name):
    acks, _ = scripted(server, table_name)
    reader = server.client()
    page = reader.ok({"type": "history", "table": table_name, "order": "oldest"}, expect="changes")
    assert page["oldest"] == 0 and page["version"] == len(acks) and "next" not in page
    assert [e["version"] for e in page["entries"]] == [a["version"] for _, _, a in acks]
    for entry, (client_id, name, ack) in zip(page["entries"], acks):
        assert entry["origin"] == {"client": client_id, "name": name, "ref": ack["ref"]}
        assert entry["time"] > 1_700_000_000_000
        assert all(isinstance(entry[key], list) for key in LISTS)
    # Paged newest first: three at a time, `next` says where the next page starts.
    seen, to = [], None
    while True:
        request = {"type": "history", "table": table_name, "limit": 3}
        if to is not None:
            request["to"] = to
        result = reader.ok(request, expect="changes")
        seen += [e["version"] for e in result["entries"]]
        if "next" not in result:
            break
        to = result["next"]
    assert seen == list(range(len(acks), 0, -1))
    ranged = reader.ok({"type": "history", "table": table_name, "from": 2, "to": 4, "order": "oldest"}, expect="changes")
    assert [e["version"] for e in ranged["entries"]] == [2, 3, 4]

    lines = run("history", table_name, "--url", server.url).stdout.splitlines()
    assert [json.loads(line)["version"] for line in lines] == [a["version"] for _, _, a in acks]
    assert json.loads(lines[0])["origin"]["name"] == "alice"
    pretty = run("history", table_name, "--url", server.url, "--pretty", "--from", "6", "--to", "7").stdout.splitlines()
    assert pretty[0].startswith("v6 by bob at ") and pretty[0].endswith(': delete [0,1] "bread"; insert [1,0] "kale"'), pretty
    assert pretty[1].startswith("v7 by alice at ") and pretty[1].endswith(': delete [0,0] {"item":"milk","qty":2}'), pretty
    last = [json.loads(line)["version"] for line in run("history", table_name, "--url", server.url, "--limit", "2").stdout.splitlines()]
    assert last == [7, 8]
    reader.close()


def test_history_requests_are_checked(server, table_name):
    reader = server.client()
    reader.ok({"type": "createTable", "table": table_name})
    reader.fails({"type": "history", "table": table_name, "limit": 0}, "bad_request", check=False)
    reader.fails({"type": "history", "table": table_name, "order": "sideways"}, "bad_request", check=False)
    reader.fails({"type": "history", "table": table_name, "since": 1}, "bad_request", check=False)
    reader.fails({"type": "history", "table": table_name, "from": 3, "to": 2}, "bad_request")
    reader.fails({"type": "snapshotAt", "table": table_name}, "bad_request", check=False)
    error = reader.fails({"type": "snapshotAt", "table": table_name, "version": 5}, "out_of_range")
    assert "version 0" in error["message"]
    reader.fails({"type": "history", "table": "ghost-table"}, "no_such_table")
    reader.fails({"type": "snapshotAt", "table": "ghost-table", "version": 0}, "no_such_table")
    assert reader.ok({"type": "history", "table": table_name}, expect="changes")["entries"] == []
    reader.close()


def versions_of(client, table):
    page = client.ok({"type": "history", "table": table, "order": "oldest", "limit": 1000}, expect="changes")
    return page["oldest"], [e["version"] for e in page["entries"]]


def test_retention_prunes_what_it_should_and_nothing_else_across_restarts(tmp_path):
    """Snapshots every 5 versions, history kept for 7 versions (the catch-up floor, 2, keeps less)."""
    server = Server("--snapshot-every", "5", "--history", "2", "--history-retention", "7",
                    db_dir=str(tmp_path)).start()
    c = server.client()
    c.ok({"type": "createTable", "table": "kept"})
    c.ok({"type": "insertSection", "table": "kept", "at": 0, "rows": [{"value": "v1"}]})
    for version in range(2, 24):  # the table at version v has v rows
        c.ok({"type": "insert", "table": "kept", "at": [0, 0], "value": f"v{version}"})
    # The snapshot at 20 pruned up to 13's nearest snapshot at or below, 10: versions 10...23 are kept.
    assert versions_of(c, "kept") == (10, list(range(11, 24)))
    c.close()
    server.stop()
    server.start()
    c = server.client()
    assert versions_of(c, "kept") == (10, list(range(11, 24)))
    for version in range(10, 24):
        snap = c.ok({"type": "snapshotAt", "table": "kept", "version": version}, expect="snapshot")
        assert len(snap["sections"][0]["rows"]) == version
    error = c.fails({"type": "snapshotAt", "table": "kept", "version": 9}, "pruned")
    assert "from version 10" in error["message"] and "version 9" in error["message"]
    error = c.fails({"type": "history", "table": "kept", "from": 10}, "pruned")
    assert "from version 10" in error["message"]
    for version in (24, 25):
        c.ok({"type": "insert", "table": "kept", "at": [0, 0], "value": f"v{version}"})
    # The snapshot at 25 keeps 18 on: from the snapshot at 15.
    assert versions_of(c, "kept") == (15, list(range(16, 26)))
    c.close()
    server.stop()
    compacted = run("compact", "--db", server.db, "--history", "0", "--history-retention", "3")
    assert "removed 5 log entries" in compacted.stdout, compacted.stdout
    server.start()
    c = server.client()
    assert versions_of(c, "kept") == (20, list(range(21, 26)))
    assert len(c.ok({"type": "snapshotAt", "table": "kept", "version": 20}, expect="snapshot")["sections"][0]["rows"]) == 20
    c.close()
    server.stop()


TOKENS = {"tokens": [
    {"token": "reader", "role": "read", "tables": ["shared"]},
    {"token": "admin", "role": "admin", "tables": ["*"]},
]}


def test_history_needs_the_read_role(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = Server("--tokens", str(tokens), db_dir=str(tmp_path)).start()
    admin = server.client(token="admin")
    for table in ("shared", "private"):
        admin.ok({"type": "createTable", "table": table, "sections": [{"rows": [{"value": "x"}]}]})
        admin.ok({"type": "insert", "table": table, "at": [0, 0], "value": "y"})
    reader = server.client(token="reader")
    assert [e["version"] for e in reader.ok({"type": "history", "table": "shared"}, expect="changes")["entries"]] == [1]
    reader.ok({"type": "snapshotAt", "table": "shared", "version": 0}, expect="snapshot")
    reader.fails({"type": "history", "table": "private"}, "forbidden")
    reader.fails({"type": "snapshotAt", "table": "private", "version": 0}, "forbidden")
    nobody = server.client(hello=False)
    nobody.fails({"type": "history", "table": "shared"}, "unauthorized")
    for c in (admin, reader, nobody):
        c.close()
    server.stop()


def test_a_table_created_again_shows_its_own_past(server, table_name):
    """Reading the past twice, across a drop and a create under the same name: each life answers its own."""
    c = server.client()
    c.ok({"type": "createTable", "table": table_name, "sections": [{"rows": [{"value": "first life"}]}]})
    c.ok({"type": "insert", "table": table_name, "at": [0, 1], "value": "more"})
    first = c.ok({"type": "snapshotAt", "table": table_name, "version": 0}, expect="snapshot")
    assert [r["value"] for r in first["sections"][0]["rows"]] == ["first life"]
    c.ok({"type": "dropTable", "table": table_name})
    c.ok({"type": "createTable", "table": table_name, "sections": [{"rows": [{"value": "second life"}]}]})
    again = c.ok({"type": "snapshotAt", "table": table_name, "version": 0}, expect="snapshot")
    assert [r["value"] for r in again["sections"][0]["rows"]] == ["second life"]
    assert again["epoch"] != first["epoch"]
    c.fails({"type": "snapshotAt", "table": table_name, "version": 1}, "out_of_range")
    assert c.ok({"type": "history", "table": table_name}, expect="changes")["entries"] == []
    c.close()
