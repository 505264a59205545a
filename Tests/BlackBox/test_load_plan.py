"""`tablecast load --stage`: subscribers and intents/s ramp as the stages say, seen from the server's /metrics; and
`--source-addresses`: subscribers connect from several loopback addresses, seen in the kernel's socket table."""
import json
import os
import subprocess
import threading
import time

from conftest import Server, tablecast_binary
from memory import metrics


def load(*arguments, timeout=90):
    return subprocess.Popen([tablecast_binary(), "load", *arguments], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


class Sampler(threading.Thread):
    """Samples `read()` every 50 ms with its time until stopped."""

    def __init__(self, read):
        super().__init__(daemon=True)
        self.read = read
        self.samples = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            self.samples.append((time.monotonic(), self.read()))
            time.sleep(0.05)

    def stop(self):
        self.stopping.set()
        self.join()
        return self.samples


def test_plan_only_prints_the_ramps_each_second():
    """Each stage ramps linearly from where the one before ended (the first from 0 and 0); 500ms and 2m parse."""
    run = subprocess.run([tablecast_binary(), "load", "--stage", "2s:10:5", "--stage", "1500ms:10:5",
                          "--stage", "500ms:0:0", "--stage", "2m:60:120", "--plan-only"],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    rows = [line.split(",") for line in run.stdout.splitlines()]
    assert rows[0] == ["t", "subscribers", "rate"]
    assert rows[1:6] == [["0.000", "0", "0.000"], ["1.000", "5", "2.500"], ["2.000", "10", "5.000"],
                         ["3.000", "10", "5.000"], ["4.000", "0", "0.000"]]
    # Two minutes from 0 to 60 subscribers and 120 intents/s: one subscriber and two intents/s more every 2 s.
    assert rows[1 + 34] == ["34.000", "15", "30.000"]
    assert rows[-1] == ["124.000", "60", "120.000"]


def test_stage_usage_errors_name_the_problem():
    for arguments, reason in [
        (["--stage", "10s:20"], "expected DURATION:SUBSCRIBERS:RATE"),
        (["--stage", "10:20:5"], "the duration '10' is not a positive number with ms, s, m or h"),
        (["--stage", "10s:-1:5"], "subscribers '-1' is not a count"),
        (["--stage", "10s:20:5", "--rate", "5"], "--stage replaces --duration, --subscribers, --rate and --count"),
        (["--stage", "10s:20:5", "--raw-writers", "--mix", "edit=1"], "not with --raw-writers"),
        (["--url", "ws://10.1.2.3:8080/", "--source-addresses", "4"], "is not on loopback"),
        (["--source-addresses", "many"], "give a count (1–65000) or auto"),
    ]:
        run = subprocess.run([tablecast_binary(), "load", *arguments], capture_output=True, text=True, timeout=30)
        assert run.returncode == 64 and reason in run.stderr, (arguments, run.stderr)


def test_a_stage_plan_reaches_its_subscriber_counts_on_the_server():
    """Ramp to 20 subscribers in 2 s, hold 2 s, ramp down to 6 in 1 s and hold: the server's tablecast_subscribers
    (plus the writers' one shared view) follows, within a tolerance of the timing."""
    server = Server("--intents-per-second", "100000").start()
    try:
        sampler = Sampler(lambda: metrics(server)["tablecast_subscribers"])
        sampler.start()
        run = load("--url", server.url, "--create", "--stage", "2s:20:20", "--stage", "2s:20:20", "--stage",
                   "1s:6:20", "--stage", "2s:6:20", "--json", "--quiet")
        stdout, stderr = run.communicate(timeout=90)
        samples = sampler.stop()
        assert run.returncode == 0, stderr
        report = json.loads(stdout)
        assert report["convergence"]["ok"], report["convergence"]
        assert report["subscribers"]["opened"] == 20 and report["subscribers"]["failed"] == 0
        assert report["subscribers"]["closedClean"] == 14
        assert report["settings"]["stages"] == ["2s:20:20", "2s:20:20", "1s:6:20", "2s:6:20"]

        counts = [count - 1 for _, count in samples]  # the writers' shared view subscribes too
        assert max(counts) == 20, counts
        start = next(t for t, count in samples if count > 1)
        full = next(t for t, count in samples if count - 1 == 20)
        # The ramp up takes its 2 s (the first subscriber joins at 1/20 of it).
        assert 1.2 <= full - start <= 3.0, (full - start, counts)
        held = [count - 1 for t, count in samples if full + 0.3 <= t <= full + 1.5]
        assert held and all(count == 20 for count in held), counts
        # Then down to 6, held until the run ends.
        low = next(t for t, count in samples if t > full and count - 1 == 6)
        assert 2.0 <= low - full <= 4.0, (low - full, counts)
        later = [count - 1 for t, count in samples if low + 0.2 <= t <= low + 1.5]
        assert later and all(count == 6 for count in later), counts
        # Intents followed the rate: 20/s ramping from 0 over 2 s, then 20/s for 5 s: about 120.
        assert 90 <= report["intents"]["sent"] <= 130, report["intents"]
    finally:
        server.stop()


def peer_addresses(port):
    """Remote IPv4 addresses of the established TCP connections to local `port` (/proc/net/tcp and tcp6)."""
    peers = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote, state = fields[1], fields[2], fields[3]
                if state != "01" or int(local.split(":")[1], 16) != port:
                    continue
                address = remote.split(":")[0]
                ipv4 = address[-8:]  # an IPv4-mapped IPv6 address ends with the IPv4 one
                octets = [int(ipv4[i:i + 2], 16) for i in range(0, 8, 2)][::-1]
                peers.append(".".join(map(str, octets)))
    return peers


def test_source_addresses_spread_subscribers_over_loopback_addresses():
    server = Server("--intents-per-second", "100000").start()
    try:
        sampler = Sampler(lambda: peer_addresses(server.port))
        sampler.start()
        run = load("--url", server.url, "--create", "--stage", "500ms:9:5", "--stage", "2s:9:5",
                   "--source-addresses", "3", "--json", "--quiet")
        stdout, stderr = run.communicate(timeout=90)
        samples = sampler.stop()
        assert run.returncode == 0, stderr
        assert json.loads(stdout)["settings"]["sourceAddresses"] == 3
        most = max((peers for _, peers in samples), key=len)
        # 9 subscribers from 127.0.0.1-3, three each; the writer, its view and the tool's admin from 127.0.0.1.
        by_address = {address: most.count(address) for address in set(most)}
        assert by_address.get("127.0.0.2") == 3 and by_address.get("127.0.0.3") == 3, by_address
        assert by_address.get("127.0.0.1", 0) >= 3, by_address
    finally:
        server.stop()


def test_the_readme_examples_of_stages_and_churn_run_and_converge():
    from test_readme import block
    server = Server("--intents-per-second", "100000").start()
    try:
        env = {**os.environ, "TABLECAST_URL": server.url,
               "PATH": os.path.dirname(tablecast_binary()) + os.pathsep + os.environ["PATH"]}
        commands = [line for line in block("#### Stages, churn and source addresses", "sh").splitlines()
                    if line and not line.startswith("#")]
        commands += [line for line in block("`--workers N` runs the load", "sh").splitlines() if line]
        assert len(commands) == 3
        for command in commands:
            run = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
            assert run.returncode == 0, (command, run.stderr)
            assert "convergence: ok" in run.stdout, (command, run.stdout)
    finally:
        server.stop()
