"""A worker provisioned exactly as a Vagrant VM is (the provisioning scripts, run in CI against the
multi-node harness), joining a real `slimkube up --nodes 2` cluster on this host.

The worker's call is read from vagrant/Vagrantfile itself (tests/support/vagrantfile.py), with the values a
VM gets there filled in from this host's node network: its address (`#{ip}`); the server URL and the
`--token-file` (the server's node-token) are this cluster's, not 192.168.56.10's. Then,
as on the VM: `install.sh --role agent … --units-only -- <the Vagrantfile's agent flags>` writes the units
and their settings (into a temporary dir through SLIMKUBE_ETC_DIR/UNIT_DIR/BIN_DIR: systemd is not PID 1
here), and the daemons are run as systemd runs the generated units — ExecStart with its EnvironmentFile's
variables substituted (systemd.service(5): `${VAR}` one word, `$VAR` split at whitespace) and in the
environment (where the join token is: it is on no command line), the agent first,
the proxy once the agent's Node is registered (the agent's READY=1, which the proxy unit is ordered
after) — each inside a network namespace on the node bridge, made with slimkube/nodenet.py as `up` makes
its own nodes'. The node must get a pod CIDR of its own from the node IPAM controller (the Vagrantfile passes none),
become Ready with the address the Vagrantfile gave it, its proxy sync the `kubernetes` Service into its
namespace, a DaemonSet made before it joined get a pod running on it, and a pod bound to it serve from its
pod CIDR to node 1 and to node 1's pod (seeing that pod's own address) through the agents' VXLAN
backend (node 1's device on the node bridge, named by the test).

What a VM has of its own and a namespace on this host has not: a host name (each daemon gets a UTS
namespace named after the worker) and /var/lib (each gets a tmpfs there, in the mount namespace `ip netns
exec` makes; so the proxy's copy of the server's CA stays off this host). The one flag added to the
Vagrantfile's is the agent's `--data-dir`: its pods' volumes are mounted by this host's dockerd, which
must see them.

Cleanup, even on failure: the two daemons by PID, the worker's pods/bridge/rules by `slimkube down` inside
its namespace, `up` by SIGINT and `down`, then the worker's namespace and host veth (nodenet.unwire).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from control.client.rest import RESTClient
from control.util.iptables import detect
from nodeagent.network import rules
from proxy.app import run_cleanup
from slimkube import multinode, nodenet, nodes
from tests.e2e.test_daemonset import daemonset, running_pods
from tests.e2e.test_multinode import cli, fetch, host_fetch, remote_addr, web_pod
from tests.e2e.test_up_down import ROOT, UpProcess, node_containers, wait_running, write_up_config
from tests.support.apiserver import free_port
from tests.support.hostnet import free_block
from tests.support.polling import wait_for
from tests.support.substrate import delete_link
from tests.support.vagrantfile import worker_call

WAIT = 90.0
pytestmark = pytest.mark.timeout(300)


def unit_command(unit: Path) -> tuple[list[str], dict[str, str]]:
    """The unit's ExecStart as systemd would run it, its EnvironmentFile's variables substituted, and those
    variables (the environment systemd gives it)."""
    service = dict(line.split("=", 1) for line in unit.read_text().splitlines()
                   if line.startswith(("ExecStart=", "EnvironmentFile=")))
    env = {}
    for line in Path(service["EnvironmentFile"].lstrip("-")).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = "".join(shlex.split(value))
    words: list[str] = []
    for word in shlex.split(service["ExecStart"]):
        if whole := re.fullmatch(r"\$(\w+)", word):
            words += env[whole.group(1)].split()
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], word))
    return words, env


class Daemon:
    """One unit's command inside the worker's namespace, with the worker's host name and its own /var/lib."""

    def __init__(self, worker: nodes.NodeSpec, unit: tuple[list[str], dict[str, str]], log_path: Path) -> None:
        self.log_path = log_path
        command, unit_env = unit
        vm = 'hostname "$0" && mount -t tmpfs -o size=16m tmpfs /var/lib && exec "$@"'
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                nodes.in_netns(worker.netns, ["unshare", "--uts", "sh", "-c", vm, worker.name, *command]),
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **unit_env})

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # by PID: the child this test started (systemctl stop)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def node_ready(client: RESTClient, name: str) -> bool:
    found = client.get("/api/v1/nodes")["items"]
    node = next((n for n in found if n["metadata"]["name"] == name), None)
    conditions = {c["type"]: c["status"] for c in (node or {}).get("status", {}).get("conditions") or []}
    return conditions.get("Ready") == "True"


def registered(client: RESTClient, name: str) -> bool:
    return any(n["metadata"]["name"] == name for n in client.get("/api/v1/nodes")["items"])


def test_worker_provisioned_as_the_vagrantfile_does_joins_up_nodes_2(root, docker_api, images, iptables,
                                                                    run_id: str, tmp_path: Path,
                                                                    cleanup: Callable) -> None:
    var_lib_before = Path("/var/lib/slimkube").exists()
    data_dir = tmp_path / "up"
    (data_dir / "nodes").mkdir(parents=True)
    first = free_block("10.244", range(100, 252, 4), 4)  # a /22 clear of this host's routes: the cluster CIDR
    nodes_cidr = f"10.250.{free_block('10.250', range(0, 250), 1)}.0/24"
    settings, pod_rules = write_up_config(data_dir, run_id, pod_cidr=None, cluster_cidr=f"10.244.{first}.0/22",
                                          pod_network="vxlan")
    names = [settings["nodeName"], f"{settings['nodeName']}-2"]
    full = nodes.plan(3, first_name=names[0], cluster_cidr=settings["clusterCIDR"], data_dir=str(data_dir),
                      nodes_cidr=nodes_cidr)
    # the third address of the plan, as `up --nodes 3` would give it, under the VM's name
    worker = dataclasses.replace(full.nodes[-1], name=f"{names[0]}-worker2", data_dir=str(tmp_path / "worker"))
    worker_plan = dataclasses.replace(full, nodes=(worker,))

    def remove_everything() -> None:  # what the steps below undo themselves, for a test that failed early
        for node in [*names, worker.name]:
            for cid in node_containers(docker_api, node):
                docker_api.remove_container(cid, force=True, v=True)
        subprocess.run(["ip", "netns", "del", names[1]], capture_output=True)
        for link in [f"{nodes.HOST_VETH_PREFIX}2", nodes.BRIDGE, settings["podBridge"], settings["vxlanDevice"]]:
            delete_link(link)
        rules.remove(detect(), pod_rules)
        run_cleanup(detect())

    cleanup(remove_everything)
    cleanup(lambda: nodenet.unwire(worker_plan))  # after everything else: the worker's namespace and veth

    port = free_port()
    up = UpProcess(str(data_dir), port, "--nodes", "2", "--nodes-cidr", nodes_cidr, bind_address="0.0.0.0")
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    up_plan = multinode.load_plan(str(data_dir))
    assert up_plan is not None and up_plan.host_ip == full.host_ip and up_plan.bridge == worker_plan.bridge
    nodenet.wire_node(up_plan, worker)  # the VM's "private network": a namespace on the node bridge

    # provision: the Vagrantfile's worker call, run here with this cluster's URL and token file
    token = (data_dir / "node-token").read_text().strip()
    call = worker_call(ip=worker.node_ip)
    venv_env, script, *args = call
    assert venv_env.startswith("SLIMKUBE_VENV=") and script.endswith("/install.sh"), call
    assert args[:2] == ["--role", "agent"] and "--units-only" not in args, call
    args[args.index("--server") + 1] = nodes.server_url(up_plan, port)
    args[args.index("--token-file") + 1] = str(data_dir / "node-token")
    split = args.index("--")
    state = tmp_path / "worker"
    args = [*args[:split], "--units-only", *args[split:], "--data-dir", str(state)]
    dirs = {name: tmp_path / name for name in ("etc", "units", "bin")}
    done = subprocess.run([str(ROOT / "install.sh"), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SLIMKUBE_VENV": sys.prefix, "SLIMKUBE_ETC_DIR": str(dirs["etc"]),
                               "SLIMKUBE_UNIT_DIR": str(dirs["units"]), "SLIMKUBE_BIN_DIR": str(dirs["bin"])})
    assert done.returncode == 0, done.stdout + done.stderr

    units = {unit: unit_command(dirs["units"] / f"slimkube-{unit}.service") for unit in ("agent", "proxy")}
    commands = {unit: command for unit, (command, _) in units.items()}
    assert commands["agent"][:2] == [str(dirs["bin"] / "slimkube"), "agent"], commands
    assert commands["agent"][-4:] == ["--node-ip", worker.node_ip, "--data-dir", str(state)], commands
    assert "--pod-cidr" not in commands["agent"], commands
    assert commands["proxy"][:2] == [str(dirs["bin"] / "slimkube"), "proxy"], commands
    for unit, (command, env) in units.items():  # the token in the 0600 environment file, not on the command line
        assert env["SLIMKUBE_TOKEN"] == token and not any(token in word for word in command), unit
        assert (dirs["etc"] / f"{unit}.env").stat().st_mode & 0o777 == 0o600

    def teardown_worker() -> None:  # `slimkube down` for the worker's node, inside its namespace
        subprocess.run(nodes.in_netns(worker.netns, [sys.executable, "-m", "slimkube.cli", "down", "--data-dir",
                                                     str(state), "--node-name", worker.name]),
                       cwd=ROOT, capture_output=True, timeout=120)

    cleanup(teardown_worker)
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        # A DaemonSet made before the worker exists: one pod on each of up's nodes now, and (below) one on the
        # worker once it registers — a DaemonSet following a node added later, with a real kubelet.
        client.create("/apis/apps/v1/namespaces/default/daemonsets", daemonset("everywhere"))
        wait_for(lambda: sorted(p["spec"]["nodeName"] for p in running_pods(client, "default", "everywhere"))
                 == sorted(names), WAIT, "a daemon pod running on each of up's nodes")
        agent = Daemon(worker, units["agent"], tmp_path / "agent.log")
        cleanup(agent.stop)
        wait_for(lambda: registered(client, worker.name) or agent.proc.poll() is not None, WAIT,
                 lambda: f"{worker.name} registered:\n{agent.log()[-4000:]}")
        assert agent.proc.poll() is None, agent.log()[-4000:]
        proxy = Daemon(worker, units["proxy"], tmp_path / "proxy.log")
        cleanup(proxy.stop)

        wait_for(lambda: node_ready(client, worker.name) or agent.proc.poll() is not None, WAIT,
                 lambda: f"{worker.name} Ready:\n{agent.log()[-4000:]}")
        assert agent.proc.poll() is None, agent.log()[-4000:]
        node = client.get(f"/api/v1/nodes/{worker.name}")
        pod_cidr = node["spec"]["podCIDR"]  # the node IPAM controller's, distinct from up's nodes'
        others = {client.get(f"/api/v1/nodes/{name}")["spec"]["podCIDR"] for name in names}
        assert pod_cidr not in others and len(others) == 2, (pod_cidr, others)
        assert ipaddress.ip_network(pod_cidr).subnet_of(ipaddress.ip_network(settings["clusterCIDR"]))
        internal = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"]
        assert internal == [worker.node_ip]
        assert {n["metadata"]["name"] for n in client.get("/api/v1/nodes")["items"]} == {*names, worker.name}
        wait_for(lambda: "[proxy] first sync done" in proxy.log(), WAIT, lambda: f"proxy synced:\n{proxy.log()}")
        assert f"[proxy] node {worker.name}:" in proxy.log()
        nat = subprocess.run(nodes.in_netns(worker.netns, ["iptables-save", "-t", "nat"]), capture_output=True,
                             text=True, check=True).stdout
        assert ":KUBE-SERVICES" in nat and "default/kubernetes:https cluster IP" in nat, nat

        wait_for(lambda: sorted(p["spec"]["nodeName"] for p in running_pods(client, "default", "everywhere"))
                 == sorted([*names, worker.name]), WAIT, "a daemon pod running on the worker added later")
        client.create("/api/v1/namespaces/default/pods", web_pod("web-worker", worker.name))
        pod = wait_running(client, "/api/v1/namespaces/default/pods/web-worker")
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(pod_cidr)
        # node 1 (this host) reaches the worker's pod through the agents' VXLAN backend, as a pod of node 1 does
        wait_for(lambda: host_fetch(f"http://{pod['status']['podIP']}:8080/") == "web-worker", 20,
                 "the worker's pod from node 1")
        # and node 1's pod reaches it too, the worker's pod seeing that pod's own address (no NAT between pods)
        (near,) = [p for p in running_pods(client, "default", "everywhere") if p["spec"]["nodeName"] == names[0]]
        near_name = near["metadata"]["name"]
        wait_for(lambda: fetch(docker_api, near_name, f"http://{pod['status']['podIP']}:8080/") == "web-worker", 20,
                 "the worker's pod from node 1's pod")
        seen = remote_addr(fetch(docker_api, near_name, f"http://{pod['status']['podIP']}:8080/cgi-bin/ip"))
        assert seen == near["status"]["podIP"], seen

    proxy.stop()
    agent.stop()
    assert (agent.proc.returncode, proxy.proc.returncode) == (0, 0), agent.log()[-2000:] + proxy.log()[-2000:]
    teardown_worker()
    assert node_containers(docker_api, worker.name) == {}
    assert up.interrupt() == 0, "\n".join(up.lines)
    down = cli("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stderr
    assert nodenet.unwire(worker_plan) == []
    assert not nodenet.netns_exists(worker.netns) and not nodenet.link_exists(worker.host_veth)
    assert Path("/var/lib/slimkube").exists() == var_lib_before  # the daemons wrote nothing to this host's
