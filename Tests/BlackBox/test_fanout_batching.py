"""A group of commits goes to each subscriber as one transport command, so one write carries several updates: they
still arrive as separate, complete messages in version order, and the writer still gets each ack after its own
update."""
import re
import urllib.request

from conftest import Server


def counter(server, name):
    text = urllib.request.urlopen(f"{server.http_url}metrics", timeout=5).read().decode()
    return int(re.search(rf"^{name} (\d+)", text, re.M).group(1))


def test_a_group_of_updates_reaches_subscribers_in_few_writes_as_separate_messages_in_order():
    # Each commit takes 300 ms: the intents sent meanwhile resolve into the next group, committed and fanned out
    # together.
    server = Server("--debug-commit-delay-ms", "300").start()
    try:
        writer = server.client()
        writer.ok({"type": "createTable", "table": "g", "sections": [{"rows": [{"value": 0}]}]})
        writer.subscribe("g")
        subscribers = [server.client() for _ in range(5)]
        start = max(s.subscribe("g")[1]["version"] for s in subscribers)
        sent_before = counter(server, "websocket_messages_sent_total")
        writes_before = counter(server, "websocket_writes_total")

        for i in range(20):
            writer.send({"type": "edit", "table": "g", "at": [0, 0], "value": i + 1, "ref": f"e{i}"})
        # The writer, subscribed too: each of its updates, then that update's ack.
        seen, acked = set(), []
        while len(acked) < 20:
            message = writer.recv(timeout=20)
            if message["type"] == "update":
                seen.add(message["origin"]["ref"])
            elif message["type"] == "ack":
                assert message["ref"] in seen, f"ack {message['ref']} before its update"
                acked.append(message["version"])
        assert sorted(acked) == list(range(start + 1, start + 21))
        for subscriber in subscribers:
            updates = []
            while len(updates) < 20:
                message = subscriber.recv(timeout=20)
                if message["type"] == "update":
                    updates.append(message)
            assert [u["version"] for u in updates] == list(range(start + 1, start + 21))
            assert [u["reloadRows"][0]["value"] for u in updates] == list(range(1, 21))

        sent = counter(server, "websocket_messages_sent_total") - sent_before
        writes = counter(server, "websocket_writes_total") - writes_before
        # 20 updates to each of 6 subscribers and 20 acks (and presence news), in a fraction of as many writes: the
        # first intent commits alone, the other 19 as one group.
        assert sent >= 140, sent
        print(f"{sent} messages in {writes} writes")
        assert writes * 4 <= sent, (writes, sent)
    finally:
        server.stop()
