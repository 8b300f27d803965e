"""The namespace controller: a deleted namespace is emptied of every namespaced resource the server serves,
then its `kubernetes` finalizer is removed so the API server lets it go.

Upstream: pkg/controller/namespace/namespace_controller.go (a namespace change with a deletionTimestamp is
queued after namespaceDeletionGracePeriod, 5 s, so caches and admission on every server see the deletion
first; a `ResourcesRemainingError` requeues after estimate/2+1 s instead of with backoff; 10 workers) and
deletion/namespaced_resources_deleter.go (`Delete`: phase Terminating through namespaces/status, then
`deleteAllContent` — discovery of the namespaced resources that support `delete`, for each one the pods'
grace estimate, `deletecollection` with propagationPolicy Background where served (else list + delete
each), a list of what is left — then the five status conditions, then `finalize`). The decisions (grace
estimate, what leftovers mean, the conditions) are deletion.py's.

Resources are found through discovery on every pass (control/controllers/shared/discovery.py), so whatever the
server serves (a kind added later included) is emptied; a group version whose discovery fails is the
NamespaceDeletionDiscoveryFailure condition, and the namespace waits for the next pass.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.typed import Namespace
from control.apimachinery.meta import deep_copy, parse_timestamp
from control.client.errors import ApiError, Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.namespace.deletion import (
    DELETION_GRACE_PERIOD,
    Leftovers,
    failure_conditions,
    leftovers,
    pods_grace_estimate,
    requeue_seconds,
    updated_conditions,
)
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.discovery import APIResource, Discovery
from control.controllers.shared.helpers import NAMESPACE_FINALIZER
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 10  # upstream --concurrent-namespace-syncs


class NamespaceController(Controller):
    name = "namespace"  # upstream's controller name (--controllers alias of namespace-controller)

    def __init__(self, client: APIClient, informers: InformerFactory, discovery: Discovery, *,
                 workers: int = DEFAULT_WORKERS, grace_period: float = DELETION_GRACE_PERIOD,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.discovery = discovery
        self.grace_period = grace_period
        namespaces = informers.informer("v1", "namespaces")
        self.namespaces = namespaces.lister()
        namespaces.add_event_handler(on_add=self.on_namespace, on_update=self.on_namespace_update)

    def on_namespace(self, namespace: Mapping[str, Any]) -> None:
        if Namespace(namespace).metadata.deletion_timestamp:
            self.queue.add_after(namespace["metadata"]["name"], self.grace_period)

    def on_namespace_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.on_namespace(new)

    # -- the worker ----------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        """Upstream namespacedResourcesDeleter.Delete on a live read of the namespace. Raises to retry."""
        if self.namespaces.get(None, key) is None:
            return
        path = resource_path("v1", "namespaces", name=key)
        try:
            namespace = self.client.get(path)
        except NotFound:
            return
        deleted_at = Namespace(namespace).metadata.deletion_timestamp
        if not deleted_at:
            return
        if Namespace(namespace).status.phase != "Terminating":
            namespace = self.client.update(path + "/status", {**namespace, "status": {
                **Namespace(namespace).status.raw, "phase": "Terminating"}})
        if NAMESPACE_FINALIZER not in Namespace(namespace).spec.finalizers:
            return
        estimate, namespace = self.delete_all_content(namespace, parse_timestamp(deleted_at))
        if estimate > 0:
            log.info("namespace %s: content remains, looking again in %ds", key, requeue_seconds(estimate))
            self.queue.add_after(key, requeue_seconds(estimate))
            return
        self.finalize(namespace)

    def finalize(self, namespace: dict[str, Any]) -> None:
        """Remove `kubernetes` from spec.finalizers through `/finalize` (the server then deletes the
        namespace once no other finalizer is left)."""
        name = namespace["metadata"]["name"]
        body = deep_copy(namespace)
        spec = body.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER]
        try:
            self.client.update(resource_path("v1", "namespaces", name=name, subresource="finalize"), body)
            log.info("namespace %s: content deleted, finalized", name)
        except NotFound:
            pass

    def delete_all_content(self, namespace: dict[str, Any], deleted_at: datetime) -> tuple[int, dict[str, Any]]:
        """Delete everything in the namespace; returns the seconds to wait for what is still going and the
        namespace as last written, raises when something failed (after writing the conditions either way)."""
        name = namespace["metadata"]["name"]
        result = self.discovery.preferred_resources()
        errors: list[str] = []
        remaining: dict[tuple[str, str], int] = {}
        finalizers: dict[str, int] = {}
        estimate = 0
        for resource in result.resources:
            if not resource.namespaced or not resource.supports("delete"):
                continue
            try:
                found = self.delete_resource(resource, name, deleted_at)
            except ApiError as exc:
                errors.append(str(exc))
                continue
            estimate = max(estimate, found.estimate)
            if found.remaining:
                remaining[(resource.group, resource.plural)] = found.remaining
                for finalizer, count in found.finalizers.items():
                    finalizers[finalizer] = finalizers.get(finalizer, 0) + count
            if found.unexpected:
                errors.append(f"unexpected items still remain in namespace: {name} for gvr: "
                              f"{resource.api_version}, Resource={resource.plural}")
        discovery_error = result.error_message() if result.failed else None
        conditions = updated_conditions(
            [condition.raw for condition in Namespace(namespace).status.conditions],
            failure_conditions(discovery_error=discovery_error, content_errors=errors, remaining=remaining,
                               finalizers=finalizers), now=self.clock.now())
        if conditions is not None:
            try:
                namespace = self.client.update(
                    resource_path("v1", "namespaces", name=name, subresource="status"),
                    {**namespace, "status": {**Namespace(namespace).status.raw, "conditions": conditions}})
            except (Conflict, NotFound) as exc:
                log.info("namespace %s: conditions not written: %s", name, exc)
        if discovery_error or errors:
            raise RuntimeError(f"namespace {name}: " + "; ".join(([discovery_error] if discovery_error else [])
                                                                  + errors))
        return estimate, namespace

    def delete_resource(self, resource: APIResource, namespace: str, deleted_at: datetime) -> Leftovers:
        """Upstream deleteAllContentForGroupVersionResource."""
        collection = resource_path(resource.api_version, resource.plural, namespace=namespace)
        estimate = 0
        if resource.api_version == "v1" and resource.plural == "pods":
            estimate = pods_grace_estimate(self.client.list(collection).get("items") or [],
                                           deleted_at=deleted_at, now=self.clock.now())
        if resource.supports("deletecollection"):
            try:
                self.client.delete(collection, propagation_policy="Background")
            except NotFound:  # the resource went away meanwhile
                return Leftovers(estimate)
        else:
            self.delete_each(resource, collection)
        if not resource.supports("list"):
            return Leftovers(estimate)
        try:
            items = self.client.list(collection).get("items") or []
        except NotFound:  # the resource went away meanwhile
            return Leftovers(estimate)
        return leftovers(items, estimate=estimate)

    def delete_each(self, resource: APIResource, collection: str) -> None:
        if not resource.supports("list"):
            return
        try:
            items = self.client.list(collection).get("items") or []
        except NotFound:  # the resource went away meanwhile
            return
        for item in items:
            try:
                self.client.delete(f"{collection}/{item['metadata']['name']}", propagation_policy="Background")
            except NotFound:
                pass
