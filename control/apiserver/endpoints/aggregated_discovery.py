"""Aggregated discovery (apidiscovery.k8s.io/v2 and v2beta1): every group, version and resource in one answer
to `GET /api` and `GET /apis` (upstream: k8s.io/apiserver/pkg/endpoints/discovery/aggregated — handler.go's
content negotiation and the APIGroupDiscoveryList it serves; k8s.io/api/apidiscovery/v2 types.go).

client-go (kubectl 1.26+) sends `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json` (1.26-1.29 ask
for v2beta1 only). The answer names the version it is in its Content-Type
(`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`), which is how client-go tells an
aggregated document from the legacy APIVersions/APIGroupList it falls back to when the type is plain
`application/json`; with it, kubectl makes no `/apis/{group}/{version}` requests at all. A client that
does not ask gets the legacy documents (discovery.py), unchanged.

Fields are in the Go structs' order (APIGroupDiscovery: metadata, versions; APIVersionDiscovery: version,
resources, freshness; APIResourceDiscovery: resource, responseKind, scope, singularResource, verbs,
shortNames, categories, subresources; APISubresourceDiscovery: subresource, responseKind, verbs). Every
version served here is local, so its freshness is always `Current`. v2beta1 has the same shape.
"""

from __future__ import annotations

from typing import Any

from control.apiserver.endpoints.discovery import group_versions, resources_in
from control.apiserver.resources import Resource, ServedResources

GROUP = "apidiscovery.k8s.io"
VERSIONS = ("v2", "v2beta1")  # the server's preference
LIST_KIND = "APIGroupDiscoveryList"


def content_type(version: str) -> str:
    return f"application/json;g={GROUP};v={version};as={LIST_KIND}"


def negotiate(accept: str | None) -> str | None:
    """The aggregated version to answer with (`v2`, `v2beta1`) when the Accept header asks for one in JSON,
    the newest the client accepts; None for a client that wants the legacy documents."""
    wanted: set[str] = set()
    for media_range in (accept or "").split(","):
        kind, *parameters = [part.strip() for part in media_range.split(";")]
        params = dict(p.split("=", 1) for p in parameters if "=" in p)
        if kind in ("application/json", "*/*") and params.get("g") == GROUP and params.get("as") == LIST_KIND:
            wanted.add(params.get("v", ""))
    return next((version for version in VERSIONS if version in wanted), None)


def _response_kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _resource(resource: Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": resource.plural,
        "responseKind": _response_kind(resource.group, resource.version, resource.kind),
        "scope": "Namespaced" if resource.namespaced else "Cluster",
        "singularResource": resource.singular,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    subresources = [{
        "subresource": name,
        "responseKind": _response_kind(sub.group or resource.group, sub.version or resource.version, sub.kind),
        "verbs": list(sub.verbs),
    } for name, sub in sorted(resource.subresources.items())]
    if subresources:
        entry["subresources"] = subresources
    return entry


def _group(table: ServedResources, group: str, versions: list[str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": group} if group else {}
    metadata["creationTimestamp"] = None  # ObjectMeta's creationTimestamp has no omitempty
    return {"metadata": metadata, "versions": [{
        "version": version,
        "resources": [_resource(r) for r in sorted(resources_in(table, group, version), key=lambda r: r.plural)],
        "freshness": "Current",
    } for version in versions]}


def discovery_list(table: ServedResources, *, core: bool, version: str) -> dict[str, Any]:
    """`/api` (core: the legacy group alone) or `/apis` (every named group) as an APIGroupDiscoveryList."""
    groups: dict[str, list[str]] = {}
    for group, group_version in group_versions(table):
        if (group == "") == core:
            groups.setdefault(group, []).append(group_version)
    return {"kind": LIST_KIND, "apiVersion": f"{GROUP}/{version}", "metadata": {},
            "items": [_group(table, group, versions) for group, versions in groups.items()]}
