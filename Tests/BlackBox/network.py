"""Real network faults between a node and PostgreSQL: a network namespace joined to this one by a veth pair, whose
link the test sets down (nothing passes either way, nothing answers: no RST), and a TCP proxy that adds delay or
stalls (forwards nothing for a while, closes nothing).

Only loopback and the two addresses of the pair, in a /30 of 10.213.0.0/16 the machine does not use, are involved.
Everything made here is removed by `close()`, also after a failure; what cannot be made fails the test (never a
skip).
"""
import os
import queue
import random
import signal
import socket
import subprocess
import threading
import time
import uuid

from postgres import PostgresCluster


def _run(*command):
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}"
    return result.stdout


class Namespace:
    """A network namespace linked to this one: this side has `outer_address`, the namespace `inner_address`."""

    def __init__(self):
        tag = uuid.uuid4().hex[:8]
        self.name = f"tcnf-{tag}"
        self.outer, self.inner = f"tco{tag}", f"tci{tag}"
        used = _run("ip", "-o", "-4", "addr", "show") + _run("ip", "-4", "route", "show")
        while True:
            block = random.randrange(0, 65536, 4)
            prefix = f"10.213.{block // 256}."
            if f"{prefix}{block % 256 + 1}" not in used and f"{prefix}{block % 256 + 2}" not in used:
                break
        self.outer_address, self.inner_address = f"{prefix}{block % 256 + 1}", f"{prefix}{block % 256 + 2}"
        self.created = False
        try:
            _run("ip", "netns", "add", self.name)
            self.created = True
            _run("ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
            _run("ip", "link", "set", self.inner, "netns", self.name)
            _run("ip", "addr", "add", f"{self.outer_address}/30", "dev", self.outer)
            _run("ip", "link", "set", self.outer, "up")
            self.inside("ip", "addr", "add", f"{self.inner_address}/30", "dev", self.inner)
            self.inside("ip", "link", "set", self.inner, "up")
            self.inside("ip", "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    @property
    def prefix(self):
        """What runs a command inside the namespace."""
        return ("ip", "netns", "exec", self.name)

    def inside(self, *command):
        return _run(*self.prefix, *command)

    def cut(self):
        """Sets the namespace's end of the link down: packets either way are dropped, and nobody answers."""
        self.inside("ip", "link", "set", self.inner, "down")

    def restore(self):
        self.inside("ip", "link", "set", self.inner, "up")

    def close(self):
        """Kills what still runs inside, removes the namespace and the pair (deleting a namespace frees its end of
        the pair only once its last process is gone)."""
        if self.created:
            pids = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        deadline = time.time() + 10
        while self.name in _run("ip", "netns", "list") or self.outer in _run("ip", "-o", "link", "show"):
            assert time.time() < deadline, f"namespace {self.name} or link {self.outer} outlived the test"
            time.sleep(0.05)


class NamespacedPostgres(PostgresCluster):
    """A throwaway PostgreSQL cluster inside `namespace`, listening on its address there."""

    def __init__(self, namespace):
        self.prefix = namespace.prefix
        self.address = namespace.inner_address
        self.client_address = namespace.outer_address
        super().__init__()

    def start(self):
        # initdb trusts loopback only; the nodes come from this side of the pair.
        hba = os.path.join(self.data, "pg_hba.conf")
        line = f"host all all {self.client_address}/32 trust\n"
        with open(hba) as f:
            present = line in f.read()
        if not present:
            with open(hba, "a") as f:
                f.write(line)
        super().start()


class TcpProxy:
    """Forwards connections to 127.0.0.1:`port` to 127.0.0.1:`target`, each chunk after `delay` seconds in each
    direction; `stall()` stops forwarding (connections stay open, nothing is closed or refused) until `flow()`."""

    def __init__(self, target):
        self.target = target
        self.delay = 0.0
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        self._sockets = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self._flowing.clear()

    def flow(self):
        self._flowing.set()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._sockets += [client, upstream]
            for source, destination in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, destination), daemon=True).start()

    def _pump(self, source, destination):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                self._flowing.wait()
                if self.delay:
                    time.sleep(self.delay)
                destination.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, destination):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self._flowing.set()
        _close_proxy(self)


class LatencyProxy:
    """Forwards connections to 127.0.0.1:`target` with `delay` seconds added each way, as a slow link does: every
    chunk leaves `delay` after it arrived, in order, without waiting for the chunks before it to be delayed (unlike
    TcpProxy's delay, which adds up per chunk). This kernel has no netem, hence a proxy."""

    def __init__(self, target, delay):
        self.target = target
        self.delay = delay
        self._closed = False
        self._sockets = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/"

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets += [client, upstream]
            for source, destination in ((client, upstream), (upstream, client)):
                chunks = queue.Queue()
                threading.Thread(target=self._read, args=(source, chunks), daemon=True).start()
                threading.Thread(target=self._write, args=(chunks, destination), daemon=True).start()

    def _read(self, source, chunks):
        try:
            while True:
                data = source.recv(65536)
                chunks.put((time.monotonic() + self.delay, data))
                if not data:
                    return
        except OSError:
            chunks.put((time.monotonic(), b""))

    def _write(self, chunks, destination):
        try:
            while True:
                due, data = chunks.get()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if not data:
                    break
                destination.sendall(data)
        except OSError:
            pass
        finally:
            try:
                destination.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        _close_proxy(self)


def _close_proxy(proxy):
    """Stops a proxy's accepting and closes every socket it opened."""
    proxy._closed = True
    proxy._listener.close()
    for s in proxy._sockets:
        try:
            s.close()
        except OSError:
            pass
