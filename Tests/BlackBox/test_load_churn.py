"""`tablecast load --churn`: subscribers leave (with a close frame, without one) and join, and others drop and resume
with `since` while writers write; no update is lost (every replica converges), and the server saw the abrupt
closes and the resumes."""
import json
import subprocess

from conftest import Server, tablecast_binary
from memory import metrics


def test_churn_with_resumes_loses_no_update_and_the_server_saw_the_resumes():
    server = Server("--intents-per-second", "100000").start()
    try:
        before = metrics(server)
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "12", "--writers", "2",
             "--rate", "60", "--duration", "5", "--churn", "6", "--threshold", "resume.p99<10s", "--threshold",
             "convergence", "--json", "--quiet"],
            capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        after = metrics(server)

        assert report["convergence"]["ok"], report["convergence"]
        # The 12 subscribers at the end (the newcomers and the resumed among them) and the writers' shared view.
        assert report["convergence"]["replicasCompared"] == 13
        churned = report["subscribers"]
        # 6 a second for 5 s, in turn: a close frame, none, a drop and resume.
        assert churned["closedClean"] >= 8 and churned["closedAbrupt"] >= 8, churned
        assert churned["resumed"] >= 8, churned
        assert churned["opened"] == 12 + churned["closedClean"] + churned["closedAbrupt"], churned
        assert report["latencyMs"]["resumeToCaughtUp"]["p99"] > 0
        assert [t["ok"] for t in report["thresholds"]] == [True, True]

        def grew(series):
            return after.get(series, 0) - before.get(series, 0)

        # Every resume was answered with the updates missed (the server counts those), none with a snapshot.
        assert churned["resumedBySnapshot"] == 0
        assert grew("tablecast_resumes_total") == churned["resumed"], (grew("tablecast_resumes_total"), churned)
        # Abrupt leaves and resume drops end without a close frame: "abnormal" on the server.
        abnormal = grew('websocket_connections_closed_total{reason="abnormal"}')
        assert abnormal == churned["closedAbrupt"] + churned["resumed"], (abnormal, churned)
    finally:
        server.stop()


def test_the_text_report_says_how_subscribers_came_and_went():
    server = Server("--intents-per-second", "100000").start()
    try:
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "4", "--rate", "20",
             "--duration", "2", "--churn", "3", "--quiet"],
            capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert "left with a close frame" in run.stdout and "dropped and resumed" in run.stdout, run.stdout
        assert "resume → caught up (ms" in run.stdout, run.stdout
        assert "convergence: ok" in run.stdout
    finally:
        server.stop()
