"""Informer handlers → the zone: Services and EndpointSlices kept per Service, and that Service's records
recomputed (records.py) whenever either changes — no polling, one Service's work per event.

Upstream: CoreDNS plugin/kubernetes controller.go keeps Service and EndpointSlice informers (its "dnsControl")
and indexes them; here the index is the zone itself. A slice is filed under the Service its
`kubernetes.io/service-name` label names (in the slice's namespace); a slice without it is ignored, as
CoreDNS does. The handlers of both informers may run on different threads: one lock orders them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from clusterdns.records import SERVICE_NAME_LABEL, service_records
from clusterdns.zone import Zone
from control.api.typed.discovery import EndpointSlice

Obj = Mapping[str, Any]


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


class ZoneFeeder:
    def __init__(self, zone: Zone, domain: str) -> None:
        self.zone = zone
        self.domain = domain
        self._lock = threading.Lock()
        self._services: dict[str, Obj] = {}
        self._slices: dict[str, dict[str, Obj]] = {}  # service key → slice name → slice

    def _sync(self, key: str) -> None:
        service = self._services.get(key)
        if service is None:
            self.zone.delete_service(key)
        else:
            self.zone.set_service(key, service_records(service, list(self._slices.get(key, {}).values()),
                                                       self.domain))

    # ---- Services ----

    def on_service(self, service: Obj) -> None:
        meta = service.get("metadata") or {}
        key = _key(meta.get("namespace") or "default", meta.get("name", ""))
        with self._lock:
            self._services[key] = service
            self._sync(key)

    def on_service_update(self, old: Obj, new: Obj) -> None:
        self.on_service(new)

    def on_service_delete(self, service: Obj) -> None:
        meta = service.get("metadata") or {}
        key = _key(meta.get("namespace") or "default", meta.get("name", ""))
        with self._lock:
            self._services.pop(key, None)
            self._sync(key)

    # ---- EndpointSlices ----

    @staticmethod
    def _slice_key(endpoint_slice: Obj) -> tuple[str, str] | None:
        meta = EndpointSlice(endpoint_slice).metadata
        service = meta.labels.get(SERVICE_NAME_LABEL)
        return (_key(meta.namespace or "default", service), meta.name) if service else None

    def on_slice(self, endpoint_slice: Obj) -> None:
        if (found := self._slice_key(endpoint_slice)) is None:
            return
        key, name = found
        with self._lock:
            self._slices.setdefault(key, {})[name] = endpoint_slice
            self._sync(key)

    def on_slice_update(self, old: Obj, new: Obj) -> None:
        before, after = self._slice_key(old), self._slice_key(new)
        if before is not None and before != after:  # relabelled to another Service
            self.on_slice_delete(old)
        self.on_slice(new)

    def on_slice_delete(self, endpoint_slice: Obj) -> None:
        if (found := self._slice_key(endpoint_slice)) is None:
            return
        key, name = found
        with self._lock:
            slices = self._slices.get(key, {})
            slices.pop(name, None)
            if not slices:
                self._slices.pop(key, None)
            self._sync(key)
