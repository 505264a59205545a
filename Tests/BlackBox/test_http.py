"""Plain HTTP on the server's port, as a browser and a load balancer see it: the page built into the executable
(served the same from any working directory), --static-dir for development, the headers a served web app should
carry, revalidation with ETag, and HEAD."""
import http.client
import subprocess
import time

import pytest

from conftest import ROOT, Server, free_port, tablecast_binary

PAGE = ROOT / "web-client-protocol" / "client"


def eventually_in(read, text):
    """Whether `text` shows up in `read()` within 5 s: the line is logged just after the port answers."""
    deadline = time.monotonic() + 5
    while text not in read():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def get(port, path, method="GET", headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture
def server_elsewhere(tmp_path):
    """A server started from an empty folder that is not the checkout, with no --static-dir."""
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [tablecast_binary(), "serve", "--port", str(port), "--db", str(tmp_path / "t.db")], cwd=tmp_path,
            stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            try:
                if get(port, "/healthz")[0] == 200:
                    break
            except OSError:
                assert process.poll() is None, log.read_text()
                time.sleep(0.05)
        yield port, log
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_the_page_built_into_the_binary_is_the_tree_and_served_from_any_folder(server_elsewhere):
    port, log = server_elsewhere
    files = sorted(p for p in PAGE.iterdir() if p.is_file())
    assert {p.name for p in files} >= {"index.html", "app.js", "tablecast.js"}
    for path in files:
        status, headers, body = get(port, f"/{path.name}")
        assert (status, body) == (200, path.read_bytes()), path.name
    assert get(port, "/")[2] == (PAGE / "index.html").read_bytes()
    assert get(port, "/test/")[0] == 404  # the client's own tests are not part of the page
    assert eventually_in(log.read_text, "serving the page built into the executable")


def test_static_dir_overrides_and_a_missing_one_is_an_error(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>dev</title>")
    server = Server("--static-dir", str(tmp_path)).start()
    try:
        assert get(server.port, "/")[2] == b"<!doctype html><title>dev</title>"
        assert eventually_in(server.read_log, f"serving the page from {tmp_path} (--static-dir)")
    finally:
        server.stop()
    missing = subprocess.run(
        [tablecast_binary(), "serve", "--port", str(free_port()), "--db", str(tmp_path / "t.db"),
         "--static-dir", str(tmp_path / "nonexistent")], capture_output=True, text=True, timeout=30)
    assert missing.returncode == 1
    assert f"--static-dir {tmp_path / 'nonexistent'} is not a folder" in missing.stderr
    assert not (tmp_path / "t.db").exists()


def test_the_page_carries_a_content_security_policy_and_revalidates_with_etag(server_elsewhere):
    port, _ = server_elsewhere
    status, headers, body = get(port, "/app.js")
    assert status == 200
    policy = {d.split(" ")[0]: d.split(" ")[1:] for d in headers["content-security-policy"].split("; ")}
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["connect-src"] == ["'self'", f"ws://127.0.0.1:{port}", f"wss://127.0.0.1:{port}"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-cache"
    tag = headers["etag"]
    again = get(port, "/app.js", headers={"If-None-Match": tag})
    assert (again[0], again[2], again[1]["etag"]) == (304, b"", tag)
    assert get(port, "/app.js", headers={"If-None-Match": f'W/{tag}, "other"'})[0] == 304
    assert get(port, "/app.js", headers={"If-None-Match": '"other"'})[:3:2] == (200, body)
    assert get(port, "/index.html")[1]["etag"] != tag
    # A forged Host header does not get into the policy.
    forged = get(port, "/", headers={"Host": "evil.example; script-src *"})[1]["content-security-policy"]
    assert "evil" not in forged and "connect-src 'self';" in forged


def test_head_is_answered_on_every_path_and_the_connection_stays_usable(server_elsewhere):
    port, _ = server_elsewhere
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for path, length in (("/", (PAGE / "index.html").stat().st_size), ("/healthz", None), ("/metrics", None)):
            connection.request("HEAD", path)
            response = connection.getresponse()
            assert response.status == 200, path
            assert response.read() == b""
            if length is not None:
                assert int(response.getheader("content-length")) == length
        connection.request("GET", "/healthz")  # the same keep-alive connection after the HEADs
        assert connection.getresponse().read().startswith(b'{"status":"ok"')
    finally:
        connection.close()
    assert get(port, "/no-such-file", method="HEAD")[0] == 404
