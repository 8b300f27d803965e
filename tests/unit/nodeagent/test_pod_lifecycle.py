"""PodLifecycle's pod-worker decisions with fakes: a normal sync keeps waiting reasons until the container
starts; a terminating pod is killed, then (once nothing runs) removed and its deletion confirmed; a pod gone
from its sources is killed and removed and its worker ends; a stale cache means "try again"."""

from __future__ import annotations

from typing import Any

from nodeagent.config import KubeletConfig
from nodeagent.pod_lifecycle import PodLifecycle
from nodeagent.pod_workers import WorkItem
from nodeagent.runtime.actions import PodActions
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.runtime_sync import StepResult, SyncResult


class Cache:
    def __init__(self, status: PodStatus | None) -> None:
        self.status = status

    def get_newer_than(self, uid: str, since: float, *, timeout: float | None = None) -> PodStatus | None:
        return self.status


class Pleg:
    def __init__(self, status: PodStatus | None) -> None:
        self.cache = Cache(status)


class Syncer:
    def __init__(self, result: SyncResult | None = None) -> None:
        self.result = result
        self.kills: list[bool] = []
        self.failed: list[tuple[frozenset[str], frozenset[str]]] = []

    def sync_pod(self, pod: Any, status: PodStatus, *, liveness_failed: frozenset[str] = frozenset(),
                 startup_failed: frozenset[str] = frozenset()) -> SyncResult:
        assert self.result is not None
        self.failed.append((liveness_failed, startup_failed))
        return self.result

    def kill_pod(self, pod: Any, status: PodStatus, *, grace: float | None = None, remove: bool = False):
        self.kills.append(remove)
        return [StepResult("KillPod", "x")]


class Status:
    def __init__(self) -> None:
        self.reasons: list[dict[str, tuple[str, str]]] = []
        self.deleted: list[str] = []
        self.forgotten: list[str] = []
        self.flags: list[tuple[dict, dict]] = []

    def get(self, uid: str) -> None:
        return None

    def set_pod_status(self, pod: Any, status: PodStatus, *, waiting_reasons=None, ready=None, started=None) -> dict:
        self.reasons.append(dict(waiting_reasons or {}))
        self.flags.append((dict(ready or {}), dict(started or {})))
        return {}

    def can_be_deleted(self, pod: Any, status: PodStatus) -> bool:
        return True

    def confirm_delete(self, pod: Any) -> bool:
        self.deleted.append(pod["metadata"]["uid"])
        return True

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {"containers": [{"name": "c"}]}}
RUNNING = PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.READY),),
                    (ContainerStatus("cid", "c", ContainerState.RUNNING, "busybox"),))
STOPPED = PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.NOTREADY),),
                    (ContainerStatus("cid", "c", ContainerState.EXITED, "busybox"),))


class Kubelet:
    """The pod workers' sync as the kubelet builds it (nodeagent/parts.py), over fakes."""

    def __init__(self, status: PodStatus | None, syncer: Syncer) -> None:
        self.config = KubeletConfig(node_name="n1")
        self.pleg, self.status = Pleg(status), Status()
        self.lifecycle = PodLifecycle(self.pleg.cache, syncer, self.status,
                                      relist_period=self.config.pleg_relist_period)

    def _sync(self, item: WorkItem):
        return self.lifecycle.sync(item)


def kubelet(status: PodStatus | None, syncer: Syncer) -> tuple[Kubelet, Status]:
    k = Kubelet(status, syncer)
    return k, k.status


def item(pod: Any = POD, *, gone: bool = False) -> WorkItem:
    return WorkItem("u1", pod, gone, 0.0)


def test_waiting_reasons_kept_until_the_container_starts() -> None:
    syncer = Syncer(SyncResult(PodActions(), waiting={"c": ("ErrImagePull", "no")}, retry_after=3))
    k, status = kubelet(PodStatus("u1", "p", "ns"), syncer)
    assert k._sync(item()).retry_after == 3
    syncer.result = SyncResult(PodActions())
    k._sync(item())
    syncer.result = SyncResult(PodActions(), started=("c",))
    k._sync(item())
    assert status.reasons == [{"c": ("ErrImagePull", "no")}, {"c": ("ErrImagePull", "no")}, {}]


def test_terminating_pod_is_killed_then_removed_and_confirmed() -> None:
    deleting = {**POD, "metadata": {**POD["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    syncer = Syncer()
    k, status = kubelet(RUNNING, syncer)
    result = k._sync(item(deleting))
    assert syncer.kills == [False] and not result.done and result.retry_after is not None
    k.pleg.cache.status = STOPPED
    result = k._sync(item(deleting))
    assert syncer.kills == [False, True] and status.deleted == ["u1"] and not result.done


def test_gone_pod_is_removed_and_the_worker_ends() -> None:
    syncer = Syncer()
    k, status = kubelet(RUNNING, syncer)
    assert k._sync(item(None, gone=True)).done
    assert syncer.kills == [True] and status.forgotten == ["u1"]


def test_a_stale_cache_is_retried_without_acting() -> None:
    syncer = Syncer()
    k, _ = kubelet(None, syncer)
    result = k._sync(item())
    assert not result.done and result.retry_after == k.config.pleg_relist_period and syncer.kills == []


def test_a_relist_is_asked_for_only_after_a_sync_that_started_something() -> None:
    syncer = Syncer(SyncResult(PodActions()))
    k, _ = kubelet(PodStatus("u1", "p", "ns"), syncer)
    assert k._sync(item()).relist is False
    syncer.result = SyncResult(PodActions(), (StepResult("StartContainer", "c", "RunContainerError", "x"),))
    assert k._sync(item()).relist is False
    syncer.result = SyncResult(PodActions(), (StepResult("CreatePodSandbox", "u1"),))
    assert k._sync(item()).relist is True
    syncer.result = SyncResult(PodActions(), started=("c",))
    assert k._sync(item()).relist is True
