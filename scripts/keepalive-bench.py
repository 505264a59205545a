#!/usr/bin/env python3
"""The server's CPU per HTTP connection (two GET /healthz on one keep-alive connection) while IDLE other keep-alive
connections wait for their next request: the cost of a response should not grow with how many wait.

    tablecast serve --port 9000 --db /tmp/k.db --max-connections 20000 --max-handshakes-per-address 100000 &
    python3 scripts/keepalive-bench.py 9000 $! --idle 8000

The server's CPU is its user + system time from /proc; the waiting connections are opened first (each makes one
request) and stay open through the run, so keep the run shorter than the server's HTTP idle timeout (60 s).
"""
import argparse
import socket
import time


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def get(connection, port):
    connection.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    response = b""
    while not response.endswith(b"}"):
        chunk = connection.recv(4096)
        if not chunk:
            raise SystemExit(f"the server closed a connection: {response!r}")
        response += chunk


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("pid", type=int, help="the server's process id")
    parser.add_argument("--idle", type=int, default=8000, help="keep-alive connections waiting meanwhile")
    parser.add_argument("--connections", type=int, default=3000, help="connections measured, one after the other")
    arguments = parser.parse_args()
    waiting = []
    for _ in range(arguments.idle):
        connection = socket.create_connection(("127.0.0.1", arguments.port))
        get(connection, arguments.port)
        waiting.append(connection)
    before, start = cpu_seconds(arguments.pid), time.time()
    for _ in range(arguments.connections):
        with socket.create_connection(("127.0.0.1", arguments.port)) as connection:
            get(connection, arguments.port)
            get(connection, arguments.port)
    cpu, wall = cpu_seconds(arguments.pid) - before, time.time() - start
    print(f"{arguments.idle} waiting: {cpu / arguments.connections * 1e6:.0f} µs of server CPU per connection "
          f"with two requests ({arguments.connections} connections in {wall:.1f} s)")


if __name__ == "__main__":
    main()
