"""The `endpoints.kubernetes.io/last-change-trigger-time` of a Service's Endpoints: when the pod or service
change that this write reflects happened, so a reader (kube-proxy, latency SLIs) can measure how long the
change took to reach the Endpoints.

Upstream: pkg/controller/util/endpoint/trigger_time_tracker.go (`TriggerTimeTracker`, now in staging
k8s.io/endpointslice/util), called from endpoints_controller.go `syncService` on every sync — before the
"nothing changed" test, so its memory follows every sync, written or not — and `DeleteService` when the
Service is gone.

Rules, as upstream:
- A pod's trigger time is the lastTransitionTime of its Ready condition; a Service's is its
  creationTimestamp (upstream does not track other Service changes). Missing times are not triggers.
- The tracker remembers, per Service, the times it saw at the previous sync (pods by name). The first sync
  of a Service returns its creationTimestamp; later syncs return the *earliest* of the times that moved
  forward since the previous sync (the oldest change not yet written), or None when none did — then the
  annotation is removed when the Endpoints is written.
- Like upstream it can be wrong when one object changes twice between syncs; upstream accepts that.

No I/O and no clock: the times come from the objects. One lock guards the map; the work queue never syncs
one key on two workers at once, which is the contract upstream relies on too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from control.api.typed import Pod, Service
from control.apimachinery.meta import timestamp_or_none


def pod_trigger_time(pod: Mapping[str, Any]) -> datetime | None:
    """Upstream getPodTriggerTime: when the pod's Ready condition last changed."""
    ready = Pod(pod).status.condition("Ready")
    return None if ready is None else timestamp_or_none(ready.last_transition_time)


def service_trigger_time(service: Mapping[str, Any]) -> datetime | None:
    """Upstream getServiceTriggerTime: the Service's creationTimestamp."""
    return timestamp_or_none(Service(service).metadata.creation_timestamp)


def format_trigger_time(moment: datetime) -> str:
    """Go's RFC3339Nano in UTC: fraction without trailing zeros, none when whole seconds."""
    utc = moment.astimezone(UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0").rstrip(".")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


@dataclass
class _ServiceState:
    service_time: datetime | None = None
    pod_times: dict[str, datetime] = field(default_factory=dict)


class TriggerTimeTracker:
    """Per-Service memory of the trigger times seen at the previous sync (module notes)."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], _ServiceState] = {}
        self._lock = threading.Lock()

    def compute(self, service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> datetime | None:
        """The trigger time to write for `service` synced over its selected `pods`; remembers this sync."""
        meta = service.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        with self._lock:
            previous = self._states.get(key)
        known = previous or _ServiceState()
        changed: list[datetime] = []
        pod_times: dict[str, datetime] = {}
        for pod in pods:
            moment = pod_trigger_time(pod)
            if moment is None:
                continue
            name = Pod(pod).metadata.name
            pod_times[name] = moment
            if (before := known.pod_times.get(name)) is None or moment > before:
                changed.append(moment)
        service_time = service_trigger_time(service)
        if service_time is not None and (known.service_time is None or service_time > known.service_time):
            changed.append(service_time)
        with self._lock:
            self._states[key] = _ServiceState(service_time, pod_times)
        if previous is None:
            return service_time  # a Service seen for the first time: its creation triggered this
        return min(changed, default=None)

    def forget(self, namespace: str, name: str) -> None:
        """Upstream DeleteService: the Service is gone."""
        with self._lock:
            self._states.pop((namespace, name), None)
