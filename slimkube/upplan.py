"""What `slimkube up` runs, decided before anything starts: a pure function from the command's flags and a
few facts about this host to a frozen plan, which the command (slimkube/cli.py) then carries out.

The plan holds the API server's, the kubelet's and the kube-proxy's configurations, the addresses and
CIDRs they use, nodes 2..N of `--nodes N` (their address plan, slimkube/nodes.py) and which control plane
components are switched off. Deriving it:
1. `--service-cidr` / `--cluster-cidr` are networks without host bits, `--disable` names known components;
2. the kubelet's settings: its config file (`--config`, else DATA_DIR/kubelet.yaml when present), then the
   flags given; no clusterDNS from either means the service CIDR's tenth address, where kube-dns goes;
   no podCIDR: the node IPAM controller gives each Node one (the kubelets wait for it);
3. with `--nodes N`: the node network plan (over `--node-subnets` routed subnets), which node 1's
   InternalIP joins unless one is configured, and which needs the API server reachable from the node
   namespaces (`--bind-address` 0.0.0.0 or the host's node bridge address, which the server then
   advertises); host-gw over several subnets is allowed (its agents refuse the nodes they cannot reach
   directly, which is what such a cluster is for testing) with a note saying so;
4. the kubelet listens where the API server will dial it, its InternalIP, unless configured on a wildcard;
5. the kube-proxy: DATA_DIR/kube-proxy.yaml when present, with the kubelet's node name and cluster CIDR.
A value the plan cannot be built from raises `UpPlanError`, a usage error, before anything is started.

Upstream has no all-in-one command; the closest is k3s's pkg/cli/server/server.go, which likewise turns
its flags into the server's and the embedded agent's configurations before starting either.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from control.apiserver.controlplane.bootstrap import cluster_dns_ip
from control.apiserver.server import ServerConfig
from control.util.componentconfig import ConfigError, read_document, with_overrides
from nodeagent import config as kubelet_config
from nodeagent.config import KubeletConfig
from nodeagent.node_status import default_ip
from proxy import config as proxy_config
from proxy.config import ProxyConfig
from slimkube import nodes
from slimkube.controlplane import parse_disable
from slimkube.multinode import Join

KUBELET_CONFIG_FILE = "kubelet.yaml"  # in the data dir: the kubelet's KubeletConfiguration for `up` and `down`
PROXY_CONFIG_FILE = "kube-proxy.yaml"  # in the data dir: the proxy's KubeProxyConfiguration for `up`


class UpPlanError(ValueError):
    """A flag or config value `up` cannot run with; `flag` names the flag when one alone is at fault."""

    def __init__(self, message: str, *, flag: str | None = None) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class UpFlags:
    """The flags of `slimkube up` that shape the plan (None: not given)."""

    data_dir: str
    bind_address: str = "0.0.0.0"
    port: int = 6443
    datastore: str = "sqlite://"
    service_cidr: str = "10.96.0.0/12"
    cluster_cidr: str | None = None
    kubelet_port: int | None = None
    node_count: int = 1
    nodes_cidr: str = nodes.DEFAULT_NODES_CIDR
    node_subnets: int = 1
    disable: str = ""
    config_file: str | None = None
    node_name: str | None = None
    pod_cidr: str | None = None
    node_ip: str | None = None
    pod_network: str | None = None
    network_plugin: str | None = None
    cni_conf_dir: str | None = None
    cni_bin_dir: str | None = None
    cluster_dns: str | None = None
    cluster_domain: str | None = None
    serve_dns: bool = True
    admission_config_file: str | None = None


@dataclass(frozen=True)
class HostFacts:
    """What the plan needs from this host, read by `gather_facts`."""

    hostname: str  # the node name unless the flags or the kubelet's config file give one
    default_ip: str  # the address towards the default route: the InternalIP unless one is configured
    kubelet_document: Mapping[str, Any] | None  # the kubelet's config file, parsed; None: no file
    proxy_document: Mapping[str, Any] | None  # DATA_DIR/kube-proxy.yaml, parsed; None: no file


@dataclass(frozen=True)
class UpPlan:
    """Everything `up` starts, configured."""

    data_dir: str
    disabled: frozenset[str]  # control plane components and controllers switched off
    server: ServerConfig
    kubelet: KubeletConfig  # node 1, in this host's network namespace
    proxy: ProxyConfig  # node 1's kube-proxy
    nodes: nodes.NodesPlan | None  # nodes 2..N, each in its own namespace; None with one node
    serve_dns: bool  # each node runs its cluster DNS server beside its kubelet
    notes: tuple[str, ...] = ()  # what `up` says about a setting it changed

    def node_join(self, *, api_port: int, token: str) -> Join:
        """How nodes 2..N reach the API server once it runs (its port may have been chosen at start): through
        the node bridge address, with the node token, as worker hosts join."""
        assert self.nodes is not None
        return Join(server=nodes.server_url(self.nodes, api_port), token=token,
                    cluster_cidr=self.kubelet.cluster_cidr, cluster_dns=",".join(self.kubelet.cluster_dns),
                    cluster_domain=self.kubelet.cluster_domain, serve_dns=self.serve_dns,
                    pod_network=self.kubelet.pod_network, network_plugin=self.kubelet.network_plugin,
                    cni_bin_dir=self.kubelet.cni_bin_dir)


def kubelet_config_file(data_dir: str, config_file: str | None) -> str | None:
    """`up` and `down` read DATA_DIR/kubelet.yaml when no --config is given, so both see the same settings."""
    if config_file:
        return config_file
    candidate = os.path.join(data_dir, KUBELET_CONFIG_FILE)
    return candidate if os.path.exists(candidate) else None


def cluster_dns_flag(text: str | None) -> tuple[str, ...] | None:
    """`--cluster-dns a,b` as the kubelet's clusterDNS; None when not given."""
    return tuple(a.strip() for a in text.split(",") if a.strip()) if text else None


def with_default_cluster_dns(config: KubeletConfig, service_cidr: str) -> KubeletConfig:
    """No clusterDNS from the file or flags: the service CIDR's tenth address, where bootstrap puts kube-dns
    (`up` and `agent` alike)."""
    return config if config.cluster_dns else dataclasses.replace(config, cluster_dns=(cluster_dns_ip(service_cidr),))


def gather_facts(flags: UpFlags) -> HostFacts:
    """Read what the plan needs from this host; ConfigError when a config file cannot be read or parsed."""
    kubelet_file = kubelet_config_file(flags.data_dir, flags.config_file)
    proxy_file = os.path.join(flags.data_dir, PROXY_CONFIG_FILE)
    return HostFacts(hostname=socket.gethostname(), default_ip=default_ip(),
                     kubelet_document=read_document(kubelet_file) if kubelet_file else None,
                     proxy_document=read_document(proxy_file) if os.path.exists(proxy_file) else None)


def plan_up(flags: UpFlags, facts: HostFacts) -> UpPlan:
    """The plan for `flags` on a host with `facts` (steps 1-5 of the module notes); UpPlanError if none."""
    for flag, value in (("--service-cidr", flags.service_cidr), ("--cluster-cidr", flags.cluster_cidr)):
        try:
            if value is not None:
                ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise UpPlanError(str(exc), flag=flag) from None
    try:
        disabled = parse_disable(flags.disable)
    except ValueError as exc:
        raise UpPlanError(str(exc), flag="--disable") from None
    kubelet = _kubelet(flags, facts)
    node_plan = _nodes(flags, kubelet)
    if node_plan is not None and not kubelet.node_ip:  # every node's address on the one node network
        kubelet = dataclasses.replace(kubelet, node_ip=node_plan.host_ip)
    internal_ip = kubelet.node_ip or facts.default_ip  # what the kubelet will report (nodeagent/parts.py)
    notes: list[str] = []
    if node_plan is not None and node_plan.router is not None and kubelet.pod_network == "host-gw":
        notes.append(f"[up] --pod-network host-gw with --node-subnets {flags.node_subnets}: host-gw needs the nodes "
                     f"on one L2 subnet, so nodes on different subnets get no routes to each other's pods (their "
                     f"agents log the refusal); use --pod-network vxlan")
    if (listen := nodes.kubelet_listen_address(kubelet.address, internal_ip)) != kubelet.address:
        notes.append(f"[up] kubelet address {kubelet.address} is not the node's InternalIP {internal_ip}, which "
                     f"the API server dials: listening on {listen}")
        kubelet = dataclasses.replace(kubelet, address=listen)
    server = ServerConfig(data_dir=flags.data_dir, bind_address=flags.bind_address, port=flags.port,
                          datastore=flags.datastore, service_cidr=flags.service_cidr,
                          cluster_cidr=kubelet.cluster_cidr,
                          advertise_address=node_plan.host_ip if node_plan is not None else None,
                          enable_aggregator_routing=False,  # this host runs kube-proxy: ClusterIPs answer
                          admission_config_file=flags.admission_config_file)
    try:
        proxy = proxy_config.validate(with_overrides(
            proxy_config.from_document(facts.proxy_document, ProxyConfig())
            if facts.proxy_document is not None else ProxyConfig(),
            {"hostname_override": kubelet.node_name, "cluster_cidr": kubelet.cluster_cidr}))
    except ConfigError as exc:
        raise UpPlanError(str(exc)) from None
    return UpPlan(data_dir=flags.data_dir, disabled=disabled, server=server, kubelet=kubelet, proxy=proxy,
                  nodes=node_plan, serve_dns=flags.serve_dns, notes=tuple(notes))


def _kubelet(flags: UpFlags, facts: HostFacts) -> KubeletConfig:
    """Step 2: the config file, then the flags, then the cluster DNS address and pod CIDR defaults."""
    overrides = {"data_dir": flags.data_dir, "node_name": flags.node_name, "node_ip": flags.node_ip,
                 "port": flags.kubelet_port, "cluster_cidr": flags.cluster_cidr, "pod_cidr": flags.pod_cidr,
                 "pod_network": flags.pod_network, "network_plugin": flags.network_plugin,
                 "cni_conf_dir": flags.cni_conf_dir, "cni_bin_dir": flags.cni_bin_dir,
                 "cluster_dns": cluster_dns_flag(flags.cluster_dns), "cluster_domain": flags.cluster_domain}
    base = KubeletConfig(node_name=facts.hostname.lower())
    try:
        config = kubelet_config.validate(with_overrides(
            kubelet_config.from_document(facts.kubelet_document, base)
            if facts.kubelet_document is not None else base, overrides))
    except ConfigError as exc:
        raise UpPlanError(str(exc)) from None
    config = with_default_cluster_dns(config, flags.service_cidr)
    return config


def _nodes(flags: UpFlags, kubelet: KubeletConfig) -> nodes.NodesPlan | None:
    """Step 3: the address plan of nodes 2..N (slimkube/nodes.py), None for one node."""
    if flags.node_count == 1:
        if flags.node_subnets != 1:
            raise UpPlanError("--node-subnets needs --nodes N (N >= the number of subnets)", flag="--node-subnets")
        return None
    try:
        result = nodes.plan(flags.node_count, first_name=kubelet.node_name,
                            cluster_cidr=kubelet.cluster_cidr, data_dir=flags.data_dir, nodes_cidr=flags.nodes_cidr,
                            subnets=flags.node_subnets)
    except nodes.PlanError as exc:
        raise UpPlanError(str(exc)) from None
    if flags.bind_address not in ("0.0.0.0", result.host_ip):
        raise UpPlanError(f"--nodes needs the API server reachable from the node namespaces: --bind-address "
                          f"0.0.0.0 or {result.host_ip}, not {flags.bind_address}")
    return result
