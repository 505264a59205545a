"""The page answers at once: with the server made slow (`serve --debug-commit-delay-ms`, a test-only flag), a swipe
delete leaves the page before the server committed it, and Ctrl-Z brings the row back, for everyone."""
import pytest

from conftest import ROOT, Server
from test_page import View, browser, sections, server_values  # noqa: F401 (browser is a fixture)

DELAY_MS = 1500
PENDING = "tablecast.client._tables.get(tablecast.ui.table)?.optimistic?.pendingCount ?? 0"


@pytest.fixture(scope="module")
def server():
    s = Server("--static-dir", str(ROOT / "web-client-protocol" / "client"), "--debug-commit-delay-ms", str(DELAY_MS)).start()
    yield s
    s.stop()


@pytest.fixture
def admin(server):
    c = server.client(name="admin")
    yield c
    c.close()


def test_a_delete_shows_before_the_server_answers_and_ctrl_z_brings_it_back(server, browser, admin, table_name):  # noqa: F811
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["one", "two", "three"])})
    a = View(browser, server, table_name)
    b = View(browser, server, table_name)
    try:
        x, y = a.row_center("two")
        a.page.touch_drag((x + 120, y), (x - 80, y))
        a.page.wait_for("__t.row('two').classList.contains('revealed')")
        a.click("__t.row('two').querySelector('.swipe-delete')")
        # Gone from this page at once (well before the server's 1.5 s delay), while the server holds the commit back.
        a.wait_values([["one", "three"]], timeout=0.5)
        assert a.page.eval(PENDING) == 1, "the delete is still waiting for the server"
        assert b.values() == [["one", "two", "three"]], "the other page waits for the server"
        b.wait_values([["one", "three"]])
        a.page.wait_for(f"({PENDING}) === 0")
        assert a.page.eval("document.querySelector('#undo').disabled") is False

        # Ctrl-Z (focus on the page, not in a text field): the row is back at once, at its place, then for everyone.
        a.page.eval("document.activeElement?.blur()")
        a.page.key("z", code="KeyZ", modifiers=2)
        a.wait_values([["one", "two", "three"]], timeout=0.5)
        assert a.page.eval(PENDING) == 1
        b.wait_values([["one", "two", "three"]])
        a.page.wait_for(f"({PENDING}) === 0")
        assert server_values(admin, table_name) == [["one", "two", "three"]]
        # Shift-Ctrl-Z redoes the delete.
        a.page.key("z", code="KeyZ", modifiers=2 | 8)
        a.wait_values([["one", "three"]], timeout=0.5)
        b.wait_values([["one", "three"]])
    finally:
        a.close()
        b.close()


def hold_delete(view, text):
    """Swipes row `text` open and presses its Delete without releasing it, once the page's own presence on that row
    has come back; returns where, for the release."""
    x, y = view.row_center(text)
    view.page.touch_drag((x + 120, y), (x - 80, y))
    view.page.wait_for(f"__t.row({text!r}).classList.contains('revealed')")
    view.page.wait_for("tablecast.ui.presence.clients.some((p) => p.key === tablecast.ui.presence.you && p.row)")
    button = f"__t.row({text!r}).querySelector('.swipe-delete')"
    view.page.wait_for(f"__t.hittable({button})")
    bx, by = view.center(button)
    view.page.mouse("mouseMoved", bx, by, buttons=0)
    view.page.mouse("mousePressed", bx, by)
    return bx, by


def test_a_press_is_not_lost_when_someone_arrives_under_it(server, browser, admin, table_name):  # noqa: F811
    """A press on a row's Delete takes a moment; someone arriving meanwhile (a presence change) must not swallow it.
    The page updates presence in place: drawing the rows again put a new button under the pointer between the press
    and the release, and the click went to the list instead (the row stayed, revealed)."""
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["one", "two", "three"])})
    a = View(browser, server, table_name)
    other = None
    try:
        bx, by = hold_delete(a, "two")
        people = a.page.eval("tablecast.ui.presence.clients.length")
        other = server.client(name="Ben")
        other.subscribe(table_name)
        a.page.wait_for(f"tablecast.ui.presence.clients.length === {people + 1}")
        assert "Ben" in a.page.eval("document.querySelector('#presence').textContent")
        a.page.mouse("mouseReleased", bx, by, buttons=0)
        a.wait_values([["one", "three"]], timeout=0.5)
        a.page.wait_for(f"({PENDING}) === 0")
        assert server_values(admin, table_name) == [["one", "three"]]
    finally:
        if other:
            other.close()
        a.close()


def test_a_press_is_not_lost_when_an_update_arrives_under_it(server, browser, admin, table_name):  # noqa: F811
    """The same with someone else's edit arriving while Delete is held down: the page holds back drawing what
    arrives until the press has ended and its click was dispatched, then shows both."""
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["one", "two", "three"])})
    a = View(browser, server, table_name)
    try:
        bx, by = hold_delete(a, "two")
        admin.ok({"type": "edit", "table": table_name, "at": [0, 0], "value": "ONE"})
        # The page has the edit (its predicted table) but has not drawn it: the press is under way.
        a.page.wait_for(f"tablecast.client.predicted({table_name!r}).sections[0].rows[0].value === 'ONE'")
        assert a.values() == [["one", "two", "three"]]
        a.page.mouse("mouseReleased", bx, by, buttons=0)
        a.wait_values([["ONE", "three"]], timeout=0.5)
        a.page.wait_for(f"({PENDING}) === 0")
        assert server_values(admin, table_name) == [["ONE", "three"]]
    finally:
        a.close()
