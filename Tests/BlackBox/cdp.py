"""A small Chrome DevTools Protocol client: starts Debian's headless chromium and drives pages over one
WebSocket with flattened target sessions. Only what the browser tests need: navigate, evaluate, wait,
dispatch real input events (mouse and touch go through the browser's input pipeline, so the page sees
genuine pointer events) and take screenshots.
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

from websockets.sync.client import connect


def chromium_binary():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class CDPError(Exception):
    pass


class Browser:
    """One headless chromium process with its DevTools endpoint."""

    def __init__(self, extra_args=()):
        binary = chromium_binary()
        if binary is None:
            raise CDPError("no chromium on PATH (.ci/install installs Debian's chromium)")
        self.profile = tempfile.mkdtemp(prefix="tablecast-chromium-")
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", *extra_args, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.time() + 30
        lines = []
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                if self.process.poll() is not None:
                    break
                continue
            lines.append(line)
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            self.close()
            raise CDPError("chromium did not start: " + "".join(lines[-20:]))
        # Keep draining stderr so chromium never blocks on a full pipe.
        import threading
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        # The sync client is a context manager; entering it by hand keeps the one connection open.
        self._connection = connect(url, max_size=None, open_timeout=10)
        self.ws = self._connection.__enter__()
        self.next_id = 0
        self.events = []  # (sessionId, method, params) not yet looked at

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message_id = self.next_id
        message = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.time() + timeout
        while True:
            remaining = deadline - time.time()
            if remaining <= 0:
                raise CDPError(f"no answer to {method} within {timeout}s")
            reply = json.loads(self.ws.recv(timeout=remaining))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def new_page(self, width=390, height=844, mobile=True, scale=1):
        """A page in its own browser context (own storage, like a separate person), sized like a phone."""
        context = self.send("Target.createBrowserContext")["browserContextId"]
        target = self.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})
        page.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        return page

    def close(self):
        try:
            if getattr(self, "ws", None):
                try:
                    self.send("Browser.close", timeout=5)
                except Exception:
                    pass
                self._connection.__exit__(None, None, None)
        finally:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session, target):
        self.browser = browser
        self.session = session
        self.target = target

    def send(self, method, params=None, timeout=30):
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def problems(self):
        """Uncaught exceptions and console errors the page reported so far."""
        found = []
        for session, method, params in self.browser.events:
            if session != self.session:
                continue
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        return found

    def goto(self, url):
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def eval(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CDPError(f"{expression!r} threw: {details.get('exception', {}).get('description') or details}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout=10, message=None):
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = self.eval(expression)
            if last:
                return last
            time.sleep(0.05)
        raise AssertionError(message or f"timed out after {timeout}s waiting for {expression} (last: {last!r})")

    def center(self, selector):
        """The centre of an element, in CSS pixels of the viewport (scrolled into view first)."""
        box = self.eval(f"""(() => {{
            const e = document.querySelector({json.dumps(selector)});
            if (!e) return null;
            e.scrollIntoView({{block: 'center'}});
            const r = e.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2];
        }})()""")
        assert box, f"no element {selector}"
        return box

    def mouse(self, kind, x, y, buttons=1):
        params = {"type": kind, "x": x, "y": y, "button": "left" if kind != "mouseMoved" or buttons else "none",
                  "buttons": buttons, "clickCount": 1 if kind in ("mousePressed", "mouseReleased") else 0,
                  "pointerType": "mouse"}
        self.send("Input.dispatchMouseEvent", params)

    def mouse_drag(self, start, end, steps=12):
        """Press at start, move in steps, release at end: the page sees pointerdown/move/up of a mouse."""
        x0, y0 = start
        x1, y1 = end
        self.mouse("mouseMoved", x0, y0, buttons=0)
        self.mouse("mousePressed", x0, y0)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)
            time.sleep(0.01)
        self.mouse("mouseReleased", x1, y1, buttons=0)

    def touch_drag(self, start, end, steps=12):
        """A one-finger touch from start to end: the page sees pointer events of type touch (and touch events)."""
        x0, y0 = start
        x1, y1 = end
        self.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
        for i in range(1, steps + 1):
            point = {"x": x0 + (x1 - x0) * i / steps, "y": y0 + (y1 - y0) * i / steps}
            self.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
            time.sleep(0.01)
        self.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    def click(self, selector):
        x, y = self.center(selector)
        self.mouse("mouseMoved", x, y, buttons=0)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y, buttons=0)

    def key(self, key, code=None, text=None, modifiers=0):
        """A key press through the browser's input pipeline (keydown, char, keyup)."""
        codes = {"Enter": 13, "Escape": 27, "Delete": 46, "Backspace": 8, "ArrowUp": 38, "ArrowDown": 40, "Tab": 9,
                 " ": 32}
        base = {"key": key, "code": code or key, "modifiers": modifiers,
                "windowsVirtualKeyCode": codes.get(key, ord(key.upper()[0]))}
        self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **base})
        if text:
            self.send("Input.dispatchKeyEvent", {"type": "char", "text": text, **base})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def type_text(self, text):
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path):
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes): (width, height, rows of bytes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows
