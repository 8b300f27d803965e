"""What a request asks to do, as the authorizers see it (upstream: k8s.io/apiserver/pkg/endpoints/request/
requestinfo.go RequestInfoFactory.NewRequestInfo and k8s.io/apiserver/pkg/authorization/authorizer's
AttributesRecord).

A path under `/api` or `/apis` with at least a version and a resource is a resource request; anything else
(`/healthz`, `/api`, `/apis/apps/v1`, `/metrics`) is a non-resource request whose verb is the HTTP method in
lower case. Resource verbs come from the method (POST create, GET/HEAD get, PUT update, PATCH patch, DELETE
delete); a GET without a name is `list`, or `watch` with `?watch=1`/`true` (any value but false/0, as
upstream when the options fail to parse); a `metadata.name=` field selector on a list names the object; a
DELETE without a name is `deletecollection`; the legacy `/watch/` and `/proxy/` path prefixes set the verb.
`/namespaces/{ns}` sets the namespace, also for the namespace object itself and its `status`/`finalize`.

Departure: the field selector is read with a plain split (`metadata.name=x`, `metadata.name==x`, one term
among several), not the full selector grammar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from control.apiserver.authentication.tokens import UserInfo

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_SPECIAL_VERBS = ("proxy", "watch")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class Attributes:
    """One authorization question (upstream authorizer.AttributesRecord)."""

    user: UserInfo
    verb: str
    resource_request: bool = False
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = field(default_factory=tuple)


def _split(path: str) -> list[str]:
    trimmed = path.strip("/")
    return trimmed.split("/") if trimmed else []


def _selected_name(field_selector: str) -> str:
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            value = value.strip()
            if value and "/" not in value and value not in (".", ".."):
                return value
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes of one HTTP request (pure: what RequestInfoFactory computes, plus the user)."""
    non_resource = Attributes(user=user, verb=method.lower(), path=path)
    parts = _split(path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            return non_resource  # upstream answers a parse error; no resource is named either way
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if parts[0] == "namespaces":
        if len(parts) > 1:
            namespace = parts[1]
            if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
                parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 and verb != "proxy" else ""
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in ("false", "0", "") else "list"
        name = _selected_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user=user, verb=verb, resource_request=True, path=path, namespace=namespace, api_group=group,
                      api_version=version, resource=resource, subresource=subresource, name=name, parts=tuple(parts))
