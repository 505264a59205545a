"""The Debian package .ci/package-deb builds (.ci/test builds it first and sets TABLECAST_DEB_REQUIRED: there a
missing package fails; elsewhere these tests skip until it is built): its metadata and files, the binary run from
/ with an empty environment and no toolchain, then installed for real with dpkg (root only: CI's machine is
thrown away after): run as the `tablecast` user with the packaged flags, data kept on remove, deleted on purge."""
import glob
import os
import pwd
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import ROOT, free_port, tablecast_binary

UNIT = "/lib/systemd/system/tablecast.service"


def package():
    debs = sorted(glob.glob(str(ROOT / ".build" / "tablecast_*_amd64.deb")), key=os.path.getmtime)
    if not debs:
        if os.environ.get("TABLECAST_DEB_REQUIRED"):
            pytest.fail("no .build/tablecast_*_amd64.deb: .ci/package-deb did not build it")
        pytest.skip("run .ci/package-deb first")
    return debs[-1]


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True, check=True).stdout.strip()


def http(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return response.status, response.read()


def wait_healthy(process, port, log):
    for _ in range(200):
        assert process.poll() is None, f"exited {process.returncode}: {log()}"
        try:
            if http(port, "/healthz")[0] == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"not healthy: {log()}")


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_metadata_and_files():
    deb = package()
    version = subprocess.run([tablecast_binary(), "--version"], capture_output=True, text=True).stdout.strip()
    assert (field(deb, "Package"), field(deb, "Version"), field(deb, "Architecture")) == ("tablecast", version, "amd64")
    assert os.path.basename(deb) == f"tablecast_{version}_amd64.deb"
    depends = {d.split(" ")[0] for d in field(deb, "Depends").split(", ")}
    assert {"libwebsockets17", "libwebsockets-evlib-ev", "libev4", "libsqlite3-0", "libpq5", "libssl3", "libc6"} <= depends
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    files = {line.split()[-1].lstrip(".") : line.split()[0] for line in listing.splitlines()}
    assert files["/usr/bin/tablecast"] == "-rwxr-xr-x"
    assert files[UNIT] == files["/etc/default/tablecast"] == "-rw-r--r--"
    assert all(" root/root " in line for line in listing.splitlines())
    control = subprocess.run(["dpkg-deb", "-I", deb, "conffiles"], capture_output=True, text=True, check=True).stdout
    assert control.split() == ["/etc/default/tablecast"]
    unit = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
    assert b"ExecStart=/usr/bin/tablecast serve $TABLECAST_OPTIONS" in unit
    for line in ("User=tablecast", "StateDirectory=tablecast", "EnvironmentFile=-/etc/default/tablecast",
                 "ExecReload=/bin/kill -HUP $MAINPID", "NoNewPrivileges=yes", "ProtectSystem=strict",
                 "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=\n"):
        assert line.encode() in unit, line


def test_the_extracted_binary_runs_from_root_with_an_empty_environment_and_no_toolchain(tmp_path):
    deb = package()
    subprocess.run(["dpkg-deb", "-x", deb, tmp_path / "root"], check=True)
    binary = tmp_path / "root" / "usr" / "bin" / "tablecast"
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    assert "libwebsockets.so" in ldd
    for toolchain in ("/opt/swift", "libswift", "libFoundation", "libdispatch", "libBlocksRuntime", "not found"):
        assert toolchain not in ldd, ldd
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen([binary, "serve", "--port", str(port), "--db", tmp_path / "t.db"], cwd="/", env={},
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(process, port, log.read_text)
        assert http(port, "/") == (200, (ROOT / "web-client-protocol" / "client" / "index.html").read_bytes())
        assert http(port, "/tablecast.js")[1] == (ROOT / "web-client-protocol" / "client" / "tablecast.js").read_bytes()
    finally:
        stop(process)


def dpkg(*args):
    return subprocess.run(["dpkg", *args], capture_output=True, text=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def test_installed_runs_as_its_user_and_remove_keeps_the_data_that_purge_deletes():
    deb = package()
    if os.geteuid() != 0:
        pytest.skip("installing the package needs root (CI runs as root on a throwaway machine)")
    assert dpkg("-s", "tablecast").returncode != 0, "tablecast is installed already: not a throwaway machine?"
    try:
        installed = dpkg("-i", deb)
        assert installed.returncode == 0, installed.stderr
        user = pwd.getpwnam("tablecast")
        assert user.pw_uid < 1000 and user.pw_shell == "/usr/sbin/nologin"
        assert os.stat("/var/lib/tablecast").st_uid == user.pw_uid
        assert subprocess.run(["/usr/bin/tablecast", "--version"], capture_output=True, text=True).stdout.strip() \
            == field(deb, "Version")
        if subprocess.run(["which", "systemd-analyze"], capture_output=True).returncode == 0:
            verify = subprocess.run(["systemd-analyze", "verify", UNIT], capture_output=True, text=True)
            assert verify.returncode == 0 and "tablecast.service" not in verify.stderr, verify.stderr

        # The packaged flags (a later --port wins: this machine may have 8080 taken), from the state folder.
        port = free_port()
        process = subprocess.Popen(
            ["sh", "-c", f'. /etc/default/tablecast && exec /usr/bin/tablecast serve $TABLECAST_OPTIONS --port {port}'],
            cwd="/var/lib/tablecast", env={"PATH": "/usr/bin:/bin"}, user="tablecast", group="tablecast",
            extra_groups=[], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_healthy(process, port, lambda: "")
            assert http(port, "/")[0] == 200
        finally:
            stop(process)
        database = "/var/lib/tablecast/tablecast.db"
        assert os.stat(database).st_uid == user.pw_uid

        removed = dpkg("--remove", "tablecast")
        assert removed.returncode == 0, removed.stderr
        assert not os.path.exists("/usr/bin/tablecast")
        assert os.path.exists(database) and os.path.exists("/etc/default/tablecast")

        purged = dpkg("--purge", "tablecast")
        assert purged.returncode == 0, purged.stderr
        assert not os.path.exists("/var/lib/tablecast") and not os.path.exists("/etc/default/tablecast")
    finally:
        dpkg("--purge", "tablecast")
