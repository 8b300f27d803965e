"""A `Discovery` (control/controllers/shared/discovery.py) answering what the real server's table serves
(control/apiserver/resources.py), for controllers run against tests/support/fake_apiserver.py, which
serves no discovery documents. `failed` makes group versions fail as a broken aggregated API would."""

from __future__ import annotations

from collections.abc import Mapping

from control.apiserver.resources import RESOURCES
from control.controllers.shared.discovery import APIResource, DiscoveryResult


class FakeDiscovery:
    def __init__(self, *, failed: Mapping[str, str] | None = None) -> None:
        self.failed = dict(failed or {})

    def preferred_resources(self) -> DiscoveryResult:
        return DiscoveryResult(tuple(APIResource(r.api_version, r.plural, r.kind, r.namespaced, frozenset(r.verbs))
                                     for r in RESOURCES if r.api_version not in self.failed), dict(self.failed))
