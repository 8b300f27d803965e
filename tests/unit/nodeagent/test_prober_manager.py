"""The prober manager and its workers over fakes (prober_manager.go, worker.go), the liveness kill's grace
period (setTerminationGracePeriod), and the pod sync reading the probes (kubelet.go syncPod)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from nodeagent.pod_lifecycle import PodLifecycle
from nodeagent.pod_workers import WorkItem
from nodeagent.prober.manager import ProbeManager
from nodeagent.prober.types import ProbeSpec, ProbeType, Result
from nodeagent.prober.worker import Worker
from nodeagent.runtime.actions import KillReason, PodActions
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.runtime_sync import SyncResult, probe_kill_grace

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


class FakeProber:
    def __init__(self) -> None:
        self.answers: list[Result | None] = []
        self.calls: list[tuple[ProbeType, str]] = []
        self.forgotten: list[str] = []

    def probe(self, kind: ProbeType, spec: ProbeSpec, pod: Mapping[str, Any], status: Mapping[str, Any],
              container: Mapping[str, Any], container_id: str) -> Result | None:
        self.calls.append((kind, container_id))
        return self.answers.pop(0)

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)


def spec_pod(**probes: dict) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"containers": [{"name": "app", "image": "i", **probes}, {"name": "plain", "image": "i"}]}}


def api_status(cid: str = "c1", *, started: bool = True, running: bool = True, phase: str = "Running") -> dict:
    state = {"running": {"startedAt": "2026-01-01T11:00:00Z"}} if running else {"terminated": {"exitCode": 1}}
    return {"phase": phase, "podIP": "10.244.0.5", "containerStatuses": [
        {"name": "app", "containerID": f"docker://{cid}", "started": started, "state": state}]}


class Harness:
    def __init__(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        self.status: dict[str, Any] | None = None
        self.woken: list[str] = []
        self.spawned: list[Worker] = []
        self.prober = FakeProber()
        self.manager = ProbeManager(self.prober, status_of=lambda uid: self.status, on_update=self.woken.append,
                                    spawn=self.spawned.append, now=lambda: NOW)
        self.manager.add_pod(pod)

    def worker(self, kind: ProbeType) -> Worker:
        return next(w for w in self.spawned if w.kind is kind)


LIVENESS = {"exec": {"command": ["true"]}, "periodSeconds": 1, "failureThreshold": 2}
READINESS = {"exec": {"command": ["true"]}, "periodSeconds": 1}


def test_one_worker_per_container_and_probe_type_and_add_pod_is_idempotent() -> None:
    h = Harness(spec_pod(livenessProbe=LIVENESS, readinessProbe=READINESS, startupProbe=READINESS))
    h.manager.add_pod(h.pod)
    assert h.manager.workers() == [("u1", "app", ProbeType.LIVENESS), ("u1", "app", ProbeType.READINESS),
                                   ("u1", "app", ProbeType.STARTUP)]
    assert len(h.spawned) == 3
    h.manager.stop_liveness_and_startup("u1")
    assert h.manager.workers() == [("u1", "app", ProbeType.READINESS)]
    h.manager.cleanup_pods({"u1"})
    assert len(h.manager.workers()) == 1
    h.manager.remove_pod("u1")
    assert h.manager.workers() == [] and h.prober.forgotten == ["u1"]


def test_liveness_worker_flow_threshold_kill_hold_and_new_container() -> None:
    h = Harness(spec_pod(livenessProbe=LIVENESS))
    w = h.worker(ProbeType.LIVENESS)
    live = h.manager.results[ProbeType.LIVENESS]
    assert w.do_probe() and h.prober.calls == []  # no status yet
    h.status = api_status("c1")
    h.prober.answers = [Result.FAILURE, Result.FAILURE]
    assert w.do_probe()
    assert live.get("c1") is Result.SUCCESS and h.woken == ["u1"]  # the initial value; one failure is not enough
    assert w.do_probe()
    assert live.get("c1") is Result.FAILURE and h.woken == ["u1", "u1"]
    running = PodStatus("u1", "p", "ns", containers=(ContainerStatus("c1", "app", ContainerState.RUNNING, "i"),))
    assert h.manager.failed(running) == (frozenset({"c1"}), frozenset())
    assert w.do_probe() and len(h.prober.calls) == 2  # on hold: no exec into a container being killed
    h.status = api_status("c2")
    h.prober.answers = [Result.SUCCESS]
    assert w.do_probe()
    assert live.get("c1") is None and live.get("c2") is Result.SUCCESS and h.prober.calls[-1] == (ProbeType.LIVENESS,
                                                                                                   "c2")


def test_an_errored_probe_leaves_the_result_alone() -> None:
    h = Harness(spec_pod(readinessProbe=READINESS))
    h.status = api_status()
    h.prober.answers = [None]
    assert h.worker(ProbeType.READINESS).do_probe()
    assert h.manager.results[ProbeType.READINESS].get("c1") is Result.FAILURE  # the initial value


def test_worker_ends_with_a_terminal_pod_and_drops_its_result() -> None:
    h = Harness(spec_pod(readinessProbe=READINESS))
    w = h.worker(ProbeType.READINESS)
    h.status = api_status()
    h.prober.answers = [Result.SUCCESS]
    w.do_probe()
    h.status = api_status(phase="Succeeded")
    w.run()  # returns at once: the pod is done
    assert h.manager.results[ProbeType.READINESS].get("c1") is None and h.manager.workers() == []


def test_probe_flags_and_a_pending_readiness_worker_is_triggered() -> None:
    h = Harness(spec_pod(readinessProbe=READINESS, startupProbe=READINESS))
    status = PodStatus("u1", "p", "ns", containers=(
        ContainerStatus("old", "app", ContainerState.EXITED, "i", restart_count=0),
        ContainerStatus("c1", "app", ContainerState.RUNNING, "i", restart_count=1),
        ContainerStatus("c9", "plain", ContainerState.RUNNING, "i")))
    assert h.manager.probe_flags(status) == ({}, {})
    readiness = h.worker(ProbeType.READINESS)
    assert readiness._trigger.is_set()
    h.manager.results[ProbeType.STARTUP].set("c1", Result.SUCCESS, "u1")
    h.manager.results[ProbeType.READINESS].set("c1", Result.SUCCESS, "u1")
    h.manager.results[ProbeType.READINESS].set("old", Result.FAILURE, "u1")
    assert h.manager.probe_flags(status) == ({"app": True}, {"app": True})


def test_jitter_only_right_after_the_manager_started() -> None:
    clock = [100.0]
    manager = ProbeManager(FakeProber(), status_of=lambda uid: None, monotonic=lambda: clock[0], rand=lambda: 0.5)
    assert manager.jitter(10) == 5.0
    clock[0] = 111.0
    assert manager.jitter(10) == 0.0


def test_a_running_worker_thread_probes_and_stops() -> None:
    h = Harness(spec_pod(readinessProbe=READINESS))
    h.status = api_status()
    probed = threading.Event()

    class Prober(FakeProber):
        def probe(self, *args: Any) -> Result | None:
            probed.set()
            return Result.SUCCESS

    h.manager.prober = Prober()
    w = h.worker(ProbeType.READINESS)
    w.thread.start()
    assert probed.wait(5)
    h.manager.remove_pod("u1")
    w.thread.join(5)
    assert not w.thread.is_alive() and h.manager.results[ProbeType.READINESS].get("c1") is None


# ---- the kill's grace period ----

@pytest.mark.parametrize(("meta", "probe", "reason", "expected"), [
    pytest.param({}, {"terminationGracePeriodSeconds": 3}, KillReason.LIVENESS, 3.0, id="probe-grace"),
    pytest.param({}, {}, KillReason.LIVENESS, 30.0, id="pod-grace-when-the-probe-has-none"),
    pytest.param({}, {"terminationGracePeriodSeconds": 3}, KillReason.SPEC_CHANGED, 30.0, id="other-reasons"),
    pytest.param({"deletionGracePeriodSeconds": 7}, {"terminationGracePeriodSeconds": 3}, KillReason.LIVENESS, 7.0,
                 id="deletion-grace-first"),
])
def test_probe_kill_grace(meta: dict, probe: dict, reason: KillReason, expected: float) -> None:
    container = {"name": "app", "livenessProbe": {"exec": {"command": ["x"]}, **probe}}
    pod = {"metadata": meta, "spec": {"terminationGracePeriodSeconds": 30, "containers": [container]}}
    assert probe_kill_grace(pod, container, reason) == expected


# ---- the pod sync reads the probes ----

class Cache:
    def __init__(self, status: PodStatus) -> None:
        self.status = status

    def get_newer_than(self, uid: str, min_time: float, *, timeout: float | None = None) -> PodStatus:
        return self.status


class Syncer:
    def __init__(self) -> None:
        self.failed: list[tuple[frozenset[str], frozenset[str]]] = []

    def sync_pod(self, pod: Any, status: PodStatus, *, liveness_failed: frozenset[str] = frozenset(),
                 startup_failed: frozenset[str] = frozenset()) -> SyncResult:
        self.failed.append((liveness_failed, startup_failed))
        return SyncResult(PodActions())

    def kill_pod(self, pod: Any, status: PodStatus, *, grace: float | None = None, remove: bool = False) -> list:
        return []


class StatusWriter:
    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None
        self.flags: list[tuple[dict, dict]] = []

    def get(self, uid: str) -> dict[str, Any] | None:
        return self.last

    def set_pod_status(self, pod: Any, runtime: PodStatus, *, waiting_reasons: Any = None, ready: Any = None,
                       started: Any = None) -> dict:
        self.flags.append((dict(ready or {}), dict(started or {})))
        return {}

    def can_be_deleted(self, pod: Any, runtime: PodStatus) -> bool:
        return True

    def confirm_delete(self, pod: Any) -> bool:
        return True

    def forget(self, uid: str) -> None:
        pass


def test_pod_sync_feeds_probe_results_to_the_syncer_and_the_status() -> None:
    pod = spec_pod(livenessProbe=LIVENESS, readinessProbe=READINESS)
    runtime = PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.READY),),
                        (ContainerStatus("c1", "app", ContainerState.RUNNING, "i"),))
    syncer, status = Syncer(), StatusWriter()
    manager = ProbeManager(FakeProber(), status_of=status.get, spawn=lambda w: None)
    lifecycle = PodLifecycle(Cache(runtime), syncer, status, relist_period=1.0, probes=manager)
    lifecycle.sync(WorkItem("u1", pod, False, 0.0))
    assert len(manager.workers()) == 2 and syncer.failed == [(frozenset(), frozenset())]
    assert status.flags == [({}, {})]
    manager.results[ProbeType.LIVENESS].set("c1", Result.FAILURE, "u1")
    manager.results[ProbeType.READINESS].set("c1", Result.SUCCESS, "u1")
    lifecycle.sync(WorkItem("u1", pod, False, 0.0))
    assert syncer.failed[-1] == (frozenset({"c1"}), frozenset()) and status.flags[-1] == ({"app": True}, {})

    status.last = {"phase": "Succeeded"}  # a finished pod gets no new workers
    manager.remove_pod("u1")
    lifecycle.sync(WorkItem("u1", pod, False, 0.0))
    assert manager.workers() == []

    status.last = None
    lifecycle.sync(WorkItem("u1", pod, False, 0.0))
    deleting = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    lifecycle.sync(WorkItem("u1", deleting, False, 0.0))
    assert manager.workers() == [("u1", "app", ProbeType.READINESS)]
    lifecycle.sync(WorkItem("u1", None, True, 0.0))
    assert manager.workers() == []
