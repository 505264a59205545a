#!/usr/bin/env python3
"""Instruction counts of the hot paths, the server's and the client library's, under valgrind's callgrind: figures
that repeat whatever else the machine is doing, so that a regression shows in one run.

    swift build -c release --product tablecast && swift build -c release --product table-model-bench
    python3 scripts/instruction-counts.py    # one path: --only decode-edit, encode-update-100, fan-out, ...

Each figure is a difference of two runs, so that start-up and set-up cancel out:
- decode-edit, resolve-edit, encode-update, encode-update-100 (the JSON benchmark's 100-entry update):
  `table-model-bench count PATH N` and `... 2N`, divided by N.
- fan-out: `tablecast serve` under callgrind with 1,000 subscribers (`tablecast load`, run natively beside it, one
  raw writer with one edit in flight until every subscriber has it, so that every update is written on its own);
  the server's instructions for a run of K2 edits minus those of a run of K1, divided by (K2 - K1) × subscribers.
  The counters are zeroed before and dumped after each load run (callgrind_control). Counts are user space only:
  the kernel's part of a send is not in them.
- durable: `tablecast serve --sync full` under callgrind, 16 raw writers with 64 edits in flight each on one table
  and no subscriber; the server's instructions for a run of K2 intents minus those of K1, divided by the intents
  acknowledged in between. Every ack follows the fsync of its group; how intents fall into groups (one transaction
  each) varies a little from run to run, and so does this figure (±2 %).
- client: `tablecast load` itself under callgrind against a native `tablecast serve`: 100 library subscribers that
  keep replicas (the default) and one raw writer with one edit in flight until every subscriber has it; the load
  process's instructions for a run of K2 edits minus those of a run of K1 (20 and 120), divided by
  (K2 - K1) × subscribers: what the client library (with the load tool's own counting) spends per received update.
  How the service loop's iterations fall moves it by about ±1 %.

Two things make valgrind 3.19 work on this toolchain's binaries: copies without debug information (it cannot read
the DWARF 5 that Swift 6 writes), and a preloaded `sigsuspend` that passes a writable copy of its mask (valgrind
writes into it, and libdispatch's is in read-only memory: every program with an async main would crash).
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, 8);
}
"""
ENVIRONMENT = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")


def stripped(binary, folder):
    """A copy of `binary` without debug information."""
    copy = os.path.join(folder, os.path.basename(binary))
    subprocess.run(["objcopy", "--strip-debug", binary, copy], check=True)
    return copy


def collected(command, shim=None):
    """Instructions callgrind counted for `command`."""
    environment = dict(ENVIRONMENT, LD_PRELOAD=shim) if shim else ENVIRONMENT
    result = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + command,
                            capture_output=True, text=True, env=environment, check=True)
    return int(re.search(r"Collected : (\d+)", result.stderr).group(1))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(port, process):
    """Whether the server on `port` answers its health check within two minutes (false once `process` ended)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
            return True
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                return False
            time.sleep(0.5)


class ServerUnderCallgrind:
    """`tablecast serve` under callgrind on a free port; `measure` counts its instructions over one load run."""

    def __init__(self, server_binary, shim, folder, name, arguments):
        self.folder, self.port = folder, free_port()
        self.dumps = os.path.join(folder, f"{name}.out")
        self.process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.dumps}", server_binary, "serve", "--port",
             str(self.port), "--db", os.path.join(folder, f"{name}.sqlite"), "--intents-per-second", "1000000",
             "--log-level", "warning"] + arguments,
            env=dict(ENVIRONMENT, LD_PRELOAD=shim), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not answers(self.port, self.process):
            self.stop()
            raise SystemExit("the server under callgrind did not start")

    def measure(self, load):
        """The server's instructions while `load` (a `tablecast load` command without --url) ran, and its report.
        The counters are zeroed before and dumped after (callgrind_control)."""
        subprocess.run(["callgrind_control", "-z", str(self.process.pid)], check=True, capture_output=True)
        run = subprocess.run(load + ["--url", f"ws://127.0.0.1:{self.port}/", "--timeout", "300", "--quiet", "--json"],
                             capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            raise SystemExit(f"tablecast load failed: {run.stderr}")
        before = set(os.listdir(self.folder))
        subprocess.run(["callgrind_control", "-d", str(self.process.pid)], check=True, capture_output=True)
        (dump,) = [name for name in set(os.listdir(self.folder)) - before if name.startswith(os.path.basename(self.dumps))]
        with open(os.path.join(self.folder, dump)) as file:
            return int(re.search(r"^summary: (\d+)", file.read(), re.M).group(1)), json.loads(run.stdout)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)


def fan_out(tablecast, server_binary, shim, folder, subscribers, small, large):
    """Server instructions per delivery of one update to each of `subscribers` connections."""
    server = ServerUnderCallgrind(server_binary, shim, folder, "fan-out", ["--sync", "normal",
                                  "--max-handshakes-per-address", "100000"])
    try:
        def run(edits):
            count, report = server.measure(
                [tablecast, "load", "--create", "--subscribers", str(subscribers), "--replicas", "0", "--raw-writers",
                 "--writers", "1", "--in-flight", "1", "--mix", "edit=1", "--window-until", "delivery", "--count",
                 str(edits)])
            if report["deliveries"]["count"] != edits * subscribers:
                raise SystemExit(f"{report['deliveries']['count']} deliveries, expected {edits * subscribers}")
            return count

        first, second = run(small), run(large)
        return (second - first) / ((large - small) * subscribers)
    finally:
        server.stop()


def durable(tablecast, server_binary, shim, folder, small, large):
    """Server instructions per acknowledged intent with every ack after fsync (`--sync full`): 16 raw writers with
    64 edits in flight each on one table, nobody subscribed."""
    server = ServerUnderCallgrind(server_binary, shim, folder, "durable", ["--sync", "full"])
    try:
        def run(intents):
            count, report = server.measure(
                [tablecast, "load", "--create", "--table", "durable", "--subscribers", "0", "--raw-writers",
                 "--writers", "16", "--in-flight", "64", "--mix", "edit=1", "--count", str(intents)])
            return count, report["intents"]["acked"]

        (first, acked_first), (second, acked_second) = run(small), run(large)
        return (second - first) / (acked_second - acked_first)
    finally:
        server.stop()


def client(tablecast, load_binary, shim, folder, subscribers, small, large):
    """Instructions of `tablecast load` per update received by a library subscriber that keeps a replica."""
    port = free_port()
    server = subprocess.Popen(
        [tablecast, "serve", "--port", str(port), "--db", os.path.join(folder, "client.sqlite"), "--sync", "normal",
         "--intents-per-second", "1000000", "--max-handshakes-per-address", "100000", "--log-level", "warning"],
        env=ENVIRONMENT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not answers(port, server):
            raise SystemExit("the server did not start")

        def run(edits):
            command = [load_binary, "load", "--url", f"ws://127.0.0.1:{port}/", "--create", "--subscribers",
                       str(subscribers), "--raw-writers", "--writers", "1", "--in-flight", "1", "--mix", "edit=1",
                       "--window-until", "delivery", "--count", str(edits), "--timeout", "300", "--quiet", "--json"]
            load = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + command,
                                  capture_output=True, text=True, env=dict(ENVIRONMENT, LD_PRELOAD=shim), timeout=1800)
            if load.returncode != 0:
                raise SystemExit(f"tablecast load failed: {load.stderr[-2000:]}")
            delivered = json.loads(load.stdout)["deliveries"]["count"]
            if delivered != edits * subscribers:
                raise SystemExit(f"{delivered} deliveries, expected {edits * subscribers}")
            return int(re.search(r"Collected : (\d+)", load.stderr).group(1))

        first, second = run(small), run(large)
        return (second - first) / ((large - small) * subscribers)
    finally:
        server.terminate()
        server.wait(timeout=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, ".build", "release"), help="folder of the binaries")
    parser.add_argument("--iterations", type=int, default=2000, help="N of the micro paths")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--edits", default="10,60", help="K1,K2 of the fan-out runs")
    parser.add_argument("--intents", default="1000,6000", help="K1,K2 of the durable runs")
    parser.add_argument("--client-subscribers", type=int, default=100)
    parser.add_argument("--client-edits", default="20,120", help="K1,K2 of the client runs")
    parser.add_argument(
        "--only",
        help="one path: decode-edit, resolve-edit, encode-update, encode-update-100, fan-out, durable or client")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="instruction-counts-") as folder:
        shim = os.path.join(folder, "sigsuspend.so")
        source = os.path.join(folder, "sigsuspend.c")
        with open(source, "w") as file:
            file.write(SHIM)
        subprocess.run(["clang", "-shared", "-fPIC", "-O2", "-o", shim, source], check=True)
        n = arguments.iterations
        for path in ["decode-edit", "resolve-edit", "encode-update", "encode-update-100"]:
            if arguments.only in (None, path):
                bench = stripped(os.path.join(arguments.build, "table-model-bench"), folder)
                per = (collected([bench, "count", path, str(2 * n)]) - collected([bench, "count", path, str(n)])) / n
                print(f"{path}: {per:,.0f} instructions", flush=True)
        if arguments.only in (None, "fan-out"):
            small, large = (int(part) for part in arguments.edits.split(","))
            tablecast = os.path.join(arguments.build, "tablecast")
            per = fan_out(tablecast, stripped(tablecast, folder), shim, folder, arguments.subscribers, small, large)
            print(f"fan-out to {arguments.subscribers} connections: {per:,.0f} server instructions per delivery")
        if arguments.only in (None, "durable"):
            small, large = (int(part) for part in arguments.intents.split(","))
            tablecast = os.path.join(arguments.build, "tablecast")
            per = durable(tablecast, stripped(tablecast, folder), shim, folder, small, large)
            print(f"durable intents: {per:,.0f} server instructions per acknowledged intent", flush=True)
        if arguments.only in (None, "client"):
            small, large = (int(part) for part in arguments.client_edits.split(","))
            tablecast = os.path.join(arguments.build, "tablecast")
            load = stripped(tablecast, folder)
            per = client(tablecast, load, shim, folder, arguments.client_subscribers, small, large)
            print(f"client, {arguments.client_subscribers} subscribers keeping replicas: {per:,.0f} instructions of "
                  "`tablecast load` per received update")


if __name__ == "__main__":
    sys.exit(main())
