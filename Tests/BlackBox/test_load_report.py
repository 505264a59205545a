"""`tablecast load --report report.html`: one self-contained file that opens in headless chromium with the network
off and shows its charts (throughput, latency percentiles, connections, the server's memory), the thresholds with
their verdicts, the settings and the server's version. A screenshot of the whole page is saved under
Tests/BlackBox/artifacts/, with the picture `--report report.png` draws without a browser."""
import json
import os
import pathlib
import re
import subprocess

import pytest

from cdp import Browser, chromium_binary, png_pixels
from conftest import Server, tablecast_binary

ARTIFACTS = pathlib.Path(os.environ.get("TABLECAST_ARTIFACTS", pathlib.Path(__file__).parent / "artifacts"))

THRESHOLDS = ["delivery.p99<5s", "errors.rate<1%", "convergence", "deliveries.rate>1000000000"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 5-second run with three thresholds that hold and one that cannot: exit 99, and the report is written."""
    folder = tmp_path_factory.mktemp("load-report")
    server = Server("--intents-per-second", "100000").start()
    try:
        arguments = [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "8", "--writers",
                     "2", "--rate", "80", "--duration", "5", "--mix", "edit=1", "--server-pid",
                     str(server.process.pid), "--report", str(folder / "report.html"), "--report",
                     str(folder / "report.png"), "--json", "--quiet"]
        for threshold in THRESHOLDS:
            arguments += ["--threshold", threshold]
        result = subprocess.run(arguments, capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert result.returncode == 99, result.stderr
    return folder / "report.html", json.loads(result.stdout.splitlines()[-1])


def test_the_report_is_one_file_that_names_nothing_to_fetch(run):
    path, _ = run
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>")
    # No script, stylesheet, image or font from anywhere: only the SVG namespace is a URL.
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", html, re.I)
    assert set(re.findall(r"(?:https?|wss?)://[^\s\"'<)]+", html)) <= {"http://www.w3.org/2000/svg"} | {
        u for u in re.findall(r"ws://127\.0\.0\.1:\d+/", html)}
    assert "url(" not in html and "@import" not in html


def test_the_report_opens_without_network_and_shows_its_charts_and_verdicts(run):
    if chromium_binary() is None:
        pytest.fail("chromium is needed for the report test: run .ci/install (Debian's chromium)")
    path, report = run
    version = subprocess.run([tablecast_binary(), "--version"], capture_output=True, text=True).stdout.strip()
    # Any request that leaves the machine would go to a proxy that is not there.
    browser = Browser(extra_args=["--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"])
    try:
        page = browser.new_page(width=1000, height=900, mobile=False)
        page.send("Network.enable")
        page.send("Network.emulateNetworkConditions",
                  {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        page.goto(path.as_uri())
        requests = [params["request"]["url"] for session, method, params in browser.events
                    if session == page.session and method == "Network.requestWillBeSent"]
        assert all(url == path.as_uri() for url in requests), requests
        assert not page.problems(), page.problems()

        charts = page.eval("""[...document.querySelectorAll('svg.chart')].map((svg) => ({
            title: svg.querySelector('text.title').textContent,
            width: svg.getBoundingClientRect().width,
            series: [...svg.querySelectorAll('g.series')].map((g) => ({
                name: g.dataset.name, points: +g.dataset.points, dots: g.querySelectorAll('circle.point').length,
                lines: g.querySelectorAll('polyline').length})),
            ticks: svg.querySelectorAll('text.tick').length,
            labels: [...svg.querySelectorAll('text.label')].map((t) => t.textContent),
            legend: [...svg.querySelectorAll('g.legend text')].map((t) => t.textContent),
            bounds: [...svg.querySelectorAll('text.bound-label')].map((t) => t.textContent)}))""")
        titles = [chart["title"] for chart in charts]
        assert titles == ["Throughput: intents", "Throughput: updates delivered to subscribers",
                          "Latency percentiles, second by second", "Connections", "Server memory (RSS)"], titles
        rows = len(report["series"])
        for chart in charts:
            assert chart["width"] > 600 and chart["ticks"] >= 10, chart
            assert chart["labels"][0] == "time since the start (s)" and chart["labels"][1], chart
            assert chart["legend"] == [s["name"] for s in chart["series"]], chart
        by_title = {chart["title"]: chart for chart in charts}
        # Every second with a value is a dot on its line.
        acked = by_title["Throughput: intents"]["series"][0]
        assert acked["name"] == "acknowledged/s" and acked["points"] == acked["dots"] == rows and acked["lines"] == 1
        latency = {s["name"]: s for s in by_title["Latency percentiles, second by second"]["series"]}
        assert set(latency) == {"ack p50", "ack p99", "delivery p50", "delivery p99"}
        assert all(s["dots"] == s["points"] >= 4 for s in latency.values()), latency
        assert by_title["Connections"]["series"][0]["points"] == rows
        assert by_title["Server memory (RSS)"]["series"][0]["points"] == rows
        # A rate no run reaches is far above the data: its bound is not drawn; a threshold near the data would be.
        assert by_title["Throughput: updates delivered to subscribers"]["bounds"] == []

        verdicts = page.eval("""[...document.querySelectorAll('#thresholds tbody tr')].map((tr) =>
            [...tr.querySelectorAll('td')].map((td) => td.textContent))""")
        assert [(v[0], v[2]) for v in verdicts] == [
            ("delivery.p99<5s", "✔ ok"), ("errors.rate<1%", "✔ ok"), ("convergence", "✔ ok"),
            ("deliveries.rate>1000000000", "✘ FAILED")], verdicts
        assert page.eval("document.querySelector('#verdict').className") == "banner failed"
        assert "1 of 4 threshold(s) failed: deliveries.rate>1000000000" in page.eval(
            "document.querySelector('#verdict').textContent")
        assert page.eval("document.querySelector('#server-version').textContent") == f"tablecast {version}"
        settings = page.eval("""Object.fromEntries([...document.querySelectorAll('#settings tbody tr')].map((tr) =>
            [...tr.querySelectorAll('td')].map((td) => td.textContent)))""")
        assert settings["subscribers"] == "8" and settings["writers"] == "2" and settings["mix"] == "edit=1"

        # The whole page in one screenshot, for a person to look at.
        height = page.eval("Math.ceil(document.documentElement.scrollHeight)")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1000, "height": height, "deviceScaleFactor": 1, "mobile": False})
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "load-report.png"
        png = page.screenshot(shot)
        print(f"\nscreenshot: {shot}")
        width, shot_height, bpp, pixels = png_pixels(png)
        assert (width, shot_height) == (1000, height)
        colours = {pixels[y][x * bpp:x * bpp + 3] for y in range(0, shot_height, 4) for x in range(0, width, 4)}
        assert len(colours) > 20, f"the screenshot looks blank: {shot}"
    finally:
        browser.close()


def test_the_png_report_is_drawn_without_a_browser_with_its_charts_and_verdict(run):
    path, report = run
    png = (path.parent / "report.png").read_bytes()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "load-report-drawn.png").write_bytes(png)
    width, height, bpp, pixels = png_pixels(png)
    assert width == 1000 and height > 1800, (width, height)
    counts = {}
    for row in pixels:
        for x in range(0, width * bpp, bpp):
            colour = row[x:x + 3]
            counts[colour] = counts.get(colour, 0) + 1
    # The lines and dots of each chart in their colours, and the band of a failed run.
    for name, colour in [("acknowledged/s", "1f6fb4"), ("delivered/s", "2e7d32"), ("delivery p99", "e07b00"),
                         ("connections", "7b3fa0"), ("failed verdict", "fdecea"), ("failed threshold", "b71c1c")]:
        assert counts.get(bytes.fromhex(colour), 0) > 200, (name, counts.get(bytes.fromhex(colour), 0))
    assert len(report["series"]) >= 5
