"""`slimkube up --nodes N`, `slimkube down` and `slimkube node stop|start` for nodes 2..N: the plan
(slimkube/nodes.py) put to work with the node network (slimkube/nodenet.py) and the node processes
(slimkube/nodeprocs.py).

The plan `up` made is kept in `DIR/nodes/nodes.json`, so `down` and `node` act on the nodes that were
really made, whatever flags they are given. Settings for the nodes' daemons: `DIR/nodes/kubelet.yaml`
(a KubeletConfiguration for every node 2..N; the per-node name, IP and data dir come as flags,
which override it) and `DIR/nodes/kube-proxy.yaml`, when present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from control.util.iptables import detect
from slimkube import nodenet, noderules, nodes
from slimkube.nodeprocs import Child, Launch, NodeGroup
from slimkube.privatefile import write_private

Say = Callable[[str], None]


def plan_path(data_dir: str) -> str:
    return os.path.join(data_dir, nodes.NODES_DIR, nodes.PLAN_FILE)


def save_plan(data_dir: str, plan: nodes.NodesPlan) -> None:
    path = plan_path(data_dir)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
        json.dump(plan.to_json(), handle, indent=1)
    os.replace(f"{path}.tmp", path)


def load_plan(data_dir: str) -> nodes.NodesPlan | None:
    try:
        with open(plan_path(data_dir), encoding="utf-8") as handle:
            return nodes.NodesPlan.from_json(json.load(handle))
    except FileNotFoundError:
        return None


def node_config_file(data_dir: str, daemon: str) -> str | None:
    """DIR/nodes/kubelet.yaml or DIR/nodes/kube-proxy.yaml, if present."""
    path = os.path.join(data_dir, nodes.NODES_DIR, f"{daemon}.yaml")
    return path if os.path.exists(path) else None


@dataclass(frozen=True)
class Join:
    """How nodes 2..N reach the API server: the node bridge address and the server's node token."""

    server: str
    token: str
    cluster_cidr: str
    cluster_dns: str = ""  # comma-separated, as `agent --cluster-dns`; "" = the agent's default
    cluster_domain: str = ""
    serve_dns: bool = True
    pod_network: str = ""  # as `agent --pod-network`; "" = the agent's default
    network_plugin: str = ""  # as `agent --network-plugin`; with cni each node's list is under its data dir
    cni_bin_dir: str = ""


def launcher(data_dir: str, join: Join, *, say: Say, python: str = sys.executable) -> Launch:
    """Start `slimkube agent|proxy` for a node inside its namespace (nodes.agent_argv / proxy_argv)."""
    kubelet_yaml, proxy_yaml = node_config_file(data_dir, "kubelet"), node_config_file(data_dir, "kube-proxy")

    def launch(node: nodes.NodeSpec, role: str) -> Child:
        write_token_file(node.token_file, join.token)
        if role == "agent":
            argv = nodes.agent_argv(node, python=python, server=join.server,
                                    cluster_cidr=join.cluster_cidr, config_file=kubelet_yaml,
                                    cluster_dns=join.cluster_dns, cluster_domain=join.cluster_domain,
                                    serve_dns=join.serve_dns, pod_network=join.pod_network,
                                    network_plugin=join.network_plugin, cni_bin_dir=join.cni_bin_dir)
        else:
            argv = nodes.proxy_argv(node, python=python, server=join.server,
                                    cluster_cidr=join.cluster_cidr, config_file=proxy_yaml)
        return Child(node, role, nodes.in_netns(node.netns, argv), say)

    return launch


def write_token_file(path: str, token: str) -> None:
    """The join token in a file only its owner reads, as install.sh leaves it on a worker host: the node's
    processes get its path, never the token."""
    write_private(path, token + "\n")


def start_network(data_dir: str, plan: nodes.NodesPlan, *, say: Say) -> None:
    """Wire the node network and its forwarding and egress rules (slimkube/noderules.py; idempotent), and
    record the plan for `down` and `node`."""
    from nodeagent.network.bridge import ensure_bridge

    save_plan(data_dir, plan)  # first: `down` must find what a failed start left
    say(f"[up] node network {plan.nodes_cidr} on bridge {plan.bridge} (this host {plan.host_ip})")
    if plan.router is not None:
        say(f"[up] router namespace {plan.router.netns} ({plan.router.address}) joins subnets "
            f"{', '.join(s.cidr for s in plan.router.subnets)} to bridge {plan.bridge}: no L2 between them")
    nodenet.wire(plan, ensure_bridge=ensure_bridge)
    noderules.apply(detect(), noderules.NodeRulesConfig(bridge=plan.bridge, nodes_cidr=plan.nodes_cidr,
                                                        uplink=nodenet.default_route_device()))
    for node in plan.nodes:
        say(f"[node {node.name}] namespace {node.netns}: {node.node_ip}/{node.prefixlen} via {node.gateway}")


def node_group(data_dir: str, plan: nodes.NodesPlan, join: Join, *, say: Say) -> NodeGroup:
    return NodeGroup(plan.nodes, launch=launcher(data_dir, join, say=say), say=say)


def down_nodes(data_dir: str, *, say: Say, python: str = sys.executable) -> list[str]:
    """Remove nodes 2..N: each node's pods, pod network and rules by `slimkube down` run inside its
    namespace for its data dir (the same teardown as node 1's, where those live), then the namespaces,
    veths and bridge. Returns the errors (empty when all went)."""
    plan = load_plan(data_dir)
    if plan is None:
        return []
    errors: list[str] = []
    kubelet_yaml = node_config_file(data_dir, "kubelet")
    for node in plan.nodes:
        nodenet.ensure_netns(node.netns)  # a namespace gone (reboot) still has containers to remove
        argv = [python, "-m", "slimkube.cli", "down", "--data-dir", node.data_dir, "--node-name", node.name]
        argv += ["--config", kubelet_yaml] if kubelet_yaml else []
        done = subprocess.run(nodes.in_netns(node.netns, argv), capture_output=True, text=True, check=False)
        for line in done.stderr.splitlines():
            if line.startswith(("[down]", "Error")) and "kept the data store" not in line:
                say(f"[node {node.name}] {line}")
        if done.returncode != 0:
            errors.append(f"node {node.name}: `down` in its namespace exited {done.returncode}")
    errors += nodenet.unwire(plan)
    try:
        noderules.remove(detect())
    except Exception as exc:  # noqa: BLE001 - report it with the rest
        errors.append(f"node network rules: {exc}")
    router = f", router namespace {plan.router.netns}" if plan.router else ""
    say(f"[down] removed the namespaces of {', '.join(n.name for n in plan.nodes) or 'no nodes'}{router}, their "
        f"veths and bridge {plan.bridge}")
    if not errors:
        os.unlink(plan_path(data_dir))
    return errors


def find_node(data_dir: str, name: str) -> nodes.NodeSpec:
    """Node `name` of the running plan; ValueError saying which names exist."""
    plan = load_plan(data_dir)
    known = [node.name for node in plan.nodes] if plan else []
    for node in plan.nodes if plan else ():
        if node.name == name:
            return node
    raise ValueError(f"no node {name!r} started by `up --nodes` with data dir {data_dir} (nodes: "
                     f"{', '.join(known) or 'none'}; node 1 runs inside `up` itself)")
