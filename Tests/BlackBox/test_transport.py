"""The WebSocket layer as a client on a raw socket sees it: frames sent with the upgrade request, close frames that
reach clients still sending (lingering close), bursts of quick connects from one address."""
import json
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time
import urllib.request

import pytest

from conftest import Server
from test_tls import make_certificate

UPGRADE = ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Protocol: tablecast.v1\r\n\r\n").encode()


def masked(payload, opcode=0x1):
    """A client frame (masked, as the RFC requires)."""
    if isinstance(payload, str):
        payload = payload.encode()
    mask = b"\x12\x34\x56\x78"
    if len(payload) < 126:
        length = bytes([0x80 | len(payload)])
    elif len(payload) < 65536:
        length = bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    else:
        length = bytes([0x80 | 127]) + struct.pack("!Q", len(payload))
    return bytes([0x80 | opcode]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def close_frame(code):
    return masked(struct.pack("!H", code), opcode=0x8)


def exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_frame(sock):
    """(opcode, payload) of one server frame; (None, None) when the stream ended (EOF) first."""
    head = exactly(sock, 2)
    if len(head) < 2:
        return None, None
    length = head[1] & 0x7F
    if length >= 126:
        extended = exactly(sock, 2 if length == 126 else 8)
        length = int.from_bytes(extended, "big")
    payload = exactly(sock, length)
    return (head[0] & 0x0F, payload) if len(payload) == length else (None, None)


def read_response_head(sock):
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        assert byte, f"connection closed during the handshake: {head!r}"
        head += byte
    return head


def read_until_close(sock):
    """Reads whole frames until the close frame: (text messages, close code); the code is None when the stream
    ended without one."""
    messages = []
    while True:
        opcode, payload = read_frame(sock)
        if opcode is None:
            return messages, None
        if opcode == 0x8:
            return messages, struct.unpack("!H", payload[:2])[0]
        if opcode == 0x1:
            messages.append(json.loads(payload))


def ends_cleanly(sock):
    """After the close handshake: the server's side of the stream ends with EOF, not a reset."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return False


def started(*args, **kwargs):
    """A started server that is stopped however the test ends."""
    s = Server(*args, **kwargs)
    try:
        s.start()
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def server():
    yield from started()


@pytest.fixture
def small_queue_server():
    yield from started("--max-queued-messages", "64")


@pytest.fixture(scope="module")
def tls_server():
    directory = tempfile.mkdtemp(prefix="tablecast-transport-tls-")
    cert, key = make_certificate(directory, "server")
    context = ssl.create_default_context(cafile=cert)
    try:
        yield from started("--tls-cert", cert, "--tls-key", key, ssl_context=context)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def connect(server, timeout=10):
    """A TCP connection to `server`, TLS-wrapped when it serves TLS."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    if server.ssl_context:
        sock = server.ssl_context.wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


@pytest.fixture(params=["plain", "tls"])
def any_server(request):
    return request.getfixturevalue("server" if request.param == "plain" else "tls_server")


HELLO = json.dumps({"type": "hello", "client": "early-bird", "name": "early"})


def test_a_frame_sent_in_the_same_segment_as_the_upgrade_request_is_read(any_server):
    """RFC 6455 has the client wait for the 101, but one that does not must not lose its first frame: a hello sent
    with the upgrade request in one send gets its welcome."""
    with connect(any_server) as sock:
        sock.sendall(UPGRADE + masked(HELLO))
        assert b" 101 " in read_response_head(sock).split(b"\r\n")[0]
        opcode, payload = read_frame(sock)
        assert opcode == 0x1 and json.loads(payload)["type"] == "welcome", (opcode, payload)


def test_half_a_frame_with_the_upgrade_request_is_completed_by_the_next_send(any_server):
    """Half of the hello frame (its header cut too) goes with the upgrade request, the rest a moment later: the
    stream stays in step, and the next frame is read as well."""
    frame = masked(HELLO)
    for cut in (1, 5, len(frame) // 2):
        with connect(any_server) as sock:
            sock.sendall(UPGRADE + frame[:cut])
            assert b" 101 " in read_response_head(sock).split(b"\r\n")[0]
            time.sleep(0.05)  # lets the first part be read on its own: the test is of a split the server sees
            sock.sendall(frame[cut:] + masked(json.dumps({"type": "listTables", "ref": "after"})))
            opcode, payload = read_frame(sock)
            assert opcode == 0x1 and json.loads(payload)["type"] == "welcome", (cut, opcode, payload)
            opcode, payload = read_frame(sock)
            assert opcode == 0x1 and json.loads(payload)["type"] == "tables", (cut, opcode, payload)


def test_clients_flooding_malformed_messages_all_get_the_1008_close_frame(any_server):
    """30 clients each send 2,000 malformed messages as fast as they can (one send each) and only then read, plain
    and over TLS. The server closes each after 100 with 1008 and reads and drops the rest (a lingering close): every
    client reads its error replies and the 1008 close frame, and after its own close frame the stream ends with EOF,
    not a reset (which would destroy the close frame still in the client's receive buffer)."""
    server = any_server
    flood = masked("{" + "x" * 200) * 2000
    results = {}

    def client(index):
        try:
            with connect(server, timeout=30) as sock:
                sock.sendall(UPGRADE)
                read_response_head(sock)
                sock.sendall(flood)
                errors, code = read_until_close(sock)
                if code is not None:
                    sock.sendall(close_frame(1000))
                results[index] = (code, len(errors), ends_cleanly(sock))
        except OSError as error:
            results[index] = (repr(error), 0, False)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 30, "clients still running after 60 s"
    assert all(code == 1008 for code, _, _ in results.values()), results
    assert all(errors >= 99 for _, errors, _ in results.values()), results
    assert all(clean for _, _, clean in results.values()), results


def test_websockets_clients_flooding_malformed_messages_see_1008_not_1006(server):
    """The same flood from 30 clients of the `websockets` library, each sending 2,000 malformed messages without
    reading (its reader stops at 16 unread messages) and then reading to the end: each sees the 1008 close frame,
    not 1006 (the connection lost without one)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect
    codes = {}

    def client(index):
        try:
            with ws_connect(server.url, subprotocols=["tablecast.v1"], open_timeout=30, close_timeout=2) as ws:
                try:
                    for _ in range(2000):
                        ws.send("nonsense")
                    while True:
                        ws.recv(timeout=30)
                except ConnectionClosed:
                    pass
                codes[index] = ws.close_code
        except OSError as error:
            codes[index] = repr(error)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert codes == {index: 1008 for index in range(30)}


def test_a_client_flooding_list_tables_without_reading_gets_the_4000_close_frame(small_queue_server):
    """A client sends listTables without reading until its replies overflow the server's outbound bound (64
    messages here), and keeps sending for a while after: the server reads and drops what it sends, and once the
    client reads it finds whole frames and the 4000 close frame, then EOF, not a reset."""
    server = small_queue_server
    with connect(server, timeout=30) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(UPGRADE)
        read_response_head(sock)
        request = masked(json.dumps({"type": "listTables"}))
        burst = request * 1000
        overflowed = False
        deadline = time.time() + 20
        sent_after = 0
        while sent_after < 20 and time.time() < deadline:
            sock.sendall(burst)
            if overflowed:
                sent_after += 1
            else:
                overflowed = metric(server, "websocket_queue_overflows_total") > 0
        assert overflowed, "the replies never overflowed the outbound bound"
        replies, code = read_until_close(sock)
        assert code == 4000, f"after {len(replies)} replies: {code}"
        assert all(reply["type"] == "tables" for reply in replies)
        sock.sendall(close_frame(1000))
        assert ends_cleanly(sock)


def metric(server, name):
    with urllib.request.urlopen(f"{server.http_url}metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture
def many_files():
    """Raises this process' open-files limit (the server started after it inherits it) for thousands of sockets."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def roomy_server(many_files):
    assert many_files >= 12000, "the test needs 5,000 sockets here and 5,000 in the server"
    yield from started()


def test_a_burst_of_5000_quick_connects_from_one_address_is_accepted(roomy_server):
    """A load tester (or an office behind one NAT address) opens 5,000 connections at once: all sockets connected
    first, then every handshake completed. None of them stalls, so --max-handshakes-per-address (default 256, a cap
    on stalled handshakes) refuses none, with default flags."""
    sockets = []
    try:
        for _ in range(5000):
            sockets.append(socket.create_connection(("127.0.0.1", roomy_server.port), timeout=30))
        for sock in sockets:
            sock.sendall(UPGRADE)
        statuses = [sock.recv(4096).split(b"\r\n", 1)[0] for sock in sockets]
        refused = len([status for status in statuses if b" 101 " not in status])
        assert refused == 0, f"{refused} of 5,000 were not upgraded: {set(statuses)}"
        assert metric(roomy_server, "websocket_handshakes_refused_total") == 0
    finally:
        for sock in sockets:
            sock.close()


@pytest.fixture
def slowloris_server(many_files):
    yield from started("--handshake-timeout", "3")


PARTIAL_REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"


def stalled_socket(source, port):
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(PARTIAL_REQUEST)
    return sock


def hung_up_at_once(source, port):
    """Whether a connection from `source` is closed by the server before it sends anything."""
    with socket.socket() as sock:
        sock.bind((source, 0))
        sock.settimeout(0.5)
        sock.connect(("127.0.0.1", port))
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def assert_a_normal_client_gets_in(server):
    with connect(server, timeout=2) as sock:
        sock.sendall(UPGRADE + masked(HELLO))
        assert b" 101 " in read_response_head(sock).split(b"\r\n")[0]
        opcode, payload = read_frame(sock)
        assert opcode == 0x1 and json.loads(payload)["type"] == "welcome"


def assert_dropped_unanswered(*sockets):
    """Each stalled socket is closed by the server (after --handshake-timeout) without an answer."""
    for sock in sockets:
        sock.settimeout(10)
        try:
            assert sock.recv(4096) == b"", "a stalled connection got an answer"
        except ConnectionResetError:
            pass


def test_stalled_handshakes_from_one_address_are_capped_once_stalled(slowloris_server):
    """Slowloris from one address, default cap (256): 600 half requests are accepted while they are young, but once
    they have stalled (a second) that address's next connection is closed at once; a normal client still gets in,
    and the server drops the stalled ones after --handshake-timeout."""
    port = slowloris_server.port
    stalled = []
    try:
        stalled = [stalled_socket("127.0.2.1", port) for _ in range(600)]
        deadline = time.time() + 5
        while not hung_up_at_once("127.0.2.1", port):
            assert time.time() < deadline, "the address was never capped"
        assert_a_normal_client_gets_in(slowloris_server)
        assert_dropped_unanswered(stalled[0], stalled[599])
    finally:
        for sock in stalled:
            sock.close()


def test_stalled_handshakes_from_2000_addresses_do_not_keep_a_client_out(slowloris_server):
    """Slowloris from 2,000 distinct loopback addresses, so that no per-address cap applies: a normal client still
    gets in at once, and the server drops the stalled ones after --handshake-timeout."""
    port = slowloris_server.port
    stalled = []
    try:
        stalled = [stalled_socket(f"127.0.{3 + i // 250}.{1 + i % 250}", port) for i in range(2000)]
        assert_a_normal_client_gets_in(slowloris_server)
        assert_dropped_unanswered(stalled[0], stalled[1999])
    finally:
        for sock in stalled:
            sock.close()
