"""The service load-balancer controller for a cluster without a cloud, in the shape of k3s's ServiceLB:
a `type: LoadBalancer` Service gets `status.loadBalancer.ingress`, so `kubectl get svc` shows an
EXTERNAL-IP and the kube-proxy's load-balancer rules (KUBE-SERVICES `-d <ingress ip>` → KUBE-EXT-*) take
traffic sent to it.

Upstream: staging k8s.io/cloud-provider/controllers/service/controller.go (ServiceController:
a Service cache, `syncLoadBalancerIfNeeded` — ensure for LoadBalancer Services, clear the status of a
Service that stopped being one —, a node informer whose changes re-sync every load-balancer Service,
one worker by default (`--concurrent-service-syncs` 1), events `EnsuringLoadBalancer` /
`EnsuredLoadBalancer`), and k3s pkg/cloudprovider/servicelb.go (no cloud: the addresses are the nodes'
own, those of the nodes that can serve — Ready ones; Services with a `spec.loadBalancerClass` are left
to whoever implements that class).

Addresses (`ingress_for`, pure):
- Without a pool: the InternalIP of every Ready node (ExternalIP when a node has one, as k3s prefers it),
  sorted, so every LoadBalancer Service has the same EXTERNAL-IPs and traffic to any of them reaches the
  node, whose kube-proxy forwards it to an endpoint anywhere in the cluster.
- With `--loadbalancer-address-pool` (IPs and CIDRs): each Service gets one address of the pool, kept as
  long as the Service is a LoadBalancer; a new Service takes the first free one (`allocate`); an exhausted
  pool leaves the Service `<pending>` with an `AllocationFailed` warning event until an address is freed
  (then every waiting Service is synced again). The pool's addresses
  must reach a node by the operator's routing (or ARP) — nothing here announces them.

Name: upstream's controller is `service-lb-controller` (alias `service`) in the cloud controller manager
and kube-controller-manager; this one is switched off with `--disable service-lb-controller`.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from control.api.typed import Node, Service
from control.apimachinery.meta import get_condition, key_of, split_key
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller

log = logging.getLogger(__name__)

POOL_LIMIT = 65536  # addresses taken from the pool's CIDRs at most (a /16)

Obj = Mapping[str, Any]


def parse_pool(text: str | Iterable[str]) -> list[str]:
    """`--loadbalancer-address-pool`: comma-separated IPs and CIDRs (a CIDR's host addresses), in order,
    without repeats. Raises ValueError for anything else."""
    items = [item.strip() for item in (text.split(",") if isinstance(text, str) else text) if item.strip()]
    pool: dict[str, None] = {}
    for item in items:
        if "/" in item:
            network = ipaddress.ip_network(item, strict=False)
            hosts = network.hosts() if network.num_addresses > 2 else iter(network)
            for count, host in enumerate(hosts):
                if count >= POOL_LIMIT:
                    break
                pool[str(host)] = None
        else:
            pool[str(ipaddress.ip_address(item))] = None
    return list(pool)


def is_load_balancer(service: Obj) -> bool:
    """A Service this controller serves: type LoadBalancer and no loadBalancerClass of someone else."""
    spec = service.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")


def node_address(node: Obj) -> str | None:
    """The node's ExternalIP, else its InternalIP (k3s ServiceLB's preference)."""
    addresses = Node(node).status.addresses
    for kind in ("ExternalIP", "InternalIP"):
        for address in addresses:
            if address.type == kind and address.address:
                return address.address
    return None


def ready_node_addresses(nodes: Iterable[Obj]) -> list[str]:
    """The addresses of the Ready nodes, sorted numerically."""
    found = set()
    for node in nodes:
        ready = get_condition(node, "Ready")
        if ready is not None and ready.get("status") == "True" and (address := node_address(node)):
            found.add(address)
    return sorted(found, key=ipaddress.ip_address)


def current_ingress(service: Obj) -> list[dict[str, Any]]:
    return list(((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def allocate(service_key: str, current: Sequence[str], pool: Sequence[str],
             taken: Mapping[str, str]) -> str | None:
    """The pool address of one Service: the one it has, if it is in the pool and nobody else holds it,
    else the first free one (None: the pool is exhausted). `taken` maps address → holder's key."""
    for address in current:
        if address in pool and taken.get(address, service_key) == service_key:
            return address
    return next((address for address in pool if address not in taken), None)


def ingress_for(addresses: Sequence[str]) -> list[dict[str, Any]]:
    return [{"ip": address} for address in addresses]


class ServiceLBController(Controller):
    """Keeps `status.loadBalancer` of LoadBalancer Services (module notes)."""

    name = "service-lb-controller"  # upstream's controller name (alias "service")

    def __init__(self, client: APIClient, informers: InformerFactory, *, pool: Sequence[str] = (),
                 workers: int = 1, queue: RateLimitingQueue[str] | None = None,
                 recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue,
                         recorder=recorder or EventRecorder(client, component="service-controller"))
        self.pool = list(pool)
        self._lock = threading.Lock()
        self._allocated: dict[str, str] = {}  # pool address → service key, the writes' own truth
        services, nodes = informers.informer("v1", "services"), informers.informer("v1", "nodes")
        self.services, self.nodes = services.lister(), nodes.lister()
        services.add_event_handler(on_add=self.on_service, on_update=lambda old, new: self.on_service(new),
                                   on_delete=self.on_service_delete)
        nodes.add_event_handler(on_add=self.on_node, on_update=self.on_node_update, on_delete=self.on_node)

    # -- handlers -----------------------------------------------------------------------------------------

    def on_service(self, service: Obj) -> None:
        if is_load_balancer(service) or current_ingress(service):
            self.enqueue(service)

    def on_service_delete(self, service: Obj) -> None:
        self.enqueue(service)  # frees its pool address

    def on_node(self, node: Obj) -> None:
        """Every LoadBalancer Service follows the set of Ready nodes (upstream nodeSyncLoop)."""
        if self.pool:
            return
        for service in self.services.list():
            if is_load_balancer(service):
                self.enqueue(service)

    def on_node_update(self, old: Obj, new: Obj) -> None:
        if ready_node_addresses([old]) != ready_node_addresses([new]):
            self.on_node(new)

    # -- the worker ---------------------------------------------------------------------------------------

    def on_synced(self) -> None:
        """Learn the pool addresses Services already hold, oldest Service first, before any sync."""
        if not self.pool:
            return
        services = sorted((s for s in self.services.list() if is_load_balancer(s)),
                          key=lambda s: (Service(s).metadata.creation_timestamp, key_of(s)))
        with self._lock:
            for service in services:
                held = [str(entry["ip"]) for entry in current_ingress(service) if entry.get("ip")]
                address = allocate(key_of(service), held, self.pool, self._allocated)
                if address is not None and address in held:
                    self._allocated[address] = key_of(service)

    def _wanted(self, key: str, service: Obj) -> list[str] | None:
        """The Service's addresses; None when the pool has none left for it."""
        if not self.pool:
            return ready_node_addresses(self.nodes.list())
        held = [str(entry["ip"]) for entry in current_ingress(service) if entry.get("ip")]
        with self._lock:
            address = allocate(key, held, self.pool, self._allocated)
            if address is None:
                return None
            self._allocated[address] = key
        return [address]

    def _release(self, key: str) -> None:
        """Free the Service's pool address; the Services still waiting for one are synced again."""
        with self._lock:
            freed = [a for a, holder in self._allocated.items() if holder == key]
            for address in freed:
                del self._allocated[address]
        if freed:
            for service in self.services.list():
                if is_load_balancer(service) and not current_ingress(service) and key_of(service) != key:
                    self.enqueue(service)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(namespace, name)
        if service is None or not is_load_balancer(service):
            self._release(key)
            if service is not None and current_ingress(service) and Service(service).spec.type != "LoadBalancer":
                self._write(service, [])  # no longer a LoadBalancer: upstream clears the status
            return
        wanted = self._wanted(key, service)
        if wanted is None:
            self.recorder.event(service, "Warning", "AllocationFailed",
                                f"no address left in the load-balancer address pool for {key}")
            return
        if [entry.get("ip") for entry in current_ingress(service)] != wanted:
            self._write(service, ingress_for(wanted))
            self.recorder.event(service, "Normal", "EnsuredLoadBalancer", "Ensured load balancer")

    def _write(self, service: Obj, ingress: list[dict[str, Any]]) -> None:
        meta = service.get("metadata") or {}
        body = {**service, "status": {**Service(service).status.raw, "loadBalancer":
                                      {"ingress": ingress} if ingress else {}}}
        self.client.update(resource_path("v1", "services", namespace=meta.get("namespace"), name=meta.get("name"),
                                         subresource="status"), body)
        log.info("Service %s/%s: load-balancer ingress %s", meta.get("namespace"), meta.get("name"),
                 ",".join(entry["ip"] for entry in ingress) or "cleared")
