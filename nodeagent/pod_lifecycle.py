"""One sync of one pod, as a pod worker runs it: upstream pkg/kubelet/kubelet.go syncPod,
syncTerminatingPod and syncTerminatedPod (through pod_workers.go's states), simplified:

- gone from every source → kill with the last spec's grace period, remove containers, sandboxes and the
  pod directory, forget its status; the worker ends;
- deletionTimestamp set → kill with deletionGracePeriodSeconds; once nothing runs, a last status, the
  containers removed, then the status manager's DELETE (grace 0, uid precondition);
- otherwise RuntimeSyncer.sync_pod and a status update with the waiting reasons kept per container until it
  starts (upstream's reasonCache).

Probes (upstream syncPod → probeManager.AddPod / UpdatePodStatus, syncTerminatingPod →
StopLivenessAndStartup, syncTerminatedPod → RemovePod): a running pod's probe workers are ensured on every
sync; the liveness/startup failures go into computePodActions (kill, then restart per restartPolicy) and
the readiness/startup verdicts into the status (`ready`, `started`, ContainersReady, Ready).

Every sync first waits for a pod cache newer than the worker's last sync (upstream GetNewerThan); a cache
that does not get there within a few relist periods means "try again", never a decision on a stale view.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from control.api.typed.core import Pod
from nodeagent.pod_workers import WorkItem, WorkResult
from nodeagent.runtime.types import ContainerState, PodStatus
from nodeagent.runtime_sync import StepResult, SyncResult
from nodeagent.status_manager import pod_finished

log = logging.getLogger(__name__)

CACHE_WAIT_PERIODS = 3  # how many relist periods a sync waits for a fresh pod cache before retrying


class PodCache(Protocol):
    def get_newer_than(self, uid: str, min_time: float, *, timeout: float | None = None) -> PodStatus | None: ...


class Syncer(Protocol):
    def sync_pod(self, pod: Mapping[str, Any], status: PodStatus, *, liveness_failed: frozenset[str] = frozenset(),
                 startup_failed: frozenset[str] = frozenset()) -> SyncResult: ...

    def kill_pod(self, pod: Mapping[str, Any], status: PodStatus, *, grace: float | None = None,
                 remove: bool = False) -> list[StepResult]: ...


class Probes(Protocol):
    """The prober manager as a pod sync uses it (nodeagent.prober.manager.ProbeManager)."""

    def add_pod(self, pod: Mapping[str, Any]) -> None: ...

    def stop_liveness_and_startup(self, uid: str) -> None: ...

    def remove_pod(self, uid: str) -> None: ...

    def failed(self, status: PodStatus) -> tuple[frozenset[str], frozenset[str]]: ...

    def probe_flags(self, status: PodStatus) -> tuple[dict[str, bool], dict[str, bool]]: ...


class StatusWriter(Protocol):
    def get(self, uid: str) -> dict[str, Any] | None: ...

    def set_pod_status(self, pod: Mapping[str, Any], runtime: PodStatus, *,
                       waiting_reasons: Mapping[str, tuple[str, str]] | None = None,
                       ready: Mapping[str, bool] | None = None,
                       started: Mapping[str, bool] | None = None) -> dict[str, Any]: ...

    def can_be_deleted(self, pod: Mapping[str, Any], runtime: PodStatus) -> bool: ...

    def confirm_delete(self, pod: Mapping[str, Any]) -> bool: ...

    def forget(self, uid: str) -> None: ...


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


class PodLifecycle:
    """The pod workers' sync function (`sync`) over the pod cache, the syncer and the status manager."""

    def __init__(self, cache: PodCache, syncer: Syncer, status: StatusWriter, *, relist_period: float,
                 probes: Probes | None = None) -> None:
        self.cache = cache
        self.syncer = syncer
        self.status = status
        self.probes = probes
        self.relist_period = relist_period
        self._reasons: dict[str, dict[str, tuple[str, str]]] = {}  # uid → container → waiting reason

    def sync(self, item: WorkItem) -> WorkResult:
        wait = CACHE_WAIT_PERIODS * self.relist_period + 1
        status = self.cache.get_newer_than(item.uid, item.since, timeout=wait)
        if status is None:
            return WorkResult(retry_after=self.relist_period)
        if item.gone or item.pod is None:
            return self._sync_gone(item, status)
        uid = item.uid
        last = self.status.get(uid)
        pod = {**item.pod, "status": last} if last is not None else dict(item.pod)
        if _meta(pod).get("deletionTimestamp"):
            return self._sync_terminating(pod, status)
        liveness_failed: frozenset[str] = frozenset()
        startup_failed: frozenset[str] = frozenset()
        if self.probes is not None and Pod(pod).status.phase not in ("Succeeded", "Failed"):
            self.probes.add_pod(pod)
            liveness_failed, startup_failed = self.probes.failed(status)
        result = self.syncer.sync_pod(pod, status, liveness_failed=liveness_failed, startup_failed=startup_failed)
        for step in result.errors:
            log.info("pod %s/%s: %s %s: %s: %s", _meta(pod).get("namespace"), _meta(pod).get("name"),
                     step.action, step.target, step.reason, step.message)
        reasons = self._reasons.setdefault(uid, {})
        running = {c.name for c in status.containers if c.state is ContainerState.RUNNING}
        for name in (*result.started, *running):
            reasons.pop(name, None)
        reasons.update(result.waiting)
        ready, started = self.probes.probe_flags(status) if self.probes is not None else ({}, {})
        self.status.set_pod_status(pod, status, waiting_reasons=reasons, ready=ready, started=started)
        return WorkResult(retry_after=result.retry_after, relist=result.started_any)

    def _sync_terminating(self, pod: dict[str, Any], status: PodStatus) -> WorkResult:
        if self.probes is not None:
            self.probes.stop_liveness_and_startup(_meta(pod).get("uid", ""))
        if not pod_finished(status):
            self.syncer.kill_pod(pod, status)  # blocks up to the grace period; PLEG then wakes us
            return WorkResult(retry_after=self.relist_period)
        self.status.set_pod_status(pod, status, waiting_reasons=self._reasons.get(_meta(pod).get("uid", "")))
        errors = [s for s in self.syncer.kill_pod(pod, status, remove=True) if not s.ok]
        if errors or not self.status.can_be_deleted(pod, status) or not self.status.confirm_delete(pod):
            return WorkResult(retry_after=max(1.0, self.relist_period))
        return WorkResult()  # the informer's delete event ends the worker

    def _sync_gone(self, item: WorkItem, status: PodStatus) -> WorkResult:
        pod = item.pod or {"metadata": {"uid": item.uid, "name": status.name, "namespace": status.namespace},
                           "spec": {}}
        errors = [s for s in self.syncer.kill_pod(pod, status, remove=True) if not s.ok]
        if errors:
            return WorkResult(retry_after=max(1.0, self.relist_period))
        if self.probes is not None:
            self.probes.remove_pod(item.uid)
        self.status.forget(item.uid)
        self._reasons.pop(item.uid, None)
        return WorkResult(done=True)
