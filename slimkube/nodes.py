"""The address plan of `slimkube up --nodes N`: pure decisions, no I/O.

Node 1 is `up`'s own kubelet in the host's network namespace, as with one node. Nodes 2..N each live in a
network namespace named after the node, joined to the host by a veth pair whose host end sits on one node
bridge (kind's and k3d's one-host clusters do the same with containers on a Docker network):

    host netns:  bridge `slimnodes0` 10.250.0.1/24 ── veth `slimnode2` ─┐
                                                   └─ veth `slimnode3` ─┼─┐
    netns NAME-2: eth0 10.250.0.2/24, default via 10.250.0.1  ◄────────┘ │
    netns NAME-3: eth0 10.250.0.3/24, default via 10.250.0.1  ◄──────────┘

With `--node-subnets K` the node network is cut into K equal subnets joined by a router namespace,
hosts that share no L2 (as workers in different racks or clouds): subnet 0 is the node bridge, where this
host (node 1) and the router's first leg sit; subnets 1..K-1 are bridges inside the router namespace, the
router being each one's gateway; nodes 2..N go round-robin over the subnets (node i on subnet
(i - 1) mod K). Nodes on subnet 0 and this host route the rest of the node network via the router; the
router's default route is this host, so egress leaves as it does with one subnet:

    host netns:   slimnodes0 10.250.0.1/25 ── slimnode3 ── netns NAME-3 eth0 10.250.0.2/25
                         └── slimnoder ── netns NAME-router eth0 10.250.0.126/25
                                            └─ bridge subnet1 10.250.0.129/25 ── slimnode2 ── netns NAME-2
                                                                                 eth0 10.250.0.130/25

The node namespaces are plain hosts: nothing here routes pods. Each node's pod CIDR comes from
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
    node_ip: str        # its eth0 address on its subnet
    host_veth: str      # the other end of its veth pair, on its subnet's bridge
    data_dir: str       # DIR/nodes/NAME: the agent's and proxy's data dir
    prefixlen: int = 24  # of its subnet
    gateway: str = ""   # its default route: this host on subnet 0, else the router
    subnet: int = 0     # which of the `--node-subnets`
    bridge_netns: str = ""  # where its subnet's bridge and `host_veth` live: "" = this host, else the router
    bridge: str = BRIDGE  # its subnet's bridge
    via_router: str = ""  # the router's address on subnet 0, for a node there when there are other subnets

    @property
    def netns(self) -> str:
        return self.name

    @property
    def token_file(self) -> str:
        """Where this node keeps the join token, as a worker host keeps it in a root-only file: its agent and
        proxy read it with --token-file, so it is on no command line."""
        return os.path.join(self.data_dir, TOKEN_FILE)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "nodeIP": self.node_ip, "hostVeth": self.host_veth,
                "dataDir": self.data_dir, "prefixLength": self.prefixlen, "gateway": self.gateway,
                "subnet": self.subnet, "bridgeNetns": self.bridge_netns, "bridge": self.bridge,
                "viaRouter": self.via_router}

    @classmethod
    def from_json(cls, document: dict[str, Any], *, host_ip: str, prefixlen: int) -> NodeSpec:
        """A node of a plan file; one written before subnets existed is on the node bridge behind `host_ip`."""
        return cls(index=document["index"], name=document["name"], node_ip=document["nodeIP"],
                   host_veth=document["hostVeth"], data_dir=document["dataDir"],
                   prefixlen=document.get("prefixLength", prefixlen), gateway=document.get("gateway", host_ip),
                   subnet=document.get("subnet", 0), bridge_netns=document.get("bridgeNetns", ""),
                   bridge=document.get("bridge", BRIDGE), via_router=document.get("viaRouter", ""))


@dataclass(frozen=True)
class Subnet:
    """Subnet 1..K-1 of `--node-subnets K`: a bridge inside the router namespace, the router its gateway."""

    index: int
    cidr: str
    bridge: str         # in the router namespace
    gateway: str        # the router's address on it


@dataclass(frozen=True)
class RouterSpec:
    """The namespace joining the subnets: its leg `eth0` on the node bridge, one bridge per other subnet."""

    netns: str
    host_veth: str      # the host end of its leg, on the node bridge
    address: str        # its leg's address on subnet 0
    subnets: tuple[Subnet, ...]

    def to_json(self) -> dict[str, Any]:
        return {"netns": self.netns, "hostVeth": self.host_veth, "address": self.address,
                "subnets": [{"index": s.index, "cidr": s.cidr, "bridge": s.bridge, "gateway": s.gateway}
                            for s in self.subnets]}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> RouterSpec:
        return cls(netns=document["netns"], host_veth=document["hostVeth"], address=document["address"],
                   subnets=tuple(Subnet(**s) for s in document["subnets"]))


@dataclass(frozen=True)
class NodesPlan:
    """Every node after the first, and the host side of the node network."""

    bridge: str
    nodes_cidr: str     # the whole node network (every subnet)
    host_ip: str
    prefixlen: int      # of subnet 0, this host's
    nodes: tuple[NodeSpec, ...]
    router: RouterSpec | None = None  # with `--node-subnets` K > 1

    def to_json(self) -> dict[str, Any]:
        return {"bridge": self.bridge, "nodesCIDR": self.nodes_cidr, "hostIP": self.host_ip,
                "prefixLength": self.prefixlen, "nodes": [n.to_json() for n in self.nodes],
                "router": self.router.to_json() if self.router else None}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> NodesPlan:
        network = ipaddress.IPv4Network(document["nodesCIDR"])
        prefixlen, host_ip = document.get("prefixLength", network.prefixlen), document["hostIP"]
        router = document.get("router")
        return cls(bridge=document["bridge"], nodes_cidr=str(network), host_ip=host_ip, prefixlen=prefixlen,
                   nodes=tuple(NodeSpec.from_json(n, host_ip=host_ip, prefixlen=prefixlen)
                               for n in document["nodes"]),
                   router=RouterSpec.from_json(router) if router else None)


def node_name(first: str, index: int) -> str:
    """Node i's name: node 1's name with `-i` appended (`debian` → `debian-2`), a valid Node name."""
    name = f"{first}-{index}"
    if problems := is_dns1123_subdomain(name):
        raise PlanError(f"node name {name!r} derived from {first!r} is not a valid DNS-1123 subdomain: "
                        f"{'; '.join(problems)}")
    return name


def plan(count: int, *, first_name: str, cluster_cidr: str, data_dir: str,
         nodes_cidr: str = DEFAULT_NODES_CIDR, subnets: int = 1) -> NodesPlan:
    """The plan for nodes 2..count (an empty `nodes` for count 1) over `subnets` subnets (module notes)."""
    if count < 1:
        raise PlanError("--nodes must be at least 1")
    if not 1 <= subnets <= count:
        raise PlanError(f"--node-subnets must be between 1 and --nodes ({count}), not {subnets}")
    try:
        network = ipaddress.IPv4Network(nodes_cidr, strict=True)
    except ValueError as exc:
        raise PlanError(f"--nodes-cidr: {exc}") from None
    if network.overlaps(ipaddress.IPv4Network(cluster_cidr)):
        raise PlanError(f"--nodes-cidr {nodes_cidr} overlaps the cluster CIDR {cluster_cidr}")
    extra_bits = (subnets - 1).bit_length()  # K subnets of equal size, the first 2^bits of the network
    if extra_bits and network.prefixlen + extra_bits > 30:
        raise PlanError(f"--nodes-cidr {nodes_cidr} is too small for {subnets} subnets")
    cut = list(network.subnets(prefixlen_diff=extra_bits))[:subnets]
    free = [list(subnet.hosts()) for subnet in cut]
    host_ip = free[0].pop(0)
    router_ips = [free[0].pop()] + [hosts.pop(0) for hosts in free[1:]] if subnets > 1 else []
    on_subnet = [(index - 1) % subnets for index in range(1, count + 1)]  # node i's subnet; node 1's is 0
    for k in range(subnets):
        if (wanted := on_subnet[1:].count(k)) > len(free[k]):
            raise PlanError(f"--nodes-cidr {nodes_cidr} has room for {len(free[k])} nodes on subnet {cut[k]}, "
                            f"not {wanted}")
    router = None if subnets == 1 else RouterSpec(
        netns=f"{first_name}-router", host_veth=f"{HOST_VETH_PREFIX}r", address=str(router_ips[0]),
        subnets=tuple(Subnet(index=k, cidr=str(cut[k]), bridge=f"subnet{k}", gateway=str(router_ips[k]))
                      for k in range(1, subnets)))
    nodes = []
    for index in range(2, count + 1):
        name, k = node_name(first_name, index), on_subnet[index - 1]
        in_router = router is not None and k > 0
        nodes.append(NodeSpec(index=index, name=name, node_ip=str(free[k].pop(0)),
                              host_veth=f"{HOST_VETH_PREFIX}{index}",
                              data_dir=os.path.join(data_dir, NODES_DIR, name), prefixlen=cut[k].prefixlen,
                              gateway=str(router_ips[k]) if in_router else str(host_ip), subnet=k,
                              bridge_netns=router.netns if router is not None and in_router else "",
                              bridge=f"subnet{k}" if in_router else BRIDGE,
                              via_router=router.address if router is not None and not in_router else ""))
    return NodesPlan(bridge=BRIDGE, nodes_cidr=str(network), host_ip=str(host_ip), prefixlen=cut[0].prefixlen,
                     nodes=tuple(nodes), router=router)


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
