"""The README's nginx configuration in front of three nodes on one PostgreSQL database, for real (Debian's nginx)."""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

from conftest import Client, free_port
from postgres import Nodes

CONFIG = """
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{}}
http {{
    access_log off;
    upstream tablecast {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://tablecast;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_set_header Host $host;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
        }}
    }}
}}
"""


def connections(node):
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/healthz", timeout=5) as response:
        return json.loads(response.read())["connections"]


def test_the_readme_nginx_config_spreads_websockets_over_the_nodes(postgres):
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    assert os.path.exists(nginx), "nginx is missing (.ci/install installs Debian's nginx-light)"
    nodes = Nodes(postgres, 3)
    directory = tempfile.mkdtemp(prefix="tablecast-nginx-")
    port = free_port()
    servers = "\n".join(f"        server 127.0.0.1:{node.port};" for node in nodes.nodes)
    config = os.path.join(directory, "nginx.conf")
    with open(config, "w") as f:
        f.write(CONFIG.format(dir=directory, servers=servers, port=port))
    subprocess.run([nginx, "-c", config, "-p", directory], check=True)
    try:
        url = f"ws://127.0.0.1:{port}/"
        clients = [Client(url, name=f"c{i}") for i in range(6)]
        clients[0].ok({"type": "createTable", "table": "via-nginx", "sections": [{"rows": []}]})
        for client in clients:
            client.subscribe("via-nginx")
        assert all(connections(node) >= 1 for node in nodes.nodes), "round robin reaches every node"
        for i, client in enumerate(clients):
            client.ok({"type": "insert", "table": "via-nginx", "at": [0, 0], "value": f"v{i}"})
        for client in clients:
            versions = [client.next("update", table="via-nginx", keep_others=False)["version"] for _ in range(6)]
            assert versions == [1, 2, 3, 4, 5, 6]
        for client in clients:
            client.close()
    finally:
        subprocess.run([nginx, "-c", config, "-p", directory, "-s", "stop"], check=False)
        nodes.stop()
        shutil.rmtree(directory, ignore_errors=True)
