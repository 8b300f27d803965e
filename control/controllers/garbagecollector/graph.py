"""The garbage collector's ownership graph: one node per observed object (by uid), its ownerReferences, and
the dependents of every owner uid — also of owners never observed, so their dependents can be found.

Upstream: pkg/controller/garbagecollector/graph.go (`node`: identity, owners, dependents, beingDeleted,
deletingDependents) and graph_builder.go (`processGraphChanges`: insert/update/remove a node,
`referencesDiffs`, `addUnblockedOwnersToDeleteQueue`, `processTransitions` with
`startsWaitingForDependentsOrphaned` / `startsWaitingForDependentsDeleted`, `absentOwnerCache`).

Pure bookkeeping: `observe` and `forget` change the graph and return what the collector must look at
(`Work`: uids for attemptToDelete, uids for attemptToOrphan); the collector (controller.py) queues
them and does every API call. Thread-safe: informer handler threads and workers share one lock.

Departure: upstream inserts a "virtual" node for an owner not observed yet and checks that owner with a
live GET; here the dependent itself is queued for attemptToDelete, whose classification GETs the owner,
with the same outcome (an owner that exists is solid; one that does not is dangling).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from control.api.typed import TypedObject
from control.controllers.shared.helpers import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, finalizers_of

ABSENT_OWNER_CACHE_SIZE = 500  # upstream NewReferenceCache(500)


@dataclass(frozen=True)
class Identity:
    """What names an object for a live GET (upstream objectReference: OwnerReference coordinates +
    namespace)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class Node:
    identity: Identity
    owners: tuple[Mapping[str, Any], ...]  # the object's ownerReferences (read only)
    being_deleted: bool = False
    deleting_dependents: bool = False  # deletionTimestamp + the foregroundDeletion finalizer


@dataclass
class Work:
    """What a graph change asks the collector to look at."""

    attempt_to_delete: set[str] = field(default_factory=set)
    attempt_to_orphan: set[str] = field(default_factory=set)


def _deleting(obj: Mapping[str, Any] | None) -> bool:
    return bool(obj is not None and TypedObject(obj).metadata.deletion_timestamp)


def starts_deleting_with(old: Mapping[str, Any] | None, new: Mapping[str, Any], finalizer: str) -> bool:
    """Upstream deletionStartsWithFinalizer: `new` is being deleted with `finalizer`, `old` was not both."""
    if not _deleting(new) or finalizer not in finalizers_of(new):
        return False
    return old is None or not _deleting(old) or finalizer not in finalizers_of(old)


def _blocks(reference: Mapping[str, Any]) -> bool:
    return reference.get("blockOwnerDeletion") is True


class Graph:
    def __init__(self, *, absent_cache_size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid → dependent uids (owner observed or not)
        self._absent: OrderedDict[tuple[str, str], None] = OrderedDict()  # (namespace, owner uid), LRU
        self._absent_size = absent_cache_size

    # -- reads ------------------------------------------------------------------------------------------

    def node(self, uid: str) -> Node | None:
        with self._lock:
            return self._nodes.get(uid)

    def dependents(self, uid: str) -> list[Node]:
        with self._lock:
            return [self._nodes[d] for d in sorted(self._dependents.get(uid, ())) if d in self._nodes]

    def blocking_dependents(self, uid: str) -> list[Node]:
        """Dependents whose reference to `uid` has blockOwnerDeletion=true (upstream blockingDependents)."""
        return [d for d in self.dependents(uid) if any(r.get("uid") == uid and _blocks(r) for r in d.owners)]

    def owners_settled(self, uid: str) -> bool:
        """Every owner of `uid` is an observed object not deleting its dependents: the object is held by
        solid owners and needs no live check (upstream would not have queued it)."""
        with self._lock:
            node = self._nodes.get(uid)
            if node is None or not node.owners or node.being_deleted:
                return False
            for reference in node.owners:
                owner = self._nodes.get(str(reference.get("uid")))
                if owner is None or owner.being_deleted:
                    return False
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._nodes)

    # -- the absent owner cache ----------------------------------------------------------------------------

    def is_absent(self, namespace: str, uid: str) -> bool:
        with self._lock:
            if (namespace, uid) in self._absent:
                self._absent.move_to_end((namespace, uid))
                return True
            return False

    def mark_absent(self, namespace: str, uid: str) -> None:
        with self._lock:
            self._mark_absent(namespace, uid)

    def _mark_absent(self, namespace: str, uid: str) -> None:
        self._absent[(namespace, uid)] = None
        self._absent.move_to_end((namespace, uid))
        while len(self._absent) > self._absent_size:
            self._absent.popitem(last=False)

    # -- changes -------------------------------------------------------------------------------------------

    def observe(self, identity: Identity, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> Work:
        """An add or update of the object `identity` names (upstream processGraphChanges, add/update)."""
        work = Work()
        owners = tuple(reference.raw for reference in TypedObject(obj).metadata.owner_references)
        new = Node(identity, owners, being_deleted=_deleting(obj),
                   deleting_dependents=_deleting(obj) and FOREGROUND_FINALIZER in finalizers_of(obj))
        uid = identity.uid
        with self._lock:
            existing = self._nodes.get(uid)
            before = {r.get("uid"): r for r in existing.owners} if existing else {}
            after = {r.get("uid"): r for r in owners}
            for owner_uid, reference in before.items():
                gone, unblocked = owner_uid not in after, not _blocks(after.get(owner_uid) or {})
                if _blocks(reference) and (gone or unblocked):  # addUnblockedOwnersToDeleteQueue
                    owner = self._nodes.get(str(owner_uid))
                    if owner is not None and owner.deleting_dependents:
                        work.attempt_to_delete.add(owner.identity.uid)
                if gone:
                    self._dependents.get(str(owner_uid), set()).discard(uid)
            for owner_uid in after:
                self._dependents.setdefault(str(owner_uid), set()).add(uid)
                if str(owner_uid) not in self._nodes:
                    work.attempt_to_delete.add(uid)  # its owner is unknown: check it (module notes)
            if existing is not None and existing.deleting_dependents and new.being_deleted:
                new = Node(identity, owners, being_deleted=True, deleting_dependents=True)  # never unmarked
            self._nodes[uid] = new
            if starts_deleting_with(old if existing else None, obj, ORPHAN_FINALIZER):
                work.attempt_to_orphan.add(uid)
            elif starts_deleting_with(old if existing else None, obj, FOREGROUND_FINALIZER):
                work.attempt_to_delete |= self._dependents.get(uid, set()) | {uid}
        return work

    def forget(self, uid: str) -> Work:
        """The object is gone (a delete event, or a live GET found it missing): drop its node; its
        dependents may be garbage now, and owners waiting for it may go on (upstream, deleteEvent)."""
        work = Work()
        with self._lock:
            node = self._nodes.pop(uid, None)
            if node is None:
                return work
            dependents = self._dependents.get(uid, set())
            if dependents:
                self._mark_absent(node.identity.namespace, uid)
            work.attempt_to_delete |= dependents
            if not dependents:
                self._dependents.pop(uid, None)
            for reference in node.owners:
                owner_uid = str(reference.get("uid"))
                self._dependents.get(owner_uid, set()).discard(uid)
                if not self._dependents.get(owner_uid) and owner_uid not in self._nodes:
                    self._dependents.pop(owner_uid, None)
                owner = self._nodes.get(owner_uid)
                if owner is not None and owner.deleting_dependents:
                    work.attempt_to_delete.add(owner_uid)
        return work

    def mark_deleting_dependents(self, uid: str) -> None:
        """A live read showed the object deleting its dependents (the cache may be behind)."""
        with self._lock:
            node = self._nodes.get(uid)
            if node is not None:
                self._nodes[uid] = Node(node.identity, node.owners, being_deleted=True, deleting_dependents=True)
