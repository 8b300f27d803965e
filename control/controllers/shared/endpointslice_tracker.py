"""What the EndpointSlice controllers remember of their own writes, so a sync never plans against a
cache that has not seen them yet.

Upstream: staging k8s.io/endpointslice endpointslice_tracker.go (`EndpointSliceTracker`: per Service, the
generation of each slice written and the slices deleted; `StaleSlices`) and errors.go
(`StaleInformerCache`). Shared by the EndpointSlice and EndpointSlice mirroring controllers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from control.api.typed import EndpointSlice
from control.client.workqueue import RetryLater


class StaleInformerCache(RetryLater):
    """The slice cache is behind this controller's own writes: retry the Service later."""


class SliceTracker:
    """Upstream EndpointSliceTracker: per Service, the generation of each slice this controller wrote
    (by name) and the uids it deleted; `stale` compares the cache with them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generations: dict[str, dict[str, int]] = {}
        self._deleted: dict[str, set[str]] = {}

    def wrote(self, service_key: str, slice_: Mapping[str, Any]) -> None:
        meta = slice_.get("metadata") or {}
        with self._lock:
            self._generations.setdefault(service_key, {})[meta.get("name", "")] = int(meta.get("generation") or 0)

    def deleted(self, service_key: str, slice_: Mapping[str, Any]) -> None:
        meta = slice_.get("metadata") or {}
        with self._lock:
            self._generations.get(service_key, {}).pop(meta.get("name", ""), None)
            self._deleted.setdefault(service_key, set()).add(meta.get("uid", ""))

    def observed_deletion(self, service_key: str, slice_: Mapping[str, Any]) -> None:
        """The cache saw the slice go (ours or someone else's delete): nothing is expected of it any more."""
        meta = slice_.get("metadata") or {}
        with self._lock:
            self._deleted.get(service_key, set()).discard(meta.get("uid", ""))
            self._generations.get(service_key, {}).pop(meta.get("name", ""), None)

    def stale(self, service_key: str, cached: Sequence[Mapping[str, Any]]) -> bool:
        by_name = {EndpointSlice(s).metadata.name: s for s in cached}
        with self._lock:
            generations = dict(self._generations.get(service_key, {}))
            deleted = set(self._deleted.get(service_key, set()))
        for name, generation in generations.items():
            current = by_name.get(name)
            if current is None or EndpointSlice(current).metadata.generation < generation:
                return True
        return any(EndpointSlice(s).metadata.uid in deleted for s in cached)

    def forget(self, service_key: str) -> None:
        with self._lock:
            self._generations.pop(service_key, None)
            self._deleted.pop(service_key, None)
