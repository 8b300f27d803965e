"""The kubelet's configuration: a YAML file with upstream KubeletConfiguration field names
(kubelet.config.k8s.io/v1beta1) where a field exists, slimkube's own names where it does not, and
command-line flags on top (as upstream: flags override the config file).

Durations are Go duration strings as upstream writes them ("10s", "1m30s", "500ms"); bare numbers are
seconds. Unknown fields are an error. Reading, value checks and the flag overlay are shared with the
proxy's config (control/util/componentconfig.py).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from control.apimachinery.quantity import Quantity
from control.util.componentconfig import ConfigError, convert, read_document, with_overrides
from nodeagent import eviction
from nodeagent.logs import DEFAULT_MAX_FILES, DEFAULT_MAX_SIZE
from nodeagent.network.backends.desired import Backend
from nodeagent.network.manager import NetworkConfig

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"
DEFAULT_DATA_DIR = "/var/lib/slimkube"

@dataclass(frozen=True)
class KubeletConfig:
    """Everything the kubelet is told. Field names are the snake_case of the YAML names in `_FIELDS`."""

    node_name: str = field(default_factory=lambda: socket.gethostname().lower())
    data_dir: str = DEFAULT_DATA_DIR
    address: str = "0.0.0.0"  # where the kubelet's HTTP API listens
    port: int = 10250
    node_ip: str = ""  # the InternalIP reported; "" = the address the host routes the API server through
    pod_cidr: str = ""  # "" = whatever the Node object says (spec.podCIDR), else the cluster CIDR's /24 for us
    pod_bridge: str = "cbr0"
    veth_prefix: str = "veth"
    cluster_cidr: str = "10.244.0.0/16"  # pod traffic inside it is not masqueraded (network/rules.py)
    pod_forward_chain: str = "KUBE-POD-FORWARD"  # our iptables chains; tests and `down` use their own names
    pod_masquerade_chain: str = "KUBE-POD-MASQ"
    # how this node reaches other nodes' pods (nodeagent/network/backends/): vxlan (flannel's default),
    # host-gw or none; the VXLAN device's name (flannel's flannel.1; tests give their own)
    pod_network: str = "vxlan"
    vxlan_device: str = "flannel.1"
    # how a pod's interface is made: the built-in bridge/veth/IPAM, or the CNI plugins of the first
    # configuration list in cni_conf_dir (nodeagent/network/cni/), found in cni_bin_dir (Debian's path)
    network_plugin: str = "builtin"
    cni_conf_dir: str = "/etc/cni/net.d"
    cni_bin_dir: str = "/usr/lib/cni"
    max_pods: int = 110
    static_pod_path: str = ""
    static_pod_url: str = ""
    file_check_frequency: float = 20.0
    http_check_frequency: float = 20.0
    sync_frequency: float = 60.0  # periodic resync of every pod worker
    node_status_update_frequency: float = 10.0
    node_lease_duration_seconds: int = 40
    pleg_relist_period: float = 1.0
    pleg_relist_threshold: float = 180.0  # relist older than this → the kubelet reports itself unhealthy
    crash_loop_backoff_initial: float = 10.0
    crash_loop_backoff_max: float = 300.0
    image_pull_timeout: float = 120.0
    cluster_domain: str = "cluster.local"
    # the pods' nameserver under dnsPolicy ClusterFirst: the cluster DNS Service's address, the service CIDR's
    # tenth (`agent --cluster-dns`; `up` derives it from --service-cidr). Empty: pods fall back to Default.
    cluster_dns: tuple[str, ...] = ()
    resolv_conf: str = "/etc/resolv.conf"  # the node's resolver config that pods and forwarded names use
    labels: Mapping[str, str] = field(default_factory=dict)  # extra node labels (--node-labels)
    # garbage collection (nodeagent/gc/): upstream's image GC fields and defaults; the container GC's
    # policy is upstream's flags (--minimum-container-ttl-duration, --maximum-dead-containers-per-container,
    # --maximum-dead-containers) and both periods are upstream constants, here configurable
    image_gc_high_threshold_percent: int = 85  # 100 turns the image GC off, as upstream
    image_gc_low_threshold_percent: int = 80
    image_minimum_gc_age: float = 120.0
    image_gc_period: float = 300.0
    container_gc_period: float = 60.0
    minimum_container_ttl_duration: float = 0.0
    maximum_dead_containers_per_container: int = 1  # < 0: no limit
    maximum_dead_containers: int = -1  # < 0: no limit
    # hard eviction thresholds: only the MemoryPressure/DiskPressure conditions (nodeagent/eviction.py)
    eviction_hard: Mapping[str, str] = field(default_factory=lambda: dict(eviction.DEFAULT_EVICTION_HARD))
    # log rotation (nodeagent/logs.py): upstream's fields and defaults, carried out by Docker's json-file driver
    container_log_max_size: int = DEFAULT_MAX_SIZE  # bytes; the file is a quantity ("10Mi")
    container_log_max_files: int = DEFAULT_MAX_FILES

    @property
    def pods_dir(self) -> str:
        return f"{self.data_dir}/kubelet/pods"

    @property
    def state_dir(self) -> str:
        return f"{self.data_dir}/kubelet"

    @property
    def cni_dir(self) -> str:
        """CNI mode's attachment cache (`results/`) and the default list's host-local store (`networks/`)."""
        return f"{self.state_dir}/cni"

    @property
    def local_path_dir(self) -> str:
        """Where the built-in local-path provisioner keeps this node's volumes (k3s: <data dir>/storage)."""
        return f"{self.data_dir}/storage"

    def network(self, pod_cidr: str) -> NetworkConfig:
        """The pod network of this node once its podCIDR is known (the kubelet's, and `slimkube down`'s)."""
        return NetworkConfig(pod_cidr=pod_cidr, cluster_cidr=self.cluster_cidr, bridge=self.pod_bridge,
                             veth_prefix=self.veth_prefix, forward_chain=self.pod_forward_chain,
                             masq_chain=self.pod_masquerade_chain)


POD_NETWORKS = tuple(backend.value for backend in Backend)  # vxlan, host-gw, none
NETWORK_PLUGINS = ("builtin", "cni")

# YAML name → (dataclass field, parser). Upstream's KubeletConfiguration names first, then ours.
_Parser = Any
_FIELDS: dict[str, tuple[str, _Parser]] = {
    "address": ("address", str),
    "port": ("port", int),
    "podCIDR": ("pod_cidr", str),
    "maxPods": ("max_pods", int),
    "staticPodPath": ("static_pod_path", str),
    "staticPodURL": ("static_pod_url", str),
    "fileCheckFrequency": ("file_check_frequency", "duration"),
    "httpCheckFrequency": ("http_check_frequency", "duration"),
    "syncFrequency": ("sync_frequency", "duration"),
    "nodeStatusUpdateFrequency": ("node_status_update_frequency", "duration"),
    "nodeLeaseDurationSeconds": ("node_lease_duration_seconds", int),
    "clusterDomain": ("cluster_domain", str),
    "clusterDNS": ("cluster_dns", "strings"),
    "resolvConf": ("resolv_conf", str),
    "runtimeRequestTimeout": ("image_pull_timeout", "duration"),
    "imageGCHighThresholdPercent": ("image_gc_high_threshold_percent", int),
    "imageGCLowThresholdPercent": ("image_gc_low_threshold_percent", int),
    "imageMinimumGCAge": ("image_minimum_gc_age", "duration"),
    "evictionHard": ("eviction_hard", "mapping"),
    "containerLogMaxSize": ("container_log_max_size", "quantity"),
    "containerLogMaxFiles": ("container_log_max_files", int),
    # slimkube's own (no upstream KubeletConfiguration field): flags upstream, or not configurable there
    "nodeName": ("node_name", str),
    "nodeIP": ("node_ip", str),
    "dataDir": ("data_dir", str),
    "podBridge": ("pod_bridge", str),
    "vethPrefix": ("veth_prefix", str),
    "clusterCIDR": ("cluster_cidr", str),
    "podForwardChain": ("pod_forward_chain", str),
    "podMasqueradeChain": ("pod_masquerade_chain", str),
    "podNetwork": ("pod_network", str),
    "vxlanDevice": ("vxlan_device", str),
    "networkPlugin": ("network_plugin", str),
    "cniConfDir": ("cni_conf_dir", str),
    "cniBinDir": ("cni_bin_dir", str),
    "plegRelistPeriod": ("pleg_relist_period", "duration"),
    "plegRelistThreshold": ("pleg_relist_threshold", "duration"),
    "crashLoopBackOffInitial": ("crash_loop_backoff_initial", "duration"),
    "crashLoopBackOffMax": ("crash_loop_backoff_max", "duration"),
    "nodeLabels": ("labels", "mapping"),
    "imageGCPeriod": ("image_gc_period", "duration"),
    "containerGCPeriod": ("container_gc_period", "duration"),
    "minimumContainerTTLDuration": ("minimum_container_ttl_duration", "duration"),
    "maximumDeadContainersPerContainer": ("maximum_dead_containers_per_container", int),
    "maximumDeadContainers": ("maximum_dead_containers", int),
}


def from_document(document: Mapping[str, Any], base: KubeletConfig | None = None) -> KubeletConfig:
    """A config from a parsed KubeletConfiguration document, on top of `base` (defaults if None)."""
    if not isinstance(document, Mapping):
        raise ConfigError("the config file must hold a mapping (a KubeletConfiguration)")
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, KIND) or api_version not in (None, API_VERSION):
        raise ConfigError(f"expected kind {KIND} and apiVersion {API_VERSION}, got {kind!r} {api_version!r}")
    changes: dict[str, Any] = {}
    for name, value in document.items():
        if name in ("kind", "apiVersion"):
            continue
        if name not in _FIELDS:
            raise ConfigError(f"unknown field {name!r} (known: {', '.join(sorted(_FIELDS))})")
        attr, parser = _FIELDS[name]
        changes[attr] = _bytes(name, value) if parser == "quantity" else convert(name, parser, value)
    return validate(dataclasses.replace(base or KubeletConfig(), **changes))


def _bytes(name: str, value: Any) -> int:
    """Bytes from a resource quantity ("10Mi", "500k") as upstream's size fields take, or a plain integer."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{name}: expected a quantity such as \"10Mi\", got {value!r}")
    try:
        return Quantity.parse(str(value)).value()
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def load(path: str | None, *, overrides: Mapping[str, Any] | None = None) -> KubeletConfig:
    """The config file at `path` (none: defaults), then `overrides` (from flags; None values ignored)."""
    config = from_document(read_document(path), KubeletConfig()) if path else KubeletConfig()
    return validate(with_overrides(config, overrides))


def validate(config: KubeletConfig) -> KubeletConfig:
    """Refuse values the kubelet cannot run with, naming the field."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", config.node_name):
        raise ConfigError(f"nodeName: {config.node_name!r} is not a valid DNS-1123 subdomain")
    if not 0 <= config.port <= 65535:
        raise ConfigError(f"port: {config.port} is out of range")
    if config.pod_cidr:
        try:
            network = ipaddress.ip_network(config.pod_cidr)
        except ValueError as exc:
            raise ConfigError(f"podCIDR: {exc}") from None
        if network.version != 4 or network.num_addresses < 4:
            raise ConfigError("podCIDR: must be an IPv4 network of at least 4 addresses")
    try:
        config.network(config.pod_cidr or default_pod_cidr(config.cluster_cidr))
    except ValueError as exc:
        raise ConfigError(f"pod network (clusterCIDR, podCIDR, podBridge, vethPrefix, chains): {exc}") from None
    if config.pod_network not in POD_NETWORKS:
        raise ConfigError(f"podNetwork: {config.pod_network!r} is not one of {', '.join(POD_NETWORKS)}")
    if config.network_plugin not in NETWORK_PLUGINS:
        raise ConfigError(f"networkPlugin: {config.network_plugin!r} is not one of {', '.join(NETWORK_PLUGINS)}")
    for name, value in (("cniConfDir", config.cni_conf_dir), ("cniBinDir", config.cni_bin_dir)):
        if not value:
            raise ConfigError(f"{name}: must not be empty")
    if not 0 < len(config.vxlan_device) <= 15 or "/" in config.vxlan_device or " " in config.vxlan_device:
        raise ConfigError(f"vxlanDevice: {config.vxlan_device!r} is not an interface name of 1 to 15 characters")
    if config.node_ip:
        try:
            ipaddress.ip_address(config.node_ip)
        except ValueError as exc:
            raise ConfigError(f"nodeIP: {exc}") from None
    for address in config.cluster_dns:
        try:
            ipaddress.ip_address(address)
        except ValueError as exc:
            raise ConfigError(f"clusterDNS: {exc}") from None
    if config.cluster_domain and not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", config.cluster_domain):
        raise ConfigError(f"clusterDomain: {config.cluster_domain!r} is not a valid DNS-1123 subdomain")
    if len(config.pod_bridge) > 15 or not config.pod_bridge:
        raise ConfigError("podBridge: an interface name of 1 to 15 characters")
    if config.max_pods < 1:
        raise ConfigError("maxPods: must be at least 1")
    if config.crash_loop_backoff_initial <= 0 or config.crash_loop_backoff_max < config.crash_loop_backoff_initial:
        raise ConfigError("crashLoopBackOffInitial must be > 0 and not above crashLoopBackOffMax")
    if config.pleg_relist_period <= 0:
        raise ConfigError("plegRelistPeriod: must be > 0")
    _validate_gc(config)
    try:
        eviction.parse_thresholds(config.eviction_hard)
    except ValueError as exc:
        raise ConfigError(f"evictionHard: {exc}") from None
    if config.container_log_max_files < 2:  # upstream: "must be greater than 1"
        raise ConfigError(f"containerLogMaxFiles: {config.container_log_max_files} must be greater than 1")
    if config.container_log_max_size < 1:
        raise ConfigError(f"containerLogMaxSize: {config.container_log_max_size} must be greater than 0")
    return config


def _validate_gc(config: KubeletConfig) -> None:
    """upstream's KubeletConfiguration validation of the image GC thresholds, and positive periods."""
    high, low = config.image_gc_high_threshold_percent, config.image_gc_low_threshold_percent
    if not 0 <= high <= 100:
        raise ConfigError(f"imageGCHighThresholdPercent: {high} must be between 0 and 100, inclusive")
    if not 0 <= low <= 100:
        raise ConfigError(f"imageGCLowThresholdPercent: {low} must be between 0 and 100, inclusive")
    if low >= high:
        raise ConfigError(f"imageGCLowThresholdPercent ({low}) must be less than imageGCHighThresholdPercent ({high})")
    for name, value in (("imageGCPeriod", config.image_gc_period), ("containerGCPeriod", config.container_gc_period)):
        if value <= 0:
            raise ConfigError(f"{name}: must be > 0")


def default_pod_cidr(cluster_cidr: str) -> str:
    """The cluster CIDR's first /24 (or itself if smaller): `slimkube up`'s node, and what validation checks."""
    network = ipaddress.ip_network(cluster_cidr)
    return str(next(network.subnets(new_prefix=24)) if network.prefixlen < 24 else network)
