"""The page served at / by `tablecast serve`, in a real headless chromium driven over the DevTools protocol.

Two pages (separate browser contexts, like two people) open one table and each sees the other's insert,
delete, move and edit; a drag reorder and a swipe delete are done with input events dispatched through the
browser (so the page gets real pointer events); a screenshot is saved under Tests/BlackBox/artifacts/ and
checked for being non-blank.
"""
import json
import os
import pathlib
import time
import uuid

import pytest

from cdp import Browser, chromium_binary, png_pixels
from conftest import ROOT, Server

ARTIFACTS = pathlib.Path(os.environ.get("TABLECAST_ARTIFACTS", pathlib.Path(__file__).parent / "artifacts"))

# In-page helpers for the test: find rows by their text, read the view. Only reading; every action below goes
# through dispatched input events (or keyboard events) like a person's.
HELPERS = """
window.__t = {
  rows: () => [...document.querySelectorAll('.row[data-id]:not(.placeholder)')],
  row: (text) => __t.rows().find((r) => r.querySelector('.value')?.textContent === text),
  values: () => [...document.querySelectorAll('ul.rows')].map((ul) =>
      [...ul.querySelectorAll('.row[data-id]:not(.placeholder) .value')].map((v) => v.textContent)),
  center: (e) => { e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
                   return [r.left + r.width / 2, r.top + r.height / 2]; },
  // Whether a press at the element's center reaches it (not a row still sliding over a Delete button).
  hittable: (e) => { const [x, y] = __t.center(e); return e.contains(document.elementFromPoint(x, y)); },
};
true
"""


def sections(*groups, header=None):
    return [{"header": header, "footer": None, "rows": [{"value": v} for v in g]} for g in groups]


@pytest.fixture(scope="module")
def server():
    s = Server("--static-dir", str(ROOT / "web-client-protocol" / "client")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    if chromium_binary() is None:
        pytest.fail("chromium is needed for the page tests: run .ci/install (Debian's chromium)")
    b = Browser()
    yield b
    b.close()


@pytest.fixture
def admin(server):
    c = server.client(name="admin")
    yield c
    c.close()


class View:
    """One page showing one table."""

    def __init__(self, browser, server, table, width=390, height=844, name=None):
        self.page = browser.new_page(width, height)
        query = f"?name={name}" if name else ""
        self.page.goto(f"http://127.0.0.1:{server.port}/{query}#/table/{table}")
        self.page.eval(HELPERS)
        self.page.wait_for("document.querySelector('#conn').dataset.state === 'live'")
        self.page.wait_for("document.querySelector('ul.rows') !== null", message="the table did not load")

    def values(self):
        return self.page.eval("__t.values()")

    def wait_values(self, expected, timeout=10):
        self.page.wait_for(f"JSON.stringify(__t.values()) === {json.dumps(json.dumps(expected, separators=(',', ':')))}", timeout,
                           message=f"expected {expected}, the page shows {self.values()}; banners: "
                                   f"{self.page.eval('document.querySelector(`#banners`).textContent')!r}")

    def row_center(self, text):
        return self.page.eval(f"__t.center(__t.row({json.dumps(text)}))")

    def center(self, expression):
        return self.page.eval(f"__t.center({expression})")

    def focus_row(self, text):
        assert self.page.eval(f"(() => {{ const r = __t.row({json.dumps(text)}); r.focus(); "
                              f"return document.activeElement === r; }})()"), f"no row {text}"

    def click(self, expression):
        # As a person would: press once the target is uncovered, e.g. once a swiped row has slid to its place.
        self.page.wait_for(f"__t.hittable({expression})", message=f"nothing to press: {expression} is covered")
        x, y = self.center(expression)
        self.page.mouse("mouseMoved", x, y, buttons=0)
        self.page.mouse("mousePressed", x, y)
        self.page.mouse("mouseReleased", x, y, buttons=0)

    def close(self):
        problems = self.page.problems()
        self.page.close()
        assert not problems, f"the page reported errors: {problems}"


def server_values(client, table):
    catch_up, _ = client.subscribe(table)
    client.ok({"type": "unsubscribe", "table": table}, expect="unsubscribed")
    return [[row["value"] for row in s["rows"]] for s in catch_up[0]["sections"]]


def test_two_pages_see_each_others_insert_edit_move_and_delete(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["Apples", "Bread"], ["Milk"])})
    a = View(browser, server, table_name, name="Ana")
    b = View(browser, server, table_name, name="Ben")
    try:
        # Presence: each page shows both people.
        for view in (a, b):
            view.page.wait_for("document.querySelectorAll('#presence .badge').length === 2")
        assert "Ben" in a.page.eval("document.querySelector('#presence').textContent")

        # Insert on A with the Add button and the keyboard; B sees it.
        a.click("document.querySelector('#add')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'new'")
        a.page.type_text("Cheese")
        a.page.key("Enter", text="\r")
        b.wait_values([["Apples", "Bread"], ["Milk", "Cheese"]])

        # Edit on B inline (Enter on the row, type, Enter); A sees it.
        b.focus_row("Bread")
        b.page.key("Enter", text="\r")
        b.page.wait_for("document.activeElement?.dataset.inline === 'row'")
        b.page.type_text("Sourdough")  # replaces the selected old text
        b.page.key("Enter", text="\r")
        a.wait_values([["Apples", "Sourdough"], ["Milk", "Cheese"]])

        # Move on A with Alt+ArrowDown (down past the end of section 0 goes to the top of section 1); B sees it.
        a.focus_row("Sourdough")
        a.page.key("ArrowDown", modifiers=1)
        b.wait_values([["Apples"], ["Sourdough", "Milk", "Cheese"]])
        a.wait_values([["Apples"], ["Sourdough", "Milk", "Cheese"]])
        assert a.page.eval("document.activeElement === __t.row('Sourdough')"), "focus follows the moved row"
        a.page.wait_for("document.querySelector('#announce').textContent === "
                        "'Moved “Sourdough” to row 1 of section 2.'", message="the move is announced")

        # Delete on B with the keyboard: Delete uncovers the row's Delete button, Enter presses it; A sees it.
        b.focus_row("Milk")
        b.page.key("Delete")
        b.page.wait_for("document.activeElement?.classList.contains('swipe-delete')")
        b.page.key("Enter", text="\r")
        a.wait_values([["Apples"], ["Sourdough", "Cheese"]])
        b.page.wait_for("document.activeElement === __t.row('Cheese')", message="focus goes to the next row")
        assert server_values(admin, table_name) == [["Apples"], ["Sourdough", "Cheese"]]

        # The other way round, with the pointer. B inserts with the insertion control of editing mode.
        b.click("document.querySelector('#edit-toggle')")
        b.click("document.querySelectorAll('.insert-control .insert')[0]")
        b.page.wait_for("document.activeElement?.dataset.inline === 'new'")
        b.page.type_text("Pears")
        b.page.key("Enter", text="\r")
        a.wait_values([["Apples", "Pears"], ["Sourdough", "Cheese"]])
        b.page.key("Escape")
        # A edits with a tap on the text.
        a.click("__t.row('Cheese').querySelector('.value')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'row'")
        a.page.type_text("Brie")
        a.page.key("Enter", text="\r")
        b.wait_values([["Apples", "Pears"], ["Sourdough", "Brie"]])
        # B drags "Apples" below "Pears".
        b.page.wait_for("document.querySelectorAll('.handle').length === 4")
        handle = b.center("__t.row('Apples').querySelector('.handle')")
        _, below = b.page.eval("(() => { const r = __t.row('Pears').getBoundingClientRect(); return [0, r.bottom - 4]; })()")
        b.page.mouse_drag(handle, (handle[0], below))
        a.wait_values([["Pears", "Apples"], ["Sourdough", "Brie"]])
        # A swipes "Sourdough" away.
        x, y = a.row_center("Sourdough")
        a.page.mouse_drag((x + 100, y), (x - 80, y))
        a.page.wait_for("__t.row('Sourdough').classList.contains('revealed')")
        a.click("__t.row('Sourdough').querySelector('.swipe-delete')")
        b.wait_values([["Pears", "Apples"], ["Brie"]])
        assert server_values(admin, table_name) == [["Pears", "Apples"], ["Brie"]]
    finally:
        a.close()
        b.close()


def test_drag_reorder_by_handle_with_the_mouse(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name,
              "sections": sections(["one", "two", "three", "four"], ["five"])})
    a = View(browser, server, table_name)
    b = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelectorAll('.handle').length === 5")
        # Presence changes the badges above the list; let the layout settle before aiming.
        b.page.wait_for("document.querySelector('#presence .badge.editing') !== null")
        a.page.wait_for("document.querySelector('#presence .badge.editing') !== null")
        # Drag "one" by its handle to below "three": it lands at index 2.
        handle = a.center("__t.row('one').querySelector('.handle')")
        _, below_three = a.page.eval("(() => { const r = __t.row('three').getBoundingClientRect(); "
                                     "return [0, r.bottom - 4]; })()")
        a.page.mouse_drag(handle, (handle[0], below_three))
        a.wait_values([["two", "three", "one", "four"], ["five"]])
        b.wait_values([["two", "three", "one", "four"], ["five"]])
        # Across sections, with a finger: "four" onto the top half of "five".
        handle = a.center("__t.row('four').querySelector('.handle')")
        _, top_of_five = a.page.eval("(() => { const r = __t.row('five').getBoundingClientRect(); "
                                     "return [0, r.top + 6]; })()")
        a.page.touch_drag(handle, (handle[0], top_of_five), steps=20)
        b.wait_values([["two", "three", "one"], ["four", "five"]])
        assert server_values(admin, table_name) == [["two", "three", "one"], ["four", "five"]]
    finally:
        a.close()
        b.close()


def test_drag_settles_where_the_server_put_it(server, browser, admin, table_name):
    """Under reserveLastRow and withinSection, the row is drawn where the server retargeted it."""
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a", "b", "c", "Add item…"]),
              "rules": {"reserveLastRow": True, "moves": "withinSection"}})
    a = View(browser, server, table_name)
    try:
        a.page.wait_for("document.querySelector('.placeholder .insert')?.textContent.includes('Add item')")
        a.click("document.querySelector('#edit-toggle')")
        assert a.page.eval("__t.row('Add item…') === undefined"), "the placeholder is an insertion control, not a row"
        handle = a.center("__t.row('a').querySelector('.handle')")
        _, bottom = a.page.eval("(() => { const r = document.querySelector('.placeholder').getBoundingClientRect(); "
                                "return [0, r.bottom - 2]; })()")
        a.page.mouse_drag(handle, (handle[0], bottom))
        a.wait_values([["b", "c", "a"]])
        assert server_values(admin, table_name) == [["b", "c", "a", "Add item…"]]
        # The placeholder adds before itself.
        a.click("document.querySelector('.placeholder .insert')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'new'")
        a.page.type_text("d")
        a.page.key("Enter", text="\r")
        a.wait_values([["b", "c", "a", "d"]])
    finally:
        a.close()


def test_swipe_left_reveals_delete_with_touch_and_mouse(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["keep", "swipe me", "mouse me"]),
              "rules": {"deleteConfirmationTitle": "Remove"}})
    a = View(browser, server, table_name)
    b = View(browser, server, table_name)
    try:
        x, y = a.row_center("swipe me")
        a.page.touch_drag((x + 120, y), (x - 80, y))
        a.page.wait_for("__t.row('swipe me').classList.contains('revealed')")
        assert a.page.eval("__t.row('swipe me').querySelector('.swipe-delete').textContent") == "Remove"
        # The other page sees who is on that row.
        b.page.wait_for("__t.row('swipe me').querySelector('.row-badge') !== null")
        a.click("__t.row('swipe me').querySelector('.swipe-delete')")
        b.wait_values([["keep", "mouse me"]])
        # Measure only once this page has drawn the delete too, or the row moves up under the pointer.
        a.wait_values([["keep", "mouse me"]])

        x, y = a.row_center("mouse me")
        a.page.mouse_drag((x + 120, y), (x - 60, y))
        a.page.wait_for("__t.row('mouse me').classList.contains('revealed')")
        # Swiping another row closes the open one; a short swipe opens nothing, and nothing is deleted.
        x, y = a.row_center("keep")
        a.page.mouse_drag((x + 100, y), (x + 70, y), steps=4)
        a.page.wait_for("document.querySelector('.row.revealed') === null")
        assert a.values() == [["keep", "mouse me"]]
        x, y = a.row_center("mouse me")
        a.page.mouse_drag((x + 120, y), (x - 60, y))
        a.page.wait_for("__t.row('mouse me').classList.contains('revealed')")
        a.click("__t.row('mouse me').querySelector('.swipe-delete')")
        b.wait_values([["keep"]])
    finally:
        a.close()
        b.close()


def test_multi_select_deletes_in_one_batch(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a", "b", "c", "d"])})
    admin.subscribe(table_name)
    a = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.click("__t.row('a').querySelector('.select')")
        a.focus_row("c")
        a.page.key(" ", code="Space", text=" ")
        a.page.wait_for("document.querySelector('#delete-selected').textContent === 'Delete selected (2)'")
        a.click("document.querySelector('#delete-selected')")
        a.wait_values([["b", "d"]])
        update = admin.next("update", table=table_name)
        assert sorted(update["deleteRows"]) == [[0, 0], [0, 2]] and update["version"] == 1, update
    finally:
        a.close()


def test_section_header_and_footer_edit_and_pull_to_refresh(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["x"], header="Old")})
    a = View(browser, server, table_name)
    try:
        a.click("document.querySelector('.section-header .text-button')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'header'")
        a.page.type_text("Groceries")
        a.page.key("Enter", text="\r")
        a.page.wait_for("document.querySelector('.section-header').textContent === 'Groceries'")
        a.click("document.querySelector('#edit-toggle')")
        a.click("document.querySelector('.section-footer .text-button')")
        a.page.type_text("Buy today")
        a.page.key("Enter", text="\r")
        a.page.wait_for("document.querySelector('.section-footer')?.textContent === 'Buy today'")

        # Pull down with the mouse: the spinner shows until `refreshed` (delayed here so it can be seen).
        a.page.eval("""(() => { const c = tablecast.client; const original = c.refresh.bind(c);
            c.refresh = (t) => new Promise((r) => setTimeout(r, 400)).then(() => original(t)); return true; })()""")
        x, y = a.center("document.querySelector('.section-header')")
        a.page.mouse_drag((x, y), (x, y + 200))
        a.page.wait_for("document.querySelector('#pull').classList.contains('refreshing')", timeout=3)
        a.page.wait_for("!document.querySelector('#pull').classList.contains('refreshing')", timeout=5)
        # With a finger too (touch events: the list itself pans natively).
        a.page.touch_drag((x, y), (x, y + 200))
        a.page.wait_for("document.querySelector('#pull').classList.contains('refreshing')", timeout=3)
        a.page.wait_for("!document.querySelector('#pull').classList.contains('refreshing')", timeout=5)
        # And the refresh button.
        a.click("document.querySelector('#refresh')")
        a.page.wait_for("!document.querySelector('#refresh').hasAttribute('aria-busy')", timeout=5)
        # A tap on a row's text edits it in place.
        a.click("__t.row('x').querySelector('.value')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'row'")
        a.page.type_text("y")
        a.page.key("Enter", text="\r")
        a.wait_values([["y"]])
        assert server_values(admin, table_name) == [["y"]]
    finally:
        a.close()


def test_list_semantics_and_names_for_assistive_technology(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a", "b"], ["c"], header="H")})
    a = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelector('#edit-toggle').getAttribute('aria-pressed') === 'true'")
        report = a.page.eval("""(() => {
            const lists = [...document.querySelectorAll('#sections [role=list]')];
            const nameless = [...document.querySelectorAll('button, input')].filter((e) => e.offsetParent !== null)
                .filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim() || e.labels?.length));
            return {
                lists: lists.length,
                labelled: lists.every((l) => document.getElementById(l.getAttribute('aria-labelledby'))),
                items: document.querySelectorAll('#sections [role=list] > [role=listitem]').length,
                focusable: document.querySelectorAll('#sections [role=listitem][tabindex="0"]').length,
                nameless: nameless.map((e) => e.outerHTML),
                status: document.querySelector('#conn').getAttribute('role'),
            };
        })()""")
        assert report == {"lists": 2, "labelled": True, "items": 3, "focusable": 3, "nameless": [], "status": "status"}
    finally:
        a.close()


def test_home_lists_and_creates_tables_and_shows_errors(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name})
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.port}/")
        page.wait_for(f"[...document.querySelectorAll('#tables a')].some((a) => a.textContent === '{table_name}')")
        # Creating a table that exists: the server's message in a dismissible banner.
        page.eval(f"document.querySelector('#create-name').focus()")
        page.type_text(table_name)
        page.key("Enter", text="\r")
        page.wait_for("document.querySelector('.banner [class=banner-code]')?.textContent === 'table_exists'")
        assert table_name in page.eval("document.querySelector('.banner-text').textContent")
        page.click(".banner-close")
        page.wait_for("document.querySelector('.banner') === null")
        # Creating a new one opens it; its URL names it.
        fresh = f"t-{uuid.uuid4().hex[:10]}"
        page.eval("document.querySelector('#create-name').select()")
        page.type_text(fresh)
        page.key("Enter", text="\r")
        page.wait_for(f"location.hash === '#/table/{fresh}' && document.querySelector('#title').textContent === '{fresh}'")
        page.wait_for("document.querySelector('ul.rows') !== null")
        assert not page.problems(), page.problems()
    finally:
        page.close()


def _non_blank(png):
    width, height, bpp, rows = png_pixels(png)
    colours = set()
    for y in range(0, height, 4):
        row = rows[y]
        for x in range(0, width, 4):
            colours.add(row[x * bpp:x * bpp + 3])
    return width, height, len(colours)


@pytest.mark.parametrize("size", [(390, 844), (1024, 768)], ids=["phone", "desktop"])
def test_screenshot_is_not_blank(server, browser, admin, table_name, size):
    admin.ok({"type": "createTable", "table": table_name, "sections": [
        {"header": "Fruit", "footer": "From the market", "rows": [{"value": v} for v in ["Apples", "Bananas", "Cherries", "Add fruit…"]]},
        {"header": "Dairy", "footer": None, "rows": [{"value": v} for v in ["Milk", "Cheese", "Add item…"]]}],
        "rules": {"reserveLastRow": True}})
    other = server.client(name="Ben")
    other.subscribe(table_name)
    other.send({"type": "editing", "table": table_name, "on": True})
    view = View(browser, server, table_name, width=size[0], height=size[1], name="Ana")
    try:
        view.page.wait_for("document.querySelectorAll('#presence .badge').length === 2")
        if size[0] < 500:
            # The phone in editing mode, one row selected, another's delete control open.
            view.click("document.querySelector('#edit-toggle')")
            view.click("__t.row('Cherries').querySelector('.select')")
            view.click("__t.row('Milk').querySelector('.minus')")
            view.page.wait_for("__t.row('Milk').classList.contains('revealed')")
        else:
            x, y = view.row_center("Bananas")
            view.page.mouse_drag((x + 100, y), (x - 80, y))
            view.page.wait_for("__t.row('Bananas').classList.contains('revealed')")
        time.sleep(0.3)  # the slide's transition
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"page-{size[0]}x{size[1]}.png"
        png = view.page.screenshot(path)
        print(f"\nscreenshot: {path}")
        width, height, colours = _non_blank(png)
        assert (width, height) == size
        assert colours > 20, f"the screenshot looks blank ({colours} colours): {path}"
    finally:
        view.close()
        other.close()


def test_connection_state_and_resume_after_a_server_restart(browser, table_name):
    server = Server("--static-dir", str(ROOT / "web-client-protocol" / "client")).start()
    try:
        admin = server.client()
        admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a"])})
        admin.close()
        a = View(browser, server, table_name)
        try:
            assert a.page.eval("document.querySelector('#conn').textContent") == "Live"
            port = server.port
            server.stop()
            a.page.wait_for("document.querySelector('#conn').dataset.state === 'reconnecting'")
            assert a.page.eval("document.querySelector('#conn').textContent").startswith("Reconnecting")
            # An insert made while offline is sent once the page is back (with its original ref).
            a.click("document.querySelector('#add')")
            a.page.wait_for("document.activeElement?.dataset.inline === 'new'")
            a.page.type_text("offline")
            a.page.key("Enter", text="\r")
            server.start(port=port)
            a.page.wait_for("document.querySelector('#conn').dataset.state === 'live'", timeout=20)
            a.wait_values([["a", "offline"]])
            admin = server.client()
            assert server_values(admin, table_name) == [["a", "offline"]]
            admin.close()
        finally:
            a.close()
    finally:
        server.stop()


def test_a_drop_on_a_changed_table_settles_where_the_server_put_it(server, browser, admin, table_name):
    """The view is not redrawn under a drag; after the drop the row is drawn where the server rebased it."""
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a", "b", "c", "d"])})
    a = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelector('#presence .badge.editing') !== null")
        hx, hy = a.center("__t.row('a').querySelector('.handle')")
        _, below_c = a.page.eval("(() => { const r = __t.row('c').getBoundingClientRect(); return [0, r.bottom - 4]; })()")
        a.page.mouse("mouseMoved", hx, hy, buttons=0)
        a.page.mouse("mousePressed", hx, hy)
        for i in range(1, 9):
            a.page.mouse("mouseMoved", hx, hy + (below_c - hy) * i / 8)
        # Meanwhile someone else inserts "x" at the top and deletes "b".
        admin.ok({"type": "batch", "table": table_name, "insertRows": [{"at": [0, 0], "value": "x"}],
                  "deleteRows": [{"at": [0, 1]}]})
        time.sleep(0.3)
        assert a.values() == [["a", "b", "c", "d"]], "the list is not redrawn under the finger"
        a.page.mouse("mouseReleased", hx, below_c, buttons=0)
        # "a" was dropped right after "c" (at version 0); the server keeps it there: x, c, a, d.
        a.wait_values([["x", "c", "a", "d"]])
        a.page.wait_for("__t.row('a').dataset.resolved === '0,2'")
        assert server_values(admin, table_name) == [["x", "c", "a", "d"]]
    finally:
        a.close()


def test_rules_changes_and_a_dropped_table(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": sections(["a", "b"])})
    a = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelectorAll('.handle').length === 2")
        admin.ok({"type": "setRules", "table": table_name, "rules": {"moves": "none", "deleteConfirmationTitle": "Bin"}})
        a.page.wait_for("document.querySelectorAll('.handle').length === 0", message="moves: none hides the handles")
        assert a.page.eval("__t.row('a').querySelector('.swipe-delete').textContent") == "Bin"
        # Add a section from editing mode.
        a.click("document.querySelector('#add-section')")
        a.page.wait_for("document.querySelectorAll('ul.rows').length === 2")
        admin.ok({"type": "dropTable", "table": table_name})
        a.page.wait_for("location.hash === '#/' && !document.querySelector('#home').hidden")
        assert "dropped" in a.page.eval("document.querySelector('#banners').textContent")
    finally:
        a.close()


def right_click(view, expression):
    x, y = view.center(expression)
    for kind in ("mousePressed", "mouseReleased"):
        view.page.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "right",
                                                    "buttons": 2 if kind == "mousePressed" else 0, "clickCount": 1})


def long_press(view, expression):
    x, y = view.center(expression)
    view.page.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    view.page.wait_for("!document.querySelector('#row-menu').hidden", timeout=3, message="no menu after a long press")
    view.page.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_rows_show_the_control_of_their_editing_style(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": [{"header": "List", "footer": None, "rows": [
        {"value": "apple"}, {"value": "Add item…", "editingStyle": "insert"}, {"value": "water", "editingStyle": "none"},
        {"value": "pinned", "editable": False}]}]})
    a = View(browser, server, table_name)
    try:
        # The insert row is an add-item placeholder, in and out of editing mode.
        assert a.page.eval("document.querySelector('.row.placeholder .insert')?.textContent") == "+Add item…"
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelector('#edit-toggle').getAttribute('aria-pressed') === 'true'")
        controls = a.page.eval("""Object.fromEntries(__t.rows().map((r) => [r.querySelector('.value').textContent,
            [!!r.querySelector('.select'), !!r.querySelector('.minus'), !!r.querySelector('.swipe-delete')]]))""")
        assert controls == {"apple": [True, True, True], "water": [False, False, False], "pinned": [False, False, False]}
        # A selected row that an admin locks leaves the selection (and loses its controls).
        a.click("__t.row('apple').querySelector('.select')")
        a.page.wait_for("document.querySelector('#delete-selected').textContent === 'Delete selected (1)'")
        admin.ok({"type": "edit", "table": table_name, "at": [0, 0], "value": "apple", "editable": False})
        a.page.wait_for("document.querySelector('#delete-selected').textContent === 'Delete selected'")
        assert a.page.eval("__t.row('apple').querySelector('.select') === null")
        admin.ok({"type": "edit", "table": table_name, "at": [0, 0], "value": "apple", "editable": True})
        a.page.wait_for("__t.row('apple').querySelector('.select') !== null")
        # Dragged below the last row, a row goes to the end: a placeholder in the middle does not catch it.
        a.page.wait_for("document.querySelector('#presence .badge.editing') !== null")
        handle = a.center("__t.row('apple').querySelector('.handle')")
        _, bottom = a.page.eval("(() => { const r = __t.row('pinned').getBoundingClientRect(); return [0, r.bottom - 4]; })()")
        a.page.mouse_drag(handle, (handle[0], bottom))
        a.wait_values([["water", "pinned", "apple"]])
        # The none row cannot be swiped (nor is the drag taken for a tap that edits it), nor deleted from the
        # keyboard.
        a.click("document.querySelector('#edit-toggle')")
        x, y = a.row_center("water")
        a.page.mouse_drag((x + 100, y), (x - 80, y))
        time.sleep(0.3)
        assert a.page.eval("document.querySelector('[data-inline]') === null")
        a.focus_row("water")
        a.page.key("Delete")
        time.sleep(0.3)
        assert a.page.eval("document.querySelector('.row.revealed') === null")
        # The placeholder's insertion control adds a row just before it.
        a.click("document.querySelector('.row.placeholder .insert')")
        a.page.wait_for("document.activeElement?.dataset.inline === 'new'")
        assert a.page.eval("document.querySelector('.new-row').nextElementSibling.classList.contains('placeholder')")
        a.page.type_text("pear")
        a.page.key("Enter", text="\r")
        a.wait_values([["pear", "water", "pinned", "apple"]])
        assert server_values(admin, table_name) == [["pear", "Add item…", "water", "pinned", "apple"]]
    finally:
        a.close()


def test_sections_are_moved_and_deleted_in_editing_mode(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": [
        {"header": "Fruit", "footer": None, "rows": [{"value": "apple"}, {"value": "pear"}]},
        {"header": "Dairy", "footer": None, "rows": [{"value": "milk"}]}]})
    a = View(browser, server, table_name)
    b = View(browser, server, table_name)
    try:
        a.click("document.querySelector('#edit-toggle')")
        a.page.wait_for("document.querySelectorAll('.section-tools').length === 2")
        # Presence redraws the list: let it settle before aiming.
        for view in (a, b):
            view.page.wait_for("document.querySelectorAll('#presence .badge').length === 2 && "
                               "document.querySelector('#presence .badge.editing') !== null")
        assert a.page.eval("document.querySelector('[aria-label=\"Move Fruit up\"]').disabled")
        a.click("document.querySelector('[aria-label=\"Move Fruit down\"]')")
        b.wait_values([["milk"], ["apple", "pear"]])
        # Fruit is last now: its "down" is off, and focus goes to its "up".
        a.page.wait_for("document.activeElement?.getAttribute('aria-label') === 'Move Fruit up'",
                        message="focus stays on the section's controls")
        assert a.page.eval("document.querySelector('[aria-label=\"Move Fruit down\"]').disabled")
        a.click("document.querySelector('[aria-label=\"Delete Fruit\"]')")
        a.page.wait_for("document.querySelector('.section-tools.confirm .confirm-text')?.textContent === "
                        "'Delete “Fruit” and its 2 rows?'")
        a.click("[...document.querySelectorAll('.section-tools.confirm button')].find((e) => e.textContent === 'Cancel')")
        a.page.wait_for("document.querySelector('.section-tools.confirm') === null")
        a.click("document.querySelector('[aria-label=\"Delete Fruit\"]')")
        a.click("document.querySelector('.section-tools.confirm button.danger')")
        b.wait_values([["milk"]])
        assert server_values(admin, table_name) == [["milk"]]
    finally:
        a.close()
        b.close()


def test_row_menu_copies_and_pastes_with_right_click_long_press_and_keys(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": [
        {"header": None, "footer": None, "rows": [{"value": "Apples"}, {"value": "locked", "editable": False}]},
        {"header": None, "footer": None, "rows": [{"value": "Milk"}]}]})
    a = View(browser, server, table_name)
    try:
        # Right click: Copy and Paste; nothing copied yet, so Paste is off.
        right_click(a, "__t.row('Apples')")
        a.page.wait_for("!document.querySelector('#row-menu').hidden")
        assert a.page.eval("document.activeElement.textContent") == "Copy"
        assert a.page.eval("document.querySelector('[data-menu=paste]').disabled")
        a.click("document.querySelector('[data-menu=copy]')")
        a.page.wait_for("document.querySelector('#row-menu').hidden")
        # Long press with a finger on Milk: Paste puts the copy after it.
        long_press(a, "__t.row('Milk')")
        assert a.page.eval("document.querySelector('[data-menu=paste]').textContent") == "Paste “Apples”"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / "page-phone-row-menu.png"
        a.page.screenshot(path)
        print(f"\nscreenshot: {path}")
        a.click("document.querySelector('[data-menu=paste]')")
        a.wait_values([["Apples", "locked"], ["Milk", "Apples"]])
        # The keyboard: Shift+F10 on a row opens the menu, arrows move, Enter picks, Escape closes.
        a.focus_row("locked")
        a.page.key("F10", modifiers=8)
        a.page.wait_for("!document.querySelector('#row-menu').hidden && document.activeElement.dataset.menu === 'copy'")
        a.page.key("Enter", text="\r")
        a.page.wait_for("document.querySelector('#row-menu').hidden && document.activeElement === __t.row('locked')")
        a.focus_row("Apples")
        a.page.key("F10", modifiers=8)
        a.page.wait_for("!document.querySelector('#row-menu').hidden")
        a.page.key("ArrowDown")
        a.page.key("Enter", text="\r")
        # A copied locked row is pasted (after Apples) as a plain row: the value, not the admin's flags.
        a.wait_values([["Apples", "locked", "locked"], ["Milk", "Apples"]])
        # The page shows its prediction at once; what the server stored is read once it has committed the paste.
        deadline = time.monotonic() + 10
        while True:
            probe = server.client()
            catch_up, _ = probe.subscribe(table_name)
            probe.close()
            stored = catch_up[0]["sections"][0]["rows"]
            if len(stored) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert [row.get("editable", True) for row in stored] == [True, True, False]
        right_click(a, "__t.row('Milk')")
        a.page.wait_for("!document.querySelector('#row-menu').hidden")
        a.page.key("Escape")
        a.page.wait_for("document.querySelector('#row-menu').hidden && document.activeElement === __t.row('Milk')")
    finally:
        a.close()


def test_an_empty_section_and_many_people_at_phone_width(server, browser, admin, table_name):
    admin.ok({"type": "createTable", "table": table_name, "sections": [
        {"header": "Fruit", "footer": None, "rows": [{"value": "Apples"}]},
        {"header": "Empty", "footer": "Nothing here yet", "rows": []}]})
    others = [server.client(name=name) for name in
              ("Bartholomew Longname", "Christabel Evenlongername", "Dmitri", "Eve", "Fitzgerald Q. Whitworth")]
    for other in others:
        other.subscribe(table_name)
    view = View(browser, server, table_name, name="Ana")
    try:
        view.page.wait_for("document.querySelectorAll('#presence .badge').length === 6")
        empty = view.page.eval("""(() => { const e = document.querySelector('[data-section] .empty-section');
            const r = e.getBoundingClientRect(); return [e.textContent, r.height]; })()""")
        assert empty[0] == "No rows" and empty[1] >= 40, empty
        # Every chip is inside the screen: they share the line, each cut with an ellipsis when it must be.
        overflow = view.page.eval("""[...document.querySelectorAll('#presence .badge')]
            .filter((b) => { const r = b.getBoundingClientRect(); return r.left < 0 || r.right > innerWidth; }).length""")
        assert overflow == 0
        hidden = view.page.eval("""(() => { const box = document.querySelector('#presence').getBoundingClientRect();
            return [...document.querySelectorAll('#presence .badge')]
                .filter((b) => b.getBoundingClientRect().bottom > box.bottom).length; })()""")
        assert hidden == 0, "the chips stay on their one line"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / "page-phone-empty-section-presence.png"
        view.page.screenshot(path)
        print(f"\nscreenshot: {path}")
    finally:
        view.close()
        for other in others:
            other.close()
