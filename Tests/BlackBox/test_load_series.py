"""`tablecast load --out series.csv`: the run second by second, as CSV and as `series` in the JSON report. A run of N
seconds writes a row a second (and one for its end), the rows add up to the report's totals, each second's p99 is at
least its p50, and with --server-pid every row has the server's memory."""
import csv
import json
import os
import subprocess

from conftest import Server, tablecast_binary

COLUMNS = ["second", "seconds", "connections", "sent", "acked", "intentsPerSecond", "errors", "deliveries",
           "deliveriesPerSecond", "ackP50Ms", "ackP99Ms", "deliveryP50Ms", "deliveryP99Ms", "serverRSSBytes"]


def test_a_run_of_n_seconds_writes_a_row_a_second_that_add_up_to_the_totals(tmp_path):
    server = Server("--intents-per-second", "100000").start()
    out = tmp_path / "series.csv"
    seconds, subscribers, rate = 4, 3, 50
    try:
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", str(subscribers),
             "--writers", "1", "--rate", str(rate), "--duration", str(seconds), "--mix", "edit=3,insert=1,delete=1",
             "--server-pid", str(server.process.pid), "--out", str(out), "--json", "--quiet"],
            capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-1])

    with open(out, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == COLUMNS
    rows = [dict(zip(COLUMNS, line)) for line in table[1:]]
    # A row a second while the writers send, then the end of the run (the last updates, the convergence check):
    # a partial last row, and a full one more when that took over a second.
    assert seconds <= len(rows) <= seconds + 2, rows
    for index, row in enumerate(rows[:-1]):
        assert float(row["second"]) == index + 1 and 0.9 <= float(row["seconds"]) <= 1.5, row
    assert 0 < float(rows[-1]["seconds"]) <= 1.5 and float(rows[-1]["second"]) <= len(rows)

    # The JSON report's series has the same rows.
    series = report["series"]
    assert len(series) == len(rows)
    for from_json, from_csv in zip(series, rows):
        assert set(from_json) == set(COLUMNS)
        for column in COLUMNS:
            expected = None if from_csv[column] == "" else float(from_csv[column])
            assert from_json[column] == expected or abs(from_json[column] - expected) < 1e-3, (column, from_json)

    def total(column):
        return sum(int(row[column]) for row in rows)

    assert total("sent") == report["intents"]["sent"] > 0
    assert total("acked") == report["intents"]["acked"]
    assert total("errors") == sum(report["intents"]["errors"].values())
    assert total("deliveries") == report["deliveries"]["count"] > 0

    # Every full second of sending: its intents at about the rate, latencies with p99 ≥ p50, every connection live
    # (the subscribers, the writer and its shared view), and the server's memory.
    for row in rows[:seconds - 1]:
        assert 0.7 * rate <= float(row["intentsPerSecond"]) <= 1.3 * rate, row
        assert int(row["connections"]) == subscribers + 2, row
        for kind in ("ack", "delivery"):
            assert float(row[f"{kind}P99Ms"]) >= float(row[f"{kind}P50Ms"]) > 0, row
    for row in rows:
        assert int(row["serverRSSBytes"]) > 10_000_000, row


def test_without_server_pid_the_memory_column_is_empty(tmp_path):
    server = Server().start()
    out = tmp_path / "series.csv"
    try:
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "1", "--writers", "1",
             "--count", "20", "--mix", "edit=1", "--out", str(out), "--quiet"],
            capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(row["serverRSSBytes"] == "" for row in rows)
    assert sum(int(row["acked"]) for row in rows) == 20


def test_a_file_that_cannot_be_written_is_a_usage_error_before_the_run(tmp_path):
    for option, path, reason in [
            ("--out", tmp_path / "no-such-folder" / "series.csv", "no folder"),
            ("--report", tmp_path / "no-such-folder" / "report.html", "no folder"),
            ("--report", tmp_path / "report.pdf", "ending in .html")]:
        # No server at this URL: the usage error comes first.
        run = subprocess.run([tablecast_binary(), "load", "--url", "ws://127.0.0.1:9/", option, str(path)],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 64 and reason in run.stderr, (option, path, run.stderr)
        assert not os.path.exists(path)


def server_cpu_seconds(pid):
    """The server's user + system time so far, from /proc, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_with_server_pid_the_report_gives_the_servers_cpu_over_the_run(tmp_path):
    """`serverCPU`: the server's CPU time from the first intent to the last delivery, per delivery and per acked
    intent; part of what the server spent while the command ran (connecting and the checks are left out), and
    null without --server-pid."""
    server = Server("--intents-per-second", "100000").start()
    try:
        arguments = [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "50", "--writers",
                     "2", "--count", "600", "--mix", "edit=1"]
        before = server_cpu_seconds(server.process.pid)
        run = subprocess.run(arguments + ["--server-pid", str(server.process.pid), "--json", "--quiet"],
                             capture_output=True, text=True, timeout=120)
        spent = server_cpu_seconds(server.process.pid) - before
        text = subprocess.run(arguments + ["--server-pid", str(server.process.pid), "--quiet"],
                              capture_output=True, text=True, timeout=120)
        without = subprocess.run(arguments + ["--json", "--quiet"], capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert run.returncode == 0 and text.returncode == 0 and without.returncode == 0, run.stderr + text.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    cpu = report["serverCPU"]
    deliveries, acked = report["deliveries"]["count"], report["intents"]["acked"]
    assert deliveries == 600 * 50 and acked == 600
    # /proc counts in ticks of 10 ms: the run's share is above none and at most what the whole command cost.
    assert 0 < cpu["seconds"] <= spent + 0.011, (cpu, spent)
    assert abs(cpu["microsPerDelivery"] - cpu["seconds"] * 1e6 / deliveries) < 0.01, cpu
    assert abs(cpu["microsPerAckedIntent"] - cpu["seconds"] * 1e6 / acked) < 0.01, cpu
    line = next(line for line in text.stdout.splitlines() if line.startswith("server CPU: "))
    assert " over the run: " in line and " µs per delivery, " in line and line.endswith(" µs per acked intent"), line
    assert json.loads(without.stdout.splitlines()[-1])["serverCPU"] is None
