"""Pure decisions of the aggregation layer: which group-versions an APIService sends elsewhere, the
`Available` condition a check gives, and the discovery entries an aggregated API adds.

Upstream: k8s.io/kube-aggregator/pkg/apiserver/handler_proxy.go (a service-backed APIService's group-version
is proxied; one not Available is 503 `service unavailable`), pkg/controllers/status/available_controller.go
(the reasons ServiceNotFound, ServicePortError, EndpointsNotFound, MissingEndpoints, FailedDiscoveryCheck,
Passed and their messages), pkg/apiserver/handler_apis.go and the aggregated discovery manager (the groups
of available remote APIServices listed in `/apis`, their resources in the aggregated document).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Backend:
    """One service-backed APIService: where its group-version is served."""

    name: str
    group: str
    version: str
    namespace: str
    service: str
    port: int
    ca_bundle: str
    insecure: bool
    group_priority: int
    version_priority: int

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}"


def backend_of(api_service: Mapping[str, Any]) -> Backend | None:
    """The Backend of an APIService with `spec.service`, None for a local one."""
    spec = api_service.get("spec") or {}
    service = spec.get("service")
    if not isinstance(service, Mapping) or not spec.get("group") or not spec.get("version"):
        return None
    return Backend(name=str((api_service.get("metadata") or {}).get("name", "")), group=str(spec["group"]),
                   version=str(spec["version"]), namespace=str(service.get("namespace", "")),
                   service=str(service.get("name", "")), port=int(service.get("port") or 443),
                   ca_bundle=str(spec.get("caBundle") or ""), insecure=spec.get("insecureSkipTLSVerify") is True,
                   group_priority=int(spec.get("groupPriorityMinimum") or 0),
                   version_priority=int(spec.get("versionPriority") or 0))


def condition(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "Available", "status": status, "reason": reason, "message": message}


def service_condition(backend: Backend, service: Mapping[str, Any] | None,
                      endpoints: Mapping[str, Any] | None, *, endpoint_routing: bool) -> dict[str, str] | None:
    """The False condition upstream's availability controller gives before it dials, or None to go on."""
    where = f'service/{backend.service} in "{backend.namespace}"'
    if service is None:
        return condition("False", "ServiceNotFound", f"{where} is not present")
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return None
    port = next((p for p in spec.get("ports") or [] if p.get("port") == backend.port), None)
    if port is None:
        return condition("False", "ServicePortError", f"{where} is not listening on port {backend.port}")
    if not endpoint_routing:
        return None
    if endpoints is None:
        return condition("False", "EndpointsNotFound", f"cannot find endpoints for {where}")
    name = port.get("name") or ""
    for subset in endpoints.get("subsets") or []:
        if subset.get("addresses") and any((p.get("name") or "") == name for p in subset.get("ports") or []):
            return None
    return condition("False", "MissingEndpoints", f'endpoints for {where} have no addresses with port name "{name}"')


def _preferred_first(backends: Iterable[Backend]) -> list[Backend]:
    return sorted(backends, key=lambda b: (-b.version_priority, b.version))


def group_list_entries(backends: Iterable[Backend], local_groups: set[str]) -> list[dict[str, Any]]:
    """APIGroupList entries for the remote groups no local group already lists, by group priority."""
    groups: dict[str, list[Backend]] = {}
    for backend in backends:
        if backend.group not in local_groups:
            groups.setdefault(backend.group, []).append(backend)
    ordered = sorted(groups.items(), key=lambda item: (-max(b.group_priority for b in item[1]), item[0]))
    return [api_group(group, members) for group, members in ordered]


def api_group(group: str, backends: Iterable[Backend]) -> dict[str, Any]:
    versions = [{"groupVersion": b.group_version, "version": b.version} for b in _preferred_first(backends)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def aggregated_group(group: str, lists: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """An APIGroupDiscovery from the APIResourceLists of one remote group (version → list)."""
    versions = []
    for version, resource_list in lists.items():
        entries: dict[str, dict[str, Any]] = {}
        subresources: list[tuple[str, dict[str, Any]]] = []
        for resource in resource_list.get("resources") or []:
            name = str(resource.get("name", ""))
            kind = {"group": resource.get("group", group), "version": resource.get("version", version),
                    "kind": resource.get("kind", "")}
            if "/" in name:
                parent, _, subresource = name.partition("/")
                subresources.append((parent, {"subresource": subresource, "responseKind": kind,
                                              "verbs": list(resource.get("verbs") or [])}))
                continue
            entry: dict[str, Any] = {"resource": name, "responseKind": kind,
                                     "scope": "Namespaced" if resource.get("namespaced") else "Cluster",
                                     "singularResource": resource.get("singularName", ""),
                                     "verbs": list(resource.get("verbs") or [])}
            for key in ("shortNames", "categories"):
                if resource.get(key):
                    entry[key] = list(resource[key])
            entries[name] = entry
        for parent, found in subresources:
            if parent in entries:
                entries[parent].setdefault("subresources", []).append(found)
        versions.append({"version": version, "resources": list(entries.values()), "freshness": "Current"})
    return {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}
