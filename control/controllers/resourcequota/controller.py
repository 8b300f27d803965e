"""The resource quota controller: keeps every ResourceQuota's `status.hard` (a copy of `spec.hard`) and
`status.used` (what the namespace's objects use of each hard resource) true.

Upstream: pkg/controller/resourcequota/resource_quota_controller.go (syncResourceQuota: usage recomputed
from the listers and written through the status subresource when it differs; a full resync of every
quota each `--resource-quota-sync-period`, 5 minutes by default) and resource_quota_monitor.go (the
"replenishment" informers: a change to a counted object that changes its usage — a pod finishing, a
Service changing type — or a deletion enqueues the quotas of its namespace). What an object counts is
control/api/quota.py's, the same functions quota admission uses.

Shape (control/controllers/shared/base.py): informers on ResourceQuotas and on the kinds quota counts with an
evaluator upstream (pods, services, replication controllers, configmaps, secrets, resourcequotas,
persistentvolumeclaims: `persistentvolumeclaims`, `requests.storage` and their per-StorageClass
`<class>.storageclass.storage.k8s.io/…` forms, counted as quota admission counts them); a
quota's key is enqueued when it is added or its spec or status changed, when a counted object of its
namespace changes usage, and again `resync_period` after each sync (the delaying queue keeps one
pending resync per quota). `sync(key)` reads the quota and the counted objects from the listers — other
`count/<resource>.<group>` kinds are listed through the API at `/apis/<group>/v1` — computes the status
and writes it with the cached resourceVersion (a stale cache is a 409, retried with backoff).

Departures: quota admission here checks usage against the stored objects but does not write
`status.used` (upstream's admission charges the quota's status in the same request), so the controller
also recounts when a counted object is *created*. `count/<resource>.<group>` is read at version v1 only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from control.api import quota
from control.api.typed import TypedObject
from control.apimachinery.meta import split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.store import Lister
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-resource-quota-syncs
RESYNC_PERIOD = 300.0  # upstream --resource-quota-sync-period: 5m
# The kinds with an evaluator upstream, watched for replenishment and read from their listers.
WATCHED: Mapping[tuple[str, str], str] = {
    ("", "pods"): "v1", ("", "services"): "v1", ("", "replicationcontrollers"): "v1", ("", "configmaps"): "v1",
    ("", "secrets"): "v1", ("", "resourcequotas"): "v1", ("", "persistentvolumeclaims"): "v1",
}


class QuotaClient(APIClient, Protocol):
    """The controller's verbs: the base's, and `list` for the kinds no informer watches."""

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...


class ResourceQuotaController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs quotas until `stop` is set."""

    name = "resourcequota"

    client: QuotaClient

    def __init__(self, client: QuotaClient, informers: InformerFactory, *, resync_period: float = RESYNC_PERIOD,
                 workers: int = DEFAULT_WORKERS, queue: RateLimitingQueue[str] | None = None,
                 recorder: EventRecorder | None = None, clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.resync_period = resync_period
        quotas = informers.informer("v1", "resourcequotas")
        self.quotas = quotas.lister()
        quotas.add_event_handler(on_add=self.enqueue, on_update=self.on_quota_update)
        self.listers: dict[tuple[str, str], Lister] = {}
        for (group, plural), version in WATCHED.items():
            informer = informers.informer(f"{group}/{version}" if group else version, plural)
            self.listers[(group, plural)] = informer.lister()
            informer.add_event_handler(on_add=self.replenish, on_update=self._counted_update(group, plural),
                                       on_delete=self.replenish)

    # -- handlers ---------------------------------------------------------------------------------------

    def on_quota_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """A spec change (new limits) or a status someone else wrote; not the controller's own write."""
        if old.get("spec") != new.get("spec") or (new.get("status") or {}).get("hard") != (
                new.get("spec") or {}).get("hard"):
            self.enqueue(new)

    def replenish(self, obj: Mapping[str, Any]) -> None:
        """Recount every quota of the object's namespace."""
        namespace = TypedObject(obj).metadata.namespace
        for one in self.quotas.list(namespace) if namespace else ():
            self.enqueue(one)

    def _counted_update(self, group: str, plural: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
        """The update handler of one counted kind: only an update that changes what the object counts
        (upstream's replenishment filter) recounts."""
        def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
            if quota.usage(plural, old, group=group) != quota.usage(plural, new, group=group):
                self.replenish(new)
        return on_update

    # -- sync -------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        current = self.quotas.get(namespace, name)
        if current is None:
            return
        hard = (current.get("spec") or {}).get("hard") or {}
        objects = {source: self._objects(source, namespace)
                   for source in {quota.counted_by(resource) for resource in hard} if source is not None}
        wanted = {"hard": dict(hard), "used": quota.status_used(current, {k: v for k, v in objects.items()
                                                                           if v is not None})}
        if current.get("status") != wanted:
            path = resource_path("v1", "resourcequotas", namespace=namespace, name=name, subresource="status")
            self.client.update(path, {**current, "status": wanted})
        self.queue.add_after(key, self.resync_period)

    def _objects(self, source: tuple[str, str], namespace: str) -> Iterable[Mapping[str, Any]] | None:
        """The namespace's objects of one counted kind; None when the server does not serve it."""
        lister = self.listers.get(source)
        if lister is not None:
            return lister.list(namespace)
        group, plural = source
        try:
            return self.client.list(resource_path(f"{group}/v1" if group else "v1", plural,
                                                 namespace=namespace)).get("items") or []
        except NotFound:
            return None

