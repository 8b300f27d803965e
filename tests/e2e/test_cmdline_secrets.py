"""No secret on a command line: with `slimkube up --nodes 2` running and every node Ready, no process on this
host has the join token (whole or its password), the admin token or any private key of the cluster in its
/proc/PID/cmdline, which every local user reads (`ps`). Node 2's agent and proxy get the token through a
file of their own (mode 0600, `--token-file`), and the secrets' files are the owner's alone. And `up`'s
components, each as its own user (scheduler, controllers, kube-proxy), log no 403 on the way.

Cleanup, even on failure: `up` by SIGINT (killed if it must be) and `down`, then whatever a failed start left:
the nodes' containers, node 2's namespace, the links and the rules.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from control.client.rest import RESTClient
from control.util.iptables import detect
from nodeagent.network import rules
from proxy.app import run_cleanup
from slimkube import nodes
from tests.e2e.test_multinode import cli
from tests.e2e.test_up_down import UpProcess, node_containers, write_up_config
from tests.support.apiserver import free_port
from tests.support.hostnet import free_block
from tests.support.polling import wait_for
from tests.support.substrate import delete_link

WAIT = 90.0
pytestmark = pytest.mark.timeout(300)


def command_lines() -> Iterator[tuple[int, str]]:
    """(pid, command line with NULs as spaces) of every process this host has now."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                raw = Path(entry.path, "cmdline").read_bytes()
            except OSError:  # gone meanwhile
                continue
            yield int(entry.name), raw.replace(b"\0", b" ").decode(errors="replace")


def key_fragments(data_dir: Path) -> dict[str, str]:
    """A long base64 line out of each private key under `data_dir`, by file: enough to find a key anywhere."""
    fragments = {}
    for path in data_dir.rglob("*.key"):
        lines = [line for line in path.read_text().splitlines() if line and not line.startswith("-----")]
        fragments[str(path)] = max(lines, key=len)
    return fragments


def ready_nodes(client: RESTClient) -> set[str]:
    found = client.get("/api/v1/nodes")["items"]
    return {n["metadata"]["name"] for n in found
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions") or [])}


def test_no_process_has_a_secret_on_its_command_line(root, docker_api, images, iptables, run_id: str,
                                                     tmp_path: Path, cleanup: Callable) -> None:
    data_dir = tmp_path / "up"
    (data_dir / "nodes").mkdir(parents=True)
    first = free_block("10.244", range(100, 252, 4), 4)
    nodes_cidr = f"10.250.{free_block('10.250', range(0, 250), 1)}.0/24"
    settings, pod_rules = write_up_config(data_dir, run_id, pod_cidr=None, cluster_cidr=f"10.244.{first}.0/22",
                                          pod_network="vxlan")
    names = [settings["nodeName"], f"{settings['nodeName']}-2"]

    def remove_everything() -> None:  # what `down` undoes itself, for a test that failed early
        for node in names:
            for cid in node_containers(docker_api, node):
                docker_api.remove_container(cid, force=True, v=True)
        subprocess.run(["ip", "netns", "del", names[1]], capture_output=True)
        for link in [f"{nodes.HOST_VETH_PREFIX}2", nodes.BRIDGE, settings["podBridge"], settings["vxlanDevice"]]:
            delete_link(link)
        rules.remove(detect(), pod_rules)
        run_cleanup(detect())

    cleanup(remove_everything)
    up = UpProcess(str(data_dir), free_port(), "--nodes", "2", "--nodes-cidr", nodes_cidr, bind_address="0.0.0.0")
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        wait_for(lambda: ready_nodes(client) >= set(names), WAIT, "both nodes Ready")

    join_token = (data_dir / "node-token").read_text().strip()
    secrets = {"the join token": join_token, "the join token's password": join_token.rsplit(":", 1)[-1],
               "the admin token": (data_dir / "admin-token").read_text().strip()}
    secrets |= {f"the key {path}": fragment for path, fragment in key_fragments(data_dir).items()}
    assert len(secrets) > 3, "no private key found under the data dir: is the search broken?"
    node2 = [(pid, line) for pid, line in command_lines() if "slimkube.cli" in line and names[1] in line]
    assert {"agent", "proxy"} <= {word for _, line in node2 for word in line.split()}, node2  # both are there
    assert any("--token-file" in line for _, line in node2), node2
    leaks = [f"pid {pid}: {what}" for pid, line in command_lines() for what, secret in secrets.items()
             if secret in line]
    assert not leaks, "secrets on command lines:\n" + "\n".join(leaks)

    token_file = Path(nodes.plan(2, first_name=names[0], cluster_cidr=settings["clusterCIDR"],
                                 data_dir=str(data_dir), nodes_cidr=nodes_cidr).nodes[0].token_file)
    assert token_file.read_text().strip() == join_token
    for path in [token_file, data_dir / "node-token", data_dir / "admin-token", *data_dir.rglob("*.key")]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

    # the components run as their own users (slimkube/componentcreds.py): none was refused anything it needs
    assert not [line for line in up.lines if "forbidden" in line.lower()], "\n".join(up.lines)
    assert up.interrupt() == 0, "\n".join(up.lines)
    down = cli("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stderr
