"""One probe worker per (pod, container, probe type): upstream pkg/kubelet/prober/worker.go run/doProbe.

The thread waits a random part of one period first when the prober manager started less than a period
ago (upstream: a restarted kubelet must not probe every container at the same instant), then probes on a
ticker of `periodSeconds` (ticks missed while a probe ran are dropped, as Go's ticker does) or at once
when triggered (upstream manualTriggerCh: a readiness probe with no passing result yet, asked for by the
status update). Each round is `do_probe`: read the pod's last status, let the pure
`decide.before_probe`/`after_probe` say what to do, carry out their steps on the results manager. When
the worker ends (stopped, or its pod reached a terminal phase) its result is dropped and the manager
forgets it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from control.api.typed.core import Pod
from nodeagent.prober.decide import Next, Step, WorkerState, after_probe, before_probe, view_of
from nodeagent.prober.results import ResultsManager
from nodeagent.prober.types import ProbeSpec, ProbeType, Result

log = logging.getLogger(__name__)


class ProbeRunner(Protocol):
    def probe(self, kind: ProbeType, spec: ProbeSpec, pod: Mapping[str, Any], status: Mapping[str, Any],
              container: Mapping[str, Any], container_id: str) -> Result | None: ...


class WorkerContext(Protocol):
    """What a worker needs of its manager."""

    prober: ProbeRunner

    def status_of(self, pod_uid: str) -> Mapping[str, Any] | None: ...

    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...

    def jitter(self, period: float) -> float:
        """Seconds to wait before the first probe (0 unless the manager started within `period`)."""
        ...

    def worker_done(self, worker: Worker) -> None: ...


class Worker:
    def __init__(self, context: WorkerContext, results: ResultsManager, kind: ProbeType, spec: ProbeSpec,
                 pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
        self.context = context
        self.results = results
        self.kind = kind
        self.spec = spec
        self.pod = pod
        self.container = container
        self.uid = Pod(pod).metadata.uid
        self.name = str(container.get("name", ""))
        self.state = WorkerState()
        self._stop = threading.Event()
        self._trigger = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"probe-{kind.label.lower()}-{self.name}",
                                       daemon=True)

    @property
    def key(self) -> tuple[str, str, ProbeType]:
        return (self.uid, self.name, self.kind)

    def stop(self) -> None:
        self._stop.set()
        self._trigger.set()

    def trigger(self) -> None:
        self._trigger.set()

    def run(self) -> None:
        period = float(self.spec.period_seconds)
        try:
            if self._stop.wait(self.context.jitter(period)):
                return
            next_tick = self.context.monotonic() + period
            while not self._stop.is_set() and self.do_probe():
                next_tick = self._wait(next_tick, period)
        finally:
            self.results.remove(self.state.container_id)
            self.context.worker_done(self)

    def _wait(self, next_tick: float, period: float) -> float:
        """Until the next tick or a trigger; returns the tick after that."""
        now = self.context.monotonic()
        if now >= next_tick:  # the probe overran: missed ticks are dropped
            return next_tick + period * (1 + int((now - next_tick) // period))
        if self._trigger.wait(next_tick - now):
            self._trigger.clear()
            return next_tick
        return next_tick + period

    def do_probe(self) -> bool:
        """One round; False when the worker should end."""
        try:
            status = self.context.status_of(self.uid)
            view = view_of(self.pod, status, self.name) if status is not None else None
            step = before_probe(self.kind, self.spec, self.state, view, now=self.context.now())
            self._apply(step)
            if step.next is not Next.PROBE or status is None:
                return step.next is not Next.STOP
            result = self.context.prober.probe(self.kind, self.spec, self.pod, status, self.container,
                                               self.state.container_id)
            if result is None:  # the probe could not run: its result is thrown away
                return True
            self._apply(after_probe(self.kind, self.spec, self.state, result))
        except Exception:  # a bug in one round must not end probing for good
            log.exception("%s probe of %s/%s failed", self.kind.label, self.uid, self.name)
        return True

    def _apply(self, step: Step) -> None:
        self.state = step.state
        for container_id in step.remove:
            self.results.remove(container_id)
        for container_id, result in step.set:
            self.results.set(container_id, result, self.uid)


SpawnFn = Callable[[Worker], None]
