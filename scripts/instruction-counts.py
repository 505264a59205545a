#!/usr/bin/env python3
"""Instruction counts of the server's hot paths, under valgrind's callgrind: figures that repeat whatever else the
machine is doing, so that a regression shows in one run.

    swift build -c release --product tablecast --product table-model-bench
    python3 scripts/instruction-counts.py

Each figure is a difference of two runs, so that start-up and set-up cancel out:
- decode-edit, resolve-edit, encode-update: `table-model-bench count PATH N` and `... 2N`, divided by N.
- fan-out: `tablecast serve` under callgrind with 1,000 subscribers (`tablecast load`, run natively beside it, one
  raw writer with one edit in flight until every subscriber has it, so that every update is written on its own);
  the server's instructions for a run of K2 edits minus those of a run of K1, divided by (K2 - K1) × subscribers.
  The counters are zeroed before and dumped after each load run (callgrind_control). Counts are user space only:
  the kernel's part of a send is not in them.

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


def fan_out(tablecast, server_binary, shim, folder, subscribers, small, large):
    """Server instructions per delivery of one update to each of `subscribers` connections."""
    port = free_port()
    dumps = os.path.join(folder, "serve.out")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}", server_binary, "serve", "--port", str(port),
         "--db", os.path.join(folder, "fan-out.sqlite"), "--sync", "normal", "--intents-per-second", "1000000",
         "--max-handshakes-per-address", "100000", "--log-level", "warning"],
        env=dict(ENVIRONMENT, LD_PRELOAD=shim), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server under callgrind did not start")
                time.sleep(0.5)

        def run(edits):
            subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
            load = subprocess.run(
                [tablecast, "load", "--url", f"ws://127.0.0.1:{port}/", "--create", "--subscribers", str(subscribers),
                 "--replicas", "0", "--raw-writers", "--writers", "1", "--in-flight", "1", "--mix", "edit=1",
                 "--window-until", "delivery", "--count", str(edits), "--timeout", "300", "--quiet", "--json"],
                capture_output=True, text=True, timeout=900)
            if load.returncode != 0:
                raise SystemExit(f"tablecast load failed: {load.stderr}")
            delivered = json.loads(load.stdout)["deliveries"]["count"]
            if delivered != edits * subscribers:
                raise SystemExit(f"{delivered} deliveries, expected {edits * subscribers}")
            before = set(os.listdir(folder))
            subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
            (dump,) = [name for name in set(os.listdir(folder)) - before if name.startswith("serve.out")]
            with open(os.path.join(folder, dump)) as file:
                return int(re.search(r"^summary: (\d+)", file.read(), re.M).group(1))

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
    parser.add_argument("--only", help="one path: decode-edit, resolve-edit, encode-update or fan-out")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="instruction-counts-") as folder:
        shim = os.path.join(folder, "sigsuspend.so")
        source = os.path.join(folder, "sigsuspend.c")
        with open(source, "w") as file:
            file.write(SHIM)
        subprocess.run(["clang", "-shared", "-fPIC", "-O2", "-o", shim, source], check=True)
        bench = stripped(os.path.join(arguments.build, "table-model-bench"), folder)
        n = arguments.iterations
        for path in ["decode-edit", "resolve-edit", "encode-update"]:
            if arguments.only in (None, path):
                per = (collected([bench, "count", path, str(2 * n)]) - collected([bench, "count", path, str(n)])) / n
                print(f"{path}: {per:,.0f} instructions", flush=True)
        if arguments.only in (None, "fan-out"):
            small, large = (int(part) for part in arguments.edits.split(","))
            tablecast = os.path.join(arguments.build, "tablecast")
            per = fan_out(tablecast, stripped(tablecast, folder), shim, folder, arguments.subscribers, small, large)
            print(f"fan-out to {arguments.subscribers} connections: {per:,.0f} server instructions per delivery")


if __name__ == "__main__":
    sys.exit(main())
