"""REST paths (upstream: client-go rest.Request's URL building — `AbsPath`, `Namespace`, `Resource`,
`Name`, `SubResource`).

The core group lives under `/api/v1`, every named group under `/apis/{group}/{version}`; a namespace
narrows a namespaced resource, no namespace means "all namespaces" (or a cluster-scoped resource).
Names are quoted so a stray `/` or `?` cannot change which object a request is about.
"""

from __future__ import annotations

from urllib.parse import quote


def group_prefix(api_version: str) -> str:
    """`/api/v1` for the core group, `/apis/apps/v1` for `apps/v1`."""
    if "/" in api_version:
        return f"/apis/{api_version}"
    return f"/api/{api_version}"


def resource_path(api_version: str, plural: str, *, namespace: str | None = None, name: str | None = None,
                  subresource: str | None = None) -> str:
    """The path of a collection, one object, or one object's subresource."""
    if subresource and not name:
        raise ValueError("a subresource needs a name")
    parts = [group_prefix(api_version)]
    if namespace:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(plural)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)
