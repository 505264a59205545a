"""The README's examples work as written, so that they cannot drift from the code:

- the command-line walkthrough (the ```sh block under "Command-line clients"), and so the shared checklist and the
  load-testing example, runs line by line (a line ending in `\\` goes on on the next), in order, in a shell against
  a fresh `tablecast serve`, and each command prints what its `→` comment shows (`…` stands for any value, `,…}`
  for more members); a command with no `→` prints nothing on stdout. `watch` runs until stopped: it is stopped
  with SIGINT once its first line is checked.
- the Swift client-library example (the ```swift block under "The Swift client library") type-checks with only
  `import TablecastClient` against the modules of the build under test.
"""
import json
import os
import pathlib
import re
import select
import signal
import subprocess

from conftest import ROOT, Server, tablecast_binary

README = (ROOT / "README.md").read_text()


def block(heading, language):
    """The first ```language block after the line that starts with `heading`."""
    start = README.index("\n" + heading)
    match = re.compile(rf"^```{language}\n(.*?)^```", re.M | re.S).search(README, start)
    assert match, f"no ```{language} block under {heading!r}"
    return match.group(1)


def split_comment(line):
    """(command, comment): the comment starts at the first `#` outside quotes that follows a space."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i].strip(), line[i + 1:].strip()
    return line.strip(), ""


def walkthrough(heading="### Command-line clients"):
    """[(command, expected output or None)] in the README's order; a line ending in `\\` goes on on the next."""
    steps = []
    for line in re.sub(r"\\\n\s*", "", block(heading, "sh")).splitlines():
        command, comment = split_comment(line)
        expected = comment.split("→", 1)[1].strip() if "→" in comment else None
        if command:
            steps.append([command, expected])
        elif expected is not None:
            assert steps and steps[-1][1] is None, f"an output line with no command before it: {line!r}"
            steps[-1][1] = expected
    return steps


ANY = "…"


def matches(pattern, value):
    """Whether `value` matches a README pattern: `"…"` is any value, an object ending `,…}` may have more members."""
    if pattern == ANY:
        return True
    if isinstance(pattern, dict):
        extra = pattern.get(ANY) == ANY
        keys = set(pattern) - {ANY}
        return (isinstance(value, dict) and keys <= set(value) and (extra or keys == set(value))
                and all(matches(pattern[k], value[k]) for k in keys))
    if isinstance(pattern, list):
        return isinstance(value, list) and len(pattern) == len(value) and all(map(matches, pattern, value))
    return pattern == value and type(pattern) is type(value)


def check_output(command, expected, line):
    if expected.startswith("{"):
        pattern = json.loads(expected.replace(f",{ANY}}}", f',"{ANY}":"{ANY}"}}'))
        assert matches(pattern, json.loads(line)), f"`{command}` printed\n  {line}\nthe README shows\n  {expected}"
    else:
        regex = ".*".join(map(re.escape, expected.split(ANY)))
        assert re.fullmatch(regex, line), f"`{command}` printed\n  {line}\nthe README shows\n  {expected}"


def test_the_command_line_walkthrough_runs_in_order_and_prints_what_it_shows(tmp_path):
    steps = walkthrough()
    assert len(steps) >= 10, steps
    run_in_order(steps, tmp_path)


def test_the_shared_checklist_runs_in_order_and_prints_what_it_shows(tmp_path):
    steps = walkthrough("### A shared checklist")
    assert len(steps) >= 6, steps
    run_in_order(steps, tmp_path)


def test_the_load_testing_example_runs_in_order_and_prints_what_it_shows(tmp_path):
    steps = walkthrough("### Load testing your deployment")
    assert len(steps) >= 4, steps
    run_in_order(steps, tmp_path)
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG")


def run_in_order(steps, tmp_path):
    """Runs the steps in a shell against a fresh server, checking each one's output."""
    server = Server().start()
    env = {**os.environ, "TABLECAST_URL": server.url,
           "PATH": os.path.dirname(tablecast_binary()) + os.pathsep + os.environ["PATH"]}
    try:
        for command, expected in steps:
            if command.startswith("tablecast watch") and "--updates" not in command:
                # Runs until stopped: its first line, then SIGINT. A suite started in the background inherits SIGINT
                # ignored (as a shell does for `&`); Ctrl-C's default action is what the README describes.
                watch = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=tmp_path, env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
                try:
                    ready, _, _ = select.select([watch.stdout], [], [], 30)
                    assert ready, f"`{command}` printed nothing"
                    first = watch.stdout.readline().rstrip("\n")
                finally:
                    watch.send_signal(signal.SIGINT)
                    watch.communicate(timeout=30)
                assert expected is not None, f"`{command}`: the README shows no output"
                check_output(command, expected, first)
                continue
            result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=60)
            assert result.returncode == 0, f"`{command}` exited {result.returncode}: {result.stderr}"
            lines = result.stdout.splitlines()
            if expected is None:
                assert lines == [], f"`{command}` printed {result.stdout!r}; the README shows nothing"
            else:
                assert len(lines) == 1, f"`{command}` printed {result.stdout!r}"
                check_output(command, expected, lines[0])
    finally:
        server.stop()


def test_the_pattern_matcher_tells_a_different_output_apart():
    # The walkthrough test is only as strict as this.
    assert matches(json.loads('{"a":1,"b":"…"}'), {"a": 1, "b": [2]})
    assert not matches(json.loads('{"a":1,"b":"…"}'), {"a": 1, "b": 2, "c": 3})
    assert matches(json.loads('{"a":1,"…":"…"}'), {"a": 1, "c": 3})
    assert not matches(json.loads('{"a":1,"…":"…"}'), {"a": 2})
    assert not matches(json.loads('{"a":[[0,1]]}'), {"a": [[0, 0]]})
    assert not matches(json.loads('{"a":1}'), {"a": True})


def module_search_paths():
    """Where the build under test keeps its Swift modules, and the C modules they import."""
    bin_dir = pathlib.Path(tablecast_binary()).parent
    modules = bin_dir / "Modules" if (bin_dir / "Modules").is_dir() else bin_dir
    c_modules = [p.parent for p in (ROOT / "Sources").glob("*/module.modulemap")]
    c_modules += [p.parent for p in (ROOT / ".build" / "checkouts").glob("*/Sources/*/include/module.modulemap")]
    return [modules, *c_modules]


def test_the_swift_client_library_example_type_checks_with_only_import_tablecastclient(tmp_path):
    source = block("## The Swift client library", "swift")
    assert [line for line in source.splitlines() if line.startswith("import ")] == ["import TablecastClient"]
    (tmp_path / "main.swift").write_text(source)
    arguments = ["swiftc", "-typecheck", "-swift-version", "6", "main.swift"]
    for path in module_search_paths():
        arguments += ["-I", str(path)]
    result = subprocess.run(arguments, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "warning:" not in result.stderr, result.stderr
