"""TLS: `tablecast serve --tls-cert/--tls-key` serves the protocol, the page, /healthz and /metrics over TLS on
one port; clients verify it (wss://, --ca-cert); certificates reload on SIGHUP without dropping connections.

Certificates are made on the fly with the openssl command-line tool: self-signed, with SANs for 127.0.0.1 and
localhost.
"""
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from cdp import Browser, chromium_binary
from conftest import ROOT, Client, Server, free_port, tablecast_binary


def make_certificate(directory, name):
    """A self-signed certificate and its key, valid for 127.0.0.1 and localhost: (cert path, key path)."""
    cert, key = os.path.join(directory, f"{name}.pem"), os.path.join(directory, f"{name}-key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
         "-subj", f"/CN=tablecast test {name}", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True)
    return cert, key


def verifying(*cafiles):
    """A client context that trusts only `cafiles` and checks the host name."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for cafile in cafiles:
        context.load_verify_locations(cafile=cafile)
    return context


def served_certificate(port):
    """The SHA-256 of the certificate a new TLS connection to `port` is given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def fingerprint(cert):
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    return hashlib.sha256(der).hexdigest()


@pytest.fixture(scope="module")
def certs():
    directory = tempfile.mkdtemp(prefix="tablecast-tls-")
    yield {name: make_certificate(directory, name) for name in ("server", "renewed", "other")}
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def tls_server(certs):
    """A TLS server whose certificate files live in a directory of their own (the reload test rewrites them)."""
    directory = tempfile.mkdtemp(prefix="tablecast-tls-live-")
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    shutil.copy(certs["server"][0], cert)
    shutil.copy(certs["server"][1], key)
    server = Server("--tls-cert", cert, "--tls-key", key, "--static-dir", str(ROOT / "web-client-protocol" / "client"),
                    ssl_context=verifying(certs["server"][0])).start()
    server.cert_path, server.key_path = cert, key
    yield server
    server.stop()


def cli(*args, timeout=30):
    return subprocess.run([tablecast_binary(), *args], capture_output=True, text=True, timeout=timeout)


def test_wss_protocol_exchange_with_a_verifying_client(tls_server):
    a = tls_server.client(name="a")
    b = tls_server.client(name="b")
    try:
        a.ok({"type": "createTable", "table": "tls", "sections": [{"rows": [{"value": "fig"}]}]})
        catch_up, _ = b.subscribe("tls")
        assert [r["value"] for r in catch_up[0]["sections"][0]["rows"]] == ["fig"]
        ack = a.ok({"type": "insert", "table": "tls", "at": [0, 1], "value": "milk"})
        update = b.next("update", table="tls")
        assert update["version"] == ack["version"]
    finally:
        a.close()
        b.close()


def test_https_serves_healthz_metrics_and_the_page_but_not_plain_http(tls_server, certs):
    context = verifying(certs["server"][0])
    with urllib.request.urlopen(f"{tls_server.http_url}healthz", context=context, timeout=10) as response:
        assert json.loads(response.read())["status"] == "ok"
    with urllib.request.urlopen(f"{tls_server.http_url}metrics", context=context, timeout=10) as response:
        assert b"tablecast_" in response.read()
    with urllib.request.urlopen(f"https://localhost:{tls_server.port}/", context=context, timeout=10) as response:
        assert b"<html" in response.read().lower()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{tls_server.port}/healthz", timeout=5).read()


def test_a_client_given_the_wrong_ca_fails_with_the_certificate_error(tls_server, certs):
    with pytest.raises(ssl.SSLCertVerificationError):
        Client(tls_server.url, ssl_context=verifying(certs["other"][0]))


def test_the_cli_over_wss_with_ca_cert_and_its_certificate_errors(tls_server, certs):
    url = tls_server.url
    created = cli("tables", "create", "cli-tls", "--sections", '[{"rows":[{"value":"a"}]}]', "--url", url,
                  "--ca-cert", certs["server"][0])
    assert created.returncode == 0, created.stderr
    inserted = cli("insert", "--table", "cli-tls", "--at", "0,1", "b", "--url", url, "--ca-cert", certs["server"][0])
    assert inserted.returncode == 0, inserted.stderr
    assert json.loads(inserted.stdout)["type"] == "ack"
    exported = cli("export", "cli-tls", "--url", f"wss://localhost:{tls_server.port}/", "--ca-cert", certs["server"][0])
    assert exported.returncode == 0, exported.stderr
    assert [r["value"] for r in json.loads(exported.stdout)["sections"][0]["rows"]] == ["a", "b"]

    # The wrong CA, and no CA (the system's store does not know a self-signed test certificate): one line, exit 1.
    for extra in (["--ca-cert", certs["other"][0]], []):
        refused = cli("tables", "list", "--url", url, *extra)
        assert refused.returncode == 1, (extra, refused)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr
        assert "certificate did not verify" in lines[0] and "self-signed certificate" in lines[0], lines

    # watch and load give up the same way rather than retrying for ever.
    for command in (["watch", "cli-tls"], ["load", "--table", "cli-tls", "--subscribers", "2", "--writers", "1",
                                            "--count", "10", "--quiet"]):
        refused = cli(*command, "--url", url, "--ca-cert", certs["other"][0])
        assert refused.returncode == 1, (command, refused)
        assert "certificate did not verify" in refused.stderr.strip().splitlines()[-1], refused.stderr

    # --insecure connects, and says loudly that nothing was verified.
    insecure = cli("tables", "list", "--url", url, "--insecure")
    assert insecure.returncode == 0, insecure.stderr
    assert "NOT verified" in insecure.stderr

    missing = cli("tables", "list", "--url", url, "--ca-cert", "/nonexistent/ca.pem")
    assert missing.returncode != 0 and "/nonexistent/ca.pem" in missing.stderr


def test_watch_over_wss_sees_an_update(tls_server, certs):
    admin = tls_server.client(name="admin")
    admin.ok({"type": "createTable", "table": "watched", "sections": [{"rows": []}]})
    watch = subprocess.Popen([tablecast_binary(), "watch", "watched", "--updates", "1", "--url", tls_server.url,
                              "--ca-cert", certs["server"][0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        snapshot = json.loads(watch.stdout.readline())
        assert snapshot["type"] == "snapshot"
        admin.ok({"type": "insert", "table": "watched", "at": [0, 0], "value": "x"})
        assert json.loads(watch.stdout.readline())["type"] == "update"
        assert watch.wait(timeout=20) == 0
    finally:
        if watch.poll() is None:
            watch.kill()
        admin.close()


@pytest.mark.parametrize("case", ["missing", "mismatched", "not pem", "half"])
def test_start_up_refuses_a_bad_certificate_with_one_line(certs, case):
    cert, key = certs["server"]
    args = {
        "missing": ["--tls-cert", "/nonexistent/cert.pem", "--tls-key", key],
        "mismatched": ["--tls-cert", cert, "--tls-key", certs["other"][1]],
        "not pem": ["--tls-cert", key, "--tls-key", key],
        "half": ["--tls-cert", cert],
    }[case]
    db = os.path.join(tempfile.mkdtemp(prefix="tablecast-tls-db-"), "t.db")
    result = cli("serve", "--port", str(free_port()), "--db", db, *args)
    assert result.returncode == 1, result
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    expected = {"missing": "/nonexistent/cert.pem", "mismatched": "mismatch", "not pem": "PEM", "half": "--tls-key"}[case]
    assert expected in lines[0], lines


def test_sighup_reloads_the_certificate_without_dropping_connections(tls_server, certs):
    both = verifying(certs["server"][0], certs["renewed"][0])
    old = Client(tls_server.url, ssl_context=both, name="old")
    try:
        old.ok({"type": "createTable", "table": "renew", "sections": [{"rows": []}]})
        assert served_certificate(tls_server.port) == fingerprint(certs["server"][0])

        # A renewal that went wrong (the new certificate with the old key): the server keeps what it has.
        shutil.copy(certs["renewed"][0], tls_server.cert_path)
        tls_server.process.send_signal(signal.SIGHUP)
        wait_for_log(tls_server, "kept the current TLS certificate")
        assert served_certificate(tls_server.port) == fingerprint(certs["server"][0])

        # The renewal completed: new connections get the new certificate, the open one carries on.
        shutil.copy(certs["renewed"][1], tls_server.key_path)
        tls_server.process.send_signal(signal.SIGHUP)
        wait_for_log(tls_server, "reloaded the TLS certificate")
        assert served_certificate(tls_server.port) == fingerprint(certs["renewed"][0])
        old.ok({"type": "insert", "table": "renew", "at": [0, 0], "value": "still here"})
        new = Client(tls_server.url, ssl_context=verifying(certs["renewed"][0]), name="new")
        catch_up, _ = new.subscribe("renew")
        assert [r["value"] for r in catch_up[0]["sections"][0]["rows"]] == ["still here"]
        new.close()
    finally:
        old.close()
    assert tls_server.process.poll() is None


def wait_for_log(server, text, timeout=10):
    deadline = time.time() + timeout
    while text not in server.read_log():
        assert time.time() < deadline, f"no {text!r} in the log: {server.read_log()}"
        time.sleep(0.05)


def test_the_page_over_https_in_chromium(tls_server):
    if chromium_binary() is None:
        pytest.fail("chromium is needed for the page tests: run .ci/install (Debian's chromium)")
    admin = tls_server.client(name="admin")
    admin.ok({"type": "createTable", "table": "https-page", "sections": [{"rows": [{"value": "over tls"}]}]})
    # The test's self-signed certificate is not in chromium's store: accepted for this test only.
    browser = Browser(extra_args=["--ignore-certificate-errors"])
    try:
        page = browser.new_page()
        page.goto(f"https://127.0.0.1:{tls_server.port}/#/table/https-page")
        page.wait_for("document.querySelector('#conn').dataset.state === 'live'",
                      message="the page did not connect over wss")
        page.wait_for("document.body.textContent.includes('over tls')", message="the table did not load")
        admin.ok({"type": "insert", "table": "https-page", "at": [0, 1], "value": "live update"})
        page.wait_for("document.body.textContent.includes('live update')", message="the update did not arrive")
        assert page.eval("location.protocol") == "https:"
        problems = page.problems()
        page.close()
        assert not problems, problems
    finally:
        browser.close()
        admin.close()
