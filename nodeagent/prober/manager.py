"""The prober manager: upstream pkg/kubelet/prober/prober_manager.go.

- `add_pod(pod)` (every sync of a running pod; idempotent) starts one worker per app container and probe
  type the spec declares — the worker waits for its container to exist and follows each new instance;
- `stop_liveness_and_startup(uid)` when the pod is being deleted (its containers must not be restarted);
  `remove_pod(uid)` once it is gone; `cleanup_pods(desired)` stops the workers of every other pod;
- `probe_flags(status)` is UpdatePodStatus: `ready`/`started` per running container from the readiness and
  startup results (and a readiness worker whose container has not passed yet is triggered to probe now);
- `failed(status)` gives the container ids whose liveness / startup result is Failure, which
  computePodActions kills (and restarts per restartPolicy);
- every change of a result calls `on_update(pod uid)`: the kubelet wakes the pod's worker (upstream's
  syncLoop reading the results managers' updates channel), so a probe's verdict reaches the status and
  the kill path within one sync.

The manager reads pods' statuses through `status_of` (the status manager's last status), as upstream's
workers read the status manager. Only app containers are probed (no sidecar init containers here).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from control.api.typed.core import Pod
from nodeagent.prober.decide import probe_flags
from nodeagent.prober.results import ResultsManager
from nodeagent.prober.types import ProbeType, Result, container_probes
from nodeagent.prober.worker import ProbeRunner, SpawnFn, Worker
from nodeagent.runtime.types import PodStatus


def _start_thread(worker: Worker) -> None:
    worker.thread.start()


def _now() -> datetime:
    return datetime.now(UTC)


class ProbeManager:
    def __init__(self, prober: ProbeRunner, *, status_of: Callable[[str], Mapping[str, Any] | None],
                 on_update: Callable[[str], object] | None = None, spawn: SpawnFn = _start_thread,
                 monotonic: Callable[[], float] = time.monotonic, now: Callable[[], datetime] = _now,
                 rand: Callable[[], float] = random.random) -> None:
        self.prober = prober
        self._status_of = status_of
        self._spawn = spawn
        self._monotonic = monotonic
        self._now = now
        self._rand = rand
        self.started = monotonic()

        def updated(uid: str, container_id: str, result: Result) -> None:
            if on_update is not None:
                on_update(uid)

        self.results = {kind: ResultsManager(updated) for kind in ProbeType}
        self._lock = threading.Lock()
        self._workers: dict[tuple[str, str, ProbeType], Worker] = {}

    # ---- WorkerContext ----

    def status_of(self, pod_uid: str) -> Mapping[str, Any] | None:
        return self._status_of(pod_uid)

    def monotonic(self) -> float:
        return self._monotonic()

    def now(self) -> datetime:
        return self._now()

    def jitter(self, period: float) -> float:
        """upstream: a random part of one period, only while the kubelet started less than a period ago."""
        return self._rand() * period if self._monotonic() - self.started < period else 0.0

    def worker_done(self, worker: Worker) -> None:
        with self._lock:
            if self._workers.get(worker.key) is worker:
                del self._workers[worker.key]

    # ---- the kubelet's calls ----

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        uid = Pod(pod).metadata.uid
        new: list[Worker] = []
        with self._lock:
            for container in (c.raw for c in Pod(pod).spec.containers):
                if not isinstance(container, Mapping):
                    continue
                for kind, spec in container_probes(container).items():
                    key = (uid, str(container.get("name", "")), kind)
                    if key in self._workers:
                        continue
                    worker = Worker(self, self.results[kind], kind, spec, pod, container)
                    self._workers[key] = worker
                    new.append(worker)
        for worker in new:
            self._spawn(worker)

    def _stop_where(self, match: Callable[[tuple[str, str, ProbeType]], bool]) -> None:
        with self._lock:
            workers = [w for key, w in self._workers.items() if match(key)]
            for worker in workers:
                del self._workers[worker.key]
        for worker in workers:
            worker.stop()

    def stop_liveness_and_startup(self, uid: str) -> None:
        self._stop_where(lambda key: key[0] == uid and key[2] in (ProbeType.LIVENESS, ProbeType.STARTUP))

    def remove_pod(self, uid: str) -> None:
        self._stop_where(lambda key: key[0] == uid)
        forget = getattr(self.prober, "forget", None)
        if forget is not None:
            forget(uid)

    def cleanup_pods(self, desired: Iterable[str]) -> None:
        keep = set(desired)
        self._stop_where(lambda key: key[0] not in keep)

    def stop(self) -> None:
        self._stop_where(lambda key: True)

    def workers(self) -> list[tuple[str, str, ProbeType]]:
        with self._lock:
            return sorted(self._workers, key=lambda k: (k[0], k[1], k[2].value))

    # ---- what a sync reads ----

    @staticmethod
    def _running(status: PodStatus) -> dict[str, str]:
        """Name → id of each container's newest instance, if it runs."""
        running: dict[str, str] = {}
        for container in status.running():
            latest = status.latest(container.name)
            if latest is not None and latest.id == container.id:
                running[container.name] = container.id
        return running

    def probe_flags(self, status: PodStatus) -> tuple[dict[str, bool], dict[str, bool]]:
        """(ready, started) by container name for the status (see decide.probe_flags)."""
        running = self._running(status)
        ready, started = probe_flags(running, self.results[ProbeType.READINESS].subset(running.values()),
                                     self.results[ProbeType.STARTUP].subset(running.values()))
        with self._lock:
            pending = [self._workers.get((status.uid, name, ProbeType.READINESS)) for name in running
                       if not ready.get(name, False)]
        for worker in pending:
            if worker is not None:
                worker.trigger()
        return ready, started

    def failed(self, status: PodStatus) -> tuple[frozenset[str], frozenset[str]]:
        """(liveness failed, startup failed): ids of running containers whose result is Failure."""
        ids = list(self._running(status).values())
        liveness = self.results[ProbeType.LIVENESS].subset(ids)
        startup = self.results[ProbeType.STARTUP].subset(ids)
        return (frozenset(cid for cid, r in liveness.items() if r is Result.FAILURE),
                frozenset(cid for cid, r in startup.items() if r is Result.FAILURE))
