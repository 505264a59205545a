"""A burst over a slow link, on the page: served through a proxy that adds 150 ms each way (network.LatencyProxy),
ten Alt+ArrowDown presses move a row ten places. The page shows each at once; another subscriber sees all ten
within two round trips, because what is queued while the first move is in flight goes as one batch when its ack
comes (web-client-protocol/optimistic.md, "Sending the queue")."""
import time

import pytest

from conftest import ROOT, Server
from network import LatencyProxy
from test_edit_burst import DELAY, ROWS, Observer
from test_page import View, browser  # noqa: F401 (browser is a fixture)


@pytest.fixture(scope="module")
def server():
    s = Server("--static-dir", str(ROOT / "web-client-protocol" / "client")).start()
    yield s
    s.stop()


class Through:
    """The server as the page reaches it: through the proxy."""

    def __init__(self, proxy):
        self.port = proxy.port


def test_ten_quick_moves_on_the_page_reach_another_subscriber_within_two_round_trips(server, browser, table_name):  # noqa: F811
    admin = server.client(name="admin")
    admin.ok({"type": "createTable", "table": table_name,
              "sections": [{"header": "List", "rows": [{"value": v} for v in ROWS]}]})
    admin.close()
    proxy = LatencyProxy(server.port, DELAY)
    observer_client = server.client()
    page = None
    try:
        observer = Observer(observer_client, table_name)
        page = View(browser, Through(proxy), table_name)
        page.wait_values([ROWS])
        page.focus_row(ROWS[0])
        moved = ROWS[1:11] + ROWS[:1] + ROWS[11:]
        start = time.monotonic()
        for _ in range(10):
            page.page.key("ArrowDown", modifiers=1)
        pressed = time.monotonic() - start
        assert pressed < 2 * DELAY, f"the ten keys took {pressed:.3f} s: more than a round trip, not a burst"
        page.wait_values([moved], timeout=5)
        own = time.monotonic() - start
        other = observer.when(moved) - start
        print(f"\npage, ten Alt+ArrowDown over {DELAY * 1000:.0f} ms each way: keys sent in {pressed * 1000:.0f} ms, "
              f"own page {own * 1000:.0f} ms, other subscriber {other * 1000:.0f} ms, updates {len(observer.arrivals)}")
        assert own < 2 * DELAY, f"the page showed the ten moves after {own:.3f} s"
        assert other <= 0.7, f"the other subscriber saw the ten moves after {other:.3f} s"
        assert len(observer.arrivals) == 2, observer.arrivals
    finally:
        if page:
            page.close()
        observer_client.close()
        proxy.close()
