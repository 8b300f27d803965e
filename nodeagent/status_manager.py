"""The kubelet's status manager: upstream pkg/kubelet/status/status_manager.go, cut to what one node needs.

- It keeps the last status it wrote per pod uid, and builds the next one from that (not from the
  informer's copy, which may lag behind our own write), so conditions keep their lastTransitionTime and
  a container's waiting reason survives until it starts.
- `set_pod_status` generates the status (nodeagent.status.generate) and writes it through the
  `pods/<name>/status` subresource only when `status_changed` says so. The write is a JSON merge patch
  of `status`; top-level status fields that disappeared are sent as null so they are removed (upstream
  sends a strategic merge patch computed against the old status, the same effect).
- Static pods have no API object of their own: their status goes to the mirror pod (same namespace and
  name, a different uid). `mirror_of(pod)` gives the mirror pod's current object (K2's mirror.py keeps
  them); without one the write waits for the next sync.
- `can_be_deleted` / `confirm_delete`: upstream canBeDeleted + the final `Delete(... GracePeriodSeconds 0,
  Preconditions{UID})`: once a pod with a deletionTimestamp has no running container and no ready
  sandbox, the kubelet tells the API server it is done and the object is removed. The uid precondition
  keeps a new pod that reused the name from being deleted by mistake.
- When the API's Ready condition differs from the kubelet's own (the node lifecycle controller set it False
  while this node was cut off), the status is written again though it did not change here, as upstream's
  `needsReconcile`; the patch is computed against the API's copy so the conditions go back whole.
A 404 on any write means the pod is gone already; it is not an error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from control.api.typed.core import Pod
from control.client.errors import ApiError, Conflict, NotFound
from control.client.paths import resource_path
from nodeagent.runtime.types import ContainerState, PodStatus, SandboxState
from nodeagent.sources import is_static
from nodeagent.status.generate import generate_pod_status, status_changed

log = logging.getLogger(__name__)

class StatusClient(Protocol):
    def patch(self, path: str, patch: dict[str, Any] | list[Any], *, patch_type: str = "merge") -> dict[str, Any]: ...

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict[str, Any] | None = None) -> dict[str, Any]: ...


def _now() -> datetime:
    return datetime.now(UTC)


def pod_finished(runtime: PodStatus) -> bool:
    """No container runs (or may run) and no sandbox is ready: what canBeDeleted needs of the runtime."""
    if any(c.state in (ContainerState.RUNNING, ContainerState.UNKNOWN) for c in runtime.containers):
        return False
    return not any(s.state is SandboxState.READY for s in runtime.sandboxes)


def _ready_status(status: Mapping[str, Any]) -> str | None:
    return next((str(c.get("status")) for c in status.get("conditions") or () if c.get("type") == "Ready"), None)


def status_patch(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch taking `old` to `new` at the top level of status (lists and maps replaced whole)."""
    patch: dict[str, Any] = {key: None for key in (old or {}) if key not in new}
    patch.update(new)
    return {"status": patch}


class StatusManager:
    def __init__(self, client: StatusClient, *, host_ip: str = "", host_ips: Sequence[str] = (),
                 mirror_of: Callable[[Mapping[str, Any]], Mapping[str, Any] | None] | None = None,
                 clock: Callable[[], datetime] = _now) -> None:
        self.client = client
        self.host_ip = host_ip
        self.host_ips = tuple(host_ips) or ((host_ip,) if host_ip else ())
        self.mirror_of = mirror_of
        self.clock = clock
        self._lock = threading.Lock()
        self._statuses: dict[str, dict[str, Any]] = {}  # uid → the status last written (or generated)

    def get(self, uid: str) -> dict[str, Any] | None:
        with self._lock:
            return self._statuses.get(uid)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._statuses.pop(uid, None)

    def set_pod_status(self, pod: Mapping[str, Any], runtime: PodStatus, *,
                       waiting_reasons: Mapping[str, tuple[str, str]] | None = None,
                       ready: Mapping[str, bool] | None = None,
                       started: Mapping[str, bool] | None = None) -> dict[str, Any]:
        """Generate the pod's status and write it if it changed; returns the status. `ready`/`started` are
        the prober's verdicts by container name (nodeagent.prober.manager.probe_flags)."""
        uid = Pod(pod).metadata.uid
        previous = self.get(uid)
        if previous is None:
            previous = dict(pod.get("status") or {})
        new = generate_pod_status({**pod, "status": previous}, runtime, now=self.clock(),
                                  waiting_reasons=waiting_reasons, ready=ready, started=started,
                                  host_ip=self.host_ip, host_ips=self.host_ips)
        api_status = (self._target(pod) or {}).get("status") or {}
        # upstream needsReconcile: another writer (the node lifecycle controller's MarkPodsNotReady while this
        # node was cut off) changed the Ready condition in the API; put the kubelet's back.
        stale = _ready_status(api_status) not in (None, _ready_status(new))
        if status_changed(previous, new) or self.get(uid) is None or stale:
            if self._write(pod, api_status if stale else previous, new):
                with self._lock:
                    self._statuses[uid] = new
        return new

    def _target(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if not is_static(pod):
            return pod
        return self.mirror_of(pod) if self.mirror_of is not None else None

    def _write(self, pod: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        target = self._target(pod)
        if target is None:
            return False  # a static pod whose mirror does not exist (yet)
        meta = target.get("metadata") or {}
        path = resource_path("v1", "pods", namespace=meta.get("namespace") or "default", name=meta.get("name", ""),
                             subresource="status")
        try:
            self.client.patch(path, status_patch(old, new))
        except NotFound:
            return False
        except (ApiError, OSError) as exc:
            log.warning("updating status of pod %s/%s failed: %s", meta.get("namespace"), meta.get("name"), exc)
            return False
        return True

    def can_be_deleted(self, pod: Mapping[str, Any], runtime: PodStatus) -> bool:
        meta = pod.get("metadata") or {}
        return bool(meta.get("deletionTimestamp")) and not is_static(pod) and pod_finished(runtime)

    def confirm_delete(self, pod: Mapping[str, Any]) -> bool:
        """DELETE with grace 0 and the uid as precondition; True when the object is gone (or was)."""
        meta = pod.get("metadata") or {}
        path = resource_path("v1", "pods", namespace=meta.get("namespace") or "default", name=meta.get("name", ""))
        try:
            self.client.delete(path, grace_period_seconds=0, preconditions={"uid": meta.get("uid", "")})
        except NotFound:
            return True
        except Conflict:  # the uid precondition failed: a new pod took the name; ours is gone
            return True
        except (ApiError, OSError) as exc:
            log.warning("confirming deletion of pod %s/%s failed: %s", meta.get("namespace"), meta.get("name"), exc)
            return False
        return True
