"""Signed tokens (JWT) against a real server: tokens minted here with PyJWT, keys made here (an HMAC secret and an RSA
key pair), as an app's backend would mint them. Every refusal is `unauthorized` with a reason that never quotes the
token; roles follow the token's table patterns."""
import base64
import hashlib
import hmac
import json
import os
import signal
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from websockets.exceptions import ConnectionClosed

from conftest import Server

SECRET = os.urandom(32).hex()  # 64 bytes of text: HS256, HS384 and HS512 all take it


def rsa_key():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, public


RSA_KEY, RSA_PUBLIC = rsa_key()


def claims(sub="ana", ttl=300, tables=None, **extra):
    now = int(time.time())
    body = {"sub": sub, "iat": now, "exp": now + ttl, "iss": "app", "aud": "tablecast",
            "tablecast": {"tables": tables if tables is not None else {"*": "write"}}}
    body.update(extra)
    return {k: v for k, v in body.items() if v is not None}


def hs256(body, secret=SECRET):
    return jwt.encode(body, secret, algorithm="HS256")


def rs256(body, key=None):
    return jwt.encode(body, key or RSA_KEY, algorithm="RS256")


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_signed(header, body, secret):
    """A token PyJWT will not make: HMAC-signed with any bytes as the secret (the RSA public key, say)."""
    signed = b64(json.dumps(header).encode()) + "." + b64(json.dumps(body).encode())
    return signed + "." + b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())


def jwt_server(tmp_path, *extra):
    secret = tmp_path / "jwt-secret"
    secret.write_text(SECRET + "\n")  # one trailing newline, as editors leave it: not part of the secret
    public = tmp_path / "jwt-public.pem"
    public.write_bytes(RSA_PUBLIC)
    return Server("--jwt-secret-file", str(secret), "--jwt-public-key", str(public), "--jwt-issuer", "app",
                  "--jwt-audience", "tablecast", *extra).start()


def hello(server, token, client_id="bb-jwt", name="hello-name"):
    """Says hello with `token` (None: none) on a new connection: (client, welcome or error)."""
    c = server.client(hello=False)
    message = {"type": "hello", "client": client_id, "name": name}
    if token is not None:
        message["token"] = token
    return c, c.request(message, expect="welcome")


def refused(server, token, reason):
    c, response = hello(server, token)
    assert response["type"] == "error" and response["code"] == "unauthorized", response
    assert reason in response["message"], response
    # The reason never quotes the token, nor any of its parts.
    for part in token.split("."):
        assert len(part) < 8 or part not in response["message"], response
    # Its requests are refused with the hello's reason, which says more than that a token is needed.
    assert c.fails({"type": "listTables"}, "unauthorized")["message"] == response["message"]
    c.close()
    return response["message"]


def test_each_kind_of_bad_token_is_refused_as_unauthorized(tmp_path):
    server = jwt_server(tmp_path)
    for token in (hs256(claims()), rs256(claims()), jwt.encode(claims(), SECRET, algorithm="HS512")):
        c, response = hello(server, token)
        assert response["type"] == "welcome", response
        c.close()
    other_rsa, _ = rsa_key()
    now = int(time.time())
    cases = [
        (hs256(claims(), secret="another-secret-of-thirty-two-bytes-or-more"), "its signature does not verify"),
        (rs256(claims(), key=other_rsa), "its signature does not verify"),
        (jwt.encode(claims(), None, algorithm="none"), "unsigned tokens ('alg' none) are not accepted"),
        (b64(b'{"alg":"none","typ":"JWT"}') + "." + b64(json.dumps(claims()).encode()) + ".c2ln",
         "unsigned tokens ('alg' none) are not accepted"),
        # The classic confusion: HS256 with the server's RSA public key as the HMAC secret.
        (hand_signed({"alg": "HS256", "typ": "JWT"}, claims(), RSA_PUBLIC), "its signature does not verify"),
        (hs256(claims(exp=now - 60)), "it has expired"),
        (hs256(claims(nbf=now + 600)), "it is not valid yet"),
        (hs256(claims(iss="someone-else")), "issued by another issuer"),
        (rs256(claims(aud="another-app")), "meant for another audience"),
        (hs256(claims(sub=None)), "it has no 'sub'"),
        (hs256(claims(exp=None)), "it has no 'exp'"),
        (hs256(claims(tables={"*": "owner"})), "'tablecast.tables'"),
        (jwt.encode(claims(), RSA_KEY, algorithm="RS512")[:-40], "its signature does not verify"),
        ("a.b", "unknown token"),
        ("not-a-jwt", "unknown token"),
        ("..", "it is malformed"),
        ("QUFB." * 2 + "QUFB", "its header is not a JSON object"),
        ("eyJ" + "A" * 200_000 + ".e30.c2ln", "longer than 16384 bytes"),
    ]
    for token, reason in cases:
        refused(server, token, reason)
    # Told apart: no token at all, and one the server does not know.
    assert refused(server, "guess", "unknown token") != ""
    c, response = hello(server, None)
    assert response["type"] == "error" and response["code"] == "unauthorized"
    assert response["message"] == "this server requires a token: send one in hello"
    c.close()
    log = server.read_log()
    for token, _ in cases:
        for part in token.split("."):
            assert len(part) < 8 or part not in log, "a token reached the server's log"
    server.stop()


def test_an_hs256_token_signed_with_the_public_key_fails_on_a_server_with_rsa_keys_only(tmp_path):
    public = tmp_path / "jwt-public.pem"
    public.write_bytes(RSA_PUBLIC)
    server = Server("--jwt-public-key", str(public)).start()
    message = refused(server, hand_signed({"alg": "HS256"}, claims(), RSA_PUBLIC), "matches none of the server's keys")
    assert message == "token refused: its algorithm HS256 matches none of the server's keys (RS256, RS384, RS512)"
    server.stop()


def test_roles_follow_the_tokens_table_patterns_beside_a_tokens_file(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"token": "ops-admin", "role": "admin", "tables": ["*"]}]}))
    server = jwt_server(tmp_path, "--tokens", str(tokens))
    admin = server.client(token="ops-admin")
    for table in ("team-a", "team-admin", "private", "public"):
        admin.ok({"type": "createTable", "table": table, "sections": [{"rows": [{"value": table}]}]})
    bo = server.client(token=rs256(claims(sub="bo", tables={"team-*": "write", "team-admin": "admin",
                                                            "pub*": "read"})))
    assert bo.welcome["type"] == "welcome"
    bo.ok({"type": "insert", "table": "team-a", "at": [0, 0], "value": "w"})
    bo.fails({"type": "insert", "table": "team-a", "at": [0, 0], "value": "w", "editable": False}, "forbidden")
    bo.ok({"type": "setRules", "table": "team-admin", "rules": {"moves": "none"}})
    bo.subscribe("public")
    bo.fails({"type": "insert", "table": "public", "at": [0, 0], "value": "w"}, "forbidden")
    bo.fails({"type": "subscribe", "table": "private"}, "forbidden")
    bo.fails({"type": "createTable", "table": "team-b"}, "forbidden")
    listed = [t["table"] for t in bo.ok({"type": "listTables"}, expect="tables")["tables"]]
    assert listed == ["public", "team-a", "team-admin"]
    nobody = server.client(token=hs256(claims(sub="cy", tables={})))
    nobody.fails({"type": "subscribe", "table": "public"}, "forbidden")
    assert nobody.ok({"type": "listTables"}, expect="tables")["tables"] == []
    for c in (admin, bo, nobody):
        c.close()
    server.stop()


def test_bad_flags_and_keys_stop_start_up(tmp_path):
    short = tmp_path / "short"
    short.write_text("too-short\n")
    not_a_key = tmp_path / "not-a-key.pem"
    not_a_key.write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    for args, words in [
        (["--jwt-secret-file", str(short)], "the secret is 9 bytes: HS256 needs at least 32"),
        (["--jwt-public-key", str(not_a_key)], "not a PEM public key"),
        (["--jwt-public-key", str(tmp_path / "missing.pem")], "cannot read --jwt-public-key"),
        (["--jwt-issuer", "app"], "need --jwt-secret-file or --jwt-public-key"),
        (["--jwt-revoked-file", str(short)], "need --jwt-secret-file or --jwt-public-key"),
    ]:
        server = Server(*args)
        try:
            server.start()
            raise AssertionError(f"started with {args}")
        except AssertionError as error:
            assert "server exited early" in str(error) and words in str(error), error
        assert server.process.wait(timeout=10) == 1
        server.log.close()


def test_presence_and_history_show_the_verified_user_and_name_whatever_hello_claims(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"token": "ops-admin", "role": "admin", "tables": ["*"]},
        {"token": "cy-token", "role": "write", "tables": ["*"], "user": "cy", "name": "Cy from the file"},
    ]}))
    server = jwt_server(tmp_path, "--tokens", str(tokens))
    admin = server.client(token="ops-admin", name="Ops")
    admin.ok({"type": "createTable", "table": "shared", "sections": [{"rows": [{"value": "a"}]}]})
    watcher = server.client(hello=False)  # no name: counted, not listed
    watcher.ok({"type": "hello", "client": "bb-watch", "token": hs256(claims(sub="w", tables={"*": "read"}))},
               expect="welcome")
    watcher.subscribe("shared")
    # Ana's token names her; her hello claims to be someone else.
    ana = server.client(client_id="bb-ana", token=rs256(claims(sub="ana", name="Ana Verified")), name="The Boss")
    _, subscribed = ana.subscribe("shared")
    # Bo's token has no name: his hello's name is shown, next to his verified user.
    bo = server.client(client_id="bb-bo", token=hs256(claims(sub="bo")), name="Bo")
    bo.subscribe("shared")
    cy = server.client(client_id="bb-cy", token="cy-token", name="Not Cy")
    cy.subscribe("shared")
    seen = {}
    deadline = time.time() + 10
    while len(seen) < 3 and time.time() < deadline:
        delta = watcher.next("presence", table="shared")
        for entry in delta["joined"] + delta["changed"]:
            seen[entry["client"]] = entry
    assert {c: (e["name"], e.get("user")) for c, e in seen.items()} == {
        "bb-ana": ("Ana Verified", "ana"), "bb-bo": ("Bo", "bo"), "bb-cy": ("Cy from the file", "cy")}
    ana.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "by ana"})
    bo.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "by bo"})
    admin.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "by ops"})
    page = watcher.ok({"type": "history", "table": "shared", "order": "oldest"}, expect="changes")
    origins = [(e["origin"]["client"], e["origin"].get("name"), e["origin"].get("user")) for e in page["entries"]]
    assert origins == [("bb-ana", "Ana Verified", "ana"), ("bb-bo", "Bo", "bo"),
                       (admin.client_id, "Ops", None)], origins
    for c in (admin, watcher, ana, bo, cy):
        c.close()
    # History survives a restart: the user is stored with each change.
    server.stop()
    server.start()
    reader = server.client(token="ops-admin")
    page = reader.ok({"type": "history", "table": "shared", "order": "oldest"}, expect="changes")
    assert [e["origin"].get("user") for e in page["entries"]] == ["ana", "bo", None]
    reader.close()
    server.stop()


def test_refs_follow_the_user_from_token_to_token_and_not_to_another_user(tmp_path):
    server = jwt_server(tmp_path)
    first = server.client(client_id="laptop", token=hs256(claims(sub="ana", jti="t1", tables={"*": "admin"})))
    first.ok({"type": "createTable", "table": "team-a", "sections": [{"rows": []}]})
    ack = first.ok({"type": "insert", "table": "team-a", "at": [0, 0], "value": "once", "ref": "r1"})
    first.close()
    # A new token for the same user (a refresh by the backend): the retry gets the first ack, nothing twice.
    again = server.client(client_id="laptop", token=rs256(claims(sub="ana", jti="t2", iat=int(time.time()) + 1)))
    retry = again.ok({"type": "insert", "table": "team-a", "at": [0, 0], "value": "once", "ref": "r1"})
    assert retry["version"] == ack["version"] == 1
    # Another user with the same client id and ref: their own intent, applied.
    other = server.client(client_id="laptop", token=hs256(claims(sub="bo")))
    theirs = other.ok({"type": "insert", "table": "team-a", "at": [0, 0], "value": "bo's", "ref": "r1"})
    assert theirs["version"] == 2
    _, status = again.subscribe("team-a")
    assert status["version"] == 2
    for c in (again, other):
        c.close()
    server.stop()


def close_of(client, timeout=15):
    """Reads until the server closes `client`: (code, reason, when), skipping the messages before."""
    deadline = time.time() + timeout
    while True:
        try:
            client.ws.recv(timeout=max(0.01, deadline - time.time()))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None, f"closed without a close frame: {closed}"
            return closed.rcvd.code, closed.rcvd.reason, time.time()


LEEWAY = 5  # seconds a token is taken past its exp (the spec's clock leeway)


def test_a_token_ends_its_connection_with_4001_at_expiry_unless_refreshed(tmp_path):
    server = jwt_server(tmp_path)
    admin = server.client(token=hs256(claims(sub="ops", tables={"*": "admin"})))
    admin.ok({"type": "createTable", "table": "t", "sections": [{"rows": []}]})
    exp = int(time.time()) + 3
    short = server.client(client_id="bb-short", token=hs256(claims(sub="ana", exp=exp)))
    short.subscribe("t")
    kept = server.client(client_id="bb-kept", token=hs256(claims(sub="bo", exp=exp)))
    kept.subscribe("t")
    # Refused refreshes leave the connection as it was: another user's token, a bad one, and none said in hello.
    kept.fails({"type": "refreshToken", "token": hs256(claims(sub="mallory", ttl=600))}, "unauthorized")
    bad = kept.fails({"type": "refreshToken", "token": hs256(claims(sub="bo", ttl=600), secret="x" * 40)},
                     "unauthorized")
    assert bad["message"] == "token refused: its signature does not verify"
    nobody = server.client(hello=False)
    nobody.fails({"type": "refreshToken", "token": hs256(claims(sub="bo"))}, "bad_request")
    fresh = claims(sub="bo", ttl=600)
    ack = kept.ok({"type": "refreshToken", "token": hs256(fresh)})
    assert ack == {"type": "ack", "ref": ack["ref"], "expires": fresh["exp"]}

    code, reason, when = close_of(short)
    assert (code, reason) == (4001, "token expired")
    assert exp + LEEWAY - 1 <= when <= exp + LEEWAY + 2, (when - exp)
    # The refreshed connection is still served, and sees what others do.
    admin.ok({"type": "insert", "table": "t", "at": [0, 0], "value": "after"})
    assert kept.next("update", table="t")["insertRows"][0]["row"]["value"] == "after"
    assert [t["table"] for t in kept.ok({"type": "listTables"}, expect="tables")["tables"]] == ["t"]
    for c in (admin, kept, nobody):
        c.close()
    server.stop()


def test_a_refreshed_token_with_fewer_tables_ends_those_subscriptions_at_once(tmp_path):
    server = jwt_server(tmp_path)
    ana = server.client(client_id="bb-ana", token=hs256(claims(sub="ana", tables={"*": "admin"})))
    for table in ("kept", "lost"):
        ana.ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
        ana.subscribe(table)
    ana.ok({"type": "refreshToken", "token": hs256(claims(sub="ana", tables={"kept": "write"}))})
    ended = ana.next("unsubscribed", table="lost")
    assert ended == {"type": "unsubscribed", "table": "lost",
                     "reason": "the connection's token no longer lets it read table 'lost'"}
    ana.fails({"type": "subscribe", "table": "lost"}, "forbidden")
    ana.fails({"type": "setRules", "table": "kept", "rules": {"moves": "none"}}, "forbidden")
    ana.ok({"type": "insert", "table": "kept", "at": [0, 0], "value": "still writing"})
    ana.close()
    server.stop()


def test_a_refreshed_token_shows_its_name_in_presence_at_once(tmp_path):
    server = jwt_server(tmp_path)
    ana = server.client(client_id="bb-ana", token=hs256(claims(sub="ana", name="Ana", tables={"*": "admin"})),
                        name="hello-name")
    ana.ok({"type": "createTable", "table": "names", "sections": [{"rows": []}]})
    ana.subscribe("names")
    watcher = server.client(token=hs256(claims(sub="w", tables={"*": "read"})), name="Watcher")
    _, subscribed = watcher.subscribe("names")
    assert {e["client"]: e["name"] for e in subscribed["presence"]["clients"]}["bb-ana"] == "Ana"

    def shown_after(token):
        ana.ok({"type": "refreshToken", "token": token})
        while True:  # the watcher's own arrival may come first
            delta = watcher.next("presence", table="names")
            assert delta["left"] == [], delta
            if delta["changed"]:
                (entry,) = delta["changed"]
                return entry["client"], entry["name"], entry["user"]

    # A new name shows at once; a token without one falls back on hello's name, never on the old token's.
    assert shown_after(hs256(claims(sub="ana", name="Ana Lopez", tables={"*": "admin"}))) == (
        "bb-ana", "Ana Lopez", "ana")
    assert shown_after(hs256(claims(sub="ana", tables={"*": "admin"}))) == ("bb-ana", "hello-name", "ana")
    # A refresh that changes no name sends no presence.
    ana.ok({"type": "refreshToken", "token": hs256(claims(sub="ana", ttl=900, tables={"*": "admin"}))})
    with pytest.raises((AssertionError, TimeoutError)):
        watcher.next("presence", timeout=1, table="names")
    for c in (ana, watcher):
        c.close()
    server.stop()


def test_sighup_rereads_tokens_and_revocations_and_closes_what_they_no_longer_accept(tmp_path):
    tokens = tmp_path / "tokens.json"
    entries = [{"token": "ops-admin", "role": "admin", "tables": ["*"]},
               {"token": "cy-token", "role": "write", "tables": ["*"], "user": "cy"},
               {"token": "dan-token", "role": "write", "tables": ["*"]}]
    tokens.write_text(json.dumps({"tokens": entries}))
    revoked = tmp_path / "revoked"
    revoked.write_text("# nobody yet\n")
    server = jwt_server(tmp_path, "--tokens", str(tokens), "--jwt-revoked-file", str(revoked))
    admin = server.client(token="ops-admin")
    admin.ok({"type": "createTable", "table": "t", "sections": [{"rows": []}]})
    clients = {
        "ana": server.client(token=hs256(claims(sub="ana", jti="ana-1"))),
        "ana-2": server.client(token=rs256(claims(sub="ana", jti="ana-2"))),
        "bo": server.client(token=rs256(claims(sub="bo", jti="bo-1"))),
        "cy": server.client(token="cy-token"),
        "dan": server.client(token="dan-token"),
    }
    for c in clients.values():
        c.subscribe("t")

    revoked.write_text("ana-1   # a lost laptop\nbo\n")
    entries[1:] = [{"token": "dan-token", "role": "write", "tables": ["elsewhere"]}]
    tokens.write_text(json.dumps({"tokens": entries}))
    server.process.send_signal(signal.SIGHUP)
    assert close_of(clients["ana"])[:2] == (4001, "token refused: it was revoked")
    assert close_of(clients["bo"])[:2] == (4001, "token refused: its user's tokens were revoked")
    assert close_of(clients["cy"])[:2] == (
        4001, "unknown token: the token given in hello is not valid on this server")
    # Dan's token stays, with its new grants: the table it may no longer read is no longer sent to it.
    assert clients["dan"].next("unsubscribed", table="t")["reason"] == (
        "the connection's token no longer lets it read table 't'")
    clients["ana-2"].ok({"type": "insert", "table": "t", "at": [0, 0], "value": "ana's other token still works"})
    refused(server, hs256(claims(sub="bo", jti="bo-2")), "its user's tokens were revoked")
    refused(server, "cy-token", "unknown token")

    # A file that does not load keeps what is in force, and says why.
    tokens.write_text('{"tokens": [')
    server.process.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while "kept the current tokens and keys" not in server.read_log():
        assert time.time() < deadline, server.read_log()
        time.sleep(0.05)
    assert server.client(token="dan-token").welcome["type"] == "welcome"
    clients["ana-2"].ok({"type": "insert", "table": "t", "at": [0, 0], "value": "still in"})
    for name in ("ana-2", "dan"):
        clients[name].close()
    admin.close()
    server.stop()


def test_two_nodes_on_postgresql_share_the_verified_user_in_presence_history_and_refs(postgres, tmp_path):
    from postgres import Nodes
    secret = tmp_path / "jwt-secret"
    secret.write_text(SECRET)
    nodes = Nodes(postgres, 2, "--jwt-secret-file", str(secret))
    a, b = nodes.nodes
    try:
        ana = a.client(client_id="ana-laptop", token=hs256(claims(sub="ana", name="Ana", jti="t1",
                                                                  tables={"*": "admin"})), name="Not Ana")
        ana.ok({"type": "createTable", "table": "shared", "sections": [{"rows": []}]})
        ana.subscribe("shared")
        watcher = b.client(hello=False)
        watcher.ok({"type": "hello", "client": "w", "token": hs256(claims(sub="w", tables={"*": "read"}))},
                   expect="welcome")
        _, subscribed = watcher.subscribe("shared")
        deadline = time.time() + 15
        # Ana is in the state the watcher caught up with, or joins in a delta once node A shared her.
        seen = next((e for e in subscribed["presence"]["clients"] if e["client"] == "ana-laptop"), None)
        while seen is None:
            delta = watcher.next("presence", table="shared", timeout=max(0.1, deadline - time.time()))
            seen = next((e for e in delta["joined"] + delta["changed"] if e["client"] == "ana-laptop"), None)
        assert (seen["name"], seen["user"]) == ("Ana", "ana"), seen
        first = ana.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "once", "ref": "r1"})
        # Ana's next token, on the other node, with the same client id: her ref is hers there too.
        ana_b = b.client(client_id="ana-laptop", token=hs256(claims(sub="ana", jti="t2", tables={"*": "write"})))
        retry = ana_b.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "once", "ref": "r1"})
        assert retry["version"] == first["version"] == 1
        bo = b.client(client_id="ana-laptop", token=hs256(claims(sub="bo")))
        assert bo.ok({"type": "insert", "table": "shared", "at": [0, 0], "value": "bo", "ref": "r1"})["version"] == 2
        page = watcher.ok({"type": "history", "table": "shared", "order": "oldest"}, expect="changes")
        assert [(e["origin"].get("name"), e["origin"].get("user")) for e in page["entries"]] == [
            ("Ana", "ana"), ("tester", "bo")]
        for c in (ana, watcher, ana_b, bo):
            c.close()
    finally:
        nodes.stop()


def test_random_and_truncated_tokens_are_always_unauthorized_and_the_server_stays_up(tmp_path):
    import random
    server = jwt_server(tmp_path)
    rng = random.Random(21)
    good = rs256(claims())
    tokens = [good[:n] for n in range(0, len(good), 7)] + [hs256(claims())[:-n] for n in range(1, 30)]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"\\é\u0000"
    tokens += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 400))) for _ in range(300)]
    tokens += ["eyJ" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200))) + "." +
               b64(os.urandom(rng.randrange(0, 300))) + "." + b64(os.urandom(rng.randrange(0, 300)))
               for _ in range(300)]
    c = server.client(hello=False)
    for token in tokens:
        response = c.request({"type": "hello", "client": "fuzz", "token": token}, expect="welcome")
        assert response["type"] == "error" and response["code"] == "unauthorized", (token, response)
    c.close()
    c, response = hello(server, good)
    assert response["type"] == "welcome"
    c.close()
    server.stop()


def test_the_readmes_backend_example_mints_tokens_the_server_takes(tmp_path):
    import re
    from conftest import ROOT
    readme = (ROOT / "README.md").read_text()
    start = readme.index("### Signing tokens in your backend")
    code = re.compile(r"^```python\n(.*?)^```", re.M | re.S).search(readme, start).group(1)
    secret = tmp_path / "jwt-secret"
    secret.write_text(SECRET + "\n")
    namespace = {}
    exec(code.replace("/etc/tablecast/jwt-secret", str(secret)), namespace)
    server = Server("--jwt-secret-file", str(secret)).start()
    admin_token = hs256(claims(sub="ops", tables={"*": "admin"}))
    admin = server.client(token=admin_token)
    for table in ("team-x", "announcements"):
        admin.ok({"type": "createTable", "table": table, "sections": [{"rows": []}]})
    ana = server.client(token=namespace["tablecast_token"]("ana", "Ana", "team"), name="someone")
    ana.ok({"type": "insert", "table": "team-x", "at": [0, 0], "value": "hi"})
    ana.subscribe("announcements")
    ana.fails({"type": "insert", "table": "announcements", "at": [0, 0], "value": "hi"}, "forbidden")
    page = ana.ok({"type": "history", "table": "team-x"}, expect="changes")
    assert page["entries"][0]["origin"]["name"] == "Ana" and page["entries"][0]["origin"]["user"] == "ana"
    for c in (admin, ana):
        c.close()
    server.stop()


def test_the_command_line_takes_a_signed_token(tmp_path):
    import subprocess
    from conftest import tablecast_binary
    server = jwt_server(tmp_path)
    admin = server.client(token=hs256(claims(sub="ops", tables={"*": "admin"})))
    admin.ok({"type": "createTable", "table": "team-a", "sections": [{"rows": []}]})
    admin.close()

    def tables(token, *flags):
        env = {**os.environ, "TABLECAST_TOKEN": token} if token else dict(os.environ)
        return subprocess.run([tablecast_binary(), "tables", "list", "--url", server.url, *flags], env=env,
                              capture_output=True, text=True, timeout=30)

    listed = tables(rs256(claims(sub="ana", tables={"team-*": "read"})))
    assert listed.returncode == 0 and json.loads(listed.stdout)["table"] == "team-a", listed
    flag = tables(None, "--token", hs256(claims(sub="ana", tables={"team-*": "read"})))
    assert flag.returncode == 0 and "team-a" in flag.stdout, flag
    expired = tables(hs256(claims(sub="ana", exp=int(time.time()) - 60)))
    assert expired.returncode == 1 and "token refused: it has expired" in expired.stderr, expired
    server.stop()


def test_watch_ends_saying_why_when_the_reloaded_tokens_no_longer_read_its_table(tmp_path):
    import subprocess
    from conftest import tablecast_binary
    tokens = tmp_path / "tokens.json"
    entries = [{"token": "ops-admin", "role": "admin", "tables": ["*"]},
               {"token": "eve-token", "role": "read", "tables": ["*"]}]
    tokens.write_text(json.dumps({"tokens": entries}))
    server = jwt_server(tmp_path, "--tokens", str(tokens))
    admin = server.client(token="ops-admin")
    admin.ok({"type": "createTable", "table": "t", "sections": [{"rows": []}]})
    watch = subprocess.Popen([tablecast_binary(), "watch", "t", "--url", server.url, "--token", "eve-token"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(watch.stdout.readline())["type"] == "snapshot"
        entries[1] = {"token": "eve-token", "role": "read", "tables": ["elsewhere"]}
        tokens.write_text(json.dumps({"tokens": entries}))
        server.process.send_signal(signal.SIGHUP)
        assert watch.wait(timeout=15) == 1
        assert "the connection's token no longer lets it read table 't'" in watch.stderr.read()
    finally:
        watch.kill()
        watch.wait()
        admin.close()
        server.stop()
