"""The cluster DNS of one node: informers → zone → UDP/TCP server on the node's address, its metrics, and
its endpoint of the `kube-dns` Service.

Start-up, in order: Service and EndpointSlice informers feed the zone (feeder.py) — until both have listed,
the server is not started, so it never answers NXDOMAIN for a Service it simply has not seen yet; the
listeners bind `address:53` (UDP and TCP) and `address:9153` (metrics); then this node's slice of
`kube-dns` is written (registration.py) so the kube-proxy sends this node's pods here. `stop()` undoes it in
reverse order: the slice goes first, then the listeners, then the informers.

Departure from upstream: k3s and kubeadm run CoreDNS as a Deployment of pods; slimkube's DNS runs inside
each node's agent process (started by the composition root beside the kubelet), as a node-local
server. Why: there is no container image with a DNS server on these hosts, and per-node serving keeps a
pod's lookups on its own node.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from clusterdns.feeder import ZoneFeeder
from clusterdns.forward import Forwarder
from clusterdns.registration import API, Registration
from clusterdns.server import DNSServer
from clusterdns.zone import DEFAULT_TTL, Zone
from control.client.informer import InformerFactory
from control.client.reflector import ListWatchClient
from control.util.httpendpoints import HTTPEndpoints, metrics_route
from control.util.resolvconf import HOST_RESOLV_CONF

log = logging.getLogger(__name__)
SYNC_TIMEOUT = 60.0


class Client(ListWatchClient, API, Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class DNSConfig:
    node_name: str
    address: str                       # the node's IP: where the server listens
    domain: str = "cluster.local"
    service_address: str | None = None  # the kube-dns Service's ClusterIP (answers ns.dns.<domain>)
    port: int = 53
    metrics_port: int | None = 9153     # None: no metrics listener
    ttl: int = DEFAULT_TTL
    resolv_conf: str = HOST_RESOLV_CONF
    forward_from: Sequence[str] = ()   # networks besides loopback whose clients may have names forwarded
    register: bool = True              # write this node's kube-dns EndpointSlice


class ClusterDNS:
    def __init__(self, config: DNSConfig, client: Client) -> None:
        self.config = config
        self.client = client
        self.zone = Zone(config.domain, ttl=config.ttl)
        self.feeder = ZoneFeeder(self.zone, config.domain)
        self.server = DNSServer(self.zone, config.address, config.port,
                                forwarder=Forwarder(config.resolv_conf), dns_address=config.service_address,
                                forward_from=(*config.forward_from, f"{config.address}/32"
                                              if ":" not in config.address else f"{config.address}/128"))
        self.http: HTTPEndpoints | None = None
        self.registration = Registration(client, config.node_name) if config.register else None
        self._stop = threading.Event()
        self._registered = False

    def start(self) -> None:
        try:
            factory = InformerFactory(self.client)
            factory.informer("v1", "services").add_event_handler(
                on_add=self.feeder.on_service, on_update=self.feeder.on_service_update,
                on_delete=self.feeder.on_service_delete)
            factory.informer("discovery.k8s.io/v1", "endpointslices").add_event_handler(
                on_add=self.feeder.on_slice, on_update=self.feeder.on_slice_update,
                on_delete=self.feeder.on_slice_delete)
            factory.start(self._stop)
            if not factory.wait_for_sync(SYNC_TIMEOUT):
                raise RuntimeError(f"Services and EndpointSlices not listed within {SYNC_TIMEOUT:.0f} s")
            self.server.start()
            if self.config.metrics_port is not None:
                self.http = HTTPEndpoints("dns-metrics", {"metrics": (
                    (self.config.address, self.config.metrics_port), [metrics_route(self.server.metrics.registry)])})
                self.http.start()
            if self.registration is not None:
                self.registration.register(self.config.address, port=self.server.port,
                                           metrics_port=self.http.ports.get("metrics") if self.http else None)
                self._registered = True
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.registration is not None and self._registered:
            self.registration.unregister()
            self._registered = False
        self.server.stop()
        if self.http is not None:
            self.http.stop()
            self.http = None
        self._stop.set()
        self.client.close()
