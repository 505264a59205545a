#!/usr/bin/env python3
"""Coverage-guided fuzzing (libFuzzer, with AddressSanitizer) of what a client sends the server: the WebSocket frame
parser, one client message through the decoder and the table engine, programs of intents through the engine and
through clients that predict them, and an HTTP API request as the gateway makes it a message.

    python3 scripts/fuzz.py                       # each target for 60 s
    python3 scripts/fuzz.py --seconds 600 --only messages

The targets are scripts/fuzz/*.swift, built with `swiftc -sanitize=fuzzer,address` straight from the sources they
test (SwiftPM cannot build a libFuzzer target beside the package's own executables), into .build/fuzz/. Each starts
from seeds written here (frames of every kind; every client message of web-client-protocol/examples/, as itself
and as an HTTP API body; a request of every route; random choices for the engine's programs) and keeps what it
finds in .build/fuzz/TARGET/corpus, so later runs go on from there. A failing input is saved as
.build/fuzz/TARGET/crash-*; rerun it with `.build/fuzz/TARGET/fuzz-TARGET FILE`. Exits 1 if a target failed.
"""
import argparse
import functools
import glob
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "Sources")
FUZZ = os.path.join(ROOT, "scripts", "fuzz")
CHECKS = os.path.join(FUZZ, "checks.swift")
OUT = os.path.join(ROOT, ".build", "fuzz")
FLAGS = ["-O", "-sanitize=fuzzer,address", "-parse-as-library", "-swift-version", "6",
         "-enable-upcoming-feature", "ExistentialAny", "-package-name", "tablecast"]


def swift_files(*directories):
    return sorted(path for directory in directories
                  for path in glob.glob(os.path.join(SOURCES, directory, "**", "*.swift"), recursive=True))


def swiftc(arguments):
    result = subprocess.run(["swiftc", *FLAGS, *arguments], capture_output=True, text=True)
    # ld.gold warns about every sanitizer symbol it cannot export: noise, not a problem.
    errors = [line for line in (result.stdout + result.stderr).splitlines() if "ld.gold: warning" not in line]
    if result.returncode != 0:
        sys.exit("swiftc failed:\n" + "\n".join(errors))


def build_frames(directory):
    transport = os.path.join(SOURCES, "WebSocketTransport")
    executable = os.path.join(directory, "fuzz-frames")
    swiftc(["-module-name", "FrameFuzz", os.path.join(FUZZ, "frames.swift"), CHECKS,
            os.path.join(transport, "Service", "FrameParser.swift"),
            os.path.join(transport, "Service", "UTF8Validation.swift"),
            os.path.join(transport, "Messages", "WebSocketCloseCode.swift"), "-o", executable])
    return executable


@functools.cache
def build_modules():
    """TableModel and TablecastProtocol as instrumented static libraries (once per run); their folder."""
    modules = os.path.join(OUT, "modules")
    os.makedirs(modules, exist_ok=True)
    for module in ["TableModel", "TablecastProtocol"]:
        swiftc(["-I", modules, "-module-name", module, "-emit-module", "-emit-module-path",
                os.path.join(modules, module + ".swiftmodule"), "-emit-library", "-static", "-o",
                os.path.join(modules, "lib" + module + ".a"), *swift_files(module)])
    return modules


def build_on_modules(name, directory, sources=()):
    """Target `name` (scripts/fuzz/NAME.swift, `-` read as `_`), which imports TableModel and TablecastProtocol,
    compiled with `sources` beside it."""
    modules = build_modules()
    harness = os.path.join(FUZZ, name.replace("-", "_") + ".swift")
    executable = os.path.join(directory, "fuzz-" + name)
    swiftc(["-I", modules, "-module-name", "Fuzz", harness, CHECKS, *sources, "-L", modules, "-lTablecastProtocol",
            "-lTableModel", "-lm", "-o", executable])
    return executable


def build_messages(directory):
    return build_on_modules("messages", directory)


def build_engine(directory):
    tests = os.path.join(ROOT, "Tests", "TableModelTests")
    return build_on_modules("engine", directory, [os.path.join(tests, name)
                                                  for name in ["RandomTables.swift", "OptimisticHarness.swift"]])


def build_http_api(directory):
    api = os.path.join(SOURCES, "TablecastServer", "HTTPAPI")
    files = ["APIRoute.swift", "APIRequest.swift", "EventStreamFraming.swift"]
    return build_on_modules("http-api", directory, [os.path.join(api, name) for name in files])


def frame(opcode, payload, rng, fin=True, mask=True):
    header = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if mask else 0
    if len(payload) < 126:
        header += bytes([bit | len(payload)])
    elif len(payload) < 65536:
        header += bytes([bit | 126]) + struct.pack(">H", len(payload))
    else:
        header += bytes([bit | 127]) + struct.pack(">Q", len(payload))
    if not mask:
        return header + payload
    key = bytes(rng.randrange(256) for _ in range(4))
    return header + key + bytes(byte ^ key[index % 4] for index, byte in enumerate(payload))


def frame_seeds():
    """The first byte: bit 0 masked, bit 1 skipping data, the rest the read size (see frames.swift)."""
    rng = random.Random(25)
    seeds = []
    for mask in (True, False):
        role = 1 if mask else 0

        def make(opcode, payload, fin=True):
            return frame(opcode, payload, rng, fin=fin, mask=mask)

        seeds += [
            bytes([role]) + make(1, b'{"type":"hello","client":"c"}'),
            bytes([role | 4]) + make(1, b"ab", fin=False) + make(9, b"p") + make(0, b"cd"),
            bytes([role | 2]) + make(2, b"x" * 300) + make(8, b"\x03\xe8bye"),
            bytes([role | 8]) + make(1, b"y" * 70000)[:40],
            bytes([role]) + make(10, b"") + make(1, b"z" * 200),
        ]
    return seeds


def engine_seeds():
    """Random choices (see engine.swift), short and long: a first byte of 0 is the engine's program, 1 the
    clients'."""
    rng = random.Random(25)
    return [bytes([kind]) + bytes(rng.randrange(256) for _ in range(length))
            for kind in (0, 1) for length in (16, 64, 256, 1000)]


def message_seeds():
    seeds = []
    for path in sorted(glob.glob(os.path.join(ROOT, "web-client-protocol", "examples", "*.jsonl"))):
        with open(path) as lines:
            seeds += [match.group(1).encode() for line in lines if (match := re.match(r"^\w+> (\{.*\})$", line))]
    return seeds


def http_api_seeds():
    """A method's index in http_api.swift's list, then path, query, Idempotency-Key, Last-Event-ID and body."""
    get, post, delete, patch = 0, 2, 3, 4

    def request(method, path, query="", key="", last_event_id="", body=b""):
        return bytes([method]) + "\n".join([path, query, key, last_event_id]).encode() + b"\n" + body

    seeds = [
        request(post, "/v1/tables", body=b'{"table":"t","sections":[{"rows":[{"value":1}]}]}'),
        request(get, "/v1/tables"),
        request(get, "/v1/tables/t"),
        request(delete, "/v1/tables/a%20b"),
        request(patch, "/v1/tables/t/rules", body=b'{"moves":"none"}'),
        request(get, "/v1/tables/t/history", "from=1&limit=5&order=newest"),
        request(get, "/v1/tables/t/snapshot", "version=3"),
        request(get, "/v1/tables/t/events", last_event_id="0a1b:5"),
        request(get, "/v1/schema/ack.json"),
    ]
    # The examples' messages as bodies, as a backend sends them: without `ref`, with their own table or none.
    for message in map(json.loads, message_seeds()):
        message.pop("ref", None)
        seeds.append(request(post, "/v1/tables/t/intents", key="k-1", body=json.dumps(message).encode()))
        message.pop("table", None)
        seeds.append(request(post, "/v1/tables/t/intents", body=json.dumps(message).encode()))
    return seeds


# Tokens of the protocol, so that mutations make messages the decoder reads further into.
MESSAGE_DICTIONARY = [
    "{", "}", "[", "]", ":", ",", "null", "true", "false", "-0", "1e400", "9007199254740993", "\\u0000", "\\ud800",
    *(f'"{word}"' for word in [
        "type", "insert", "delete", "move", "edit", "batch", "patch", "insertSection", "deleteSection", "moveSection",
        "editSection", "table", "base", "at", "from", "to", "row", "value", "ref", "rows", "section", "header",
        "footer", "deleteRows", "insertRows", "moveRows", "reloadRows", "patchRows", "deleteSections",
        "insertSections", "moveSections", "reloadSections", "movable", "editingStyle"]),
]

HTTP_DICTIONARY = [*MESSAGE_DICTIONARY, "/v1/", "tables", "/intents", "/rules", "/history", "/snapshot", "/events",
                   "/v1/schema/", "openapi.yaml", "%2F", "%25", "from=", "limit=", "order=", "version=", "&"]

TARGETS = {
    "frames": (build_frames, frame_seeds, [], 8192),
    "messages": (build_messages, message_seeds, MESSAGE_DICTIONARY, 4096),
    "http-api": (build_http_api, http_api_seeds, HTTP_DICTIONARY, 4096),
    "engine": (build_engine, engine_seeds, [], 1024),
}


def run(name, seconds):
    build, seeds, dictionary, max_len = TARGETS[name]
    directory = os.path.join(OUT, name)
    corpus = os.path.join(directory, "corpus")
    os.makedirs(corpus, exist_ok=True)
    print(f"{name}: building", flush=True)
    executable = build(directory)
    for seed in seeds():
        with open(os.path.join(corpus, "seed-" + hashlib.sha1(seed).hexdigest()[:16]), "wb") as file:
            file.write(seed)
    arguments = [executable, f"-max_total_time={seconds}", f"-max_len={max_len}", "-print_final_stats=1",
                 "-artifact_prefix=" + directory + "/", corpus]
    if dictionary:
        path = os.path.join(directory, "tokens.dict")
        with open(path, "w") as file:
            file.writelines(f'"{token.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"\n'
                            for token in dictionary)
        arguments.insert(1, "-dict=" + path)
    # The Swift runtime's backtracer would wait on the crashed process; libFuzzer prints the stack itself. Recording
    # where each allocation was made costs the engine target a fifth of its speed; rerunning a failing input by hand
    # (without these options) records it.
    environment = dict(os.environ, SWIFT_BACKTRACE="enable=no", ASAN_OPTIONS="detect_leaks=0:malloc_context_size=0")
    print(f"{name}: fuzzing for {seconds} s", flush=True)
    result = subprocess.run(arguments, capture_output=True, text=True, env=environment)
    log = result.stdout + result.stderr
    stats = re.findall(r"stat::number_of_executed_units: (\d+)", log)
    coverage = re.findall(r"cov: (\d+)", log)
    if result.returncode != 0:
        print(log[-6000:])
        crashes = re.findall(r"Test unit written to (\S+)", log)
        checks = re.findall(r"Fatal error: (.*)", log)
        print(f"{name}: FAILED{': ' + checks[0] if checks else ''}; the input: {', '.join(crashes) or 'see above'}")
        return False
    print(f"{name}: ok, {stats[-1] if stats else '?'} inputs, coverage {coverage[-1] if coverage else '?'} edges",
          flush=True)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="how long each target runs")
    parser.add_argument("--only", choices=sorted(TARGETS), action="append", help="a target (repeatable)")
    arguments = parser.parse_args()
    results = [run(name, arguments.seconds) for name in arguments.only or sorted(TARGETS)]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
