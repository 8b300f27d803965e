"""The discovery documents: `/version`, `/api`, `/apis`, `/apis/{group}`, `/api/v1` and `/apis/{group}/{version}`.

Upstream: k8s.io/apiserver/pkg/endpoints/discovery (legacy.go, root.go, group.go, version.go) and
k8s.io/apimachinery/pkg/version (the /version body). Everything is built from control/apiserver/resources.py.

These are the legacy (unaggregated) documents, with `Content-Type: application/json` (`CONTENT_TYPE`).
A client asking `/api` or `/apis` for `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`
(kubectl 1.26+) gets the aggregated document instead (aggregated_discovery.py); one that asks for nothing
in particular gets these, as upstream answers them.

Subresources are listed as their own entries (`pods/status`, `deployments/scale`) with an empty
`singularName`, their own kind and verbs, and a `group`/`version` only where they differ from the parent
(the Scale subresource is autoscaling/v1), exactly as upstream prints them.
"""

from __future__ import annotations

from typing import Any

from control.apiserver.resources import (
    COMPONENT_STATUSES,
    METRICS_RESOURCES,
    REVIEW_RESOURCES,
    Resource,
    ServedResources,
)
from control.util.version import KUBERNETES_MAJOR, KUBERNETES_MINOR, KUBERNETES_VERSION

CONTENT_TYPE = "application/json"


def group_versions(table: ServedResources) -> list[tuple[str, str]]:
    """Every (group, version) discovery lists: the stored resources' of one server's table, the reviews'
    (authorization/reviews.py) and metrics.k8s.io (registry/metricsapi.py)."""
    return list(dict.fromkeys([*table.group_versions(),
                               *((r.group, r.version) for r in (*REVIEW_RESOURCES, *METRICS_RESOURCES))]))


def resources_in(table: ServedResources, group: str, version: str) -> list[Resource]:
    served = [r for r in (COMPONENT_STATUSES, *REVIEW_RESOURCES, *METRICS_RESOURCES)
              if (r.group, r.version) == (group, version)]
    return table.resources_in(group, version) + served


def version_info(*, platform: str, python_version: str, compiler: str = "cpython", git_commit: str = "",
                 git_tree_state: str = "", build_date: str = "1970-01-01T00:00:00Z") -> dict[str, str]:
    """The `/version` body (version.Info). The caller passes what it learns from the interpreter.

    `goVersion` and `compiler` name the Python runtime instead of Go's: clients only print them, and a
    made-up Go version would mislead whoever reads `kubectl version -o yaml` while debugging. kubectl
    compares `gitVersion` with its own to warn about version skew, so it is the Kubernetes level served.
    """
    return {
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": git_commit,
        "gitTreeState": git_tree_state,
        "buildDate": build_date,
        "goVersion": f"python{python_version}",
        "compiler": compiler,
        "platform": platform,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """`/api` (APIVersions). `server_address` is the host:port clients should use; upstream derives it per
    request from the client's address, and a single `0.0.0.0/0` entry is what a one-address server gives."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(table: ServedResources, group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{version}", "version": version}
                for g, version in group_versions(table) if g == group]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(table: ServedResources) -> dict[str, Any]:
    """`/apis` (APIGroupList): every named group; the core group is only under `/api`."""
    groups = list(dict.fromkeys(group for group, _ in group_versions(table) if group))
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_entry(table, group) for group in groups]}


def api_group(table: ServedResources, group: str) -> dict[str, Any] | None:
    """`/apis/{group}` (APIGroup), or None for a group that is not served (the server answers 404)."""
    if not group or all(g != group for g, _ in group_versions(table)):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(table, group)}


def _resource_entries(resource: Resource) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    entries = [entry]
    for name, sub in resource.subresources.items():
        sub_entry: dict[str, Any] = {"name": f"{resource.plural}/{name}", "singularName": "",
                                     "namespaced": resource.namespaced}
        if sub.group or sub.version:
            sub_entry["group"] = sub.group
            sub_entry["version"] = sub.version
        sub_entry["kind"] = sub.kind
        sub_entry["verbs"] = list(sub.verbs)
        entries.append(sub_entry)
    return entries


def api_resource_list(table: ServedResources, group: str, version: str) -> dict[str, Any] | None:
    """`/api/v1` (group "") or `/apis/{group}/{version}` (APIResourceList); None when not served.

    Entries are sorted by name as upstream sorts them, which also puts `pods/status` right after `pods`.
    """
    resources = resources_in(table, group, version)
    if not resources:
        return None
    entries = sorted((e for r in resources for e in _resource_entries(r)), key=lambda e: e["name"])
    if not group:  # upstream's legacy /api/v1 document carries no apiVersion
        return {"kind": "APIResourceList", "groupVersion": version, "resources": entries}
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": entries}
