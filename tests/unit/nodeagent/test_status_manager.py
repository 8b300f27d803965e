"""StatusManager with a fake client: writes only on change, through pods/<name>/status (the mirror pod's for
a static pod), removes fields that went away, and confirms a finished pod's deletion with grace 0 and its
uid as precondition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from control.client.errors import NotFound
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.status_manager import StatusManager, status_patch

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []
        self.deletes: list[tuple[str, int | None, dict | None]] = []
        self.missing = False

    def patch(self, path: str, patch: Any, *, patch_type: str = "merge") -> dict:
        if self.missing:
            raise NotFound(404, "NotFound", {}, "pods not found")
        self.patches.append((path, patch))
        return {}

    def delete(self, path: str, *, grace_period_seconds=None, propagation_policy=None, preconditions=None) -> dict:
        self.deletes.append((path, grace_period_seconds, preconditions))
        return {}


def pod(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", **meta},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def running() -> PodStatus:
    started = datetime(2025, 12, 31, tzinfo=UTC)
    return PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.READY, ip="10.244.1.2"),),
                     (ContainerStatus("cid", "c", ContainerState.RUNNING, "busybox", started_at=started),),
                     ips=("10.244.1.2",))


def test_writes_once_until_something_changes() -> None:
    client = FakeClient()
    manager = StatusManager(client, host_ip="127.0.0.1", clock=lambda: NOW)
    status = manager.set_pod_status(pod(), running())
    assert status["phase"] == "Running" and status["podIP"] == "10.244.1.2" and status["hostIP"] == "127.0.0.1"
    manager.set_pod_status(pod(), running())
    assert [p for p, _ in client.patches] == ["/api/v1/namespaces/ns/pods/p/status"]
    manager.set_pod_status(pod(), PodStatus("u1", "p", "ns"), waiting_reasons={"c": ("ErrImagePull", "no")})
    assert len(client.patches) == 2
    waiting = client.patches[-1][1]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ErrImagePull"


def test_a_pod_gone_from_the_api_is_not_an_error() -> None:
    client = FakeClient()
    client.missing = True
    manager = StatusManager(client, clock=lambda: NOW)
    manager.set_pod_status(pod(), running())
    assert manager.get("u1") is None  # nothing was written, so nothing is remembered


def test_static_pod_status_goes_to_its_mirror() -> None:
    client = FakeClient()
    mirrors: dict[str, Any] = {}
    manager = StatusManager(client, clock=lambda: NOW, mirror_of=lambda p: mirrors.get("m"))
    static = pod(annotations={"kubernetes.io/config.source": "file"}, name="web-node1")
    manager.set_pod_status(static, running())
    assert client.patches == []  # no mirror yet: wait for it
    mirrors["m"] = {"metadata": {"name": "web-node1", "namespace": "ns", "uid": "mirror-uid"}}
    manager.set_pod_status(static, running())
    assert [p for p, _ in client.patches] == ["/api/v1/namespaces/ns/pods/web-node1/status"]


def test_status_patch_removes_vanished_fields() -> None:
    assert status_patch({"phase": "Running", "message": "x"}, {"phase": "Failed"}) == \
        {"status": {"message": None, "phase": "Failed"}}


def test_delete_is_confirmed_only_when_nothing_runs() -> None:
    client = FakeClient()
    manager = StatusManager(client, clock=lambda: NOW)
    deleting = pod(deletionTimestamp="2026-01-01T00:00:00Z")
    assert not manager.can_be_deleted(deleting, running())
    assert not manager.can_be_deleted(pod(), PodStatus("u1", "p", "ns"))
    done = PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.NOTREADY),),
                     (ContainerStatus("cid", "c", ContainerState.EXITED, "busybox"),))
    assert manager.can_be_deleted(deleting, done)
    assert manager.confirm_delete(deleting)
    assert client.deletes == [("/api/v1/namespaces/ns/pods/p", 0, {"uid": "u1"})]
