"""The HTTP API for backends (`/v1/`, web-client-protocol/openapi.yaml) over real HTTP against a real server: every
route and error status, with a body naming the problem and nothing applied; idempotent intents (once, across a
restart); ETag and 304; server-sent events with resume; bearer tokens; body bounds; CORS; the OpenAPI document."""
import http.client
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT, Server, validate
from test_storage_failure import fill, small_disk  # noqa: F401 (small_disk: a 4 MiB tmpfs fixture)

GROCERIES = {"table": "groceries", "sections": [{"header": "Fruit", "rows": [{"value": "Apples"}, {"value": "Figs"}]}]}


def api(server, method, path, body=None, headers=None, raw=None):
    """(status, headers by lower-case name, parsed JSON body or the raw bytes). A 2xx JSON body must match the
    protocol's schema of its type, as the OpenAPI document says."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        headers = dict(headers or {})
        payload = raw
        if body is not None:
            payload = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
        parsed = json.loads(data) if data and response.getheader("content-type", "").startswith("application/json") \
            else data
        if 200 <= response.status < 300 and path.startswith("/v1/") and isinstance(parsed, dict):
            validate(parsed)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
    finally:
        connection.close()


def refused(result, status, code):
    got, _, body = result
    assert got == status, f"expected {status}, got {got}: {body}"
    assert body["code"] == code and body["message"], body
    assert set(body) <= {"code", "message", "at"}, body
    return body


def version(server, table="groceries"):
    status, _, body = api(server, "GET", f"/v1/tables/{table}")
    assert status == 200, body
    return body["version"]


@pytest.fixture
def server():
    server = Server().start()
    yield server
    server.stop()


def test_tables_are_listed_created_read_with_etags_patched_and_dropped(server):
    assert api(server, "GET", "/v1/tables")[2] == {"type": "tables", "tables": []}
    status, _, ack = api(server, "POST", "/v1/tables", GROCERIES)
    assert status == 201 and ack["table"] == "groceries" and ack["version"] == 0 and ack["epoch"]
    refused(api(server, "POST", "/v1/tables", GROCERIES), 409, "table_exists")
    tables = api(server, "GET", "/v1/tables")[2]["tables"]
    assert [t["table"] for t in tables] == ["groceries"]

    status, headers, snapshot = api(server, "GET", "/v1/tables/groceries")
    assert status == 200
    assert set(snapshot) == {"type", "table", "version", "epoch", "rules", "sections"}
    assert [r["value"] for r in snapshot["sections"][0]["rows"]] == ["Apples", "Figs"]
    assert headers["etag"] == f'"{ack["epoch"]}:0"'
    status, headers, body = api(server, "GET", "/v1/tables/groceries", headers={"If-None-Match": headers["etag"]})
    assert status == 304 and body == b""
    # A change makes the tag stale: the new snapshot, with the new tag (and not an older shared one).
    api(server, "POST", "/v1/tables/groceries/intents", {"type": "insert", "at": [0, 2], "value": "Kiwis"})
    status, headers, snapshot = api(server, "GET", "/v1/tables/groceries", headers={"If-None-Match": f'"{ack["epoch"]}:0"'})
    assert status == 200 and snapshot["version"] == 1 and headers["etag"] == f'"{ack["epoch"]}:1"'
    assert [r["value"] for r in snapshot["sections"][0]["rows"]] == ["Apples", "Figs", "Kiwis"]
    assert api(server, "HEAD", "/v1/tables/groceries")[0] == 200

    status, _, ack = api(server, "PATCH", "/v1/tables/groceries/rules", {"moves": "none"})
    assert status == 200 and ack["table"] == "groceries", ack
    assert api(server, "GET", "/v1/tables/groceries")[2]["rules"]["moves"] == "none"
    refused(api(server, "PATCH", "/v1/tables/groceries/rules", {"moves": "sideways"}), 400, "bad_request")

    status, _, ack = api(server, "DELETE", "/v1/tables/groceries")
    assert status == 200 and ack["table"] == "groceries", ack
    refused(api(server, "GET", "/v1/tables/groceries"), 404, "no_such_table")
    refused(api(server, "DELETE", "/v1/tables/groceries"), 404, "no_such_table")


def test_history_and_snapshot_at_a_version(server):
    api(server, "POST", "/v1/tables", GROCERIES)
    for value in ["Kiwis", "Limes", "Pears"]:
        api(server, "POST", "/v1/tables/groceries/intents", {"type": "insert", "at": [0, 0], "value": value})
    status, _, changes = api(server, "GET", "/v1/tables/groceries/history?from=1&limit=2&order=oldest")
    assert status == 200, changes
    assert [e["version"] for e in changes["entries"]] == [1, 2] and changes["version"] == 3
    status, _, changes = api(server, "GET", "/v1/tables/groceries/history?limit=1")
    assert [e["version"] for e in changes["entries"]] == [3]
    status, headers, snapshot = api(server, "GET", "/v1/tables/groceries/snapshot?version=1")
    assert status == 200 and snapshot["version"] == 1 and headers["etag"].endswith(':1"')
    assert [r["value"] for r in snapshot["sections"][0]["rows"]] == ["Kiwis", "Apples", "Figs"]
    refused(api(server, "GET", "/v1/tables/groceries/snapshot"), 400, "bad_request")
    status, _, body = api(server, "GET", "/v1/tables/groceries/snapshot?version=9")
    assert 400 <= status < 500 and body["message"], body
    refused(api(server, "GET", "/v1/tables/groceries/history?limit=many"), 400, "bad_request")
    refused(api(server, "GET", "/v1/tables/groceries/history?colour=red"), 400, "bad_request")


def test_an_intent_with_an_idempotency_key_is_applied_once_even_across_a_restart(tmp_path):
    server = Server(db_dir=str(tmp_path)).start()
    api(server, "POST", "/v1/tables", GROCERIES)
    insert = {"type": "insert", "at": [0, 2], "value": "Kiwis"}
    key = {"Idempotency-Key": "order-1234"}
    status, _, ack = api(server, "POST", "/v1/tables/groceries/intents", insert, key)
    assert status == 200 and ack["version"] == 1 and ack["created"], ack
    assert api(server, "POST", "/v1/tables/groceries/intents", insert, key)[2] == ack
    assert version(server) == 1
    # The same key for another intent is a conflict, and changes nothing.
    refused(api(server, "POST", "/v1/tables/groceries/intents", dict(insert, value="Limes"), key), 409, "ref_reused")
    port = server.port
    server.stop()
    server = Server(db_dir=str(tmp_path)).start(port)
    try:
        assert api(server, "POST", "/v1/tables/groceries/intents", insert, key)[2] == ack
        assert version(server) == 1
        rows = api(server, "GET", "/v1/tables/groceries")[2]["sections"][0]["rows"]
        assert [r["value"] for r in rows] == ["Apples", "Figs", "Kiwis"]
    finally:
        server.stop()


def test_a_request_not_answered_in_time_gets_503_and_its_retry_is_safe():
    """`serve --http-answer-timeout 1` with every commit 2.5 s slow (the test-only `--debug-commit-delay-ms`, as a
    stalled store would be): an intent's request is answered 503 `unavailable` with Retry-After after about a
    second, not held; the log has the request's id; its intent is still committed, and a retry with the same
    Idempotency-Key gets the ack and applies nothing more."""
    server = Server("--debug-commit-delay-ms", "2500", "--http-answer-timeout", "1").start()
    try:
        def timed_out(result, started):
            body = refused(result, 503, "unavailable")
            assert 0.9 <= time.monotonic() - started <= 2.4, time.monotonic() - started
            assert result[1]["retry-after"] == "5", result[1]
            assert re.fullmatch(r"no answer within 1 s \(request ws#\d+\): it may still take effect; retry it "
                                r"with the same Idempotency-Key", body["message"]), body
            return body["message"]

        assert api(server, "POST", "/v1/tables", GROCERIES)[0] == 201
        insert = {"type": "insert", "at": [0, 2], "value": "Kiwis"}
        key = {"Idempotency-Key": "slow-1"}
        started = time.monotonic()
        message = timed_out(api(server, "POST", "/v1/tables/groceries/intents", insert, key), started)
        request = re.search(r"ws#\d+", message).group(0)
        assert any("HTTP request unanswered in time" in line and request in line and "/v1/tables/groceries/intents"
                   in line for line in server.read_log().splitlines()), server.read_log()
        # A read waits behind the commit too: it is answered 503 with a message of its own until the commit is done.
        started = time.monotonic()
        while True:
            status, _, body = api(server, "GET", "/v1/tables/groceries")
            if status == 200 and body["version"] == 1:
                break
            if status == 503:
                assert re.fullmatch(r"no answer within 1 s \(request ws#\d+\): try again", body["message"]), body
            assert time.monotonic() - started < 10, "the intent was never committed"
        status, _, ack = api(server, "POST", "/v1/tables/groceries/intents", insert, key)
        assert status == 200 and ack["version"] == 1, ack
        assert version(server) == 1
        rows = api(server, "GET", "/v1/tables/groceries")[2]["sections"][0]["rows"]
        assert [r["value"] for r in rows] == ["Apples", "Figs", "Kiwis"]
    finally:
        server.stop()


def test_bad_requests_are_refused_with_their_status_and_change_nothing(server):
    api(server, "POST", "/v1/tables", GROCERIES)
    intents = "/v1/tables/groceries/intents"
    refused(api(server, "POST", intents, raw=b'{"type":"insert",', headers={"Content-Type": "application/json"}),
            400, "bad_request")
    refused(api(server, "POST", intents, raw=b"[1,2]", headers={"Content-Type": "application/json"}),
            400, "bad_request")
    refused(api(server, "POST", intents, raw=b"", headers={"Content-Type": "application/json"}), 400, "bad_request")
    refused(api(server, "POST", intents, {"type": "subscribe"}), 400, "bad_request")
    refused(api(server, "POST", intents, {"type": "insert", "at": [0, 0]}), 400, "bad_request")
    refused(api(server, "POST", intents, {"type": "insert", "at": [0, 0], "value": 1, "table": "other"}),
            400, "bad_request")
    refused(api(server, "POST", intents, {"type": "insert", "at": [0, 0], "value": 1, "ref": "x"}), 400, "bad_request")
    status, _, body = api(server, "POST", intents, raw=b'{"type":"insert","at":[0,0],"value":1}',
                          headers={"Content-Type": "text/plain"})
    assert status == 415 and body["code"] == "bad_request", body
    body = refused(api(server, "POST", intents, {"type": "insert", "at": [0, 9], "value": 1}), 422, "out_of_range")
    assert body["at"] == "insert"
    refused(api(server, "POST", intents, {"type": "delete", "at": [0, 0], "row": "r99"}), 409, "conflict")
    refused(api(server, "POST", "/v1/tables/nope/intents", {"type": "insert", "at": [0, 0], "value": 1}),
            404, "no_such_table")
    refused(api(server, "GET", "/v1/elsewhere"), 404, "bad_request")
    status, headers, body = api(server, "PUT", "/v1/tables/groceries")
    assert status == 405 and headers["allow"] == "GET, DELETE" and body["message"], body
    refused(api(server, "POST", "/v1/tables", {"table": "x", "colour": "red"}), 400, "bad_request")
    assert version(server) == 0
    assert api(server, "GET", "/healthz")[0] == 200


def test_a_patch_sets_some_fields_of_a_row_and_keeps_the_others(server):
    """Every intent of the protocol is taken, `patch` too: a backend marks an order shipped without rewriting it,
    and another field changed meanwhile stays (an `edit` would have put its own copy back)."""
    api(server, "POST", "/v1/tables", {"table": "orders", "sections": [{"rows": [{"value": {"order": 7, "qty": 2}}]}]})
    row = api(server, "GET", "/v1/tables/orders")[2]["sections"][0]["rows"][0]["id"]
    intents = "/v1/tables/orders/intents"
    status, _, ack = api(server, "POST", intents, {"type": "edit", "at": [0, 0], "value": {"order": 7, "qty": 3}})
    assert status == 200 and ack["version"] == 1, ack
    patch = {"type": "patch", "base": 0, "at": [0, 0], "row": row, "patch": {"shipped": True, "note": None}}
    status, _, ack = api(server, "POST", intents, patch, headers={"Idempotency-Key": "ship-7"})
    assert status == 200 and ack["version"] == 2, ack
    assert api(server, "POST", intents, patch, headers={"Idempotency-Key": "ship-7"})[2] == ack
    snapshot = api(server, "GET", "/v1/tables/orders")[2]
    assert snapshot["version"] == 2
    assert snapshot["sections"][0]["rows"][0]["value"] == {"order": 7, "qty": 3, "shipped": True}
    body = refused(api(server, "POST", intents, {"type": "subscribe"}), 400, "bad_request")
    assert "patch" in body["message"], body
    assert version(server, "orders") == 2


def test_an_idempotency_key_longer_than_a_ref_is_refused_naming_the_header(server):
    api(server, "POST", "/v1/tables", GROCERIES)
    intents = "/v1/tables/groceries/intents"
    insert = {"type": "insert", "at": [0, 0], "value": "Kiwis"}
    body = refused(api(server, "POST", intents, insert, headers={"Idempotency-Key": "k" * 65}), 400, "bad_request")
    assert "Idempotency-Key" in body["message"] and "64" in body["message"], body
    assert version(server) == 0
    status, _, ack = api(server, "POST", intents, insert, headers={"Idempotency-Key": "k" * 64})
    assert status == 200 and ack["version"] == 1, ack


def test_bodies_are_bounded_in_size_and_time(tmp_path):
    server = Server("--max-message-bytes", "4096", "--handshake-timeout", "2").start()
    try:
        api(server, "POST", "/v1/tables", GROCERIES)
        big = {"type": "insert", "at": [0, 0], "value": "x" * 5000}
        status, headers, body = api(server, "POST", "/v1/tables/groceries/intents", big)
        assert status == 413 and body["code"] == "limit_exceeded", body

        # Chunked bodies (lws would wait on them forever): 411, whole or never ending, and the server stays idle.
        for body in [b"5\r\nhello\r\n0\r\n\r\n", b"400\r\n" + b" " * 1024 + b"\r\n"]:
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(b"POST /v1/tables/groceries/intents HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
                answer = b""
                while chunk := s.recv(4096):
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 411"), answer[:200]
                assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["code"] == "bad_request"
        started = time.monotonic()
        assert api(server, "GET", "/v1/tables")[0] == 200 and time.monotonic() - started < 1

        # A body that never completes is cut off after the handshake timeout.
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"POST /v1/tables/groceries/intents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"type\":")
            started = time.monotonic()
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            assert time.monotonic() - started < 8
            assert not data.startswith(b"HTTP/1.1 200"), data
        assert version(server) == 0
        assert api(server, "GET", "/healthz")[0] == 200
    finally:
        server.stop()


TOKENS = {"tokens": [
    {"token": "reader", "role": "read", "tables": ["*"]},
    {"token": "writer", "role": "write", "tables": ["team-*"]},
    {"token": "admin", "role": "admin", "tables": ["*"]},
]}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_bearer_tokens_and_roles(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    server = Server("--tokens", str(tokens)).start()
    try:
        refused(api(server, "GET", "/v1/tables"), 401, "unauthorized")
        refused(api(server, "GET", "/v1/tables", headers=bearer("guess")), 401, "unauthorized")
        refused(api(server, "GET", "/v1/tables", headers={"Authorization": "Basic YTpi"}), 401, "unauthorized")
        assert api(server, "POST", "/v1/tables", dict(GROCERIES, table="team-a"), bearer("admin"))[0] == 201
        refused(api(server, "POST", "/v1/tables", dict(GROCERIES, table="team-b"), bearer("writer")), 403, "forbidden")
        insert = {"type": "insert", "at": [0, 0], "value": "Kiwis"}
        refused(api(server, "POST", "/v1/tables/team-a/intents", insert, bearer("reader")), 403, "forbidden")
        status, _, snapshot = api(server, "GET", "/v1/tables/team-a", headers=bearer("reader"))
        assert status == 200 and snapshot["version"] == 0
        status, _, ack = api(server, "POST", "/v1/tables/team-a/intents", insert, bearer("writer"))
        assert status == 200 and ack["version"] == 1
        refused(api(server, "DELETE", "/v1/tables/team-a", headers=bearer("writer")), 403, "forbidden")
        assert api(server, "DELETE", "/v1/tables/team-a", headers=bearer("admin"))[0] == 200
    finally:
        server.stop()


def test_without_tokens_a_loopback_caller_is_admin(server):
    assert api(server, "POST", "/v1/tables", GROCERIES)[0] == 201
    assert api(server, "DELETE", "/v1/tables/groceries")[0] == 200


def test_requests_beyond_the_pace_get_429_with_retry_after():
    server = Server("--intents-per-second", "5").start()
    try:
        statuses = []
        for _ in range(20):
            status, headers, body = api(server, "GET", "/v1/tables")
            statuses.append(status)
            if status == 429:
                assert headers["retry-after"] == "1" and body["code"] == "rate_limited", body
        assert 429 in statuses and statuses[0] == 200
    finally:
        server.stop()


class EventStream:
    """A `text/event-stream` response read event by event."""

    def __init__(self, server, table, headers=None):
        self.connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        self.connection.request("GET", f"/v1/tables/{table}/events", headers=headers or {})
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.headers = {k.lower(): v for k, v in self.response.getheaders()}

    def next(self, comments=False):
        """The next event as a dict of its fields (`data` parsed); comments (heartbeats) as {"comment": text} when
        `comments`, else skipped. None at the end of the stream."""
        event = {}
        while True:
            line = self.response.fp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if event:
                    if "data" in event:
                        event["data"] = json.loads(event["data"])
                    return event
                continue
            if line.startswith(":"):
                if comments:
                    return {"comment": line[1:].strip()}
                continue
            name, _, value = line.partition(": ")
            event[name] = value

    def next_of(self, kind):
        while (event := self.next()) is not None:
            if event.get("event") == kind:
                return event
        raise AssertionError(f"the stream ended before a {kind} event")

    def close(self):
        self.connection.close()


def test_events_stream_snapshot_then_updates_and_resume_where_they_left_off(server):
    api(server, "POST", "/v1/tables", GROCERIES)
    watcher = server.client()
    watcher.subscribe("groceries")
    stream = EventStream(server, "groceries")
    assert stream.status == 200 and stream.headers["content-type"] == "text/event-stream"
    snapshot = stream.next_of("snapshot")
    epoch = snapshot["data"]["epoch"]
    assert snapshot["id"] == f"{epoch}:0" and snapshot["data"]["version"] == 0
    for value in ["Kiwis", "Limes", "Pears", "Plums"]:
        api(server, "POST", "/v1/tables/groceries/intents", {"type": "insert", "at": [0, 0], "value": value})
    updates = [stream.next_of("update") for _ in range(4)]
    assert [u["id"] for u in updates] == [f"{epoch}:{v}" for v in range(1, 5)]
    over_websocket = [watcher.next("update", table="groceries") for _ in range(4)]
    assert [u["data"] for u in updates] == over_websocket
    stream.close()

    # Gone after version 2: a resume gets versions 3 and 4, no snapshot.
    for value in ["Quinces"]:
        api(server, "POST", "/v1/tables/groceries/intents", {"type": "insert", "at": [0, 0], "value": value})
    resumed = EventStream(server, "groceries", {"Last-Event-ID": f"{epoch}:2"})
    first = resumed.next()
    assert first["event"] == "update" and first["id"] == f"{epoch}:3", first
    assert [resumed.next_of("update")["id"] for _ in range(2)] == [f"{epoch}:4", f"{epoch}:5"]
    resumed.close()

    # Another life of the table under the same name: a resume from the old one starts from a fresh snapshot.
    api(server, "DELETE", "/v1/tables/groceries")
    api(server, "POST", "/v1/tables", GROCERIES)
    again = EventStream(server, "groceries", {"Last-Event-ID": f"{epoch}:5"})
    first = again.next()
    assert first["event"] == "snapshot" and first["data"]["epoch"] != epoch and first["data"]["version"] == 0, first
    again.close()
    watcher.close()


def test_an_event_stream_of_a_missing_table_is_404_and_a_dropped_one_says_so(server):
    stream = EventStream(server, "nope")
    assert stream.status == 404 and json.loads(stream.response.read())["code"] == "no_such_table"
    stream.close()
    api(server, "POST", "/v1/tables", GROCERIES)
    stream = EventStream(server, "groceries")
    stream.next_of("snapshot")
    api(server, "DELETE", "/v1/tables/groceries")
    assert stream.next_of("dropped")["data"]["table"] == "groceries"
    stream.close()


def test_event_streams_send_a_heartbeat_comment():
    """A quiet stream gets a heartbeat every interval, again and again."""
    server = Server("--debug-heartbeat-ms", "200").start()
    try:
        api(server, "POST", "/v1/tables", GROCERIES)
        stream = EventStream(server, "groceries")
        assert stream.next(comments=True)["event"] == "snapshot"
        started = time.monotonic()
        for _ in range(3):
            event = stream.next(comments=True)
            while "comment" not in event:
                event = stream.next(comments=True)
            assert event == {"comment": "heartbeat"}
        assert 0.5 < time.monotonic() - started < 3
        stream.close()
    finally:
        server.stop()


def test_cors_for_allowed_origins(tmp_path):
    server = Server("--allow-origin", "https://app.example").start()
    try:
        status, headers, _ = api(server, "OPTIONS", "/v1/tables/groceries/intents", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, idempotency-key"})
        assert status == 204
        assert headers["access-control-allow-origin"] == "https://app.example"
        assert "POST" in headers["access-control-allow-methods"]
        assert "Idempotency-Key" in headers["access-control-allow-headers"]
        status, headers, _ = api(server, "GET", "/v1/tables", headers={"Origin": "https://app.example"})
        assert status == 200 and headers["access-control-allow-origin"] == "https://app.example"
        assert "ETag" in headers["access-control-expose-headers"]
        refused(api(server, "OPTIONS", "/v1/tables", headers={"Origin": "https://evil.example"}), 403, "forbidden")
        refused(api(server, "POST", "/v1/tables", GROCERIES, {"Origin": "https://evil.example"}), 403, "forbidden")
        assert api(server, "GET", "/v1/tables")[2] == {"type": "tables", "tables": []}
    finally:
        server.stop()


def test_the_openapi_document_is_served_and_matches_the_routes(server):
    status, headers, body = api(server, "GET", "/v1/openapi.yaml")
    assert status == 200 and headers["content-type"].startswith("application/yaml")
    assert body == (ROOT / "web-client-protocol" / "openapi.yaml").read_bytes()
    document = yaml.safe_load(body)
    assert document["openapi"].startswith("3.1")
    # A valid OpenAPI 3.1 document, its $refs to the protocol's schemas resolved.
    from openapi_spec_validator import validate as validate_openapi
    validate_openapi(document, base_uri=(ROOT / "web-client-protocol" / "openapi.yaml").as_uri())
    api(server, "POST", "/v1/tables", GROCERIES)
    answered = {
        "/v1/tables": {"get", "post"},
        "/v1/tables/{table}": {"get", "delete"},
        "/v1/tables/{table}/rules": {"patch"},
        "/v1/tables/{table}/intents": {"post"},
        "/v1/tables/{table}/history": {"get"},
        "/v1/tables/{table}/snapshot": {"get"},
        "/v1/tables/{table}/events": {"get"},
        "/v1/openapi.yaml": {"get"},
        "/v1/schema/{name}": {"get"},
    }
    paths = {path: {m for m in item if m in ("get", "post", "patch", "delete", "put")}
             for path, item in document["paths"].items()}
    assert paths == answered
    # Every schema the document refers to is served beside it, as its file in the protocol's folder.
    refs = set(re.findall(r'\$ref: "(schema/[^"#]+)', body.decode()))
    assert refs
    for ref in refs:
        status, headers, schema = api(server, "GET", "/v1/" + ref)
        assert (status, headers["content-type"]) == (200, "application/schema+json"), ref
        assert schema == (ROOT / "web-client-protocol" / ref).read_bytes(), ref
    assert api(server, "GET", "/v1/schema/nope.json")[0] == 404
    for path, methods in answered.items():
        concrete = path.replace("{table}", "groceries").replace("{name}", "ack.json")
        for method in {"put", "post", "patch", "delete", "get"} - methods:
            # Every method the document does not list is refused by the server as not allowed (or not found).
            if concrete.endswith("/events") or method == "delete":
                continue
            assert api(server, method.upper(), concrete, raw=b"")[0] in (404, 405), (method, concrete)


def test_api_responses_are_counted_by_status(server):
    api(server, "GET", "/v1/tables")
    api(server, "GET", "/v1/tables/nope")
    metrics = api(server, "GET", "/metrics")[2].decode()
    assert 'tablecast_http_api_responses_total{status="200"}' in metrics
    assert 'tablecast_http_api_responses_total{status="404"}' in metrics


def readme_steps():
    """[(command, [expected lines])] from the ```sh block under the README's HTTP API heading."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("\n### The HTTP API for backends")
    block = readme[readme.index("```sh\n", start) + 6:]
    block = block[:block.index("```")]
    steps = []
    for line in block.splitlines():
        if line.startswith("# → "):
            steps[-1][1].append(line[4:])
        elif line.strip():
            steps.append((line, []))
    return steps


def test_the_readme_examples_run_in_order_and_print_what_they_show(server):
    steps = readme_steps()
    assert len(steps) >= 8
    for command, expected in steps:
        command = command.replace("localhost:8080", f"127.0.0.1:{server.port}")
        output = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=20).stdout
        lines = output.strip("\n").splitlines()
        assert len(lines) == len(expected), f"`{command}` printed {output!r}, the README shows {expected}"
        for line, pattern in zip(lines, expected):
            regex = ".*".join(map(re.escape, pattern.split("…")))
            assert re.fullmatch(regex, line.rstrip()), f"`{command}` printed\n  {line}\nthe README shows\n  {pattern}"


def test_an_event_stream_reader_that_stops_reading_is_ended_with_4000_and_others_go_on():
    server = Server("--max-queued-messages", "20").start()
    try:
        api(server, "POST", "/v1/tables", GROCERIES)
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.settimeout(20)
        reader.connect(("127.0.0.1", server.port))
        reader.sendall(b"GET /v1/tables/groceries/events HTTP/1.1\r\nHost: x\r\n\r\n")
        writer = server.client()
        writer.subscribe("groceries")
        for i in range(400):
            writer.ok({"type": "insert", "table": "groceries", "at": [0, 0], "value": f"{i}" + "x" * 8000})
        # The writer and a subscriber that reads were served all along.
        assert writer.next("update", table="groceries", version=400)
        received = b""
        while chunk := reader.recv(65536):
            received += chunk
        reader.close()
        assert received.startswith(b"HTTP/1.1 200")
        last = received.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].decode()
        assert last.startswith("event: close\ndata: "), last[:200]
        assert json.loads(last.split("data: ", 1)[1]) == {"code": 4000, "reason": "outbound queue overflow"}
        assert received.count(b"event: update") < 400
        assert api(server, "GET", "/healthz")[0] == 200
        writer.close()
    finally:
        server.stop()


def test_an_idempotent_retry_on_another_node_gets_the_same_ack_and_applies_nothing(postgres):
    from postgres import Nodes
    nodes = Nodes(postgres, 2)
    try:
        first, second = nodes.nodes
        assert api(first, "POST", "/v1/tables", GROCERIES)[0] == 201
        insert = {"type": "insert", "at": [0, 0], "value": "Kiwis"}
        key = {"Idempotency-Key": "order-77"}
        status, _, ack = api(first, "POST", "/v1/tables/groceries/intents", insert, key)
        assert status == 200 and ack["version"] == 1, ack
        assert api(second, "POST", "/v1/tables/groceries/intents", insert, key)[2] == ack
        refused(api(second, "POST", "/v1/tables/groceries/intents", dict(insert, value="Limes"), key),
                409, "ref_reused")
        assert version(second) == 1 and version(first) == 1
    finally:
        nodes.stop()


def test_a_server_stopping_ends_its_event_streams_with_1001():
    server = Server().start()
    api(server, "POST", "/v1/tables", GROCERIES)
    stream = EventStream(server, "groceries")
    stream.next_of("snapshot")
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 10
    close = stream.next_of("close")
    assert close["data"] == {"code": 1001, "reason": "server shutting down"}
    assert stream.next() is None
    stream.close()


def test_property_based_requests_from_the_document_get_no_5xx_and_conforming_answers(server, tmp_path):
    """schemathesis (from PyPI) generates requests from openapi.yaml for a fixed budget (20 examples per operation,
    fixed seed) against the live server: no 5xx, and every answer's status, content type, headers and body are
    the document's. Left out: the event stream (it does not end), and NUL in generated strings (lws drops a request
    whose URI has %00 without an answer)."""
    import shutil
    st = shutil.which("st", path=str(pathlib.Path(sys.executable).parent))
    assert st is not None, "schemathesis is not installed beside this Python (.ci/install installs it)"
    api(server, "POST", "/v1/tables", GROCERIES)
    run = subprocess.run(
        [st, "run", str(ROOT / "web-client-protocol" / "openapi.yaml"), "--url", f"http://127.0.0.1:{server.port}",
         "-n", "20", "--seed", "1", "--exclude-operation-id", "events", "--request-timeout", "5",
         "--generation-allow-x00", "false", "-c",
         "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
         "response_schema_conformance"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-4000:]
    assert api(server, "GET", "/healthz")[0] == 200


def test_an_intent_the_store_cannot_take_is_503_with_retry_after_and_a_retry_applies_it_once(small_disk, tmp_path):
    server = Server(db_dir=small_disk)
    server.db = os.path.join(small_disk, "tablecast.db")
    server.dir = str(tmp_path)  # the server's log stays off the full disk
    try:
        server.start()
        assert api(server, "POST", "/v1/tables", {"table": "full", "sections": [{"rows": []}]})[0] == 201
        filler = fill(small_disk)
        intents = "/v1/tables/full/intents"
        for i in range(200):
            key = {"Idempotency-Key": f"k-{i}"}
            body = {"type": "insert", "at": [0, 0], "value": f"{i:04d}" + "x" * 20_000}
            status, headers, answer = api(server, "POST", intents, body, key)
            if status != 200:
                break
        else:
            raise AssertionError("the disk never filled up")
        assert status == 503 and int(headers["retry-after"]) >= 1, (status, headers)
        refused((status, headers, answer), 503, "unavailable")
        assert small_disk not in answer["message"] and "SQLite" not in answer["message"], answer
        os.remove(filler)
        # The same key once the store takes it again: applied, once.
        status, _, ack = api(server, "POST", intents, body, key)
        assert status == 200 and ack["version"] == i + 1, (status, ack)
        again = api(server, "POST", intents, body, key)
        assert again[0] == 200 and again[2] == ack
        assert api(server, "GET", "/v1/tables/full")[2]["version"] == i + 1
    finally:
        server.stop()
