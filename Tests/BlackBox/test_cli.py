"""The command-line clients as a user runs them: the real `tablecast` binary against a real server, a closed port,
an unresolvable name and a socket that never answers; the environment variables; and short `tablecast load` runs."""
import json
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import Server, free_port, tablecast_binary

# Every scripted client subcommand, with what it needs on stdin (the live editor, `edit TABLE`, is interactive).
CLIENT_COMMANDS = [
    (["tables", "list"], None),
    (["tables", "create", "t"], None),
    (["tables", "drop", "t"], None),
    (["tables", "rules", "t", '{"moves":"none"}'], None),
    (["insert", "--table", "t", "--at", "0,0", "milk"], None),
    (["delete", "--table", "t", "--at", "0,0"], None),
    (["move", "--table", "t", "--from", "0,0", "--to", "0,1"], None),
    (["edit", "--table", "t", "--at", "0,0", "figs"], None),
    (["patch", "--table", "t", "--at", "0,0", '{"done":true}'], None),
    (["batch", "--table", "t", "-"], '{"deleteRows":[{"at":[0,0]}]}'),
    (["export", "t"], None),
    (["import", "-"], '{"table":"t","sections":[],"rules":{}}'),
    (["watch", "t"], None),
    (["load", "--duration", "1", "--subscribers", "1"], None),
]


def run(args, input=None, env=None, timeout=60):
    """Runs `tablecast args…`; a run that does not end within `timeout` seconds fails the test."""
    return subprocess.run([tablecast_binary(), *args], input=input, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def run_all(commands, url, seconds):
    """Runs every command at once with `--url url --timeout seconds`; returns their CompletedProcess-like results."""
    processes = []
    for args, stdin in commands:
        process = subprocess.Popen([tablecast_binary(), *args, "--url", url, "--timeout", str(seconds)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        processes.append((args, process, stdin))
    results = []
    for args, process, stdin in processes:
        try:
            # Far beyond the timeout: only a command that hangs reaches it.
            out, err = process.communicate(input=stdin, timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"`tablecast {' '.join(args)}` still ran {seconds + 30}s after its --timeout {seconds}")
        results.append((args, process.returncode, out, err))
    return results


@pytest.fixture
def silent_listener():
    """A TCP socket that accepts connections (the kernel completes them) and never answers a byte."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"ws://127.0.0.1:{listener.getsockname()[1]}/"


def closed_port():
    return f"ws://127.0.0.1:{free_port()}/"


@pytest.mark.parametrize("target, reason", [
    ("closed", "connection refused"),
    ("unresolvable", "no such host"),
    ("silent", "did not answer the WebSocket handshake"),
])
def test_every_client_command_exits_2_with_the_reason_when_the_server_cannot_answer(target, reason, request):
    url = {"closed": closed_port, "unresolvable": lambda: "ws://nonexistent.invalid:8080/",
           "silent": lambda: request.getfixturevalue("silent_listener")}[target]()
    for args, status, out, err in run_all(CLIENT_COMMANDS, url, seconds=2):
        lines = err.strip().splitlines()
        assert status == 2, f"tablecast {' '.join(args)}: exit {status}, stderr {err!r}"
        assert len(lines) == 1 and reason in lines[0] and url in lines[0], f"tablecast {' '.join(args)}: {err!r}"
        assert out == ""


TOKENS = {"tokens": [
    {"token": "admin-1", "role": "admin", "tables": ["*"]},
    {"token": "reader-1", "role": "read", "tables": ["*"]},
]}


def test_environment_variables_stand_for_url_token_and_client(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = Server("--tokens", str(tokens)).start()
    try:
        env = {"TABLECAST_URL": server.url, "TABLECAST_TOKEN": "admin-1", "TABLECAST_CLIENT": "env-laptop"}
        created = run(["tables", "create", "env", "--sections", '[{"rows":[{"value":"a"}]}]'], env=env)
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["table"] == "env"

        # TABLECAST_CLIENT is the stable client id: the same --ref again is answered with the first ack.
        first = run(["insert", "--table", "env", "--at", "0,1", "b", "--ref", "once"], env=env)
        again = run(["insert", "--table", "env", "--at", "0,1", "b", "--ref", "once"], env=env)
        assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
        assert again.stdout == first.stdout
        other = run(["insert", "--table", "env", "--at", "0,1", "b", "--ref", "once"],
                    env={**env, "TABLECAST_CLIENT": "env-phone"})
        assert json.loads(other.stdout)["version"] == json.loads(first.stdout)["version"] + 1

        # TABLECAST_TOKEN picks the role: the reader may list but not create.
        reader = {**env, "TABLECAST_TOKEN": "reader-1"}
        assert run(["tables", "list"], env=reader).returncode == 0
        refused = run(["tables", "create", "nope"], env=reader)
        assert refused.returncode == 1 and '"code":"forbidden"' in refused.stderr, refused.stderr
        # A flag wins over the environment.
        assert run(["tables", "create", "nope2", "--token", "admin-1"], env=reader).returncode == 0
        assert run(["tables", "list", "--url", closed_port(), "--timeout", "1"], env=env).returncode == 2

        exported = run(["export", "env"], env=env)
        assert [row["value"] for row in json.loads(exported.stdout)["sections"][0]["rows"]] == ["a", "b", "b"]
    finally:
        server.stop()


def test_a_value_that_looks_like_json_but_is_not_is_stored_as_a_string_with_a_warning():
    server = Server().start()
    try:
        env = {"TABLECAST_URL": server.url}
        assert run(["tables", "create", "values", "--sections", '[{"rows":[{"value":"a"}]}]'], env=env).returncode == 0
        typo = '{"item":"milk","qty":2'
        inserted = run(["insert", "--table", "values", "--at", "0,0", typo], env=env)
        assert inserted.returncode == 0, inserted.stderr
        assert "warning" in inserted.stderr and "not valid JSON" in inserted.stderr, inserted.stderr
        edited = run(["edit", "--table", "values", "--at", "0,1", '["a",'], env=env)
        assert edited.returncode == 0 and "not valid JSON" in edited.stderr, edited.stderr
        quoted = run(["insert", "--table", "values", "--at", "0,2", '"unterminated'], env=env)
        assert "not valid JSON" in quoted.stderr, quoted.stderr
        # Valid JSON and plain words are taken without a word.
        for value in ['{"item":"milk"}', "milk", "42", '"quoted"']:
            fine = run(["insert", "--table", "values", "--at", "0,0", value], env=env)
            assert fine.returncode == 0 and fine.stderr == "", fine.stderr
        rows = json.loads(run(["export", "values"], env=env).stdout)["sections"][0]["rows"]
        assert [row["value"] for row in rows] == [
            "quoted", 42, "milk", {"item": "milk"}, typo, '["a",', '"unterminated']
        # load takes TABLECAST_URL too.
        report = run(["load", "--table", "values", "--subscribers", "0", "--count", "1", "--mix", "edit=1", "--json",
                      "--quiet"], env=env)
        assert json.loads(report.stdout)["settings"]["url"] == server.url, report.stderr
    finally:
        server.stop()


# `tablecast load`: short real runs.

def load(server, *args):
    result = run(["load", "--url", server.url, "--json", *args])
    assert result.returncode == 0, result.stderr + result.stdout
    return json.loads(result.stdout), result.stderr


def test_load_window_until_delivery_keeps_each_edit_in_flight_until_every_subscriber_has_it():
    """With --window-until delivery a raw writer's edit leaves its window once acked and delivered to every
    subscriber, so the run ends with every acked edit delivered everywhere; without raw writers it is refused."""
    server = Server("--intents-per-second", "1000000").start()
    try:
        report, _ = load(server, "--create", "--table", "window", "--subscribers", "20", "--replicas", "0",
                         "--raw-writers", "--writers", "2", "--in-flight", "4", "--mix", "edit=1",
                         "--window-until", "delivery", "--count", "200", "--quiet")
        assert report["settings"]["windowUntil"] == "delivery"
        assert report["intents"]["acked"] == 200 and not report["intents"]["errors"], report["intents"]
        assert report["deliveries"]["count"] == 200 * 20
        # Again on the same table, now with history: the subscribers may be caught up with the first run's updates
        # (a shared snapshot and what followed it), which are not this run's deliveries; and an edit of a row to the
        # value it already has would be a no-op, whose ack must free its slot (no update of it will come).
        for _ in range(2):
            report, _ = load(server, "--table", "window", "--subscribers", "20", "--replicas", "0", "--raw-writers",
                             "--writers", "1", "--in-flight", "1", "--mix", "edit=1", "--window-until", "delivery",
                             "--count", "30", "--timeout", "20", "--quiet")
            assert report["intents"]["acked"] == 30 and report["deliveries"]["count"] == 30 * 20, report
        refused = run(["load", "--url", server.url, "--window-until", "delivery", "--duration", "1"])
        assert refused.returncode == 64 and "--window-until delivery is for --raw-writers" in refused.stderr, refused
    finally:
        server.stop()


def test_load_says_when_it_did_not_reach_the_requested_rate():
    server = Server("--intents-per-second", "1000000").start()
    try:
        # One writer with one intent in flight cannot send a million intents a second.
        report, err = load(server, "--create", "--table", "slow", "--writers", "1", "--subscribers", "0",
                           "--in-flight", "1", "--rate", "1000000", "--duration", "1", "--mix", "edit=1")
        assert report["rate"]["requested"] == 1000000 and report["rate"]["shortfall"] is True
        assert report["rate"]["reached"] < 100000
        assert "warning: the writers reached" in err and "of the --rate 1000000" in err, err
        # A rate the writers keep up with is not flagged.
        report, err = load(server, "--create", "--table", "paced", "--writers", "2", "--subscribers", "1",
                           "--rate", "20", "--duration", "2", "--mix", "edit=1")
        assert report["rate"]["shortfall"] is False and "warning" not in err, err
    finally:
        server.stop()


def test_load_progress_counts_whole_seconds_and_the_set_up_is_reported_truthfully():
    server = Server("--intents-per-second", "1000000").start()
    try:
        report, err = load(server, "--create", "--table", "p", "--writers", "3", "--subscribers", "2",
                           "--duration", "1.5", "--in-flight", "2")
        # Progress entries are `\r  1.0s  … intents/s …` (text mode reads \r as a line end): one per whole second,
        # none for the partial last interval.
        times = [float(t) for t in re.findall(r"^\s*([0-9.]+)s\s+[0-9]+ intents/s", err, re.M)]
        assert times, err
        assert all(later - earlier >= 0.9 for earlier, later in zip([0.0] + times, times)), err
        # Everyone who connected is counted, durations to the millisecond.
        assert re.search(r"connected 3 writer\(s\), 2 subscriber\(s\), 1 shared view\(s\) for the writers "
                         r"to 1 table\(s\) in \d+\.\d{3}s", err), err
        assert re.search(r"presence of the joins: \d+ message\(s\), the last \d+\.\d{3}s after connecting; "
                         r"then none for 1\.000s", err), err
        assert report["seconds"] == round(report["seconds"], 3)
        assert report["convergence"] == {"ok": True, "replicasCompared": 3, "failures": []}
    finally:
        server.stop()


def test_load_with_raw_writers_and_no_subscribers_runs():
    """The README's durable-intents benchmark: raw writers only, nobody subscribed (it used to trap on an empty list)."""
    server = Server("--intents-per-second", "1000000").start()
    try:
        report, _ = load(server, "--create", "--table", "d0", "--writers", "4", "--subscribers", "0", "--in-flight", "4",
                         "--raw-writers", "--mix", "edit=1", "--count", "200", "--quiet")
        assert report["intents"]["acked"] == 200, report["intents"]
    finally:
        server.stop()


def test_load_without_replicas_says_that_convergence_was_not_checked():
    server = Server("--intents-per-second", "1000000").start()
    try:
        args = ["--create", "--table", "r0", "--writers", "2", "--subscribers", "3", "--replicas", "0",
                "--raw-writers", "--mix", "edit=1", "--count", "50", "--quiet"]
        report, _ = load(server, *args)
        assert report["convergence"]["replicasCompared"] == 0
        text = run(["load", "--url", server.url, *args])
        assert "convergence: not checked (no client kept a replica" in text.stdout, text.stdout
        assert "every replica" not in text.stdout
    finally:
        server.stop()
