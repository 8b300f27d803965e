"""Pod GC: the selection (podgc/selection.py) with upstream's exact orders, and PodGCController
(podgc/controller.py) on the fake API server: terminated pods above the threshold, orphaned pods only after the
quarantine and a live 404 (marked Failed with DisruptionTarget first), unscheduled terminating pods."""

from __future__ import annotations

import threading

import pytest

from control.apimachinery.meta import get_condition
from control.client.informer import InformerFactory
from control.controllers.podgc import selection as sel
from control.controllers.podgc.controller import PodGCController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock

PODS = "/api/v1/namespaces/ns/pods"


def pod(name, phase="Running", created="2026-01-01T00:00:00Z", *, reason=None, node=None, deleting=False):
    status = {"phase": phase, **({"reason": reason} if reason else {})}
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": created}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"nodeName": node} if node else {},
            "status": status}


def names(pods):
    return [p["metadata"]["name"] for p in pods]


@pytest.mark.parametrize(("phase", "terminated"), [("Pending", False), ("Running", False), ("Unknown", False),
                                                   ("Succeeded", True), ("Failed", True), ("", True)])
def test_is_terminated_as_upstream(phase, terminated):
    assert sel.is_terminated(pod("p", phase)) is terminated


def test_terminated_above_threshold_evicted_first_then_oldest_then_name():
    pods = [
        pod("running-old", "Running", "2020-01-01T00:00:00Z"),
        pod("done-c", "Succeeded", "2026-01-03T00:00:00Z"),
        pod("done-b", "Succeeded", "2026-01-01T00:00:00Z"),
        pod("done-a", "Failed", "2026-01-01T00:00:00Z"),
        pod("evicted-new", "Failed", "2026-01-05T00:00:00Z", reason="Evicted"),
        pod("failed-old", "Failed", "2025-12-31T00:00:00Z"),
    ]
    assert names(sel.select_terminated(pods, threshold=2)) == ["evicted-new", "failed-old", "done-a"]
    assert names(sel.select_terminated(pods, threshold=5)) == []
    assert names(sel.select_terminated(pods, threshold=0)) == []  # 0 disables it, as upstream


def test_orphaned_unscheduled_and_out_of_service():
    pods = [pod("on-gone", node="gone"), pod("on-live", node="live"), pod("unbound"),
            pod("unbound-deleting", deleting=True), pod("down-deleting", node="down", deleting=True),
            pod("down-running", node="down")]
    assert sel.missing_nodes(pods, {"live", "down"}) == {"gone"}
    assert names(sel.select_orphaned(pods, {"gone"})) == ["on-gone"]
    assert names(sel.select_unscheduled_terminating(pods)) == ["unbound-deleting"]
    down = {"metadata": {"name": "down"}, "spec": {"taints": [{"key": sel.OUT_OF_SERVICE_TAINT,
                                                               "effect": "NoExecute"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    ready = {**down, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert names(sel.select_terminating_out_of_service(pods, [down])) == ["down-deleting"]
    assert sel.select_terminating_out_of_service(pods, [ready]) == []


@pytest.fixture
def harness():
    clock = FakeClock()
    api = FakeAPIServer(clock=clock)
    stop = threading.Event()
    yield api, clock, stop
    stop.set()


def start(api, clock, stop, **kw):
    factory = InformerFactory(api.client("informers"))
    controller = PodGCController(api.client("podgc"), factory, clock=clock, **kw)
    factory.start(stop)
    assert factory.wait_for_sync(5)
    return controller


def listed(api):
    return names(api.client("x").list(PODS)["items"])


def test_controller_deletes_terminated_above_threshold_with_grace_0(harness):
    api, clock, stop = harness
    for i, phase in enumerate(["Succeeded", "Failed", "Succeeded", "Running"]):
        api.add(pod(f"p{i}", phase, f"2026-01-0{i + 1}T00:00:00Z"))
    controller = start(api, clock, stop, terminated_pod_gc_threshold=1)
    controller.gc()
    assert listed(api) == ["p2", "p3"]
    assert {a.params["grace_period_seconds"] for a in api.actions_of("podgc", "delete")} == {0}
    assert api.actions_of("podgc", "patch") == []  # already terminal: no status write


def test_orphaned_pods_wait_for_the_quarantine(harness):
    api, clock, stop = harness
    api.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "live"}})
    api.add(pod("on-gone", node="gone"))
    api.add(pod("on-live", node="live"))
    api.add(pod("unbound-deleting", deleting=True))
    controller = start(api, clock, stop)
    controller.gc()
    assert listed(api) == ["on-gone", "on-live"]  # the unscheduled terminating pod went at once
    clock.step(39)
    controller.gc()
    assert "on-gone" in listed(api)
    clock.step(1)
    controller.gc()
    assert listed(api) == ["on-live"]
    status_patch = next(a for a in api.actions_of("podgc", "patch") if a.path.endswith("on-gone/status"))
    assert status_patch.body["status"]["phase"] == "Failed"
    condition = get_condition({"status": status_patch.body["status"]}, "DisruptionTarget")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "DeletionByPodGC", "PodGC: node no longer exists")


def test_node_back_within_quarantine_saves_its_pods(harness):
    api, clock, stop = harness
    api.add(pod("on-late", node="late"))
    controller = start(api, clock, stop)
    controller.gc()
    api.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"}})  # the cache may lag; the GET sees it
    clock.step(40)
    controller.gc()
    assert listed(api) == ["on-late"]
