"""What a probe worker does next and what a result means: upstream pkg/kubelet/prober/worker.go doProbe,
and prober_manager.go UpdatePodStatus, as pure functions over typed views.

The worker thread (worker.py) does the I/O: it reads the pod's last status from the status manager, asks
`before_probe` whether to probe, runs the probe, and hands the result to `after_probe`; each returns a
`Step` (the new worker state, the results to set or drop, whether to go on). Upstream's rules, kept:

- no status yet, or the container not created yet: wait; the pod in a terminal phase: stop the worker;
- a new container id: drop the old id's result, set the probe type's initial result (readiness Failure,
  liveness Success, startup Unknown), and take the worker off hold;
- on hold (after a liveness/startup failure, until the container is replaced): wait;
- the container not running: its result becomes Failure; stop the worker only if it terminated and the
  pod's restartPolicy is Never (it will not come back);
- within initialDelaySeconds of the container's start: wait;
- startup probes run only until the container is `started`; liveness and readiness only after it is;
- a result counts once it repeats: failureThreshold failures or successThreshold successes in a row set
  it; a liveness or startup Failure that is set puts the worker on hold (upstream: no `docker exec` into a
  container being killed) and resets the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Any

from control.api.typed.core import Pod
from control.apimachinery.meta import parse_timestamp
from nodeagent.prober.types import INITIAL_RESULT, ProbeSpec, ProbeType, Result

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class ContainerView:
    """The worker's container as the pod's last status shows it (its newest instance)."""

    container_id: str  # Docker's id without "docker://"; "" = not created yet
    running: bool = False
    terminated: bool = False
    started: bool = False  # containerStatuses[].started, as the status manager last wrote it
    started_at: datetime | None = None  # state.running.startedAt


@dataclass(frozen=True)
class PodView:
    phase: str
    restart_policy: str
    container: ContainerView | None  # None: no status for this container yet


def _strip(container_id: str) -> str:
    return container_id.split("://", 1)[1] if "://" in container_id else container_id


def view_of(pod: Mapping[str, Any], status: Mapping[str, Any], name: str) -> PodView:
    """The PodView of container `name` from the pod's spec and its last API status."""
    restart_policy = str(Pod(pod).spec.restart_policy or "Always")
    container = None
    for item in status.get("containerStatuses") or []:
        if not isinstance(item, Mapping) or item.get("name") != name:
            continue
        state = item.get("state") or {}
        running = state.get("running")
        started_at = None
        if isinstance(running, Mapping) and running.get("startedAt"):
            try:
                started_at = parse_timestamp(str(running["startedAt"]))
            except ValueError:
                started_at = None
        container = ContainerView(container_id=_strip(str(item.get("containerID") or "")),
                                  running=running is not None, terminated="terminated" in state,
                                  started=bool(item.get("started")), started_at=started_at)
    return PodView(phase=str(status.get("phase") or ""), restart_policy=restart_policy, container=container)


@dataclass(frozen=True)
class WorkerState:
    """upstream worker's containerID, lastResult, resultRun and onHold."""

    container_id: str = ""
    last_result: Result = Result.UNKNOWN
    result_run: int = 0
    on_hold: bool = False


class Next(str, Enum):
    PROBE = "probe"  # run the probe now, then call after_probe
    WAIT = "wait"  # nothing to do until the next tick
    STOP = "stop"  # the worker ends (its result is dropped)


@dataclass(frozen=True)
class Step:
    next: Next
    state: WorkerState
    set: tuple[tuple[str, Result], ...] = ()  # (container id, result) to record, in order
    remove: tuple[str, ...] = ()  # container ids whose result goes


def before_probe(kind: ProbeType, spec: ProbeSpec, state: WorkerState, pod: PodView | None, *,
                 now: datetime) -> Step:
    """doProbe up to the probe call. `pod` None: the status manager has no status for the pod yet."""
    if pod is None:
        return Step(Next.WAIT, state)
    if pod.phase in TERMINAL_PHASES:
        return Step(Next.STOP, state)
    container = pod.container
    if container is None or not container.container_id:
        return Step(Next.WAIT, state)
    sets: list[tuple[str, Result]] = []
    removes: list[str] = []
    if container.container_id != state.container_id:
        if state.container_id:
            removes.append(state.container_id)
        state = replace(state, container_id=container.container_id, on_hold=False)
        sets.append((container.container_id, INITIAL_RESULT[kind]))
    if state.on_hold:
        return Step(Next.WAIT, state, tuple(sets), tuple(removes))
    if not container.running:
        sets.append((state.container_id, Result.FAILURE))
        go_on = not container.terminated or pod.restart_policy != "Never"
        return Step(Next.WAIT if go_on else Next.STOP, state, tuple(sets), tuple(removes))
    if container.started_at is not None and \
            int((now - container.started_at).total_seconds()) < spec.initial_delay_seconds:
        return Step(Next.WAIT, state, tuple(sets), tuple(removes))
    if container.started == (kind is ProbeType.STARTUP):
        # startup probes stop once the container started; the others wait for it
        return Step(Next.WAIT, state, tuple(sets), tuple(removes))
    return Step(Next.PROBE, state, tuple(sets), tuple(removes))


def after_probe(kind: ProbeType, spec: ProbeSpec, state: WorkerState, result: Result) -> Step:
    """doProbe after the probe: count the run, set the result once its threshold is reached."""
    run = state.result_run + 1 if state.last_result is result else 1
    state = replace(state, last_result=result, result_run=run)
    threshold = spec.failure_threshold if result is Result.FAILURE else spec.success_threshold
    if run < threshold:
        return Step(Next.WAIT, state)
    sets = ((state.container_id, result),)
    if kind in (ProbeType.LIVENESS, ProbeType.STARTUP) and result is Result.FAILURE:
        state = replace(state, on_hold=True, result_run=0)
    return Step(Next.WAIT, state, sets)


def probe_flags(running: Mapping[str, str], readiness: Mapping[str, Result],
                startup: Mapping[str, Result]) -> tuple[dict[str, bool], dict[str, bool]]:
    """UpdatePodStatus' answer for the containers that have a result: (ready, started) by container name.

    `running` maps each running container's name to its id; `readiness`/`startup` map container ids to
    their current result. A name left out falls back to "no probe → ready/started, a probe that has not
    answered → not" (nodeagent.status.generate), which is upstream's `!exists` for the worker."""
    ready: dict[str, bool] = {}
    started: dict[str, bool] = {}
    for name, container_id in running.items():
        if container_id in startup:
            started[name] = startup[container_id] is Result.SUCCESS
        if container_id in readiness:
            ready[name] = readiness[container_id] is Result.SUCCESS
    return ready, started
