"""A burst over a slow link: `tablecast edit` behind a proxy that adds 150 ms each way (network.LatencyProxy; this
kernel has no netem), ten `J` presses at once. The editor's own screen shows all ten moves at once; another
subscriber sees them within two round trips, because what is queued while the first move is in flight goes to the
server as one batch when its ack comes (web-client-protocol/optimistic.md, "Sending the queue"), not one intent per
round trip (which took ~2.9 s here).
"""
import threading
import time
import uuid

from websockets.exceptions import ConnectionClosed

from conftest import tablecast_binary
from network import LatencyProxy
from replica import Replica
from test_edit import body, line_with, save_stty, setup  # noqa: F401 (setup is a fixture)

DELAY = 0.15
ROWS = [f"row {n:02}" for n in range(12)]


class Observer:
    """A plain subscriber that records when each update arrives and the table after it."""

    def __init__(self, client, table):
        catch_up, _ = client.subscribe(table)
        self.replica = Replica(catch_up[0])
        self.client = client
        self.arrivals = []  # (time, values of section 0)
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self):
        while True:
            try:
                update = self.client.next("update", timeout=30)
            except (AssertionError, ConnectionClosed, OSError, TimeoutError):
                return
            self.replica.apply(update)
            self.arrivals.append((time.monotonic(), [row["value"] for row in self.replica.sections[0]["rows"]]))

    def when(self, values, timeout=10):
        """When the table first held `values`, waiting up to `timeout` s for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, seen in list(self.arrivals):
                if seen == values:
                    return at
            time.sleep(0.01)
        raise AssertionError(f"the observer never saw {values}; it saw {self.arrivals}")


def test_ten_quick_moves_reach_another_subscriber_within_two_round_trips(setup):  # noqa: F811
    server, tmux = setup
    table = f"t-{uuid.uuid4().hex[:8]}"
    admin = server.client()
    admin.ok({"type": "createTable", "table": table, "sections": [{"header": "List", "rows": [{"value": v} for v in ROWS]}]})
    admin.close()
    proxy = LatencyProxy(server.port, DELAY)
    observer_client = server.client()
    try:
        observer = Observer(observer_client, table)
        save_stty(tmux, "alice")
        tmux.type("alice", f"{tablecast_binary()} edit {table} --url {proxy.url} --name alice")
        tmux.keys("alice", "Enter")
        tmux.wait_for("alice", "● live")
        tmux.wait("alice", lambda s: "row 11" in s, "the table")
        tmux.keys("alice", "g", "j")
        tmux.wait("alice", lambda s: "▶" in line_with(s, "row 00"), "cursor on row 00")

        moved = ROWS[1:11] + ROWS[:1] + ROWS[11:]
        start = time.monotonic()
        tmux.keys("alice", *["J"] * 10)
        tmux.wait("alice", lambda s: [line for line in body(s) if line.startswith("row")] == moved, "ten moves",
                  timeout=5)
        own = time.monotonic() - start
        other = observer.when(moved) - start
        print(f"\nten J over {DELAY * 1000:.0f} ms each way: own screen {own * 1000:.0f} ms, "
              f"other subscriber {other * 1000:.0f} ms, updates {len(observer.arrivals)}")
        # On its own screen before the first answer could come back (one round trip is 300 ms).
        assert own < 2 * DELAY, f"own screen after {own:.3f} s"
        # The first move, then the nine queued meanwhile as one batch: two updates, two round trips at most.
        assert other <= 0.7, f"the other subscriber saw the ten moves after {other:.3f} s"
        assert len(observer.arrivals) == 2, observer.arrivals
        # Each J gets its own part of the batch's ack (its row is where that J put it, never "the server put it
        # at"), and the editor reports answers in submission order: the status line ends with the last J's.
        screen = tmux.wait_for("alice", "moved to [0,10] (v2)")
        assert "the server put it" not in screen, screen
        tmux.keys("alice", "q")
    finally:
        observer_client.close()
        proxy.close()
