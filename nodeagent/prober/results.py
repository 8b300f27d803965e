"""Probe results by container id: upstream pkg/kubelet/prober/results/results_manager.go.

One manager per probe type. `set` records a result and, only when it differs from what was there (or
nothing was), calls `on_update(pod uid, container id, result)`: the kubelet wakes that pod's worker, whose
next sync reads the results (liveness/startup failures kill, readiness and startup set `ready`/`started`).
Results are keyed by container id, so a failure of a container that was already replaced never touches its
successor. Thread-safe: workers write, pod syncs read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from nodeagent.prober.types import Result

OnUpdate = Callable[[str, str, Result], None]


class ResultsManager:
    def __init__(self, on_update: OnUpdate | None = None) -> None:
        self._on_update = on_update
        self._lock = threading.Lock()
        self._results: dict[str, Result] = {}

    def get(self, container_id: str) -> Result | None:
        with self._lock:
            return self._results.get(container_id)

    def set(self, container_id: str, result: Result, pod_uid: str) -> None:
        with self._lock:
            changed = self._results.get(container_id) is not result
            self._results[container_id] = result
        if changed and self._on_update is not None:
            self._on_update(pod_uid, container_id, result)

    def remove(self, container_id: str) -> None:
        with self._lock:
            self._results.pop(container_id, None)

    def subset(self, container_ids: Iterable[str]) -> dict[str, Result]:
        """The results of these ids that exist (one lock for a pod's containers)."""
        with self._lock:
            return {cid: self._results[cid] for cid in container_ids if cid in self._results}
