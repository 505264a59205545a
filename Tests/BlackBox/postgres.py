"""A throwaway PostgreSQL cluster for the black-box suites, and several `tablecast serve` nodes sharing it.

The cluster is initdb'd into a temporary folder (as the `postgres` user when run as root), listens on a free
loopback port with its unix socket in that folder, and is stopped with `pg_ctl -m immediate stop`. When it cannot
start, the tests that need it fail (never skip).
"""
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
import uuid

from conftest import Server, free_port


def _binaries():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    assert found, "no PostgreSQL under /usr/lib/postgresql (install Debian's postgresql package: .ci/install)"
    return found[-1]


class PostgresCluster:
    #: The address the server listens on and nodes connect to.
    address = "127.0.0.1"

    def __init__(self):
        self.bin = _binaries()
        self.dir = tempfile.mkdtemp(prefix="tablecast-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self.start()

    #: A prefix for every command (e.g. `ip netns exec NAME`, to run the server in a network namespace).
    prefix = ()

    def _run(self, tool, *args):
        command = [os.path.join(self.bin, tool), *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        command = [*self.prefix, *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd="/")
        assert result.returncode == 0, f"{' '.join(command)} failed: {result.stdout}{result.stderr}"
        return result.stdout

    def start(self):
        log = os.path.join(self.dir, "server.log")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses={self.address}"
        try:
            self._run("pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "30", "-o", options, "start")
        except AssertionError as error:
            text = open(log).read() if os.path.exists(log) else ""
            raise AssertionError(f"{error}\nserver log:\n{text}") from None

    def kill(self):
        """Stops the server as a crash would (`-m immediate`)."""
        self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def psql(self, sql, database="postgres"):
        return self._run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.dir, "-p", str(self.port),
                         "-d", database, "-c", sql)

    def create_database(self):
        name = "bb_" + uuid.uuid4().hex[:10]
        self.psql(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@{self.address}:{self.port}/{name}"

    def stop(self):
        """Stops the server if it runs (a test may leave it killed) and removes the cluster."""
        try:
            if os.path.exists(os.path.join(self.data, "postmaster.pid")):
                self.kill()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class PostgresServer(Server):
    """A `tablecast serve` node whose database is a PostgreSQL URL."""

    def __init__(self, url, *args):
        super().__init__(*args)
        self.db = url


class Nodes:
    """Several nodes on one database, used like one `Server`: `client()` connects to each node in turn, so that
    tests written for one server run their clients across nodes."""

    def __init__(self, cluster, count=2, *args):
        url = cluster.create_database()
        self.cluster = cluster
        self.nodes = [PostgresServer(url, *args).start() for _ in range(count)]
        self._turn = itertools.cycle(range(count))

    @property
    def url(self):
        return self.nodes[0].url

    def client(self, **kwargs):
        return self.nodes[next(self._turn)].client(**kwargs)

    def stop(self):
        for node in self.nodes:
            node.stop()
