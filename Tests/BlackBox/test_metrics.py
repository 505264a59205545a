"""/metrics: every series is documented in the README (and every documented one is served), per-table counters
only behind --per-table-metrics, /metrics restricted to loopback or a token on request (/healthz open), process_* and build-info series."""
import os
import re
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, Server, tablecast_binary

PER_TABLE = "tablecast_table_intents_total"


def documented_series():
    """(name, type) for each row of the README's metrics table."""
    readme = (ROOT / "README.md").read_text()
    return {(name, kind) for name, kind in re.findall(r"^\| `((?:tablecast|websocket|process)_[a-z_]+)` \| (\w+) \|", readme, re.M)}


def served_series(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(name, kind) for name, kind in re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M)}, text


def exercise(server, table):
    client = server.client()
    client.ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
    client.ok({"type": "insert", "table": table, "at": [0, 0], "value": 1})
    client.fails({"type": "delete", "table": table, "at": [0, 9]}, "out_of_range")
    client.close()


def test_every_series_is_documented_and_per_table_counters_need_the_flag():
    documented = documented_series()
    assert len(documented) >= 15, documented
    plain = Server().start()
    try:
        exercise(plain, "metered")
        served, text = served_series(plain.port)
    finally:
        plain.stop()
    assert served == {s for s in documented if s[0] != PER_TABLE}, (served ^ documented)
    assert "metered" not in text

    per_table = Server("--per-table-metrics").start()
    try:
        exercise(per_table, "metered")
        served, text = served_series(per_table.port)
    finally:
        per_table.stop()
    assert served == documented, served ^ documented
    # Each series says what it is, on a HELP line right before its TYPE line.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# TYPE "):
            name = line.split()[2]
            assert re.fullmatch(rf"# HELP {name} \S.+", lines[i - 1]), (lines[i - 1], line)
    assert len(re.findall(r"^# HELP ", text, re.M)) == len(documented)
    assert f'{PER_TABLE}{{table="metered",outcome="committed"}} 1' in text
    assert f'{PER_TABLE}{{table="metered",outcome="rejected"}} 1' in text


def test_a_dropped_tables_series_are_removed():
    """Per-table series would otherwise pile up for every table ever created and dropped."""
    server = Server("--per-table-metrics").start()
    try:
        exercise(server, "brief")
        exercise(server, "kept")
        _, text = served_series(server.port)
        assert 'table="brief"' in text and 'table="kept"' in text
        client = server.client()
        client.ok({"type": "dropTable", "table": "brief"})
        client.close()
        _, text = served_series(server.port)
        assert 'table="brief"' not in text
        assert f'{PER_TABLE}{{table="kept",outcome="committed"}} 1' in text
    finally:
        server.stop()


def own_address():
    """An address of this machine that is not loopback, to be a remote peer from."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent; this only picks the outgoing interface
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.fail("this machine has no non-loopback IPv4 address to test remote access from")
    return address


def status(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("mode", ["loopback-only", "token"])
def test_metrics_can_be_kept_to_loopback_or_a_token_while_healthz_stays_open(tmp_path, mode):
    token = "m-7c1d0e9f"
    args = ["--host", "0.0.0.0", "--allow-anonymous"]
    if mode == "token":
        (tmp_path / "metrics-token").write_text(token + "\n")
        args += ["--metrics-token-file", str(tmp_path / "metrics-token")]
    else:
        args += ["--metrics-loopback-only"]
    server = Server(*args).start()
    remote = own_address()
    try:
        assert status(f"http://127.0.0.1:{server.port}/metrics") == 200
        assert status(f"http://{remote}:{server.port}/metrics") == 403
        assert status(f"http://{remote}:{server.port}/metrics", token="wrong") == 403
        assert status(f"http://{remote}:{server.port}/metrics", token=token) == (200 if mode == "token" else 403)
        # A load balancer's health check sends no token: /healthz is open to every address.
        assert status(f"http://{remote}:{server.port}/healthz") == 200
        # The page is not affected.
        assert status(f"http://{remote}:{server.port}/no-such-file") == 404
    finally:
        server.stop()


def test_process_and_build_info_series_describe_the_running_server():
    server = Server().start()
    try:
        with urllib.request.urlopen(f"{server.http_url}metrics", timeout=10) as response:
            text = response.read().decode()
        values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
                  if line.startswith(("process_", "tablecast_build_info"))}
        version = subprocess.run([tablecast_binary(), "--version"], capture_output=True, text=True).stdout.strip()
        assert values[f'tablecast_build_info{{version="{version}"}}'] == 1
        rss = int(open(f"/proc/{server.process.pid}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        assert 0.5 * rss < values["process_resident_memory_bytes"] < 2 * rss
        assert values["process_open_fds"] == pytest.approx(len(os.listdir(f"/proc/{server.process.pid}/fd")), abs=4)
        assert abs(values["process_start_time_seconds"] - os.stat(f"/proc/{server.process.pid}").st_ctime) < 5
        assert 0 < values["process_cpu_seconds_total"] < 60
        assert "# TYPE process_cpu_seconds_total counter" in text
    finally:
        server.stop()
