"""StatusManager against the shared fake API server: writes only on change, through pods/<name>/status
(the mirror pod's for a static pod), removes fields that went away, and confirms a finished pod's
deletion with grace 0 and its uid as precondition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.status_manager import StatusManager, status_patch
from tests.support.fake_apiserver import FakeAPIServer

NOW = datetime(2026, 1, 1, tzinfo=UTC)


KUBELET = "kubelet"


def api_with(*pods: dict[str, Any]) -> FakeAPIServer:
    """The shared fake API server holding `pods` as given (uid kept: the status is keyed by it)."""
    return FakeAPIServer(*({"apiVersion": "v1", "kind": "Pod", **p} for p in pods))


def patches(api: FakeAPIServer) -> list[tuple[str, Any]]:
    return [(a.path, a.body) for a in api.actions_of(KUBELET, "patch")]


def deletes(api: FakeAPIServer) -> list[tuple[str, int | None, dict | None]]:
    return [(a.path, a.params["grace_period_seconds"], a.params["preconditions"])
            for a in api.actions_of(KUBELET, "delete")]


def pod(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", **meta},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def running() -> PodStatus:
    started = datetime(2025, 12, 31, tzinfo=UTC)
    return PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.READY, ip="10.244.1.2"),),
                     (ContainerStatus("cid", "c", ContainerState.RUNNING, "busybox", started_at=started),),
                     ips=("10.244.1.2",))


def test_writes_once_until_something_changes() -> None:
    api = api_with(pod())
    manager = StatusManager(api.client(KUBELET), host_ip="127.0.0.1", clock=lambda: NOW)
    status = manager.set_pod_status(pod(), running())
    assert status["phase"] == "Running" and status["podIP"] == "10.244.1.2" and status["hostIP"] == "127.0.0.1"
    manager.set_pod_status(pod(), running())
    assert [p for p, _ in patches(api)] == ["/api/v1/namespaces/ns/pods/p/status"]
    manager.set_pod_status(pod(), PodStatus("u1", "p", "ns"), waiting_reasons={"c": ("ErrImagePull", "no")})
    assert len(patches(api)) == 2
    waiting = patches(api)[-1][1]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ErrImagePull"


def test_a_ready_condition_changed_by_another_writer_is_put_back() -> None:
    """The node lifecycle controller set Ready=False while the node was cut off; once the kubelet syncs
    again it writes its own Ready back though its own status did not change (upstream needsReconcile)."""
    api = api_with(pod())
    manager = StatusManager(api.client(KUBELET), host_ip="127.0.0.1", clock=lambda: NOW)
    mine = manager.set_pod_status(pod(), running(), ready={"c": True})
    in_api = {**pod(), "status": {**mine, "conditions": [
        {**c, "status": "False"} if c["type"] == "Ready" else c for c in mine["conditions"]]}}
    manager.set_pod_status(in_api, running(), ready={"c": True})
    assert len(patches(api)) == 2
    ready = [c for c in patches(api)[-1][1]["status"]["conditions"] if c["type"] == "Ready"]
    assert [c["status"] for c in ready] == ["True"]
    manager.set_pod_status({**pod(), "status": mine}, running(), ready={"c": True})
    assert len(patches(api)) == 2  # the API agrees again: nothing to write


def test_a_pod_gone_from_the_api_is_not_an_error() -> None:
    api = api_with()  # the pod is not (or no longer) there
    manager = StatusManager(api.client(KUBELET), clock=lambda: NOW)
    manager.set_pod_status(pod(), running())
    assert manager.get("u1") is None  # nothing was written, so nothing is remembered


def test_static_pod_status_goes_to_its_mirror() -> None:
    api = api_with(pod(name="web-node1", uid="mirror-uid"))
    mirrors: dict[str, Any] = {}
    manager = StatusManager(api.client(KUBELET), clock=lambda: NOW, mirror_of=lambda p: mirrors.get("m"))
    static = pod(annotations={"kubernetes.io/config.source": "file"}, name="web-node1")
    manager.set_pod_status(static, running())
    assert patches(api) == []  # no mirror yet: wait for it
    mirrors["m"] = {"metadata": {"name": "web-node1", "namespace": "ns", "uid": "mirror-uid"}}
    manager.set_pod_status(static, running())
    assert [p for p, _ in patches(api)] == ["/api/v1/namespaces/ns/pods/web-node1/status"]


def test_status_patch_removes_vanished_fields() -> None:
    assert status_patch({"phase": "Running", "message": "x"}, {"phase": "Failed"}) == \
        {"status": {"message": None, "phase": "Failed"}}


def test_delete_is_confirmed_only_when_nothing_runs() -> None:
    api = api_with(pod(deletionTimestamp="2026-01-01T00:00:00Z"))
    manager = StatusManager(api.client(KUBELET), clock=lambda: NOW)
    deleting = pod(deletionTimestamp="2026-01-01T00:00:00Z")
    assert not manager.can_be_deleted(deleting, running())
    assert not manager.can_be_deleted(pod(), PodStatus("u1", "p", "ns"))
    done = PodStatus("u1", "p", "ns", (SandboxStatus("s", SandboxState.NOTREADY),),
                     (ContainerStatus("cid", "c", ContainerState.EXITED, "busybox"),))
    assert manager.can_be_deleted(deleting, done)
    assert manager.confirm_delete(deleting)
    assert deletes(api) == [("/api/v1/namespaces/ns/pods/p", 0, {"uid": "u1"})]
