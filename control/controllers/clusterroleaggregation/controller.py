"""Aggregated ClusterRoles: a ClusterRole with an `aggregationRule` has as rules the union of the rules of
every ClusterRole its selectors match (upstream: pkg/controller/clusterroleaggregation/
clusterroleaggregation_controller.go).

Any ClusterRole change queues every aggregated role (one may match the changed labels); `sync` gathers the
matching roles (itself excluded) sorted by name, keeps each distinct rule once in that order, and writes the
role only when its rules differ. Departure: the write is an update, not a server-side apply with the
`clusterrole-aggregator` field manager.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.meta import deep_copy
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller

API_VERSION = "rbac.authorization.k8s.io/v1"


def aggregated_rules(role: Mapping[str, Any], roles: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The rules `role` should have, or None when it is not aggregated (pure)."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return None
    name = role["metadata"]["name"]
    selectors = []
    for term in rule.get("clusterRoleSelectors") or []:
        try:
            selectors.append(selector_from_label_selector(term))
        except SelectorError:
            continue
    out: list[dict[str, Any]] = []
    for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
        labels = other["metadata"].get("labels") or {}
        if other["metadata"]["name"] == name or not any(s.matches(labels) for s in selectors):
            continue
        out += [deep_copy(r) for r in other.get("rules") or [] if r not in out]
    return out


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = 1,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        roles = informers.informer(API_VERSION, "clusterroles")
        self.roles = roles.lister()
        roles.add_event_handler(on_add=self.enqueue_aggregated, on_update=self.on_update,
                                on_delete=self.enqueue_aggregated)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.enqueue_aggregated(new)

    def enqueue_aggregated(self, changed: Mapping[str, Any]) -> None:
        for role in self.roles.list():
            if role.get("aggregationRule"):
                self.queue.add(role["metadata"]["name"])

    def sync(self, key: str) -> None:
        role = self.roles.get("", key)
        if role is None:
            return
        rules = aggregated_rules(role, self.roles.list())
        if rules is None or rules == (role.get("rules") or []):
            return
        wanted = deep_copy(role)
        wanted["rules"] = rules
        self.client.update(resource_path(API_VERSION, "clusterroles", name=key), wanted)
