"""control/controllers/nodelifecycle/health.py and tainteviction/controller.py's pure parts: the heartbeat
tracker (observed by the controller's clock), the grace-period decision with upstream's reasons, the condition
taints, the pods marked not ready (MarkPodsNotReady), and when a pod goes from a NoExecute-tainted node;
plus control/api/taints.py's toleration match."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.api.taints import tolerates
from control.apimachinery.meta import format_timestamp
from control.controllers.nodelifecycle.health import (
    HeartbeatTracker,
    desired_taints,
    node_health,
    pods_to_mark_not_ready,
)
from control.controllers.tainteviction.controller import eviction_time

T0 = datetime(2024, 1, 1, tzinfo=UTC)
GRACE, STARTUP = 40.0, 60.0


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float) -> str:
    return format_timestamp(at(seconds))


def condition(kind: str, status: str, *, beat: float = 0) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "Kubelet", "message": "m",
            "lastHeartbeatTime": stamp(beat), "lastTransitionTime": stamp(0)}


def node(*conditions: dict[str, Any], taints: list[dict] | None = None, unschedulable: bool = False) -> dict:
    spec: dict[str, Any] = {"taints": taints} if taints is not None else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n1", "creationTimestamp": stamp(0)}, "spec": spec,
            "status": {"conditions": list(conditions)}}


def healthy(beat: float = 0) -> dict[str, Any]:
    return node(condition("Ready", "True", beat=beat), condition("MemoryPressure", "False", beat=beat),
                condition("DiskPressure", "False", beat=beat), condition("PIDPressure", "False", beat=beat))


def lease(renew: float) -> dict[str, Any]:
    return {"metadata": {"name": "n1"}, "spec": {"renewTime": format_timestamp(at(renew), micro=True)}}


# -- the tracker: times are the controller's own, not the kubelet's --------------------------------------

def test_tracker_counts_from_first_sight_and_moves_on_a_new_heartbeat_or_newer_renewal():
    tracker = HeartbeatTracker()
    assert tracker.observe(healthy(beat=-500), lease(-500), at(100)) == at(100)  # first sight: full grace
    assert tracker.observe(healthy(beat=-500), lease(-500), at(110)) == at(100)  # nothing new
    assert tracker.observe(healthy(beat=-500), lease(-400), at(120)) == at(120)  # a renewal, however skewed
    assert tracker.observe(healthy(beat=-500), lease(-450), at(130)) == at(120)  # an older renewTime: no
    assert tracker.observe(healthy(beat=-300), lease(-400), at(140)) == at(140)  # a new status heartbeat
    assert tracker.observe(healthy(beat=-300), None, at(150)) == at(140)  # the Lease gone: status only
    tracker.forget("n1")
    assert tracker.observe(healthy(beat=-300), None, at(160)) == at(160)


def test_tracker_counts_a_node_that_never_posted_status_from_its_creation():
    assert HeartbeatTracker().observe(node(), None, at(100)) == at(0)


# -- the grace decision ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("last", "now", "expected"), [
    pytest.param(0, 40, None, id="at-the-grace-boundary"),
    pytest.param(0, 39, None, id="within-grace"),
    pytest.param(0, 41, "Unknown", id="past-grace"),
    pytest.param(100, 141, "Unknown", id="past-grace-later"),
])
def test_past_the_grace_period_every_condition_goes_unknown(last: float, now: float, expected: str | None):
    conditions = node_health(healthy(), at(last), at(now), grace=GRACE, startup_grace=STARTUP)
    if expected is None:
        assert conditions is None
        return
    assert conditions is not None
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        (kind, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
        for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")]
    assert all(c["lastTransitionTime"] == stamp(now) and c["lastHeartbeatTime"] == stamp(0) for c in conditions)


def test_already_unknown_is_not_written_again():
    unknown = node(*(condition(kind, "Unknown") for kind in ("Ready", "MemoryPressure", "DiskPressure",
                                                             "PIDPressure")))
    assert node_health(unknown, at(0), at(100), grace=GRACE, startup_grace=STARTUP) is None


def test_a_node_that_never_posted_gets_never_updated_after_the_startup_grace():
    assert node_health(node(), at(0), at(59), grace=GRACE, startup_grace=STARTUP) is None
    conditions = node_health(node(), at(0), at(61), grace=GRACE, startup_grace=STARTUP)
    assert conditions is not None
    assert [(c["type"], c["status"], c["reason"], c["message"], c["lastHeartbeatTime"]) for c in conditions] == [
        (kind, "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.", stamp(0))
        for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")]


def test_other_conditions_are_kept_as_they_are():
    n = healthy()
    n["status"]["conditions"].append(condition("NetworkUnavailable", "False"))
    conditions = node_health(n, at(0), at(100), grace=GRACE, startup_grace=STARTUP)
    assert conditions is not None and conditions[-1] == condition("NetworkUnavailable", "False")


# -- taints ---------------------------------------------------------------------------------------------

def keys(taints: list[dict] | None) -> list[tuple[str, str]] | None:
    return None if taints is None else [(t["key"], t["effect"]) for t in taints]


@pytest.mark.parametrize(("ready", "expected"), [
    pytest.param("True", None, id="ready-nothing"),
    pytest.param("False", [("node.kubernetes.io/not-ready", "NoExecute"),
                           ("node.kubernetes.io/not-ready", "NoSchedule")], id="not-ready"),
    pytest.param("Unknown", [("node.kubernetes.io/unreachable", "NoExecute"),
                             ("node.kubernetes.io/unreachable", "NoSchedule")], id="unreachable"),
])
def test_ready_condition_taints(ready: str, expected):
    taints = desired_taints(node(condition("Ready", ready)), at(7))
    assert keys(taints) == expected
    for taint in taints or ():
        assert ("timeAdded" in taint) == (taint["effect"] == "NoExecute")
        if taint["effect"] == "NoExecute":
            assert taint["timeAdded"] == stamp(7)


def test_taints_swap_keep_others_and_timeadded_and_go_when_ready_again():
    mine = {"key": "example.com/mine", "value": "x", "effect": "NoSchedule"}
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": stamp(1)}
    n = node(condition("Ready", "Unknown"), taints=[mine, not_ready,
                                                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}])
    assert desired_taints(n, at(9)) == [mine, {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                                        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                                         "timeAdded": stamp(9)}]
    same = node(condition("Ready", "False"), taints=[mine, not_ready,
                                                     {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    assert desired_taints(same, at(9)) is None  # timeAdded kept: the eviction clock is not restarted
    assert desired_taints(node(condition("Ready", "True"), taints=[mine, not_ready]), at(9)) == [mine]


def test_pressure_and_unschedulable_taints_are_noschedule():
    n = node(condition("Ready", "True"), condition("DiskPressure", "True"), condition("MemoryPressure", "False"),
             unschedulable=True)
    assert keys(desired_taints(n, at(0))) == [("node.kubernetes.io/disk-pressure", "NoSchedule"),
                                              ("node.kubernetes.io/unschedulable", "NoSchedule")]


# -- tolerations and eviction time ----------------------------------------------------------------------

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(100)}


@pytest.mark.parametrize(("toleration", "expected"), [
    pytest.param({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}, True,
                 id="exists-key-effect"),
    pytest.param({"operator": "Exists"}, True, id="exists-everything"),
    pytest.param({"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, True, id="any-effect"),
    pytest.param({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"}, False,
                 id="other-effect"),
    pytest.param({"key": "node.kubernetes.io/not-ready", "operator": "Exists"}, False, id="other-key"),
    pytest.param({"key": "node.kubernetes.io/unreachable", "value": ""}, True, id="equal-empty-value"),
    pytest.param({"key": "node.kubernetes.io/unreachable", "value": "x"}, False, id="equal-other-value"),
])
def test_tolerates(toleration: dict, expected: bool):
    assert tolerates(toleration, UNREACHABLE) is expected


def tol(seconds: int | None, key: str = "node.kubernetes.io/unreachable") -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


@pytest.mark.parametrize(("tolerations", "taints", "expected"), [
    pytest.param([], [], None, id="no-taints"),
    pytest.param([], [UNREACHABLE], 150, id="not-tolerated-now"),
    pytest.param([tol(300)], [UNREACHABLE], 400, id="tolerated-300s-from-timeadded"),
    pytest.param([tol(None)], [UNREACHABLE], None, id="tolerated-forever"),
    pytest.param([tol(-5)], [UNREACHABLE], 100, id="negative-is-at-timeadded"),
    pytest.param([tol(300), tol(None, "node.kubernetes.io/not-ready")],
                 [UNREACHABLE, {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": stamp(0)}],
                 400, id="earliest-over-taints"),
    pytest.param([tol(300)], [UNREACHABLE, {"key": "other", "effect": "NoExecute"}], 150,
                 id="one-untolerated-taint"),
    pytest.param([tol(30)], [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}], 130,
                 id="no-timeadded-first-seen"),
])
def test_eviction_time(tolerations: list, taints: list, expected: float | None):
    due = eviction_time(tolerations, taints, now=at(150), first_seen=at(100))
    assert due == (None if expected is None else at(expected))


def bound_pod(name: str, node_name: str | None, *conditions: tuple[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node_name} if node_name else {}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec,
            "status": {"phase": "Running", "conditions": [
                {"type": kind, "status": status, "reason": "r", "lastTransitionTime": stamp(0)}
                for kind, status in conditions]}}


@pytest.mark.parametrize(("pod", "marked"), [
    pytest.param(bound_pod("p", "n1", ("ContainersReady", "True"), ("Ready", "True")), True, id="ready"),
    pytest.param(bound_pod("p", "n1", ("Ready", "Unknown")), True, id="ready-unknown"),
    pytest.param(bound_pod("p", "n1", ("Ready", "False")), False, id="already-not-ready"),
    pytest.param(bound_pod("p", "n1", ("PodScheduled", "True")), False, id="no-ready-condition"),
    pytest.param(bound_pod("p", "n2", ("Ready", "True")), False, id="bound-elsewhere"),
    pytest.param(bound_pod("p", None, ("Ready", "True")), False, id="unbound"),
])
def test_pods_to_mark_not_ready(pod: dict[str, Any], marked: bool):
    result = pods_to_mark_not_ready([pod], "n1", at(50))
    assert [p["metadata"]["name"] for p in result] == (["p"] if marked else [])
    if marked:
        conditions = {c["type"]: c for c in result[0]["status"]["conditions"]}
        assert conditions["Ready"] == {"type": "Ready", "status": "False", "reason": "r",
                                       "lastTransitionTime": stamp(50)}
        assert conditions.get("ContainersReady", {}).get("status") in (None, "True")  # the kubelet's
        assert pod["status"]["conditions"][-1]["status"] != "False"  # the input is not changed
