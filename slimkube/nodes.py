"""The address plan of `slimkube up --nodes N`: pure decisions, no I/O.

Node 1 is `up`'s own kubelet in the host's network namespace, as with one node. Nodes 2..N each live in a
network namespace named after the node, joined to the host by a veth pair whose host end sits on one node
bridge (kind's and k3d's one-host clusters do the same with containers on a Docker network):

    host netns:  bridge `slimnodes0` 10.250.0.1/24 ── veth `slimnode2` ─┐
                                                   └─ veth `slimnode3` ─┼─┐
    netns NAME-2: eth0 10.250.0.2/24, default via 10.250.0.1  ◄────────┘ │
    netns NAME-3: eth0 10.250.0.3/24, default via 10.250.0.1  ◄──────────┘

The node namespaces are plain hosts on one L2: nothing here routes pods. Each node's pod CIDR comes from
the node IPAM controller (its Node's spec.podCIDR) and each node's agent reaches the others' pods through
its own backend (`--pod-network`, nodeagent/network/backends/), exactly as on separate hosts.
The host's bridge address is what the nodes use to reach the API server, so `up` advertises it (the
`kubernetes` Service's endpoint) and its serving certificate names it, and node 1 reports it as its
InternalIP (so every node's address is on the one node network).

Link names start with `slimnode` (not `sk`, which the test harness sweeps as its own).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any

from control.apimachinery.validation import is_dns1123_subdomain

DEFAULT_NODES_CIDR = "10.250.0.0/24"
BRIDGE = "slimnodes0"
HOST_VETH_PREFIX = "slimnode"
NODE_IFNAME = "eth0"
PLAN_FILE = "nodes.json"
NODES_DIR = "nodes"
TOKEN_FILE = "join-token"  # in each node's data dir, mode 0600: the join token its agent and proxy read


class PlanError(ValueError):
    """The requested plan cannot be built; the message names the option to change."""


@dataclass(frozen=True)
class NodeSpec:
    """One node `up --nodes` runs in a namespace: what its agent is told and how it is wired."""

    index: int          # 2..N
    name: str           # Node name = network namespace name
    node_ip: str        # its eth0 address on the node bridge
    host_veth: str      # the host end of its veth pair, on the node bridge
    data_dir: str       # DIR/nodes/NAME: the agent's and proxy's data dir

    @property
    def netns(self) -> str:
        return self.name

    @property
    def token_file(self) -> str:
        """Where this node keeps the join token, as a worker host keeps it in a root-only file: its agent and
        proxy read it with --token-file, so it is on no command line."""
        return os.path.join(self.data_dir, TOKEN_FILE)


@dataclass(frozen=True)
class NodesPlan:
    """Every node after the first, and the host side of the node network."""

    bridge: str
    nodes_cidr: str
    host_ip: str
    prefixlen: int
    nodes: tuple[NodeSpec, ...]

    def to_json(self) -> dict[str, Any]:
        return {"bridge": self.bridge, "nodesCIDR": self.nodes_cidr, "hostIP": self.host_ip,
                "nodes": [{"index": n.index, "name": n.name, "nodeIP": n.node_ip,
                           "hostVeth": n.host_veth, "dataDir": n.data_dir} for n in self.nodes]}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> NodesPlan:
        network = ipaddress.IPv4Network(document["nodesCIDR"])
        return cls(bridge=document["bridge"], nodes_cidr=str(network), host_ip=document["hostIP"],
                   prefixlen=network.prefixlen,
                   nodes=tuple(NodeSpec(index=n["index"], name=n["name"], node_ip=n["nodeIP"],
                                        host_veth=n["hostVeth"], data_dir=n["dataDir"]) for n in document["nodes"]))


def node_name(first: str, index: int) -> str:
    """Node i's name: node 1's name with `-i` appended (`debian` → `debian-2`), a valid Node name."""
    name = f"{first}-{index}"
    if problems := is_dns1123_subdomain(name):
        raise PlanError(f"node name {name!r} derived from {first!r} is not a valid DNS-1123 subdomain: "
                        f"{'; '.join(problems)}")
    return name


def plan(count: int, *, first_name: str, cluster_cidr: str, data_dir: str,
         nodes_cidr: str = DEFAULT_NODES_CIDR) -> NodesPlan:
    """The plan for nodes 2..count (an empty `nodes` for count 1)."""
    if count < 1:
        raise PlanError("--nodes must be at least 1")
    try:
        network = ipaddress.IPv4Network(nodes_cidr, strict=True)
    except ValueError as exc:
        raise PlanError(f"--nodes-cidr: {exc}") from None
    hosts = list(network.hosts())
    if len(hosts) < count:
        raise PlanError(f"--nodes-cidr {nodes_cidr} has room for {len(hosts)} nodes, not {count}")
    if network.overlaps(ipaddress.IPv4Network(cluster_cidr)):
        raise PlanError(f"--nodes-cidr {nodes_cidr} overlaps the cluster CIDR {cluster_cidr}")
    nodes = []
    for index in range(2, count + 1):
        name = node_name(first_name, index)
        nodes.append(NodeSpec(index=index, name=name, node_ip=str(hosts[index - 1]),
                              host_veth=f"{HOST_VETH_PREFIX}{index}",
                              data_dir=os.path.join(data_dir, NODES_DIR, name)))
    return NodesPlan(bridge=BRIDGE, nodes_cidr=str(network), host_ip=str(hosts[0]), prefixlen=network.prefixlen,
                     nodes=tuple(nodes))


def server_url(plan: NodesPlan, port: int) -> str:
    return f"https://{plan.host_ip}:{port}"


def agent_argv(node: NodeSpec, *, python: str, server: str, cluster_cidr: str,
               config_file: str | None, cluster_dns: str = "", cluster_domain: str = "",
               serve_dns: bool = True, pod_network: str = "", network_plugin: str = "",
               cni_bin_dir: str = "") -> list[str]:
    """`slimkube agent` for `node`, exactly as a worker host joins (`--server URL --token-file FILE`: the CA
    fetched from /cacerts is checked against the token's hash, then the token sent; no --pod-cidr: the Node
    gets one from the node IPAM controller). In CNI mode each node has its own configuration directory
    under its data dir: the nodes share this host's filesystem, and each default list names its own pod CIDR."""
    argv = [python, "-m", "slimkube.cli", "agent", "--server", server, "--token-file", node.token_file,
            "--node-name", node.name, "--node-ip", node.node_ip, "--cluster-cidr", cluster_cidr,
            "--data-dir", node.data_dir]
    argv += ["--pod-network", pod_network] if pod_network else []
    argv += ["--network-plugin", network_plugin] if network_plugin else []
    argv += ["--cni-conf-dir", os.path.join(node.data_dir, "cni", "net.d")] if network_plugin == "cni" else []
    argv += ["--cni-bin-dir", cni_bin_dir] if cni_bin_dir else []
    argv += (["--cluster-dns", cluster_dns] if cluster_dns else []) + \
        (["--cluster-domain", cluster_domain] if cluster_domain else []) + ([] if serve_dns else ["--no-serve-dns"])
    return argv + (["--config", config_file] if config_file else [])


def proxy_argv(node: NodeSpec, *, python: str, server: str, cluster_cidr: str,
               config_file: str | None) -> list[str]:
    """`slimkube proxy` for `node`, joining the same way as its agent."""
    argv = [python, "-m", "slimkube.cli", "proxy", "--server", server, "--token-file", node.token_file,
            "--hostname-override", node.name, "--cluster-cidr", cluster_cidr, "--data-dir", node.data_dir]
    return argv + (["--config", config_file] if config_file else [])


def in_netns(netns: str, argv: list[str]) -> list[str]:
    """`ip netns exec` replaces itself with the command, so the child's pid is the command's."""
    return ["ip", "netns", "exec", netns, *argv]


def kubelet_listen_address(address: str, internal_ip: str) -> str:
    """Where `up`'s kubelet listens: as configured when that is a wildcard or its InternalIP, else its InternalIP.
    The API server dials a kubelet at the InternalIP it reports (logs, exec), so a kubelet.yaml `address` of
    127.0.0.1 on a node whose InternalIP is another address would leave it unreachable."""
    return address if address in ("0.0.0.0", "::", internal_ip) else internal_ip
