"""The kube-proxy's configuration: a YAML KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1, upstream
pkg/proxy/apis/config/v1alpha1 types and defaults.go) with command-line flags on top, as upstream's
cmd/kube-proxy/app/server.go does (flags override the file).

Same shape as the kubelet's loader (nodeagent/config.py; both read, check values and overlay flags with
control/util/componentconfig.py): a table from YAML name to dataclass field, unknown fields refused with the
list of known ones, so a typo never leaves a node proxying with defaults nobody chose. Nested sections (`iptables`,
`clientConnection`, `conntrack`) are addressed by dotted names ("iptables.syncPeriod").

Only `mode: iptables` (or empty, upstream's Linux default) is accepted: there is no IPVS in these kernels
and no nftables proxier here. A few upstream fields that change nothing in slimkube (client QPS, content
types, feature gates, ...) are accepted so kubeadm-style files load, and `ignored()` names them so the
daemon can log that they had no effect.

`node_config` is the pure part of start-up (upstream server.go NewProxyServer + detectNodeIPs): the node's
name is hostnameOverride or the hostname, its IPs the Node object's InternalIP addresses when the Node
exists, else bindAddress when it is a specific address, else the host's own addresses. `conntrack_sysctls`
decides the conntrack sysctls as server_linux.go setupConntrack does (0 or unset leaves the kernel's value).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from control.api.typed.core import Node
from control.util.componentconfig import ConfigError, convert, read_document, with_overrides
from proxy.model import NodeConfig

API_VERSION = "kubeproxy.config.k8s.io/v1alpha1"
KIND = "KubeProxyConfiguration"
MODES = ("", "iptables")


@dataclass(frozen=True)
class ConntrackConfig:
    """conntrack.* (upstream KubeProxyConntrackConfiguration); zero means "leave the kernel's value"."""

    max_per_core: int = 32768
    min: int = 131072
    tcp_established_timeout: float = 24 * 3600.0
    tcp_close_wait_timeout: float = 3600.0
    tcp_be_liberal: bool = False
    udp_timeout: float = 0.0
    udp_stream_timeout: float = 0.0


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the proxy is told; defaults are upstream's v1alpha1 defaults."""

    bind_address: str = "0.0.0.0"
    healthz_bind_address: str = "0.0.0.0:10256"   # "" disables the health server
    metrics_bind_address: str = "127.0.0.1:10249"  # "" disables the metrics server
    cluster_cidr: str = ""
    hostname_override: str = ""
    mode: str = "iptables"
    masquerade_all: bool = False
    masquerade_bit: int = 14
    min_sync_period: float = 1.0
    sync_period: float = 30.0
    localhost_nodeports: bool = True
    nodeport_addresses: tuple[str, ...] = ()
    kubeconfig: str = ""
    config_sync_period: float = 15 * 60.0
    conntrack: ConntrackConfig = field(default_factory=ConntrackConfig)
    ignored: tuple[str, ...] = ()  # upstream fields given in the file that have no effect here

    @property
    def node_name(self) -> str:
        return (self.hostname_override or socket.gethostname()).strip().lower()


_Parser = Any
# YAML name → (field, parser); "conntrack.x" fields go to ProxyConfig.conntrack.
_FIELDS: dict[str, tuple[str, _Parser]] = {
    "bindAddress": ("bind_address", str),
    "healthzBindAddress": ("healthz_bind_address", str),
    "metricsBindAddress": ("metrics_bind_address", str),
    "clusterCIDR": ("cluster_cidr", str),
    "hostnameOverride": ("hostname_override", str),
    "mode": ("mode", str),
    "iptables.masqueradeAll": ("masquerade_all", bool),
    "iptables.masqueradeBit": ("masquerade_bit", int),
    "iptables.minSyncPeriod": ("min_sync_period", "duration"),
    "iptables.syncPeriod": ("sync_period", "duration"),
    "iptables.localhostNodePorts": ("localhost_nodeports", bool),
    "nodePortAddresses": ("nodeport_addresses", "strings"),
    "clientConnection.kubeconfig": ("kubeconfig", str),
    "configSyncPeriod": ("config_sync_period", "duration"),
    "conntrack.maxPerCore": ("max_per_core", int),
    "conntrack.min": ("min", int),
    "conntrack.tcpEstablishedTimeout": ("tcp_established_timeout", "duration"),
    "conntrack.tcpCloseWaitTimeout": ("tcp_close_wait_timeout", "duration"),
    "conntrack.tcpBeLiberal": ("tcp_be_liberal", bool),
    "conntrack.udpTimeout": ("udp_timeout", "duration"),
    "conntrack.udpStreamTimeout": ("udp_stream_timeout", "duration"),
}
_SECTIONS = ("iptables", "clientConnection", "conntrack")
# Upstream fields accepted but without effect here (reported by the daemon at start).
_NO_EFFECT = frozenset({
    "clientConnection.acceptContentTypes", "clientConnection.contentType", "clientConnection.qps",
    "clientConnection.burst", "featureGates", "oomScoreAdj", "portRange", "enableProfiling", "logging",
    "showHiddenMetricsForVersion", "detectLocalMode", "detectLocal", "ipvs", "nftables", "winkernel",
    "iptables.syncPeriodJitter",
})


def _flatten(document: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """(dotted name, value) for each field; the known sections are descended into."""
    for name, value in document.items():
        if name in _SECTIONS and value is not None:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{name}: expected a mapping")
            for inner, inner_value in value.items():
                yield f"{name}.{inner}", inner_value
        else:
            yield name, value


def from_document(document: Mapping[str, Any], base: ProxyConfig | None = None) -> ProxyConfig:
    """A config from a parsed KubeProxyConfiguration document, on top of `base` (defaults if None)."""
    if not isinstance(document, Mapping):
        raise ConfigError("the config file must hold a mapping (a KubeProxyConfiguration)")
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, KIND) or api_version not in (None, API_VERSION):
        raise ConfigError(f"expected kind {KIND} and apiVersion {API_VERSION}, got {kind!r} {api_version!r}")
    config = base or ProxyConfig()
    changes: dict[str, Any] = {}
    conntrack: dict[str, Any] = {}
    ignored: list[str] = []
    for name, value in _flatten({k: v for k, v in document.items() if k not in ("kind", "apiVersion")}):
        if name in _NO_EFFECT:
            ignored.append(name)
            continue
        if name not in _FIELDS:
            raise ConfigError(f"unknown field {name!r} (known: {', '.join(sorted(_FIELDS))})")
        attr, parser = _FIELDS[name]
        (conntrack if name.startswith("conntrack.") else changes)[attr] = convert(name, parser, value)
    changes["conntrack"] = dataclasses.replace(config.conntrack, **conntrack)
    changes["ignored"] = tuple(ignored)
    return validate(dataclasses.replace(config, **changes))


def load(path: str | None, *, overrides: Mapping[str, Any] | None = None) -> ProxyConfig:
    """The config file at `path` (none: defaults), then `overrides` (from flags; None values ignored)."""
    config = from_document(read_document(path), ProxyConfig()) if path else ProxyConfig()
    return validate(with_overrides(config, overrides))


def split_host_port(value: str, *, name: str) -> tuple[str, int]:
    """("0.0.0.0", 10256) from "0.0.0.0:10256" (IPv6 as "[::]:10256"), naming the field when it is wrong."""
    host, sep, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError("expected host:port")
        ipaddress.ip_address(host)
    except ValueError as exc:
        raise ConfigError(f"{name}: {value!r} is not an IP:port ({exc})") from None
    return host, int(port)


def validate(config: ProxyConfig) -> ProxyConfig:
    """Refuse values the proxy cannot run with, naming the field (upstream validation/validation.go)."""
    if config.mode not in MODES:
        raise ConfigError(f"mode: {config.mode!r} is not supported; slimkube's kube-proxy runs only in "
                          "\"iptables\" mode (no IPVS in this kernel, no nftables proxier)")
    try:
        ipaddress.ip_address(config.bind_address)
    except ValueError as exc:
        raise ConfigError(f"bindAddress: {exc}") from None
    for name, value in (("healthzBindAddress", config.healthz_bind_address),
                        ("metricsBindAddress", config.metrics_bind_address)):
        if value:
            split_host_port(value, name=name)
    if config.cluster_cidr:
        try:
            ipaddress.ip_network(config.cluster_cidr, strict=True)
        except ValueError as exc:
            raise ConfigError(f"clusterCIDR: {exc}") from None
    for entry in config.nodeport_addresses:
        if entry != "primary":
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as exc:
                raise ConfigError(f"nodePortAddresses: {exc}") from None
    if not 0 <= config.masquerade_bit <= 31:
        raise ConfigError(f"iptables.masqueradeBit: {config.masquerade_bit} must be in [0, 31]")
    if config.sync_period <= 0:
        raise ConfigError("iptables.syncPeriod: must be greater than 0")
    if config.min_sync_period > config.sync_period:
        raise ConfigError("iptables.minSyncPeriod: must not be greater than iptables.syncPeriod")
    if config.conntrack.max_per_core < 0 or config.conntrack.min < 0:
        raise ConfigError("conntrack.maxPerCore and conntrack.min must not be negative")
    if not config.node_name:
        raise ConfigError("hostnameOverride: empty, and this host has no name")
    return config


def _addresses(node: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(entry.address for entry in Node(node).status.addresses if entry.type == "InternalIP" and entry.address)


def node_config(config: ProxyConfig, *, node: Mapping[str, Any] | None,
                host_addresses: Iterable[str]) -> NodeConfig:
    """The NodeConfig the renderer works with (see the module notes for where the node's IPs come from)."""
    node_ips = _addresses(node) if node is not None else ()
    if not node_ips and not ipaddress.ip_address(config.bind_address).is_unspecified:
        node_ips = (config.bind_address,)
    if not node_ips:
        node_ips = tuple(a for a in host_addresses if not ipaddress.ip_address(a).is_loopback)
    nodeport_addresses: list[str] = []
    for entry in config.nodeport_addresses:  # "primary": the node's own IPs (upstream 1.29+)
        nodeport_addresses += [f"{ip}/32" for ip in node_ips] if entry == "primary" else [entry]
    return NodeConfig(node_name=config.node_name, node_ips=node_ips, cluster_cidr=config.cluster_cidr,
                      masquerade_all=config.masquerade_all, masquerade_bit=config.masquerade_bit,
                      nodeport_addresses=tuple(nodeport_addresses),
                      localhost_nodeports=config.localhost_nodeports)


def conntrack_sysctls(conntrack: ConntrackConfig, *, cpus: int) -> dict[str, int]:
    """The sysctls (name under /proc/sys → value) upstream's setupConntrack would write; zero fields are
    left alone. nf_conntrack_max is max(maxPerCore × cpus, min)."""
    result: dict[str, int] = {}
    if conntrack.max_per_core > 0:
        result["net/netfilter/nf_conntrack_max"] = max(conntrack.max_per_core * cpus, conntrack.min)
    for name, seconds in (("nf_conntrack_tcp_timeout_established", conntrack.tcp_established_timeout),
                          ("nf_conntrack_tcp_timeout_close_wait", conntrack.tcp_close_wait_timeout),
                          ("nf_conntrack_udp_timeout", conntrack.udp_timeout),
                          ("nf_conntrack_udp_timeout_stream", conntrack.udp_stream_timeout)):
        if seconds > 0:
            result[f"net/netfilter/{name}"] = int(seconds)
    if conntrack.tcp_be_liberal:
        result["net/netfilter/nf_conntrack_tcp_be_liberal"] = 1
    return result
