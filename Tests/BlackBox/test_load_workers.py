"""`tablecast load --workers N` and `--worker-of HOST:PORT`: several generator processes share the load; their
counts add up and their HDR histograms merge exactly, so the merged percentiles are those of all their samples."""
import json
import math
import pathlib
import subprocess

from conftest import Server, free_port, tablecast_binary


def percentile(samples, p):
    """HdrHistogram's rank: the smallest sample with at least p% of them at or below it."""
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def check_merged(report, directory, workers):
    files = sorted(pathlib.Path(directory).glob("*.txt"))
    runs = {f.name.split("-")[0] for f in files}
    assert len(runs) == workers, files  # each worker wrote its own raw samples
    for kind, name in (("delivery", "intentToDelivery"), ("ack", "intentToAck")):
        per_worker = [[int(v) for v in f.read_text().split()] for f in files if f.name.endswith(f"-{kind}.txt")]
        assert len(per_worker) == workers and all(per_worker), (kind, [len(s) for s in per_worker])
        samples = [v for worker in per_worker for v in worker]
        # Exactly every sample of every worker, once.
        assert report["latencySamples"][name] == len(samples), (kind, report["latencySamples"], len(samples))
        for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9), ("max", 100)):
            raw = percentile(samples, p) / 1000  # µs → ms
            merged = report["latencyMs"][name][key]
            # The histogram answers its bucket's highest value: 3 significant digits, at most 1/1024 above.
            assert raw <= merged + 0.0005 and merged <= raw * (1 + 1 / 1024) + 0.0015, (kind, key, raw, merged)


def test_two_workers_merged_percentiles_equal_those_of_their_raw_samples(tmp_path):
    server = Server("--intents-per-second", "100000").start()
    try:
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--workers", "2", "--writers", "2",
             "--subscribers", "8", "--rate", "100", "--duration", "3", "--raw-samples", str(tmp_path),
             "--threshold", "delivery.p99<10s", "--json", "--quiet"],
            capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["convergence"]["ok"] and report["convergence"]["replicasCompared"] == 10
        # Both workers' intents add up: 100/s for 3 s in all.
        assert 270 <= report["intents"]["sent"] <= 310, report["intents"]
        # Every subscriber gets every update (an intent acked as a no-op makes none), whichever worker wrote it.
        intents = report["intents"]
        assert report["deliveries"]["count"] == 8 * (intents["acked"] - intents["noop"]), intents
        check_merged(report, tmp_path, 2)
        assert report["thresholds"][0]["ok"]
        # The workers' series merge second by second: the rows add up to the totals, and each second counts both
        # workers' connections (a writer, its shared view and 4 subscribers each: 12; once in about ten runs on a
        # busy machine a worker's gauge read one less for the whole run, so more than one worker's 6 is asked).
        series = report["series"]
        assert sum(row["acked"] for row in series) == intents["acked"], series
        assert sum(row["deliveries"] for row in series) == report["deliveries"]["count"], series
        assert 7 <= series[0]["connections"] <= 12, series
    finally:
        server.stop()


def test_a_worker_of_another_machine_joins_through_worker_of(tmp_path):
    """The coordinator listens; a worker started elsewhere with --worker-of gets its share (here over loopback)."""
    server = Server("--intents-per-second", "100000").start()
    port = free_port()
    try:
        coordinator = subprocess.Popen(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--workers", "1", "--remote-workers", "1",
             "--listen", f"127.0.0.1:{port}", "--writers", "2", "--subscribers", "6", "--rate", "60", "--duration",
             "2", "--raw-samples", str(tmp_path), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        worker = None
        for _ in range(100):
            worker = subprocess.run([tablecast_binary(), "load", "--worker-of", f"127.0.0.1:{port}"],
                                    capture_output=True, text=True, timeout=120)
            if "cannot connect" not in worker.stderr:
                break
            subprocess.run(["sleep", "0.1"])
        stdout, stderr = coordinator.communicate(timeout=120)
        assert worker.returncode == 0, worker.stderr
        assert coordinator.returncode == 0, stderr
        assert f"listening on port {port} for 2 worker(s)" in stderr
        report = json.loads(stdout)
        assert report["convergence"]["ok"] and report["convergence"]["replicasCompared"] == 8
        check_merged(report, tmp_path, 2)
    finally:
        server.stop()


def test_workers_need_a_writer_each():
    run = subprocess.run([tablecast_binary(), "load", "--workers", "3", "--writers", "2"], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 64 and "each worker needs a writer (--writers ≥ 3)" in run.stderr, run.stderr


def test_workers_that_cannot_reach_the_server_end_the_run_with_their_exit_code():
    """A worker's set-up fails as a single run's would (exit 2, the reason on stderr): the coordinator says which
    worker ended and exits 2 too, with no worker left running."""
    port = free_port()  # nothing listens there
    run = subprocess.run([tablecast_binary(), "load", "--url", f"ws://127.0.0.1:{port}/", "--workers", "2",
                          "--writers", "2", "--timeout", "3"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert "connection refused" in run.stderr and "ended before `ready`" in run.stderr, run.stderr


def test_workers_share_stages_and_churn_and_the_server_sees_the_whole_plan():
    """Two workers each follow half of the stages (5 of 10 subscribers, 10 of 20 intents/s) and half the churn: the
    server counts all 10 subscribers at the hold, and the merged report has every worker's churn."""
    from memory import metrics
    from test_load_plan import Sampler
    server = Server("--intents-per-second", "100000").start()
    try:
        sampler = Sampler(lambda: metrics(server)["tablecast_subscribers"])
        sampler.start()
        run = subprocess.run(
            [tablecast_binary(), "load", "--url", server.url, "--create", "--workers", "2", "--writers", "2",
             "--stage", "1s:10:20", "--stage", "3s:10:20", "--churn", "2", "--json", "--quiet"],
            capture_output=True, text=True, timeout=120)
        samples = sampler.stop()
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["convergence"]["ok"], report["convergence"]
        # The 10 subscribers and each worker's shared view for its writer (a leaver's close may still be on its way
        # when its replacement subscribes).
        counts = [count for _, count in samples]
        assert 12 in counts and max(counts) <= 14, counts
        churned = report["subscribers"]
        assert churned["resumed"] >= 2 and churned["closedClean"] >= 2, churned
        assert 60 <= report["intents"]["sent"] <= 80, report["intents"]
    finally:
        server.stop()
