"""Rows with fields on the page (issue 24): an item `{"title", "done", "note"}` shows its title, a checkbox for
`done` (struck through when ticked) and its note as a subtitle; ticking sends a patch of `done` alone, so another
person's change of another field stays, also through an undo; editing the row's text edits its title."""
import json
import time

from test_page import ARTIFACTS, View, browser, server, server_values  # noqa: F401 (fixtures)

CHECKED = "__t.row({}).querySelector('.done-box').checked"
STRUCK = "getComputedStyle(__t.row({}).querySelector('.value')).textDecorationLine === 'line-through'"


def test_a_tick_in_one_page_shows_in_another_and_undo_keeps_others_changes(server, browser, table_name):  # noqa: F811
    admin = server.client(name="admin")
    admin.ok({"type": "createTable", "table": table_name, "sections": [{"header": "Groceries", "footer": None, "rows": [
        {"value": {"title": "Yogurt", "done": False, "qty": 1}},
        {"value": {"title": "Milk", "done": False, "note": "oat, 1 litre"}},
        {"value": "Bread"},
    ]}]})
    a = View(browser, server, table_name, name="Ana")
    b = View(browser, server, table_name, name="Bo")
    yogurt = json.dumps("Yogurt")
    try:
        # Titles, not JSON; the note as a subtitle; a checkbox only where `done` is a boolean.
        assert a.page.eval("[...document.querySelectorAll('.value .title, .row .value:not(:has(.title))')]"
                           ".map((v) => v.textContent)") == ["Yogurt", "Milk", "Bread"]
        assert a.page.eval("document.querySelector('.note').textContent") == "oat, 1 litre"
        assert a.page.eval("document.querySelectorAll('.done-box').length") == 2
        assert a.page.eval(CHECKED.format(yogurt)) is False

        # Ana ticks Yogurt: Bo's page shows it ticked and struck through.
        a.click(f"__t.row({yogurt}).querySelector('.done-box')")
        b.page.wait_for(CHECKED.format(yogurt), message="the other page shows the tick")
        b.page.wait_for(STRUCK.format(yogurt), message="a done item is struck through")
        assert b.page.eval(f"__t.row({yogurt}).getAttribute('aria-label')") == "Yogurt, done"
        # Meanwhile someone changes the quantity: both changes stay.
        admin.ok({"type": "patch", "table": table_name, "at": [0, 0], "patch": {"qty": 4}})
        assert server_values(admin, table_name)[0][0] == {"title": "Yogurt", "done": True, "qty": 4}
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        b.page.screenshot(ARTIFACTS / "page-checklist.png")

        # Ana undoes her tick (Ctrl-Z): unticked everywhere, and the quantity set since stays.
        a.page.eval("document.activeElement?.blur()")
        a.page.key("z", code="KeyZ", modifiers=2)
        b.page.wait_for(f"!{CHECKED.format(yogurt)}", message="the undo reaches the other page")
        deadline = time.time() + 5
        while server_values(admin, table_name)[0][0].get("done") is not False and time.time() < deadline:
            time.sleep(0.1)
        assert server_values(admin, table_name)[0][0] == {"title": "Yogurt", "done": False, "qty": 4}

        # Bo edits the item's text, which is its title: a patch of the title alone.
        b.click(f"__t.row({yogurt}).querySelector('.value')")
        b.page.wait_for("document.activeElement?.dataset.inline === 'row'")
        assert b.page.eval("document.activeElement.value") == "Yogurt"
        b.page.type_text("Skyr")
        b.page.key("Enter", text="\r")
        a.page.wait_for("__t.row('Skyr') !== undefined", message="the new title reaches the other page")
        assert server_values(admin, table_name)[0] == [
            {"title": "Skyr", "done": False, "qty": 4}, {"title": "Milk", "done": False, "note": "oat, 1 litre"}, "Bread"]
    finally:
        a.close()
        b.close()
        admin.close()
