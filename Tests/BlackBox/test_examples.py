"""Every transcript in web-client-protocol/examples/ replays against a real server message for message.

A transcript line is `name> message` (client `name` sends) or `name< message` (client `name` receives). Epochs are
random per table and commit times are the clock's, so a recorded epoch or `time` stands for whatever the live server
chose in the same place.
"""
import json

import pytest
from websockets.sync.client import connect

from conftest import ROOT, Server, validate

EXAMPLES = sorted((ROOT / "web-client-protocol" / "examples").glob("*.jsonl"))


def parse(path):
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        head, _, body = line.partition(" ")
        assert head[-1] in "<>", f"{path.name}:{number}: a line starts with 'name>' or 'name<'"
        yield number, head[:-1], head[-1], json.loads(body)


LIVE_KEYS = ("epoch", "time")


def substitute(value, epochs):
    """The recorded message with recorded epochs (and times) replaced by the live ones."""
    if isinstance(value, dict):
        return {k: (epochs.get((k, v), v) if k in LIVE_KEYS else substitute(v, epochs)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, epochs) for v in value]
    return value


def learn_epochs(recorded, live, epochs):
    if isinstance(recorded, dict) and isinstance(live, dict):
        for key in LIVE_KEYS:
            if key in recorded and key in live:
                epochs.setdefault((key, recorded[key]), live[key])
        for key in recorded.keys() & live.keys():
            learn_epochs(recorded[key], live[key], epochs)
    if isinstance(recorded, list) and isinstance(live, list):
        for r, l in zip(recorded, live):
            learn_epochs(r, l, epochs)


#: The HS256 secret the `signed-tokens` transcript's tokens were signed with (documented beside the examples); its
#: tokens expire in 2100.
EXAMPLE_SECRET = "tablecast-example-secret-not-for-production"


def server_for(path, tmp_path):
    """The server a transcript was recorded against: `signed-tokens` needs the example secret."""
    if path.stem != "signed-tokens":
        return Server()
    secret = tmp_path / "example-secret"
    secret.write_text(EXAMPLE_SECRET + "\n")
    return Server("--jwt-secret-file", str(secret))


def test_there_are_examples():
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_transcript_replays(path, tmp_path):
    server = server_for(path, tmp_path).start()
    sockets, epochs = {}, {}
    try:
        for number, name, direction, message in parse(path):
            validate(message)
            if name not in sockets:
                sockets[name] = connect(server.url, subprotocols=["tablecast.v1"]).__enter__()
            if direction == ">":
                sockets[name].send(json.dumps(substitute(message, epochs)))
            else:
                live = json.loads(sockets[name].recv(timeout=5))
                learn_epochs(message, live, epochs)
                assert live == substitute(message, epochs), f"{path.name}:{number}: {name} received {live}"
        for name, ws in sockets.items():
            with pytest.raises(TimeoutError):
                extra = ws.recv(timeout=0.3)
                pytest.fail(f"{path.name}: {name} received more than the transcript shows: {extra}")
    finally:
        for ws in sockets.values():
            ws.close()
        server.stop()
