"""Which browser pages may connect: the server's own page from whatever address the browser used (the request's
Host), origins added with --allow-origin, and nothing else. Hand-written upgrade requests over raw sockets, so
that Host and Origin can be any pair."""
import json
import os
import socket
import struct

import pytest

from conftest import Server


def handshake(port, host, origin):
    """Upgrades with the given Host and Origin, sends hello, and returns the server's first frame as
    ("text", message) or ("close", code)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall((f"GET / HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tablecast.v1\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = s.recv(1)
            assert chunk, f"connection closed during the handshake: {response!r}"
            response += chunk
        assert response.startswith(b"HTTP/1.1 101"), response
        payload = json.dumps({"type": "hello", "client": "origin-test", "ref": "h"}).encode()
        mask = os.urandom(4)
        s.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        head = recv_exactly(s, 2)
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack(">H", recv_exactly(s, 2))[0]
        body = recv_exactly(s, length)
        if head[0] & 0x0F == 0x8:
            return ("close", struct.unpack(">H", body[:2])[0])
        return ("text", json.loads(body))
    finally:
        s.close()


def recv_exactly(s, count):
    data = b""
    while len(data) < count:
        chunk = s.recv(count - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def accepted(port, host, origin):
    kind, value = handshake(port, host, origin)
    if kind == "text":
        assert value["type"] == "welcome", value
        return True
    assert value == 1008, f"expected 1008 for a refused origin, got {value}"
    return False


@pytest.fixture(scope="module")
def any_address_server():
    s = Server("--host", "0.0.0.0", "--allow-anonymous").start()
    yield s
    s.stop()


def test_own_page_works_from_the_address_the_browser_used(any_address_server):
    port = any_address_server.port
    for name in ["127.0.0.1", "localhost", "192.168.7.7", "tablecast.lan"]:
        assert accepted(port, f"{name}:{port}", f"http://{name}:{port}"), name
    assert accepted(port, f"tablecast.lan:{port}", f"https://tablecast.lan:{port}")


def test_other_origins_are_refused(any_address_server):
    port = any_address_server.port
    assert not accepted(port, f"127.0.0.1:{port}", "http://evil.example")
    assert not accepted(port, f"127.0.0.1:{port}", f"http://evil.example:{port}")
    assert not accepted(port, f"evil.example:{port}", f"http://127.0.0.1:{port}")
    assert not accepted(port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}")


def test_a_loopback_server_accepts_only_loopback_names_as_its_own(server):
    """Everyone is admin on a loopback server: a site that points its own name at 127.0.0.1 (DNS rebinding) sends
    a matching Host and Origin, and must still be refused."""
    port = server.port
    assert accepted(port, f"localhost:{port}", f"http://localhost:{port}")
    assert accepted(port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}")
    assert not accepted(port, f"rebound.example:{port}", f"http://rebound.example:{port}")
    # Not an address (a number's sign is no digit), so not a loopback name either.
    assert not accepted(port, f"127.+0.0.1:{port}", f"http://127.+0.0.1:{port}")
    assert not accepted(port, f"127.0.0.256:{port}", f"http://127.0.0.256:{port}")


def test_allow_origin_adds_to_the_servers_own_origin():
    s = Server("--allow-origin", "https://ok.example").start()
    try:
        port = s.port
        assert accepted(port, f"127.0.0.1:{port}", "https://ok.example")
        assert accepted(port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}")
        assert accepted(port, f"localhost:{port}", f"http://localhost:{port}")
        assert not accepted(port, f"127.0.0.1:{port}", "https://other.example")
    finally:
        s.stop()
