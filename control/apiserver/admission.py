"""Admission the API server applies before a write reaches storage (upstream: plugin/pkg/admission/
namespace/lifecycle, plugin/pkg/admission/resourcequota, and the service REST storage's IP and port
allocation in pkg/registry/core/service/storage/alloc.go).

Each check reads what it needs through the narrow `Reader` the registry passes in, so the rules are
tested with a dict-backed reader and the registry stays free of per-kind branches.

- Namespace lifecycle: a namespaced object can only be created in a namespace that exists and is not
  Terminating (404 / 403 `NamespaceTerminating`), as upstream, so a namespace being deleted cannot gain
  content its controller would never remove.
- ResourceQuota: on create, usage of the namespace plus the new object must fit every matching quota's
  `spec.hard`, else 403 with upstream's `exceeded quota:` message. Usage is computed from the stored
  objects (the quota controller that keeps `status.used` current comes with the controller manager);
  the registry serialises quota-checked creates so two racing creates cannot both take the last unit.
- Services: ClusterIP (unless headless or ExternalName) and NodePorts (NodePort/LoadBalancer) are
  allocated on create and on a type change, and released when the Service goes or stops needing them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from control.api import quota
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.allocators import AllocationError, ClusterIPAllocator, NodePortAllocator
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

NAMESPACES = by_path("", "v1", "namespaces")
RESOURCE_QUOTAS = by_path("", "v1", "resourcequotas")


class Reader(Protocol):
    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]: ...


def forbidden(resource: Resource, name: str, why: str, *, reason_cause: str | None = None) -> APIError:
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    details: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    if reason_cause:
        details["causes"] = [{"reason": reason_cause, "message": why, "field": "metadata.namespace"}]
    return APIError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', details=details)


def check_namespace(reader: Reader, resource: Resource, namespace: str, name: str) -> None:
    """Creation of namespaced content needs a live namespace."""
    assert NAMESPACES is not None
    found = reader.get(NAMESPACES, "", namespace)
    if found is None:
        raise status.not_found("namespaces", namespace)
    if (found.get("status") or {}).get("phase") == "Terminating" or (found.get("metadata") or {}).get(
            "deletionTimestamp"):
        raise forbidden(resource, name, f"unable to create new content in namespace {namespace} because "
                        "it is being terminated", reason_cause="NamespaceTerminating")


def check_quota(reader: Reader, resource: Resource, namespace: str, obj: Mapping[str, Any]) -> None:
    """403 when creating `obj` would exceed a ResourceQuota of its namespace."""
    assert RESOURCE_QUOTAS is not None
    if resource.plural == "resourcequotas":
        return
    quotas = [q for q in reader.list_all(RESOURCE_QUOTAS, namespace)
              if quota.matches_scope(q, resource.plural, dict(obj))]
    if not quotas:
        return
    delta = quota.usage(resource.plural, dict(obj), group=resource.group)
    if not delta:
        return
    existing = reader.list_all(resource, namespace)
    for one in quotas:
        scoped = [o for o in existing if quota.matches_scope(one, resource.plural, o)]
        used = quota.used_in(resource.plural, scoped, group=resource.group)
        message = quota.check(one, used, delta, obj=obj)
        if message:
            raise forbidden(resource, (obj.get("metadata") or {}).get("name", ""), message)


def _needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None"


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _node_ports(spec: Mapping[str, Any]) -> set[int]:
    return {p["nodePort"] for p in spec.get("ports") or [] if isinstance(p, Mapping) and isinstance(p.get("nodePort"), int)
            and p["nodePort"]}


class ServiceAllocations:
    """Allocates on create/update and releases on delete; every method undoes its own partial work on
    failure, so an error never leaks a reservation."""

    def __init__(self, ips: ClusterIPAllocator, node_ports: NodePortAllocator) -> None:
        self.ips = ips
        self.node_ports = node_ports

    def allocate(self, service: dict[str, Any], old: Mapping[str, Any] | None) -> Callable[[], None]:
        """Fill in spec.clusterIP(s) and nodePorts; returns an undo for when the write fails."""
        spec = service.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        undo: list[Callable[[], None]] = []
        try:
            old_ip = old_spec.get("clusterIP") if _needs_cluster_ip(old_spec) else None
            if _needs_cluster_ip(spec):
                if old_ip and spec.get("clusterIP") in (None, "", old_ip):
                    spec["clusterIP"] = old_ip
                elif spec.get("clusterIP") != old_ip or not old_ip:
                    ip = self.ips.allocate(spec.get("clusterIP") or None)
                    undo.append(lambda ip=ip: self.ips.release(ip))
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
                    undo.append(lambda got=got: self.node_ports.release(got))
                    port["nodePort"] = got
            else:
                for port in spec.get("ports") or []:
                    if isinstance(port, dict):
                        port.pop("nodePort", None)
        except AllocationError as exc:
            for step in reversed(undo):
                step()
            field = "spec.clusterIPs" if "IP" in str(exc) else "spec.ports[0].nodePort"
            raise status.invalid("Service", (service.get("metadata") or {}).get("name", ""),
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
