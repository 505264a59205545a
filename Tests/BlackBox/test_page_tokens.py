"""The page on a server that takes signed tokens (JWT), in headless chromium: refused without a token, live once a
valid one is typed into its settings (the refusal's banner then goes), and showing the token's name in presence,
not the one the page was opened with."""
import time

import jwt

from conftest import ROOT, Server
from test_page import browser  # noqa: F401 (a fixture)

SECRET = "page-test-secret-page-test-secret-page-test"


def token(sub, name=None, tables=None):
    claims = {"sub": sub, "exp": int(time.time()) + 600, "tablecast": {"tables": tables or {"*": "admin"}}}
    if name:
        claims["name"] = name
    return jwt.encode(claims, SECRET, algorithm="HS256")


def test_a_typed_token_brings_the_page_live_clears_the_refusal_and_shows_the_verified_name(browser, tmp_path,
                                                                                        table_name):
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    server = Server("--static-dir", str(ROOT / "web-client-protocol" / "client"), "--jwt-secret-file",
                    str(secret)).start()
    page = None
    try:
        admin = server.client(token=token("ops"))
        admin.ok({"type": "createTable", "table": table_name, "sections": [{"rows": [{"value": "a"}]}]})
        page = browser.new_page(1024, 768, mobile=False)
        page.goto(f"http://127.0.0.1:{server.port}/?name=Claimed#/")
        page.wait_for("[...document.querySelectorAll('.banner-code')].some((c) => c.textContent === 'unauthorized')",
                      message="no refusal was shown")
        assert page.eval("document.querySelector('#conn').dataset.state") == "closed"
        # Typed into the settings, as a person pastes the token their app gave them.
        page.eval("document.querySelector('#my-token').focus(); true")
        page.type_text(token("ana", name="Ana Verified"))
        page.eval("document.querySelector('#my-token').blur(); true")
        page.wait_for("document.querySelector('#conn').dataset.state === 'live'", timeout=15)
        page.wait_for("document.querySelectorAll('.banner-code').length === 0", message="the refusal stayed")
        page.wait_for(f"document.querySelector('#tables')?.textContent.includes('{table_name}')",
                      message="the tables were not listed once live")
        page.eval(f"location.hash = '#/table/{table_name}'; true")
        page.wait_for("document.querySelector('#presence')?.textContent.includes('Ana Verified (you)')",
                      message="presence does not show the token's name")
        assert "Claimed" not in page.eval("document.querySelector('#presence').textContent")
        admin.close()
    finally:
        if page:
            page.close()
        server.stop()
