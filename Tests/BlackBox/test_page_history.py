"""The page's History panel in headless chromium against a real server: the list of changes with who and when,
the table at a chosen version (read-only), "Restore as a new table", and the list following live changes.
Screenshots of the panel (phone and desktop) are saved under Tests/BlackBox/artifacts/."""
import json
import time

import pytest

from test_page import ARTIFACTS, View, _non_blank, browser, sections, server  # noqa: F401 (fixtures)


ENTRIES = """[...document.querySelectorAll('#history .history-entry')].map((b) =>
  [b.querySelector('.history-version').textContent, b.querySelector('.history-who').textContent,
   b.querySelector('.history-what').textContent])"""
PAST = "[...document.querySelectorAll('#history .history-view .history-value')].map((v) => v.textContent)"


def edited(server, table):
    """Ana adds Bread, Bob deletes Milk, Ana renames Apples."""
    admin = server.client(name="admin")
    admin.ok({"type": "createTable", "table": table, "sections": sections(["Apples", "Milk"], header="Shop")})
    ana = server.client(name="Ana")
    bob = server.client(name="Bob")
    ana.ok({"type": "insert", "table": table, "at": [0, 2], "value": "Bread"})
    bob.ok({"type": "delete", "table": table, "at": [0, 1]})
    ana.ok({"type": "edit", "table": table, "at": [0, 0], "value": "Green apples"})
    bob.close()
    return admin, ana


def wait_entries(view, expected):
    view.page.wait_for(f"JSON.stringify({ENTRIES}) === {json.dumps(json.dumps(expected, ensure_ascii=False, separators=(',', ':')))}",
                       message=f"the panel shows {view.page.eval(ENTRIES)}")


@pytest.mark.parametrize("size", [(390, 844), (1024, 768)], ids=["phone", "desktop"])
def test_history_panel_lists_changes_shows_a_past_version_and_restores_it(server, browser, table_name, size):
    admin, ana = edited(server, table_name)
    view = View(browser, server, table_name, width=size[0], height=size[1], name="Cat")
    try:
        view.click("document.querySelector('#history-toggle')")
        wait_entries(view, [
            ["v3", "Ana", "changed “Apples” to “Green apples”"],
            ["v2", "Bob", "deleted “Milk”"],
            ["v1", "Ana", "added “Bread”"],
            ["v0", "", "created"],
        ])
        assert view.page.eval("document.querySelector('#scroller').offsetParent === null"), "the panel replaces the list"

        # A change made meanwhile appears at the top of the open list.
        ana.ok({"type": "insert", "table": table_name, "at": [0, 0], "value": "Figs"})
        view.page.wait_for(f"{ENTRIES}[0]?.[2] === 'added “Figs”'", message=f"the panel shows {view.page.eval(ENTRIES)}")

        # Choosing v1 shows the table as it was then, read-only.
        view.click("document.querySelector('#history .history-entry[data-version=\"1\"]')")
        view.page.wait_for(f"JSON.stringify({PAST}) === '[\"Apples\",\"Milk\",\"Bread\"]'",
                           message=f"the past table shows {view.page.eval(PAST)}")
        shown = view.page.eval("document.querySelector('#history .history-view').textContent")
        assert shown.count("version 1") == 1 and "null" not in shown, shown
        assert view.page.eval("document.querySelectorAll('#history .history-view button, #history .history-view input').length") == 2, \
            "the past table has no row controls: only the restore name and button"
        assert view.page.eval("document.querySelector('#history .history-entry[data-version=\"1\"]').getAttribute('aria-pressed')") == "true"

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"history-{size[0]}x{size[1]}.png"
        png = view.page.screenshot(path)
        print(f"\nscreenshot: {path}")
        width, height, colours = _non_blank(png)
        assert (width, height) == size and colours > 20, path

        # Restore as a new table: the page opens it, and the server holds the table as it was at v1.
        restored = f"{table_name}-v1"
        assert view.page.eval("document.querySelector('#history .history-name').value") == restored
        view.click("document.querySelector('#history .history-restore button')")
        view.page.wait_for(f"location.hash === {json.dumps('#/table/' + restored)}")
        view.wait_values([["Apples", "Milk", "Bread"]])
        assert view.page.eval("document.querySelector('#history').hidden"), "the panel closes on another table"
        catch_up, _ = admin.subscribe(restored)
        assert [[r["value"] for r in s["rows"]] for s in catch_up[0]["sections"]] == [["Apples", "Milk", "Bread"]]
        assert catch_up[0]["sections"][0]["header"] == "Shop"
    finally:
        view.close()
        admin.close()
        ana.close()
