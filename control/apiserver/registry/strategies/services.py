"""Services (upstream pkg/registry/core/service/strategy.go, and the IP and port allocation of
pkg/registry/core/service/storage/alloc.go that its REST storage runs around the generic store).

ClusterIP (unless headless or ExternalName) and NodePorts (NodePort/LoadBalancer) are allocated on create
and on a type change, before the write, and released after the write once the Service goes or stops
needing them; a failed write gives its reservations back. A created Service's status is dropped
(the load-balancer status is a controller's to fill).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

from control.api.typed import TypedObject
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.registry.allocators import AllocationError, ClusterIPAllocator, NodePortAllocator
from control.apiserver.registry.strategies.base import Rollback, Strategy
from control.apiserver.resources import Resource


def _needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None"


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _node_ports(spec: Mapping[str, Any]) -> set[int]:
    return {p["nodePort"] for p in spec.get("ports") or []
            if isinstance(p, Mapping) and isinstance(p.get("nodePort"), int) and p["nodePort"]}


class ServiceAllocations:
    """Allocates on create/update and releases on delete; every method undoes its own partial work on
    failure, so an error never leaks a reservation."""

    def __init__(self, ips: ClusterIPAllocator, node_ports: NodePortAllocator) -> None:
        self.ips = ips
        self.node_ports = node_ports

    def allocate(self, service: dict[str, Any], old: Mapping[str, Any] | None) -> Rollback:
        """Fill in spec.clusterIP(s) and nodePorts; returns an undo for when the write fails."""
        spec = service.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        undo: list[Rollback] = []
        try:
            old_ip = old_spec.get("clusterIP") if _needs_cluster_ip(old_spec) else None
            if _needs_cluster_ip(spec):
                if old_ip and spec.get("clusterIP") in (None, "", old_ip):
                    spec["clusterIP"] = old_ip
                elif spec.get("clusterIP") != old_ip or not old_ip:
                    ip = self.ips.allocate(spec.get("clusterIP") or None)
                    undo.append(partial(self.ips.release, ip))
                    spec["clusterIP"] = ip
                spec["clusterIPs"] = [spec["clusterIP"]]
                spec.setdefault("ipFamilies", ["IPv6" if ":" in spec["clusterIP"] else "IPv4"])
                spec.setdefault("ipFamilyPolicy", "SingleStack")
            elif spec.get("type") == "ExternalName":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            else:
                spec["clusterIPs"] = ["None"]
            kept = _node_ports(old_spec) if _needs_node_ports(old_spec) else set()
            # An update that leaves nodePort out keeps the one the same port already had (upstream's
            # patchAllocatedValues), so re-applying a manifest does not move a NodePort.
            previous = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old_spec.get("ports") or []
                        if isinstance(p, Mapping) and p.get("nodePort") in kept}
            if _needs_node_ports(spec):
                for port in spec.get("ports") or []:
                    if not isinstance(port, dict):
                        continue
                    wanted = port.get("nodePort") or previous.get((port.get("port"), port.get("protocol")))
                    if wanted and wanted in kept:
                        port["nodePort"] = wanted
                        continue
                    got = self.node_ports.allocate(wanted if isinstance(wanted, int) else None)
                    undo.append(partial(self.node_ports.release, got))
                    port["nodePort"] = got
            else:
                for port in spec.get("ports") or []:
                    if isinstance(port, dict):
                        port.pop("nodePort", None)
        except AllocationError as exc:
            for step in reversed(undo):
                step()
            field = "spec.clusterIPs" if "IP" in str(exc) else "spec.ports[0].nodePort"
            raise status.invalid("Service", TypedObject(service).metadata.name,
                                 [FieldError.invalid(field, spec.get("clusterIP") if "IP" in str(exc) else "",
                                                     str(exc))]) from None

        def rollback() -> None:
            for step in reversed(undo):
                step()
        return rollback

    def release_unused(self, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> None:
        """After a successful write: free what `old` held and `new` (None when deleted) does not."""
        old_spec = old.get("spec") or {}
        new_spec = (new or {}).get("spec") or {}
        old_ip = old_spec.get("clusterIP") if _needs_cluster_ip(old_spec) else None
        new_ip = new_spec.get("clusterIP") if new is not None and _needs_cluster_ip(new_spec) else None
        if old_ip and old_ip != new_ip:
            self.ips.release(old_ip)
        old_ports = _node_ports(old_spec) if _needs_node_ports(old_spec) else set()
        new_ports = _node_ports(new_spec) if new is not None and _needs_node_ports(new_spec) else set()
        for port in old_ports - new_ports:
            self.node_ports.release(port)

    def repair(self, services: list[dict[str, Any]]) -> None:
        ips = [s["spec"]["clusterIP"] for s in services
               if _needs_cluster_ip(s.get("spec") or {}) and (s.get("spec") or {}).get("clusterIP")]
        ports = [p for s in services if _needs_node_ports(s.get("spec") or {}) for p in _node_ports(s["spec"])]
        self.ips.repair(ips)
        self.node_ports.repair(ports)


class ServiceStrategy(Strategy):
    resets_status_on_create = True
    # ServiceStatus.loadBalancer is a struct: Go's encoder writes it even when empty (omitempty does not
    # drop structs), so upstream always answers `status: {loadBalancer: {}}`.
    status_zero_values = MappingProxyType({"loadBalancer": {}})

    def __init__(self, resource: Resource, allocations: ServiceAllocations) -> None:
        super().__init__(resource)
        self.allocations = allocations

    def begin_write(self, new: dict[str, Any], old: Mapping[str, Any] | None) -> Rollback:
        return self.allocations.allocate(new, old)

    def after_write(self, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> None:
        self.allocations.release_unused(old, new)
