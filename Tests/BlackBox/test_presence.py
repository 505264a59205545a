"""Presence as web-client-protocol/README.md specifies it: the whole state once in the catch-up, then deltas."""
import json
import time

from conftest import validate
from test_protocol import create, section


class PresenceView:
    """A subscriber's view of a table's presence: the catch-up's state with every delta applied, as a client keeps it."""

    def __init__(self, state):
        self.you = state["you"]
        self.clients = {entry["key"]: entry for entry in state["clients"]}
        self.viewers = state["viewers"]

    def apply(self, delta):
        for key in delta["left"]:
            assert key in self.clients, f"{key} left but was never listed: {delta}"
            del self.clients[key]
        for entry in delta["joined"]:
            assert entry["key"] not in self.clients, f"{entry['key']} joined twice: {delta}"
            self.clients[entry["key"]] = entry
        for entry in delta["changed"]:
            assert entry["key"] in self.clients, f"{entry['key']} changed but was never listed: {delta}"
            self.clients[entry["key"]] = entry
        self.viewers = delta["viewers"]

    def names(self):
        return sorted(entry["name"] for entry in self.clients.values())


def subscribe_with_view(client, table):
    _, subscribed = client.subscribe(table)
    return PresenceView(subscribed["presence"])


def next_delta(client, view, timeout=10):
    delta = client.next("presence", timeout=timeout)
    view.apply(delta)
    return delta


def until(client, view, condition, timeout=10):
    deadline = time.time() + timeout
    while not condition(view):
        next_delta(client, view, timeout=max(0.1, deadline - time.time()))


def raw_presence(client, timeout=10):
    """The next `presence` frame as sent (its text and the message); nothing else may be waiting."""
    assert not client.pending, client.pending
    while True:
        text = client.ws.recv(timeout=timeout)
        message = json.loads(text)
        validate(message)
        if message["type"] == "presence":
            return text, message


def test_the_catch_up_carries_the_state_and_deltas_keep_it_with_a_key_per_connection(server, table_name):
    ana = server.client(name="Ana")
    create(ana, table_name, [section("x", "y")])
    ana_view = subscribe_with_view(ana, table_name)
    assert ana_view.clients == {} and ana_view.viewers == 0
    delta = next_delta(ana, ana_view)
    assert delta == {"type": "presence", "table": table_name, "joined": [
        {"key": ana_view.you, "client": ana.client_id, "name": "Ana", "editing": False}],
        "changed": [], "left": [], "viewers": 0}
    # Two tabs of one client: two connections, two keys.
    tab1 = server.client(client_id="bb-two-tabs", name="Bo")
    tab2 = server.client(client_id="bb-two-tabs", name="Bo")
    tab1_view = subscribe_with_view(tab1, table_name)
    assert tab1_view.names() == ["Ana"]
    tab2_view = subscribe_with_view(tab2, table_name)
    until(ana, ana_view, lambda v: len(v.clients) == 3)
    assert tab1_view.you != tab2_view.you and {tab1_view.you, tab2_view.you} < set(ana_view.clients)
    until(tab2, tab2_view, lambda v: len(v.clients) == 3)
    # One tab edits a row: only its entry changes.
    tab1.send({"type": "editing", "table": table_name, "on": True})
    tab1.send({"type": "beginEditingRow", "table": table_name, "row": "r2"})
    until(ana, ana_view, lambda v: v.clients[tab1_view.you].get("row") == "r2")
    assert ana_view.clients[tab1_view.you]["editing"] is True
    assert ana_view.clients[tab2_view.you] == {"key": tab2_view.you, "client": "bb-two-tabs", "name": "Bo", "editing": False}
    # A refresh brings the same state the deltas built.
    refreshed = tab2.request({"type": "refresh", "table": table_name}, expect="refreshed")
    until(tab2, tab2_view, lambda v: v.clients == ana_view.clients)
    assert PresenceView(refreshed["presence"]).clients == ana_view.clients
    # Closing a tab is its key in `left`.
    tab1.close()
    delta = next_delta(ana, ana_view)
    assert delta["left"] == [tab1_view.you] and delta["joined"] == [] and delta["changed"] == []
    assert ana_view.names() == ["Ana", "Bo"]
    tab2.close()
    ana.close()


def test_connections_without_a_name_only_count_until_they_send_presence(server, table_name):
    ana = server.client(name="Ana")
    create(ana, table_name, [section("x")])
    view = subscribe_with_view(ana, table_name)
    until(ana, view, lambda v: len(v.clients) == 1)
    silent = server.client(hello=False)
    anonymous = server.client(hello=False)
    anonymous.ok({"type": "hello", "client": "bb-nameless"}, expect="welcome")
    silent.subscribe(table_name)
    anonymous.subscribe(table_name)
    until(ana, view, lambda v: v.viewers == 2)
    assert view.names() == ["Ana"]
    # Presence lists a viewer (under its client id when it has no name).
    anonymous.send({"type": "editing", "table": table_name, "on": True})
    delta = next_delta(ana, view)
    assert [e["name"] for e in delta["joined"]] == ["bb-nameless"] and delta["viewers"] == 1
    silent.close()
    delta = next_delta(ana, view)
    assert delta == {"type": "presence", "table": table_name, "joined": [], "changed": [], "left": [], "viewers": 0}
    for c in (anonymous, ana):
        c.close()


def test_a_row_deleted_while_someone_edits_it_is_cleared_from_presence(server, table_name):
    ana = server.client(name="Ana")
    create(ana, table_name, [section("x", "y"), section("z")])
    view = subscribe_with_view(ana, table_name)
    bo = server.client(name="Bo")
    bo_view = subscribe_with_view(bo, table_name)
    bo.send({"type": "beginEditingRow", "table": table_name, "row": "r2"})  # "x"
    ana.send({"type": "beginEditingRow", "table": table_name, "row": "r5"})  # "z", in the second section
    until(ana, view, lambda v: v.clients.get(bo_view.you, {}).get("row") == "r2" and v.clients[v.you].get("row") == "r5")
    ana.ok({"type": "delete", "table": table_name, "at": [0, 0], "row": "r2"})
    until(ana, view, lambda v: "row" not in v.clients[bo_view.you])
    assert view.clients[view.you]["row"] == "r5", "only the deleted row's editors are cleared"
    bo.ok({"type": "deleteSection", "table": table_name, "at": 1})
    until(ana, view, lambda v: "row" not in v.clients[v.you])
    bo.close()
    ana.close()


def test_one_join_among_many_subscribers_costs_the_same_bytes_as_among_few(server, table_name):
    """Everyone is listed here (they all have names), so a whole-list message would grow by ~80 bytes a person;
    the delta of one join is the same size with 11 or 211 people on the table, and every subscriber gets it."""
    watcher = server.client(client_id="bb-watcher-0000", name="w0000")
    create(watcher, table_name, [section("x")])
    view = subscribe_with_view(watcher, table_name)
    others = []

    def join(count):
        for _ in range(count):
            n = len(others) + 1
            joiner = server.client(client_id=f"bb-joiner-{n:04d}", name=f"j{n:04d}")
            joiner.subscribe(table_name)
            others.append(joiner)
        until(watcher, view, lambda v: len(v.clients) == len(others) + 1, timeout=60)

    def measure_one_join():
        n = len(others) + 1
        joiner = server.client(client_id=f"bb-joiner-{n:04d}", name=f"j{n:04d}")
        _, subscribed = joiner.subscribe(table_name)
        assert len(subscribed["presence"]["clients"]) == len(others) + 1, "the joiner gets everyone in its catch-up"
        others.append(joiner)
        text, delta = raw_presence(watcher)
        view.apply(delta)
        assert [e["name"] for e in delta["joined"]] == [f"j{n:04d}"] and delta["left"] == [] and delta["changed"] == []
        return text, joiner, f"j{n:04d}"

    join(10)
    small, _, _ = measure_one_join()
    join(199)
    big, last, name = measure_one_join()
    assert len(view.clients) == 212
    # Keys are connection numbers: c13 vs c214, one digit more.
    assert len(big) - len(small) <= 1, (small, big)
    assert len(big) < 200, big
    # Every subscriber got that very message (a sample: the first, a middle and the last-but-one joiner).
    for subscriber in (others[0], others[100], others[-2]):
        while True:
            message = subscriber.next("presence", keep_others=False)
            if message["joined"] and message["joined"][0]["name"] == name:
                break
        assert json.dumps(message, separators=(",", ":")) == big
    # And a leave is as small.
    last.close()
    text, delta = raw_presence(watcher)
    assert len(delta["left"]) == 1 and len(text) < 100, text
    for c in others[:-1] + [watcher]:
        c.close()


def test_presence_changes_arrive_together_at_most_every_100_ms(server, table_name):
    """Thirty joins one after another: the watcher gets a few deltas, not thirty, which together list everybody;
    the spec allows one per table every 100 ms."""
    watcher = server.client(name="watcher")
    create(watcher, table_name, [section("x")])
    view = subscribe_with_view(watcher, table_name)
    start = time.time()
    joiners = []
    for i in range(30):
        joiner = server.client(name=f"j{i}")
        joiner.subscribe(table_name)
        joiners.append(joiner)
    joined_in = time.time() - start
    messages = 0
    while len(view.clients) < 31:
        next_delta(watcher, view)
        messages += 1
    assert view.names() == sorted(["watcher"] + [f"j{i}" for i in range(30)])
    # One at once, then at most one per 100 ms while people join, and one more for the last changes (a presence
    # per join would be 31).
    assert messages <= int(joined_in / 0.1) + 3, (messages, joined_in)
    for joiner in joiners:
        joiner.close()
    watcher.close()
