"""One in-memory API server for unit tests of controllers, the scheduler, the node agent's API clients and
the informers: RESTClient-shaped (`get`/`list`/`create`/`update`/`patch`/`delete`/`watch` on the same paths,
raising the same control/client/errors.py types), so the code under test and a real `InformerFactory` run
against it unchanged.

Upstream shape: client-go's fake clientset (kubernetes/fake + testing/fixture.go): an object tracker with
a resourceVersion, every call recorded as an `Action` (`Actions()`), and reactors prepended to fail or hold
a call (`PrependReactor`); objects handed to `add` are stored as given (uid included), as its
`NewSimpleClientset(objects...)`.

What it keeps of the real API server (control/apiserver/registry/store.py, watch.py), so tests can trust it:
- The resource table (control/apiserver/resources.py) decides kind, apiVersion, scope and which kinds
  have a status subresource; an unknown resource is a 404.
- One global resourceVersion counter for every write; create sets uid, creationTimestamp, generation 1
  (objects with a spec) and rejects a set resourceVersion; a name taken is 409 AlreadyExists, a missing
  object 404 NotFound; update with a stale resourceVersion is 409 Conflict, without one it is
  unconditional; a write that changes nothing is not written (no new resourceVersion, no event).
- Status subresource: an update or patch of the object keeps the stored status, one of `/status` changes
  only the status, labels and annotations (the real server's `prepare_for_status_update`); a spec change
  raises metadata.generation. endpoints, events and leases may be created by an update (upstream
  AllowCreateOnUpdate).
- Patches: merge, strategic (control/apiserver/fieldmanager/patch.py) and JSON patch; a resourceVersion in the patch is
  a precondition.
- pods/{name}/binding (create): sets spec.nodeName and PodScheduled=True once, 409 Conflict when the pod is
  bound already or being deleted (the real server's `assign_node`).
- Delete: preconditions (uid, resourceVersion) give 409; the propagationPolicy (or the kind's default)
  leaves the `orphan`/`foregroundDeletion` finalizers as the real server does (strategies.base
  `gc_finalizers`); an object with finalizers, a namespace with spec.finalizers (phase Terminating), or a
  pod on a node deleted with a grace period other than 0, is only marked (deletionTimestamp, MODIFIED)
  and goes when the last finalizer is removed (`namespaces/{name}/finalize` writes spec.finalizers) or it
  is deleted again with grace 0. A DELETE of a collection deletes each of its objects so.
- List: label and field selectors (control/apimachinery/labels.py, fields.py), the List's
  resourceVersion is the current one; paging (`limit`) is not done: everything comes in one page.
- Watch from "" or "0" starts with the current objects as ADDED; from a resourceVersion it replays every
  change after it (410 Gone if `compact` dropped that history), then follows. With a selector an object
  that stops matching is DELETED and one that starts matching ADDED, as the watch cache does. No
  bookmarks. The stream ends when `stop` is set or `timeout_seconds` passed.

Departures: no defaults, validation, admission or allocation (tests build the objects they need, as small
as they like); namespaces are not required to exist; generateName gets a counter suffix.
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from control.apimachinery import fields, labels
from control.apimachinery.meta import format_timestamp
from control.apiserver.fieldmanager.patch import json_merge_patch, json_patch, strategic_merge_patch
from control.apiserver.registry.strategies import KINDS
from control.apiserver.registry.strategies.base import gc_finalizers, prepare_for_status_update
from control.apiserver.registry.strategies.pods import assign_node
from control.apiserver.resources import Resource, by_kind, by_path
from control.apiserver.status import APIError
from control.client.errors import ApiError, error_from_status
from control.client.rest import WatchEvent
from control.util.clock import Clock, RealClock

ALLOW_CREATE_ON_UPDATE = frozenset({"endpoints", "events", "leases"})
STALE = "the object has been modified; please apply your changes to the latest version and try again"
_POLL = 0.02  # real seconds a watch waits before looking at its stop Event again


@dataclass(frozen=True)
class Action:
    """One call as the server saw it (client-go testing.Action): who, verb, path, body, options."""

    verb: str  # get | list | watch | create | update | patch | delete
    path: str
    body: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)
    client: str = ""


Reactor = Callable[[Action], None]  # raises to fail the call, blocks to hold it, returns to let it through


def api_error(code: int, reason: str, message: str) -> ApiError:
    """The exception RESTClient raises for such an answer."""
    return error_from_status(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                                    "reason": reason, "message": message})


@dataclass(frozen=True)
class _Target:
    resource: Resource
    namespace: str | None  # None: every namespace (a list or watch of a namespaced resource)
    name: str
    subresource: str

    @property
    def collection(self) -> tuple[str, str, str]:
        return self.resource.group, self.resource.version, self.resource.plural

    def qualified(self) -> str:
        group = self.resource.group
        return f"{self.resource.plural}.{group}" if group else self.resource.plural


def parse_path(path: str) -> _Target:
    """The resource, namespace, name and subresource a REST path names (control/client/paths.py's inverse)."""
    parts = [unquote(part) for part in path.strip("/").split("/")]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise api_error(404, "NotFound", f"the server could not find the requested resource ({path})")
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    resource = by_path(group, version, rest[0]) if rest else None
    if resource is None or len(rest) > 3:
        raise api_error(404, "NotFound", f"the server could not find the requested resource ({path})")
    return _Target(resource, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")


@dataclass(frozen=True)
class _Change:
    revision: int
    collection: tuple[str, str, str]
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None


class FakeAPIServer:
    """The objects, the revision counter and the change history (module notes). Thread-safe."""

    def __init__(self, *objects: Mapping[str, Any], clock: Clock | None = None) -> None:
        self.clock: Clock = clock or RealClock()
        self._lock = threading.Condition()
        self._revision = 0
        self._compacted = 0  # changes at or below this revision are forgotten
        self._objects: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._history: list[_Change] = []
        self._names = itertools.count(1)
        self._reactors: list[Reactor] = []
        self.actions: list[Action] = []
        for obj in objects:
            self.add(obj)

    # -- test controls -------------------------------------------------------------------------------

    def client(self, name: str = "") -> FakeClient:
        """A RESTClient-shaped view whose calls are recorded under `name` (a component, a user agent)."""
        return FakeClient(self, name)

    def add(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store `obj` as given (uid, timestamps, status kept) with a new resourceVersion: test fixtures.
        The path comes from its apiVersion and kind."""
        target = _target_of(obj)
        with self._lock:
            key = (target.namespace or "", obj["metadata"]["name"])
            old = self._objects.get(target.collection, {}).get(key)
            stored = copy.deepcopy(dict(obj))
            stored["apiVersion"], stored["kind"] = target.resource.api_version, target.resource.kind
            return self._store(target, stored, old)

    def prepend_reactor(self, reactor: Reactor) -> None:
        """Run `reactor` on every later call before the server acts on it (it may raise or block)."""
        with self._lock:
            self._reactors.insert(0, reactor)

    def fail_next(self, *errors: BaseException, verb: str | None = None, client: str | None = None) -> None:
        """The next calls (of `verb` by `client`; None: any) raise `errors`, one each, in order."""
        pending = list(errors)
        lock = threading.Lock()

        def fail(action: Action) -> None:
            if (verb is not None and action.verb != verb) or (client is not None and action.client != client):
                return
            with lock:
                error = pending.pop(0) if pending else None
            if error is not None:
                raise error

        self.prepend_reactor(fail)

    def actions_of(self, client: str, *verbs: str) -> list[Action]:
        """The calls `client` made (only those of `verbs`, if given), in order."""
        with self._lock:
            return [a for a in self.actions if a.client == client and (not verbs or a.verb in verbs)]

    def compact(self) -> None:
        """Forget the change history up to now: a watch from an older resourceVersion gets 410 Gone."""
        with self._lock:
            self._compacted = self._revision
            self._history.clear()

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._revision)

    # -- the verbs (called through FakeClient) ---------------------------------------------------------

    def handle(self, action: Action) -> Any:
        with self._lock:
            self.actions.append(action)
            reactors = list(self._reactors)
        for reactor in reactors:
            reactor(action)
        target = parse_path(action.path)
        if action.verb == "watch":
            return self._watch(target, action.params)
        with self._lock:
            return copy.deepcopy(getattr(self, f"_{action.verb}")(target, action))

    def _get(self, target: _Target, action: Action) -> dict[str, Any]:
        return self._must_get(target)

    def _list(self, target: _Target, action: Action) -> dict[str, Any]:
        matches = _matcher(action.params)
        items = [obj for (namespace, _), obj in sorted(self._objects.get(target.collection, {}).items())
                 if target.namespace is None or namespace == target.namespace]
        return {"kind": f"{target.resource.kind}List", "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": str(self._revision)}, "items": [o for o in items if matches(o)]}

    def _create(self, target: _Target, action: Action) -> dict[str, Any]:
        if target.subresource == "binding":
            return self._bind(target, action)
        body = copy.deepcopy(action.body)
        metadata = body.setdefault("metadata", {})
        if metadata.get("resourceVersion"):
            raise api_error(500, "InternalError", "resourceVersion should not be set on objects to be created")
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = f"{metadata['generateName']}{next(self._names):05d}"
        if not metadata.get("name"):
            raise api_error(422, "Invalid", "metadata.name: Required value: name or generateName is required")
        if target.resource.namespaced:
            metadata["namespace"] = target.namespace or metadata.get("namespace") or "default"
        else:
            metadata.pop("namespace", None)
        if self._objects.get(target.collection, {}).get(_key(body)) is not None:
            raise api_error(409, "AlreadyExists", f'{target.qualified()} "{metadata["name"]}" already exists')
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = format_timestamp(self.clock.now())
        if "spec" in body:
            metadata["generation"] = 1
        body["apiVersion"], body["kind"] = target.resource.api_version, target.resource.kind
        return self._store(target, body, None)

    def _bind(self, target: _Target, action: Action) -> dict[str, Any]:
        """pods/{name}/binding with the real server's rules (control/apiserver/registry/binding.py `assign_node`)."""
        old = self._must_get(target)
        node = ((action.body or {}).get("target") or {}).get("name")
        if not node:
            raise api_error(422, "Invalid", "target.name: Required value")
        pod = copy.deepcopy(old)
        try:
            assign_node(pod, node, now=self.clock.now())
        except APIError as exc:
            raise api_error(exc.code, exc.reason, str(exc)) from None
        self._store(target, pod, old)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _update(self, target: _Target, action: Action) -> dict[str, Any]:
        old = self._objects.get(target.collection, {}).get((target.namespace or "", target.name))
        if old is None and target.resource.plural in ALLOW_CREATE_ON_UPDATE and not target.subresource:
            return self._create(target, action)
        old = self._must_get(target)
        wanted = (action.body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise api_error(409, "Conflict", f'Operation cannot be fulfilled on {target.qualified()} '
                                             f'"{target.name}": {STALE}')
        return self._write(target, old, copy.deepcopy(action.body))

    def _patch(self, target: _Target, action: Action) -> dict[str, Any]:
        old = self._must_get(target)
        patch_type, document = action.params["patch_type"], action.body
        if patch_type == "json":
            patched = json_patch(copy.deepcopy(old), document)
        elif patch_type == "strategic":
            patched = strategic_merge_patch(copy.deepcopy(old), document, kind=target.resource.kind)
        else:
            patched = json_merge_patch(copy.deepcopy(old), document)
        wanted = (document.get("metadata") or {}).get("resourceVersion") if isinstance(document, dict) else None
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise api_error(409, "Conflict", f'Operation cannot be fulfilled on {target.qualified()} '
                                             f'"{target.name}": {STALE}')
        return self._write(target, old, patched)

    def _delete(self, target: _Target, action: Action) -> dict[str, Any]:
        if not target.name:  # deletecollection: each object as its own delete
            items = [obj for (namespace, _), obj in sorted(self._objects.get(target.collection, {}).items())
                     if target.namespace is None or namespace == target.namespace]
            deleted = [self._delete_one(target, obj, action) for obj in items]
            return {"kind": f"{target.resource.kind}List", "apiVersion": target.resource.api_version,
                    "metadata": {"resourceVersion": str(self._revision)}, "items": deleted}
        return self._delete_one(target, self._must_get(target), action)

    def _delete_one(self, target: _Target, old: dict[str, Any], action: Action) -> dict[str, Any]:
        target = _Target(target.resource, old["metadata"].get("namespace") or target.namespace,
                         old["metadata"]["name"], "")
        preconditions = action.params.get("preconditions") or {}
        for field_name, key in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
            if preconditions.get(field_name) and preconditions[field_name] != old["metadata"].get(key):
                raise api_error(409, "Conflict", f'Precondition failed: {field_name}: {preconditions[field_name]}, '
                                                 f'{field_name} in object meta: {old["metadata"].get(key)}')
        grace = action.params.get("grace_period_seconds")
        graceful = (target.resource.plural == "pods" and (old.get("spec") or {}).get("nodeName")
                    and grace != 0)
        finalizers = gc_finalizers(old["metadata"].get("finalizers") or [],
                                   policy=action.params.get("propagation_policy"),
                                   default_orphan=_orphans_by_default(target.resource))
        held = target.resource.plural == "namespaces" and (old.get("spec") or {}).get("finalizers")
        if finalizers or graceful or held:
            marked = copy.deepcopy(old)
            if finalizers:
                marked["metadata"]["finalizers"] = list(finalizers)
            if held:
                marked.setdefault("status", {})["phase"] = "Terminating"
            if old["metadata"].get("deletionTimestamp") and not graceful:
                return self._store(target, marked, old) if marked != old else old
            marked["metadata"].setdefault("deletionTimestamp", format_timestamp(self.clock.now()))
            if graceful:
                seconds = grace if grace is not None else (old.get("spec") or {}).get(
                    "terminationGracePeriodSeconds", 30)
                marked["metadata"]["deletionGracePeriodSeconds"] = seconds
            return self._store(target, marked, old) if marked != old else old
        return self._remove(target, old)

    # -- plumbing (under the lock) -----------------------------------------------------------------

    def _must_get(self, target: _Target) -> dict[str, Any]:
        obj = self._objects.get(target.collection, {}).get((target.namespace or "", target.name))
        if obj is None:
            raise api_error(404, "NotFound", f'{target.qualified()} "{target.name}" not found')
        return obj

    def _write(self, target: _Target, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """An update of `old` to `new`, with the status subresource's rules (module notes)."""
        has_status = "status" in target.resource.subresources
        if target.subresource == "finalize":
            new = {**copy.deepcopy(old), "spec": {**(old.get("spec") or {}),
                                                  "finalizers": (new.get("spec") or {}).get("finalizers") or []}}
        elif target.subresource == "status":
            status = new.get("status")
            new = prepare_for_status_update(new, old)  # status, labels and annotations, as the real server
            if status is None:
                del new["status"]
        elif has_status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
        metadata = new.setdefault("metadata", {})
        for kept in ("name", "namespace", "uid", "creationTimestamp", "generation", "deletionTimestamp",
                     "deletionGracePeriodSeconds"):
            if kept in old["metadata"]:
                metadata[kept] = old["metadata"][kept]
            else:
                metadata.pop(kept, None)
        metadata["resourceVersion"] = old["metadata"]["resourceVersion"]
        new["apiVersion"], new["kind"] = old.get("apiVersion"), old.get("kind")
        if "generation" in metadata and new.get("spec") != old.get("spec"):
            metadata["generation"] += 1
        if new == old:
            return old  # nothing changed: not written, no event
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers") and not (
                target.resource.plural == "pods" and (new.get("spec") or {}).get("nodeName")) and not (
                target.resource.plural == "namespaces" and (new.get("spec") or {}).get("finalizers")):
            return self._remove(target, new)
        return self._store(target, new, old)

    def _store(self, target: _Target, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        self._objects.setdefault(target.collection, {})[_key(obj)] = obj
        self._record(target, "ADDED" if old is None else "MODIFIED", obj, old)
        return obj

    def _remove(self, target: _Target, obj: dict[str, Any]) -> dict[str, Any]:
        self._revision += 1
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self._revision)
        del self._objects[target.collection][_key(obj)]
        self._record(target, "DELETED", gone, None)
        return gone

    def _record(self, target: _Target, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self._history.append(_Change(self._revision, target.collection, kind, copy.deepcopy(obj),
                                     copy.deepcopy(old)))
        self._lock.notify_all()

    def _watch(self, target: _Target, params: Mapping[str, Any]) -> Iterator[WatchEvent]:
        """Checks the start before the first `next`, as the real watch answers 410 on opening."""
        matches = _matcher(params)
        rv = params.get("resource_version") or ""
        with self._lock:
            if rv in ("", "0"):
                start = self._revision
                initial = [WatchEvent("ADDED", copy.deepcopy(o)) for o in self._list(
                    target, Action("list", "", params=params))["items"]]
            else:
                start = int(rv)
                if start < self._compacted:
                    raise api_error(410, "Expired", f"too old resource version: {start} ({self._compacted})")
                initial = []
        return self._follow(target, matches, start, initial, params)

    def _follow(self, target: _Target, matches: Callable[[Mapping[str, Any]], bool], start: int,
                initial: list[WatchEvent], params: Mapping[str, Any]) -> Iterator[WatchEvent]:
        stop: threading.Event = params.get("stop") or threading.Event()
        timeout = params.get("timeout_seconds")
        deadline = None if timeout is None else time.monotonic() + timeout
        yield from initial
        seen = start
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            with self._lock:
                changes = [c for c in self._history if c.revision > seen]
                if not changes:
                    self._lock.wait(_POLL)
                    continue
            for change in changes:
                seen = change.revision
                event = _watch_event(target, change, matches)
                if event is not None:
                    yield event
                if stop.is_set():
                    return


def _watch_event(target: _Target, change: _Change, matches: Callable[[Mapping[str, Any]], bool]) -> WatchEvent | None:
    if change.collection != target.collection:
        return None
    if target.namespace is not None and (change.obj.get("metadata") or {}).get("namespace") != target.namespace:
        return None
    now = matches(change.obj)
    before = change.old is not None and matches(change.old)
    if change.type == "MODIFIED" and now != before:
        kind = "ADDED" if now else "DELETED"
    elif now:
        kind = change.type
    else:
        return None
    return WatchEvent(kind, copy.deepcopy(change.obj))


def _matcher(params: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    query = params.get("params") or {}
    label_selector = labels.parse_selector(query.get("labelSelector") or "")
    field_selector = fields.parse_selector(query.get("fieldSelector") or "")
    paths = [requirement.field for requirement in field_selector.requirements]

    def matches(obj: Mapping[str, Any]) -> bool:
        return (label_selector.matches((obj.get("metadata") or {}).get("labels") or {})
                and field_selector.matches(fields.fields_of(obj, paths)))

    return matches


def _orphans_by_default(resource: Resource) -> bool:
    """The kind's default GC policy, as the real server's strategy has it."""
    return getattr(KINDS.get(resource.plural), "orphans_by_default", False)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]


def _target_of(obj: Mapping[str, Any]) -> _Target:
    resource = by_kind(obj.get("apiVersion") or "v1", obj.get("kind") or "")
    if resource is None:
        raise ValueError(f"a fixture needs the apiVersion and kind of a served resource: {obj.get('kind')!r}")
    namespace = (obj.get("metadata") or {}).get("namespace") if resource.namespaced else ""
    if resource.namespaced and not namespace:
        raise ValueError("a namespaced fixture needs metadata.namespace")
    return _Target(resource, namespace, "", "")


class FakeClient:
    """RESTClient's verbs against a FakeAPIServer, each recorded as an Action under this client's name."""

    def __init__(self, server: FakeAPIServer, name: str) -> None:
        self.server = server
        self.name = name
        self.closed = False

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict:
        return self.server.handle(Action("get", path, params={"params": dict(params or {})}, client=self.name))

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict:
        return self.server.handle(Action("list", path, params={"params": dict(params or {})}, client=self.name))

    def create(self, path: str, body: dict, *, params: Mapping[str, str] | None = None) -> dict:
        return self.server.handle(Action("create", path, body, {"params": dict(params or {})}, client=self.name))

    def update(self, path: str, body: dict, *, params: Mapping[str, str] | None = None) -> dict:
        return self.server.handle(Action("update", path, body, {"params": dict(params or {})}, client=self.name))

    def update_status(self, path: str, body: dict) -> dict:
        """PUT of `path`'s status subresource (upstream UpdateStatus)."""
        return self.update(path.rstrip("/") + "/status", body)

    def patch(self, path: str, patch: dict | list, *, patch_type: str = "merge") -> dict:
        return self.server.handle(Action("patch", path, patch, {"patch_type": patch_type}, client=self.name))

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict | None = None) -> dict:
        return self.server.handle(Action("delete", path, None, {
            "grace_period_seconds": grace_period_seconds, "propagation_policy": propagation_policy,
            "preconditions": preconditions}, client=self.name))

    def watch(self, path: str, *, resource_version: str = "", params: Mapping[str, str] | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              stop: threading.Event | None = None) -> Iterator[WatchEvent]:
        return self.server.handle(Action("watch", path, None, {
            "resource_version": resource_version, "params": dict(params or {}), "timeout_seconds": timeout_seconds,
            "stop": stop}, client=self.name))

    def close(self) -> None:
        self.closed = True
