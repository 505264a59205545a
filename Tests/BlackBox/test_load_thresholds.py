"""`tablecast load --threshold`: pass/fail criteria as k6's. All hold: exit 0; one fails: exit 99, naming it; the
report carries each threshold's value and verdict."""
import json
import subprocess

from conftest import Server, tablecast_binary


def load(server, *thresholds, json_report=True):
    """A small run of edits only (one writer: none is refused), with `thresholds`."""
    arguments = [tablecast_binary(), "load", "--url", server.url, "--create", "--subscribers", "3", "--writers", "1",
                 "--count", "40", "--mix", "edit=1", "--quiet"]
    for threshold in thresholds:
        arguments += ["--threshold", threshold]
    if json_report:
        arguments.append("--json")
    return subprocess.run(arguments, capture_output=True, text=True, timeout=120)


def test_thresholds_that_hold_exit_0_and_one_that_fails_exits_99_naming_it():
    server = Server("--intents-per-second", "100000").start()
    try:
        held = load(server, "delivery.p99<60s", "ack.max <= 60000ms", "errors.rate<1%", "intents.rate>0",
                    "convergence")
        assert held.returncode == 0, held.stderr
        verdicts = json.loads(held.stdout)["thresholds"]
        assert [(v["threshold"], v["ok"]) for v in verdicts] == [
            ("delivery.p99<60s", True), ("ack.max<=60000ms", True), ("errors.rate<1%", True),
            ("intents.rate>0", True), ("convergence", True)]
        report = json.loads(held.stdout)
        assert verdicts[0]["value"] == report["latencyMs"]["intentToDelivery"]["p99"]
        assert verdicts[2]["value"] == 0

        failed = load(server, "delivery.p99<60s", "deliveries.rate>1000000000", "delivery.p50<0ms")
        assert failed.returncode == 99, failed.stderr
        assert "thresholds failed: deliveries.rate>1000000000, delivery.p50<0ms" in failed.stderr
        assert [v["ok"] for v in json.loads(failed.stdout)["thresholds"]] == [True, False, False]

        text = load(server, "intents.rate<0", json_report=False)
        assert text.returncode == 99
        assert "FAILED intents.rate<0" in text.stdout, text.stdout
    finally:
        server.stop()


def test_a_threshold_that_does_not_parse_is_a_usage_error_saying_why():
    for bad, reason in [("bogus<3", "unknown metric 'bogus'"), ("delivery.p99<fast", "'fast' is not a number"),
                        ("delivery.p99", "expected METRIC<VALUE")]:
        run = subprocess.run([tablecast_binary(), "load", "--threshold", bad], capture_output=True, text=True,
                             timeout=30)
        assert run.returncode == 64 and reason in run.stderr, (bad, run.stderr)
