"""The kube-proxy daemon: configuration → Proxier → informers → sync loop, plus health and metrics.

Upstream: cmd/kube-proxy/app/server.go (NewProxyServer, ProxyServer.Run) and server_linux.go (createProxier,
setupConntrack). Start-up, in order:
1. detect the iptables backend in use (control/util/iptables.py `detect`, upstream's wrapper logic);
2. read this node's Node object (its InternalIP addresses become the node IPs; without a Node, the
   host's addresses) and build the NodeConfig (proxy/config.py `node_config`);
3. kernel settings: net.ipv4.conf.all.route_localnet=1 when NodePorts answer on 127.0.0.1 (upstream
   proxier.go NewProxier does the same, kubernetes PR #90259), and the conntrack sysctls of setupConntrack;
4. the Proxier (proxy/proxier.py) with this process's ProxyMetrics;
5. the health and metrics listeners (proxy/server.py; a port in use fails here, before any rule is written);
6. shared informers on v1 services and discovery.k8s.io/v1 EndpointSlices (upstream's label selector:
   not headless, no other service proxy named) feeding the Proxier's handlers; once both have synced,
   `set_initialized()` (upstream: no sync before both caches are complete, or a restart would briefly
   delete the rules of services not listed yet), then the Proxier's loop runs on its own thread.

Ready (`wait_synced`, what `slimkube proxy` tells systemd with READY=1) once the first sync has written the
rules: before it, Services made while no proxy ran have no rules on this node yet.

`stop()` sets the stop event (informers and the sync loop end), joins the loop thread and closes the
listeners. The rules stay in the kernel: traffic keeps flowing while the proxy is down, and the next
start re-syncs them (upstream behaves the same; `--cleanup` is the way to remove them).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from control.client.errors import NotFound
from control.client.informer import InformerFactory
from control.client.kubeconfig import ClientConfig
from control.client.reflector import ListWatchClient
from control.client.rest import RESTClient
from control.util.iptables import Iptables, detect
from proxy.config import ProxyConfig, conntrack_sysctls, node_config, split_host_port
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig
from proxy.proxier import Proxier
from proxy.server import Health, ProxyHTTPServer

log = logging.getLogger(__name__)

# upstream cmd/kube-proxy: slices of headless Services, and of Services another proxy serves, are not watched
ENDPOINT_SLICE_SELECTOR = "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name"
SYNC_WAIT_SECONDS = 0.5  # how often the loop thread rechecks the informers while waiting for the first list
ROUTE_LOCALNET = "net/ipv4/conf/all/route_localnet"


class Sysctl(Protocol):
    def write(self, name: str, value: int) -> None: ...


class ProcSysctl:
    """Writes /proc/sys/<name> (the calling process's network namespace, for the net/ ones)."""

    def __init__(self, root: str = "/proc/sys") -> None:
        self.root = root

    def read(self, name: str) -> int:
        with open(os.path.join(self.root, name), encoding="ascii") as handle:
            return int(handle.read().split()[0])

    def write(self, name: str, value: int) -> None:
        with open(os.path.join(self.root, name), "w", encoding="ascii") as handle:
            handle.write(f"{value}\n")


def host_addresses() -> list[str]:
    """This host's IPv4 addresses (psutil), for a node the API server does not know yet."""
    import socket

    import psutil

    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET]


def apply_kernel_settings(node: NodeConfig, config: ProxyConfig, sysctl: Sysctl, *, cpus: int) -> None:
    """Step 3: route_localnet must succeed (NodePorts on localhost depend on it); a conntrack setting the
    kernel refuses is logged, as upstream logs and goes on when /sys is read-only."""
    if node.nodeports_on_localhost:
        log.info("setting route_localnet=1 so NodePorts answer on localhost; to change this set "
                 "iptables.localhostNodePorts: false or leave loopback out of nodePortAddresses")
        sysctl.write(ROUTE_LOCALNET, 1)
    for name, value in conntrack_sysctls(config.conntrack, cpus=cpus).items():
        try:
            sysctl.write(name, value)
        except OSError as exc:
            log.warning("cannot set %s=%d: %s", name, value, exc)


class APIClient(ListWatchClient, Protocol):
    """What the proxy asks of the API server (RESTClient): its Node, list/watch, and close."""

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def close(self) -> None: ...


def fetch_node(client: APIClient, name: str) -> dict[str, Any] | None:
    try:
        return client.get(f"/api/v1/nodes/{name}")
    except NotFound:
        return None


class ProxyServer:
    """One kube-proxy (see the module notes); `start()` returns once it serves, `stop()` ends it. The
    iptables backend, sysctl writer, host addresses and API client are detected/built unless given (tests)."""

    def __init__(self, config: ProxyConfig, client_config: ClientConfig, *, iptables: Iptables | None = None,
                 sysctl: Sysctl | None = None, addresses: Callable[[], Iterable[str]] = host_addresses,
                 client: APIClient | None = None) -> None:
        self.config = config
        self.client: APIClient = client or RESTClient(client_config,
                                                      user_agent=f"slimkube-proxy/{config.node_name}")
        self.iptables = iptables
        self.metrics = ProxyMetrics()
        self.stop_event = threading.Event()
        self.node: NodeConfig | None = None
        self.proxier: Proxier | None = None
        self.http: ProxyHTTPServer | None = None
        self._sysctl = sysctl or ProcSysctl()
        self._addresses = addresses
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            iptables = self.iptables = self.iptables or detect()
            node = self.node = node_config(self.config, node=fetch_node(self.client, self.config.node_name),
                                           host_addresses=self._addresses())
            log.info("kube-proxy for node %s (%s backend), node IPs %s, cluster CIDR %s", node.node_name,
                     iptables.mode.value, ", ".join(node.node_ips) or "none", node.cluster_cidr or "unset")
            for name in self.config.ignored:
                log.warning("config field %s has no effect in slimkube", name)
            apply_kernel_settings(node, self.config, self._sysctl, cpus=os.cpu_count() or 1)
            proxier = self.proxier = Proxier(node=node, iptables=iptables, metrics=self.metrics,
                                             min_sync_period=self.config.min_sync_period,
                                             sync_period=self.config.sync_period)
            self.http = ProxyHTTPServer(
                healthz_address=self._address(self.config.healthz_bind_address, "healthzBindAddress"),
                metrics_address=self._address(self.config.metrics_bind_address, "metricsBindAddress"),
                health=self.health, registry=self.metrics.registry, mode="iptables")
            self.http.start()
            factory = InformerFactory(self.client, resync_period=self.config.config_sync_period)
            factory.informer("v1", "services").add_event_handler(
                on_add=proxier.on_service_add, on_update=proxier.on_service_update,
                on_delete=proxier.on_service_delete)
            factory.informer("discovery.k8s.io/v1", "endpointslices", label_selector=ENDPOINT_SLICE_SELECTOR
                             ).add_event_handler(on_add=proxier.on_endpoint_slice_add,
                                                 on_update=proxier.on_endpoint_slice_update,
                                                 on_delete=proxier.on_endpoint_slice_delete)
            factory.start(self.stop_event)
            self._thread = threading.Thread(target=self._loop, args=(factory,), name="proxier", daemon=True)
            self._thread.start()
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _address(value: str, name: str) -> tuple[str, int] | None:
        return split_host_port(value, name=name) if value else None

    def _loop(self, factory: InformerFactory) -> None:
        while not factory.wait_for_sync(SYNC_WAIT_SECONDS):
            if self.stop_event.is_set():
                return
        assert self.proxier is not None
        self.proxier.set_initialized()
        log.info("services and endpoint slices listed; syncing rules")
        self.proxier.run(self.stop_event)

    def health(self) -> Health:
        """The proxier's verdict and the time of its last successful sync (from the metrics it keeps)."""
        healthy = self.proxier.healthy()[0] if self.proxier is not None else True
        last = self.metrics.registry.get_sample_value("kubeproxy_sync_proxy_rules_last_timestamp_seconds")
        return Health(healthy=healthy, last_updated=last or None)

    def stop(self) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self.http is not None:
            self.http.stop()
        self.client.close()

    def wait_synced(self, timeout: float) -> bool:
        """True once the first sync has written this node's rules (readiness), waiting at most `timeout`."""
        return self.proxier is not None and self.proxier.synced.wait(timeout)

    @property
    def ports(self) -> Mapping[str, int]:
        return self.http.ports if self.http is not None else {}


def run_cleanup(iptables: Iptables | None = None) -> bool:
    """`slimkube proxy --cleanup` / `slimkube down`: remove every chain and jump the proxy made (proxy/cleanup.py);
    True if anything was there."""
    from proxy.cleanup import cleanup

    return cleanup(iptables or detect())
