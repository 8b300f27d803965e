"""Service and EndpointSlice change trackers: what changed between two syncs, per service port.

Follows upstream's pkg/proxy/servicechangetracker.go, endpointschangetracker.go and endpointslicecache.go.
The informer handlers
call `update(old, new)` with wire-format dicts (None for "absent"); the tracker converts both with
proxy/model.py's pure functions and keeps, per object (namespace/name), the *previous* value — what the
last sync applied — and the *current* one. Several changes between two syncs coalesce into one pair, and
a change that reverts to the previous value cancels out (upstream drops an entry once previous equals
current), so an object that flapped causes no rewrite. `apply` runs at sync time: it folds the pending
pairs into the maps the last sync used, empties the tracker and says which ServicePortNames changed.

EndpointSlices are tracked per *Service* (the slice's `kubernetes.io/service-name` label), as upstream's
endpointSliceCache does: the tracker keeps every slice it has seen, converted, and a slice event turns
into a (previous, current) pair of the Service's merged backends (all its slices, an ip:port listed once),
so one Service spread over several slices is one entry and a pod moving between slices is no change.

The endpoints side also computes, as upstream's detectStaleConntrackEntries does (v1.28 shape), the UDP
backends that stopped receiving traffic (a serving endpoint that is gone or changed) and the UDP service
ports that went from no serving endpoint to at least one; proxy/conntrack.py turns those into the entries
to delete once the new rules are in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from control.api.typed.discovery import EndpointSlice
from proxy.model import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    endpoint_slice_by_port,
    merge_slices,
    service_ports,
    slice_service,
)

V = TypeVar("V")
ObjectKey = tuple[str, str]  # (namespace, name)
ServiceMap = Mapping[ServicePortName, ServicePortInfo]
EndpointsMap = Mapping[ServicePortName, tuple[EndpointInfo, ...]]


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class _ChangeTracker(Generic[V]):
    """(previous, current) per object, each a ServicePortName → value map; invariant: never equal."""

    def __init__(self, convert: Callable[[Mapping[str, Any]], dict[ServicePortName, V]]) -> None:
        self._convert = convert
        self._lock = threading.Lock()
        self._pending: dict[ObjectKey, tuple[dict[ServicePortName, V], dict[ServicePortName, V]]] = {}

    def update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
        """Record one informer event; True if this object now has a change waiting for a sync."""
        obj = new if new is not None else old
        if obj is None:
            return False
        key = object_key(obj)
        current = self._convert(new) if new is not None else {}
        with self._lock:
            previous = self._pending[key][0] if key in self._pending else (
                self._convert(old) if old is not None else {})
            if previous == current:
                self._pending.pop(key, None)
                return False
            self._pending[key] = (previous, current)
            return True

    def pending(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def take(self) -> list[tuple[dict[ServicePortName, V], dict[ServicePortName, V]]]:
        with self._lock:
            taken, self._pending = list(self._pending.values()), {}
        return taken


def _fold(base: Mapping[ServicePortName, V],
          changes: list[tuple[dict[ServicePortName, V], dict[ServicePortName, V]]]
          ) -> tuple[dict[ServicePortName, V], frozenset[ServicePortName], frozenset[ServicePortName]]:
    """base with each change applied: (new map, names whose value changed, names removed)."""
    result = dict(base)
    changed: set[ServicePortName] = set()
    for previous, current in changes:
        for name in previous.keys() - current.keys():
            result.pop(name, None)
        result.update(current)
        changed |= {n for n in previous.keys() | current.keys() if previous.get(n) != current.get(n)}
    removed = frozenset(n for n in changed if n not in result)
    return result, frozenset(changed), removed


@dataclass(frozen=True)
class ServiceUpdate:
    services: dict[ServicePortName, ServicePortInfo]
    changed: frozenset[ServicePortName]
    removed: frozenset[ServicePortName]  # service ports gone since the last sync


@dataclass(frozen=True)
class StaleEndpoint:
    """A UDP backend that was serving a service port and no longer is (upstream ServiceEndpoint)."""

    name: ServicePortName
    endpoint: EndpointInfo


@dataclass(frozen=True)
class EndpointsUpdate:
    endpoints: dict[ServicePortName, tuple[EndpointInfo, ...]]
    changed: frozenset[ServicePortName]
    removed: frozenset[ServicePortName]                 # service ports that have no endpoints any more
    stale_endpoints: tuple[StaleEndpoint, ...]          # UDP: serving before, gone or changed now
    newly_active: frozenset[ServicePortName]            # UDP: no serving endpoint before, some now


class ServiceChangeTracker:
    def __init__(self) -> None:
        self._tracker: _ChangeTracker[ServicePortInfo] = _ChangeTracker(
            lambda svc: {info.name: info for info in service_ports(svc)})

    def update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
        return self._tracker.update(old, new)

    def pending(self) -> bool:
        return self._tracker.pending()

    def apply(self, services: ServiceMap) -> ServiceUpdate:
        result, changed, removed = _fold(services, self._tracker.take())
        return ServiceUpdate(result, changed, removed)


class EndpointSliceChangeTracker:
    """Slices per Service (module notes); the pending (previous, current) pairs are per Service."""

    def __init__(self, *, node_name: str = "") -> None:
        self._node_name = node_name
        self._lock = threading.Lock()
        # service → slice name → its backends per port, as converted when last seen
        self._slices: dict[ObjectKey, dict[str, dict[ServicePortName, list[EndpointInfo]]]] = {}
        self._pending: dict[ObjectKey, tuple[dict[ServicePortName, tuple[EndpointInfo, ...]],
                                             dict[ServicePortName, tuple[EndpointInfo, ...]]]] = {}

    def _merged(self, service: ObjectKey) -> dict[ServicePortName, tuple[EndpointInfo, ...]]:
        slices = self._slices.get(service, {})
        return merge_slices([slices[name] for name in sorted(slices)])

    def update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
        """Record one slice event; True if some Service now has a change waiting for a sync."""
        changes: dict[ObjectKey, tuple[str, dict[ServicePortName, list[EndpointInfo]] | None]] = {}
        for obj, present in ((old, False), (new, True)):
            if obj is None or (service := slice_service(obj)) is None:
                continue
            name = EndpointSlice(obj).metadata.name
            changes[service] = (name, endpoint_slice_by_port(obj, node_name=self._node_name) if present else None)
        waiting = False
        with self._lock:
            for service, (name, converted) in changes.items():
                before = self._merged(service)
                if converted is None:
                    self._slices.get(service, {}).pop(name, None)
                    if not self._slices.get(service):
                        self._slices.pop(service, None)
                else:
                    self._slices.setdefault(service, {})[name] = converted
                after = self._merged(service)
                previous = self._pending[service][0] if service in self._pending else before
                if previous == after:
                    self._pending.pop(service, None)
                else:
                    self._pending[service] = (previous, after)
                    waiting = True
        return waiting

    def pending(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def apply(self, endpoints: EndpointsMap) -> EndpointsUpdate:
        with self._lock:
            taken, self._pending = list(self._pending.values()), {}
        result, changed, removed = _fold(endpoints, taken)
        stale, active = stale_udp(endpoints, result, changed)
        return EndpointsUpdate(result, changed, removed, stale, active)


def stale_udp(old: EndpointsMap, new: EndpointsMap, changed: frozenset[ServicePortName]
              ) -> tuple[tuple[StaleEndpoint, ...], frozenset[ServicePortName]]:
    """UDP endpoints that stopped serving, and UDP service ports that got their first serving endpoint.

    As upstream: only a *serving* (here: ready) old endpoint can have conntrack entries; one counts as gone
    when no equal endpoint is in the new list, so an endpoint that turned not-ready counts too.
    """
    stale: list[StaleEndpoint] = []
    active: set[ServicePortName] = set()
    for name in sorted(changed):
        if name.protocol != "UDP":
            continue
        before, after = old.get(name, ()), new.get(name, ())
        stale += [StaleEndpoint(name, ep) for ep in before if ep.ready and ep not in after]
        if any(ep.ready for ep in after) and not any(ep.ready for ep in before):
            active.add(name)
    return tuple(stale), frozenset(active)
