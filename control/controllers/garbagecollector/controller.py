"""The garbage collector: objects whose owners are gone are deleted, and the `orphan` and
`foregroundDeletion` finalizers the API server leaves on a deleted owner are carried out.

Upstream: pkg/controller/garbagecollector/garbagecollector.go (`attemptToDeleteItem`,
`processDeletingDependentsItem`, `attemptToOrphanWorker` / `orphanDependents`, `removeFinalizer`,
`isDangling` with the absent owner cache) and graph_builder.go (one monitor — an informer — per
resource that supports list, watch and delete, found through discovery and looked for again every 30 s;
events are ignored, as upstream's DefaultIgnoredResources).

Shape: the graph (graph.py) is kept by the informers' handlers and says which uids to look at; the
decision for one object is decisions.py's; this module does the I/O. One queue holds both kinds of
work, keyed `delete/<uid>` (attemptToDelete) and `orphan/<uid>` (attemptToOrphan); a key that fails is
retried with backoff, with no retry limit, as upstream.
- `delete/<uid>`: a live GET of the object (gone → forget it, which queues its dependents); deleting its
  dependents → remove the foregroundDeletion finalizer once no dependent with blockOwnerDeletion=true is
  left, else queue those; otherwise look each owner up (live GET, absent owners remembered) and carry
  out `decide`: drop dangling/waiting references (strategic merge `$patch: delete` by uid, as upstream),
  or DELETE with a uid precondition and the decided propagationPolicy.
- `orphan/<uid>`: remove the reference to the owner from every dependent the graph knows, then the
  owner's `orphan` finalizer (merge patch carrying the resourceVersion read: a 409 retries).

Not done (upstream has them): the OwnerRefInvalidNamespace check and event for references across
namespaces or from cluster-scoped objects to namespaced owners; the metadata-only informers (full objects
are cached; the informers are shared with the other controllers).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from control.client.errors import Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.garbagecollector.decisions import Action, OwnerState, classify_references, decide
from control.controllers.garbagecollector.graph import Graph, Identity, Work
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.discovery import APIResource, Discovery, DiscoveryResult
from control.controllers.shared.helpers import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, has_finalizer

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 20  # upstream --concurrent-gc-syncs
DISCOVERY_PERIOD = 30.0  # upstream: the resources to monitor are looked for again every 30 s
IGNORED_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})  # DefaultIgnoredResources
_FINALIZER_ATTEMPTS = 5
DELETE, ORPHAN = "delete/", "orphan/"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class GarbageCollector(Controller):
    name = "garbagecollector"  # upstream's controller name (--controllers alias of garbage-collector-controller)

    def __init__(self, client: APIClient, informers: InformerFactory, discovery: Discovery, *,
                 workers: int = DEFAULT_WORKERS, discovery_period: float = DISCOVERY_PERIOD,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        self.graph = Graph()
        self.discovery = discovery
        self.discovery_period = discovery_period
        self._lock = threading.Lock()
        self._by_kind: dict[tuple[str, str], APIResource] = {}  # (group, kind) → resource
        self._monitored: set[tuple[str, str]] = set()  # (group, plural)
        self.monitor(discovery.preferred_resources())

    # -- monitors -----------------------------------------------------------------------------------------

    def monitor(self, result: DiscoveryResult) -> bool:
        """Learn the kinds (for owner lookups) and watch every new collectable resource; True if one was added."""
        added = False
        with self._lock:
            for resource in result.resources:
                self._by_kind.setdefault((resource.group, resource.kind), resource)
        for resource in result.resources:
            key = (resource.group, resource.plural)
            if key in IGNORED_RESOURCES or not resource.supports("list", "watch", "delete"):
                continue
            with self._lock:
                if key in self._monitored:
                    continue
                self._monitored.add(key)
            informer = self.informers.informer(resource.api_version, resource.plural)
            informer.add_event_handler(on_add=lambda obj, r=resource: self.on_change(r, obj),
                                       on_update=lambda old, new, r=resource: self.on_change(r, new, old),
                                       on_delete=self.on_delete)
            added = True
        return added

    def on_change(self, resource: APIResource, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        metadata = _meta(obj)
        identity = Identity(resource.api_version, resource.kind, metadata.get("namespace") or "",
                            metadata.get("name", ""), metadata.get("uid", ""))
        self.schedule(self.graph.observe(identity, obj, old))

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        self.schedule(self.graph.forget(_meta(obj).get("uid", "")))

    def schedule(self, work: Work) -> None:
        for uid in work.attempt_to_delete:
            self.queue.add(DELETE + uid)
        for uid in work.attempt_to_orphan:
            self.queue.add(ORPHAN + uid)

    def run(self, stop: threading.Event) -> None:
        threading.Thread(target=self._rediscover, args=(stop,), name="gc-discovery", daemon=True).start()
        super().run(stop)

    def _rediscover(self, stop: threading.Event) -> None:
        while not stop.wait(self.discovery_period):
            try:
                if self.monitor(self.discovery.preferred_resources()):
                    self.informers.start(stop)
            except Exception:
                log.exception("garbage collector: discovery failed; the monitors stay as they are")

    # -- lookups ------------------------------------------------------------------------------------------

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        with self._lock:
            resource = self._by_kind.get((api_version.rpartition("/")[0], kind))
        if resource is None:
            raise LookupError(f"no served resource for {api_version}, Kind={kind}")
        return resource

    def path_of(self, api_version: str, kind: str, namespace: str, name: str) -> str:
        resource = self.resource_for(api_version, kind)
        return resource_path(resource.api_version, resource.plural,
                             namespace=namespace if resource.namespaced else None, name=name)

    def owner_state(self, reference: Mapping[str, Any], namespace: str) -> OwnerState:
        """Upstream isDangling: the absent owner cache, else a live GET of the owner."""
        resource = self.resource_for(str(reference.get("apiVersion", "")), str(reference.get("kind", "")))
        scope = namespace if resource.namespaced else ""
        uid = str(reference.get("uid"))
        if self.graph.is_absent(scope, uid):
            return OwnerState.ABSENT
        try:
            owner = self.client.get(resource_path(resource.api_version, resource.plural, namespace=scope or None,
                                                  name=str(reference.get("name", ""))))
        except NotFound:
            owner = None
        if owner is None or _meta(owner).get("uid") != uid:
            self.graph.mark_absent(scope, uid)
            return OwnerState.ABSENT
        if _meta(owner).get("deletionTimestamp") and has_finalizer(owner, FOREGROUND_FINALIZER):
            return OwnerState.DELETING_DEPENDENTS
        return OwnerState.PRESENT

    # -- the workers --------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        if key.startswith(ORPHAN):
            self.attempt_to_orphan(key[len(ORPHAN):])
        else:
            self.attempt_to_delete(key[len(DELETE):])

    def attempt_to_delete(self, uid: str) -> None:
        """Upstream attemptToDeleteItem (module notes). Raises to retry."""
        node = self.graph.node(uid)
        if node is None or (node.being_deleted and not node.deleting_dependents):
            return
        if self.graph.owners_settled(uid):
            return  # queued while its owners were not yet observed (the informers list in parallel)
        who = node.identity
        path = self.path_of(who.api_version, who.kind, who.namespace, who.name)
        try:
            latest = self.client.get(path)
        except NotFound:
            latest = None
        if latest is None or _meta(latest).get("uid") != uid:
            self.schedule(self.graph.forget(uid))  # upstream's virtual delete event
            return
        metadata = _meta(latest)
        if metadata.get("deletionTimestamp") and FOREGROUND_FINALIZER in (metadata.get("finalizers") or []):
            self.graph.mark_deleting_dependents(uid)
            self.process_deleting_dependents(uid, path)
            return
        references = metadata.get("ownerReferences") or []
        if not references:
            return
        states = {str(r.get("uid")): self.owner_state(r, who.namespace) for r in references}
        dependents = self.graph.dependents(uid)
        decision = decide(latest, classify_references(references, states), has_dependents=bool(dependents),
                          a_dependent_deletes_dependents=any(d.deleting_dependents for d in dependents))
        if decision.action is Action.REMOVE_REFERENCES:
            self.client.patch(path, {"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": owner} for owner in decision.remove_owner_uids],
                "uid": uid}}, patch_type="strategic")
            log.info("removed dangling owner references %s from %s %s/%s", list(decision.remove_owner_uids),
                     who.kind, who.namespace, who.name)
        elif decision.action is Action.DELETE:
            if decision.unblock_first:  # upstream unblockOwnerReferencesStrategicMergePatch
                self.client.patch(path, {"metadata": {"ownerReferences": [
                    {"uid": r.get("uid"), "blockOwnerDeletion": False} for r in references], "uid": uid}},
                    patch_type="strategic")
            try:
                self.client.delete(path, propagation_policy=decision.policy, preconditions={"uid": uid})
                log.info("garbage collected %s %s/%s (propagationPolicy=%s)", who.kind, who.namespace, who.name,
                         decision.policy)
            except NotFound:
                pass

    def process_deleting_dependents(self, uid: str, path: str) -> None:
        """Upstream processDeletingDependentsItem: the owner goes once its blocking dependents have."""
        blocking = self.graph.blocking_dependents(uid)
        if not blocking:
            self.remove_finalizer(path, FOREGROUND_FINALIZER)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.queue.add(DELETE + dependent.identity.uid)

    def attempt_to_orphan(self, uid: str) -> None:
        """Upstream attemptToOrphanWorker: drop the references to the owner, then its orphan finalizer."""
        node = self.graph.node(uid)
        if node is None:
            return
        for dependent in self.graph.dependents(uid):
            who = dependent.identity
            try:
                self.client.patch(self.path_of(who.api_version, who.kind, who.namespace, who.name), {
                    "metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": who.uid}},
                    patch_type="strategic")
            except NotFound:
                pass
        owner = node.identity
        self.remove_finalizer(self.path_of(owner.api_version, owner.kind, owner.namespace, owner.name),
                              ORPHAN_FINALIZER)

    def remove_finalizer(self, path: str, finalizer: str) -> None:
        """Upstream removeFinalizer: read, drop `finalizer`, patch with the resourceVersion read; a lost race
        reads again."""
        for _ in range(_FINALIZER_ATTEMPTS):
            try:
                latest = self.client.get(path)
            except NotFound:
                return
            finalizers = _meta(latest).get("finalizers") or []
            if finalizer not in finalizers:
                return
            try:
                self.client.patch(path, {"metadata": {
                    "finalizers": [f for f in finalizers if f != finalizer],
                    "resourceVersion": _meta(latest).get("resourceVersion")}})
                log.info("removed finalizer %s from %s", finalizer, path)
                return
            except NotFound:
                return
            except Conflict:
                continue
        raise RuntimeError(f"{path}: finalizer {finalizer} not removed after {_FINALIZER_ATTEMPTS} conflicts")
