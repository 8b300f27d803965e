"""What the API server serves, as the garbage collector and the namespace controller ask it: every resource
of each group's preferred version, with its kind, scope and verbs.

Upstream: client-go discovery (`ServerPreferredResources`, `ServerPreferredNamespacedResources`,
`FilteredBy(SupportsAllVerbs{...})`, `ErrGroupDiscoveryFailed`). The controllers read the server's own
discovery documents (`/api/v1`, `/apis`, `/apis/{group}/{version}`), never a table of their own, so a
resource another part of the server starts serving is collected and cleaned up without a change here.

A group version whose document fails is reported in `DiscoveryResult.failed` (upstream's partial result
with ErrGroupDiscoveryFailed): the rest is still usable, and the namespace controller turns the failure
into its NamespaceDeletionDiscoveryFailure condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from control.client.errors import ApiError


@dataclass(frozen=True)
class APIResource:
    """One served resource (upstream metav1.APIResource with its group version)."""

    api_version: str  # "v1", "apps/v1"
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def supports(self, *verbs: str) -> bool:
        return all(verb in self.verbs for verb in verbs)


@dataclass(frozen=True)
class DiscoveryResult:
    resources: tuple[APIResource, ...]
    failed: Mapping[str, str] = field(default_factory=dict)  # group version → why its document failed

    def error_message(self) -> str:
        """Upstream ErrGroupDiscoveryFailed.Error()."""
        return "unable to retrieve the complete list of server APIs: " + ", ".join(
            f"{gv}: {why}" for gv, why in sorted(self.failed.items()))


class Discovery(Protocol):
    def preferred_resources(self) -> DiscoveryResult: ...


class Getter(Protocol):
    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...


def resources_of(api_version: str, document: Mapping[str, Any]) -> list[APIResource]:
    """The resources of one APIResourceList; subresources (`pods/status`) are left out, as upstream's
    ServerPreferredResources does."""
    return [APIResource(api_version, entry["name"], entry.get("kind", ""), bool(entry.get("namespaced")),
                        frozenset(entry.get("verbs") or ()))
            for entry in document.get("resources") or [] if "/" not in entry.get("name", "/")]


class ServerDiscovery:
    """`Discovery` over the API server's documents (each call asks again: resources come and go)."""

    def __init__(self, client: Getter) -> None:
        self.client = client

    def preferred_resources(self) -> DiscoveryResult:
        group_versions = ["v1"]
        for group in self.client.get("/apis").get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                group_versions.append(preferred)
        resources: list[APIResource] = []
        failed: dict[str, str] = {}
        for gv in group_versions:
            path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
            try:
                resources += resources_of(gv, self.client.get(path))
            except ApiError as exc:
                failed[gv] = str(exc)
        return DiscoveryResult(tuple(resources), failed)
