"""Black-box check of a Tablecast WebSocket echo server with an independent client (Python `websockets`).

Usage: python3 websocket_client_check.py PORT
The server must echo every message and allow messages of at most 100,000 bytes.
Prints one line per check; exits non-zero on the first failure.
"""
import sys

from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect


def main(port: int) -> None:
    url = f"ws://127.0.0.1:{port}/blackbox?client=python"
    with connect(url, subprotocols=["tablecast.v1"], origin="http://blackbox.test") as ws:
        assert ws.subprotocol == "tablecast.v1", ws.subprotocol
        print("subprotocol negotiated")

        ws.send("héllo, tables")
        assert ws.recv(timeout=5) == "héllo, tables"
        ws.send(b"\x00\x01\xfe\xff")
        assert ws.recv(timeout=5) == b"\x00\x01\xfe\xff"
        print("text and binary echoed")

        ws.send(["frag", "men", "ted ✓"])
        assert ws.recv(timeout=5) == "fragmented ✓"
        print("fragmented message reassembled")

        ws.ping(b"are you there").wait(timeout=5)
        print("ping answered")

        ws.send("x" * 100_001)
        try:
            ws.recv(timeout=5)
            raise AssertionError("oversized message was not refused")
        except ConnectionClosedError as error:
            assert error.rcvd is not None and error.rcvd.code == 1009, error
        print("oversized message closed with 1009")


if __name__ == "__main__":
    main(int(sys.argv[1]))
    print("black-box: all checks passed")
