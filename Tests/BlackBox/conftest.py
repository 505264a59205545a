"""Black-box fixtures: a real `tablecast serve` on a free port and a client that knows only the wire protocol.

Everything here is written from web-client-protocol/ (the spec and its schemas); nothing imports or reads the
server's source. Every message sent and received is validated against its JSON Schema.
"""
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from websockets.sync.client import connect

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "web-client-protocol" / "schema"


def _load_validators():
    resources = []
    for path in SCHEMA_DIR.glob("*.json"):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
        resources.append((path.name, Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    validators = {}
    for path in SCHEMA_DIR.glob("*.json"):
        if path.name != "defs.json":
            validators[path.stem] = Draft202012Validator(json.loads(path.read_text()), registry=registry)
    return validators


VALIDATORS = _load_validators()


def validate(message):
    """Validates one message against the schema named by its type; unknown types fail the test."""
    kind = message.get("type")
    assert kind in VALIDATORS, f"no schema for message type {kind!r}: {message}"
    errors = sorted(VALIDATORS[kind].iter_errors(message), key=str)
    assert not errors, f"{kind} does not match its schema: {errors[0].message} in {message}"


def tablecast_binary():
    if "TABLECAST_BIN" in os.environ:
        return os.environ["TABLECAST_BIN"]
    bin_dir = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
    return os.path.join(bin_dir, "tablecast")


def free_port():
    """A port free now, below the kernel's ephemeral range: a port the kernel hands out for bind(0) may be given
    to an outgoing connection before the server binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral = int(f.read().split()[0])
    except OSError:
        ephemeral = 32768
    for _ in range(100):
        port = random.randrange(10000, ephemeral)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Every server the tests started, so that one a test leaves running is stopped when the test ends.
started_servers = []


class Server:
    """One `tablecast serve` process with its own database file, stopped with SIGTERM at the end."""

    def __init__(self, *args, db_dir=None, ssl_context=None):
        """`ssl_context`: the server serves TLS (pass --tls-cert/--tls-key in `args`); health is checked with it."""
        self.ssl_context = ssl_context
        self.dir = db_dir or tempfile.mkdtemp(prefix="tablecast-bb-")
        self.db = os.path.join(self.dir, "tablecast.db")
        self.args = list(args)
        self.port = None
        self.process = None

    def start(self, port=None):
        """Starts the server on `port` (a restart on the same port lets browsers reconnect), else a free one."""
        self.port = port or free_port()
        self.log = open(os.path.join(self.dir, f"server-{self.port}.log"), "w")
        self.process = subprocess.Popen(
            [tablecast_binary(), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--db", self.db, *self.args],
            stdout=self.log, stderr=subprocess.STDOUT)
        started_servers.append(self)
        deadline = time.time() + 20
        while time.time() < deadline:
            assert self.process.poll() is None, f"server exited early: {self.read_log()}"
            try:
                with urllib.request.urlopen(f"{self.http_url}healthz", timeout=1, context=self.ssl_context) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"server did not become healthy: {self.read_log()}")

    @property
    def url(self):
        return f"{'wss' if self.ssl_context else 'ws'}://127.0.0.1:{self.port}/"

    @property
    def http_url(self):
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}/"

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        return pathlib.Path(self.log.name).read_text()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            code = self.process.wait(timeout=20)
            assert code == 0, f"server exited {code} on SIGTERM: {self.read_log()}"
        self.log.close()

    def client(self, **kwargs):
        return Client(self.url, ssl_context=self.ssl_context, **kwargs)


class Client:
    """A protocol client over the `websockets` package: sends dicts, receives validated dicts."""

    def __init__(self, url, client_id=None, name="tester", hello=True, token=None, subprotocol="tablecast.v1",
                 ssl_context=None):
        # The sync client is a context manager; entering it by hand keeps one connection per Client object.
        # max_queue=None: a client that reads nothing (there to be counted) still reads its close frame promptly.
        self._connection = connect(url, subprotocols=[subprotocol] if subprotocol else None, open_timeout=10,
                                   max_size=None, max_queue=None, ssl=ssl_context)
        self.ws = self._connection.__enter__()
        self.client_id = client_id or f"bb-{uuid.uuid4().hex[:12]}"
        self.pending = []
        self.welcome = None
        if hello:
            message = {"type": "hello", "client": self.client_id, "name": name}
            if token is not None:
                message["token"] = token
            self.welcome = self.request(message, expect="welcome")

    def send(self, message, check=True):
        if check:
            validate(message)
        self.ws.send(json.dumps(message))

    def send_raw(self, text):
        self.ws.send(text)

    def recv(self, timeout=10):
        if self.pending:
            return self.pending.pop(0)
        message = json.loads(self.ws.recv(timeout=timeout))
        validate(message)
        return message

    def next(self, kind, timeout=10, keep_others=True, **match):
        """Returns the next message of type `kind` (matching fields); other messages are kept for later."""
        skipped = []
        deadline = time.time() + timeout
        try:
            while True:
                remaining = deadline - time.time()
                if self.pending:
                    message = self.pending.pop(0)
                else:
                    assert remaining > 0, f"no {kind} {match} within {timeout}s; saw {skipped}"
                    message = json.loads(self.ws.recv(timeout=remaining))
                    validate(message)
                if message["type"] == kind and all(message.get(k) == v for k, v in match.items()):
                    return message
                skipped.append(message)
        finally:
            if keep_others:
                self.pending = skipped + self.pending

    def request(self, message, expect="ack", check=True):
        """Sends a message with a fresh ref and returns its response (`expect` or an `error`). `check=False`
        sends a deliberately invalid message without validating it first."""
        message = dict(message)
        message.setdefault("ref", uuid.uuid4().hex[:16])
        self.send(message, check=check)
        skipped = []
        try:
            while True:
                response = self.recv()
                if response.get("ref") == message["ref"] and response["type"] in (expect, "error"):
                    return response
                skipped.append(response)
        finally:
            self.pending = skipped + self.pending

    def ok(self, message, expect="ack"):
        response = self.request(message, expect)
        assert response["type"] == expect, f"expected {expect}, got {response}"
        return response

    def fails(self, message, code, check=True):
        response = self.request(message, check=check)
        assert response["type"] == "error", f"expected error {code}, got {response}"
        assert response["code"] == code, f"expected {code}, got {response}"
        assert response["message"], "an error must say what went wrong"
        return response

    def subscribe(self, table, raw=False, **fields):
        """Subscribes and returns (catch-up messages, subscribed); other messages are kept for later. A snapshot
        followed by updates (the newest shared snapshot and what was committed after it) comes back as one snapshot
        with the updates applied, as a replica holds it, unless `raw`."""
        ref = uuid.uuid4().hex[:16]
        self.send({"type": "subscribe", "table": table, "ref": ref, **fields})
        catch_up, skipped = [], []
        try:
            while True:
                message = self.recv()
                if message["type"] == "subscribed" and message.get("ref") == ref:
                    return (catch_up if raw else folded(catch_up)), message
                if message["type"] == "error" and message.get("ref") == ref:
                    raise AssertionError(f"subscribe failed: {message}")
                if message["type"] in ("snapshot", "update") and message["table"] == table:
                    catch_up.append(message)
                else:
                    skipped.append(message)
        finally:
            self.pending = skipped + self.pending

    def close(self):
        self._connection.__exit__(None, None, None)


def folded(catch_up):
    """A catch-up that starts with a snapshot, as the one snapshot a replica holds once it applied the rest."""
    if len(catch_up) < 2 or catch_up[0]["type"] != "snapshot":
        return catch_up
    from replica import Replica
    replica = Replica(catch_up[0])
    for update in catch_up[1:]:
        replica.apply(update)
    return [dict(catch_up[0], version=replica.version, sections=replica.sections)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Notes the servers the test's own body starts (not its fixtures, which stop theirs)."""
    before = len(started_servers)
    yield
    item.servers_started = started_servers[before:]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    """A server the test's body started and left running (a failed assertion before its stop, or none at all) is
    stopped once the test and its fixtures are done."""
    yield
    for server in getattr(item, "servers_started", []):
        if server.process and server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=10)
            server.log.close()


def processes_left(parent):
    """The processes still running whose parent is `parent`, as (pid, command line)."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                left.append((int(entry), cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()))
        except (OSError, IndexError, ValueError):
            continue
    return left


def pytest_sessionfinish(session, exitstatus):
    """The suite ends by checking that nothing it started is still running: servers, clients, browsers, clusters
    (a PostgreSQL cluster a test started runs from a `tablecast-pg-` folder)."""
    left = [(pid, command) for pid, command in processes_left(os.getpid()) if "pytest" not in command]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if command.startswith(("postgres", "/usr/lib/postgresql")) and "tablecast-pg-" in command:
                left.append((int(entry), command.strip()))
    if left:
        session.exitstatus = 1
        listing = "\n".join(f"  {pid}: {command}" for pid, command in left)
        print(f"\nprocesses the suite started are still running:\n{listing}")


@pytest.fixture(scope="module")
def server():
    s = Server().start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def postgres():
    """One throwaway PostgreSQL cluster for the session; each user creates its own database in it."""
    from postgres import PostgresCluster
    cluster = PostgresCluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def table_name():
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(server):
    c = server.client()
    yield c
    c.close()
