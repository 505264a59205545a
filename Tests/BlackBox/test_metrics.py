"""/metrics: every series is documented in the README (and every documented one is served), per-table counters
only behind --per-table-metrics, and /healthz and /metrics restricted to loopback or a token on request."""
import re
import socket
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, Server

PER_TABLE = "tablecast_table_intents_total"


def documented_series():
    """(name, type) for each row of the README's metrics table."""
    readme = (ROOT / "README.md").read_text()
    return {(name, kind) for name, kind in re.findall(r"^\| `((?:tablecast|websocket)_[a-z_]+)` \| (\w+) \|", readme, re.M)}


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
def test_healthz_and_metrics_can_be_kept_to_loopback_or_a_token(tmp_path, mode):
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
        for path in ("healthz", "metrics"):
            assert status(f"http://127.0.0.1:{server.port}/{path}") == 200
            assert status(f"http://{remote}:{server.port}/{path}") == 403
            assert status(f"http://{remote}:{server.port}/{path}", token="wrong") == 403
            expected = 200 if mode == "token" else 403
            assert status(f"http://{remote}:{server.port}/{path}", token=token) == expected
        # The page is not affected.
        assert status(f"http://{remote}:{server.port}/no-such-file") == 404
    finally:
        server.stop()
