"""Helpers for the memory tests: a server's resident memory, its /metrics, and a writer of big versions."""
import re
import time
import urllib.request
import uuid


def rss_bytes(pid):
    """The process' resident set size, from /proc."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def metrics(server):
    """/metrics as {series with labels: value}."""
    with urllib.request.urlopen(f"{server.http_url}metrics", timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


def memory_bytes(server, consumer):
    return metrics(server)[f'tablecast_memory_bytes{{consumer="{consumer}"}}']


def write_big_versions(client, table, versions, rows=15, value_bytes=60_000, in_flight=4):
    """Commits `versions` batches that each reload every one of `rows` rows with a new `value_bytes` value (about
    rows × value_bytes per version), keeping `in_flight` intents outstanding; returns the last version."""
    last = 0
    sent = 0
    outstanding = set()
    while sent < versions or outstanding:
        while sent < versions and len(outstanding) < in_flight:
            ref = f"big-{uuid.uuid4().hex[:12]}"
            fill = chr(ord("a") + sent % 26) * (value_bytes - 12)
            client.send({"type": "batch", "table": table, "ref": ref,
                         "reloadRows": [{"at": [0, r], "value": f"{sent:06d}-{r:04d}-{fill}"} for r in range(rows)]},
                        check=False)
            outstanding.add(ref)
            sent += 1
        message = client.recv(timeout=60)
        if message.get("ref") in outstanding:
            assert message["type"] == "ack", message
            outstanding.discard(message["ref"])
            last = max(last, message["version"])
    return last


def wait_for(condition, timeout=10, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"{what} not met within {timeout}s")


class Editing:
    """While in its `with` block, `client` edits one of the first 1,000 rows of `table` `per_second` times a second
    from a thread of its own, without waiting for acks (a busy table)."""

    def __init__(self, client, table, per_second=60):
        import threading
        self.client, self.table, self.interval = client, table, 1 / per_second
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        n = 0
        while not self.stop.is_set():
            self.client.send({"type": "edit", "table": self.table, "at": [0, n % 1000], "value": f"edit {n}"}, check=False)
            n += 1
            time.sleep(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *failure):
        self.stop.set()
        self.thread.join()
