"""`tablecast serve --log-format json`: one JSON object per line, with fields collectors can index, and no tokens."""
import json

from conftest import Client, Server

READER = "rdr-5b1e9c0d7f"
ADMIN = "adm-8d2c4a61e3"
WRONG = "guess-0f9e8d7c6b"


def test_json_logs_are_one_object_per_line_with_fields_and_never_a_token(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"token": READER, "role": "read", "tables": ["*"]},
        {"token": ADMIN, "role": "admin", "tables": ["*"]},
    ]}))
    server = Server("--tokens", str(tokens), "--log-format", "json", "--log-level", "trace").start()
    try:
        admin = server.client(name="admin", token=ADMIN, client_id="ops-admin")
        admin.ok({"type": "createTable", "table": "logged", "sections": [{"rows": [{"value": "a"}]}]})
        reader = server.client(name="reader", token=READER)
        reader.fails({"type": "insert", "table": "logged", "at": [0, 0], "value": "b"}, "forbidden")
        intruder = Client(server.url, hello=False)
        refused = intruder.request({"type": "hello", "client": "intruder", "name": "x", "token": WRONG},
                                   expect="welcome")
        assert refused["type"] == "error" and refused["code"] == "unauthorized"
        admin.ok({"type": "dropTable", "table": "logged"}, expect="ack")
        for client in (admin, reader, intruder):
            client.close()
    finally:
        server.stop()

    text = server.read_log()
    records = []
    for line in text.splitlines():
        record = json.loads(line)  # every line is one JSON object
        assert isinstance(record, dict), line
        for key in ("time", "level", "message"):
            assert key in record, f"no {key} in {line}"
        records.append(record)
    messages = {record["message"]: record for record in records}
    assert messages["serving"]["level"] == "info"
    # Counts and ids are JSON numbers; PostgreSQL's durability is not SQLite's pragma, so only SQLite says synchronous.
    assert messages["serving"]["tables"] == 0 and messages["serving"]["synchronous"] == "FULL"
    assert messages["shutting down"]["signal"] == 15
    assert messages["table created"]["table"] == "logged"
    denial = messages["refused a hello"]
    assert denial["code"] == "unauthorized" and denial["client"] == "intruder" and isinstance(denial["connection"], int)
    assert messages["stopped"]["level"] == "info"
    for token in (READER, ADMIN, WRONG):
        assert token not in text, f"the log shows a token: {token}"
    # libwebsockets' notices are debug lines: shown at trace level (it reports its version and event library).
    assert any(record["message"].startswith("LWS: 4.1.6") and record["level"] == "debug" for record in records)


def test_libwebsockets_notices_are_not_even_formatted_below_debug():
    """Below debug, lws is not asked for its notices (formatting them cost the service thread dearly: Debian's event
    library writes one each time a socket's events change). Its warnings and errors still come through."""
    server = Server("--log-level", "info").start()
    try:
        client = server.client()
        client.ok({"type": "createTable", "table": "quiet", "sections": [{"rows": [{"value": "a"}]}]})
        client.close()
    finally:
        server.stop()
    text = server.read_log()
    assert "serving" in text and "LWS:" not in text and "elops_" not in text, text


def test_the_start_up_line_on_postgresql_names_no_sqlite_synchronous_setting(postgres):
    server = Server("--db", postgres.create_database(), "--log-format", "json").start()
    server.stop()
    serving = [json.loads(line) for line in server.read_log().splitlines() if '"serving"' in line]
    assert len(serving) == 1 and "synchronous" not in serving[0] and serving[0]["database"].startswith("postgresql://")
