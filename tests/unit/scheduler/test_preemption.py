"""DefaultPreemption (plugins/defaultpreemption.py) and the nominated pods (algorithm.py), as upstream's
default_preemption_test.go tests them: its sizes (small 100m/100, medium 200m/200, large 300m/300, very large
500m/500 on nodes of 500m/500) and priorities (neg -100, low 0, mid 100, high 1000, very high 10000), a
profile of NodeResourcesFit and DefaultPreemption only."""

from __future__ import annotations

import random
from typing import Any

import pytest

from control.scheduler.algorithm import Framework, find_feasible, schedule_one
from control.scheduler.cache import Snapshot
from control.scheduler.framework import CycleState, Listers, StaticLister
from control.scheduler.nodeinfo import PodInfo, node_info
from control.scheduler.plugins.defaultpreemption import (
    Candidate,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
    select_victims_on_node,
)
from control.scheduler.profile import build_profile
from tests.support.scheduler_objects import make_node, make_pod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SIZES = {"small": ("100m", "100"), "medium": ("200m", "200"), "large": ("300m", "300"), "very_large": ("500m", "500")}
START = "2026-01-01T00:00:00Z"
PROFILE = build_profile({"plugins": {"multiPoint": {"disabled": [{"name": "*"}],
                                                    "enabled": [{"name": "NodeResourcesFit"},
                                                                {"name": "DefaultPreemption"}]}}})


def pod(name: str, size: str, priority: int, node: str = "", *, start: str = START, **extra: Any) -> dict[str, Any]:
    cpu, memory = SIZES[size]
    made = make_pod(name, requests=[{"cpu": cpu, "memory": memory}], priority=priority, node_name=node)
    if node:
        made["status"] = {"phase": "Running", "startTime": start}
    made["spec"].update(extra.pop("spec", {}))
    made["status"].update(extra.pop("status", {}))
    return made


def snapshot(nodes: list[str], pods: list[dict[str, Any]]) -> Snapshot:
    return Snapshot.of(*[node_info(make_node(n, cpu="500m", memory="500"),
                                   *[p for p in pods if p["spec"].get("nodeName") == n]) for n in nodes])


def preempt(preemptor: dict[str, Any], nodes: list[str], pods: list[dict[str, Any]], **kw: Any):
    return schedule_one(preemptor, snapshot(nodes, pods), PROFILE, random.Random(0), **kw)


def names(pods) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# upstream TestPickOneNodeForPreemption, case by case
@pytest.mark.parametrize(("nodes", "preemptor", "pods", "expected"), [
    pytest.param(["machine1"], pod("p", "large", HIGH), [pod("m1.1", "small", MID, "machine1")], {"machine1"},
                 id="no node needs preemption"),
    pytest.param(["machine1", "machine2"], pod("p", "large", HIGH),
                 [pod("m1.1", "large", MID, "machine1"), pod("m2.1", "large", MID, "machine2")],
                 {"machine1", "machine2"},
                 id="a pod that fits on both machines when lower priority pods are preempted"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "large", HIGH),
                 [pod("m1.1", "large", MID, "machine1"), pod("m2.1", "large", MID, "machine2")], {"machine3"},
                 id="a pod that fits on a machine with no preemption"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "very_large", HIGH),
                 [pod("m1.1", "medium", MID, "machine1"), pod("m1.2", "large", MID, "machine1"),
                  pod("m2.1", "medium", MID, "machine2"), pod("m2.2", "medium", LOW, "machine2"),
                  pod("m3.1", "medium", LOW, "machine3"), pod("m3.2", "medium", LOW, "machine3")],
                 {"machine3"}, id="machine with min highest priority pod is picked"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "very_large", HIGH),
                 [pod("m1.1", "medium", MID, "machine1"), pod("m1.2", "large", MID, "machine1"),
                  pod("m2.1", "large", MID, "machine2"), pod("m2.2", "medium", LOW, "machine2"),
                  pod("m3.1", "medium", MID, "machine3"), pod("m3.2", "medium", MID, "machine3")],
                 {"machine2"}, id="when highest priorities are the same, minimum sum of priorities is picked"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "very_large", HIGH),
                 [pod("m1.1", "small", MID, "machine1"), pod("m1.2", "small", NEG, "machine1"),
                  pod("m1.3", "small", MID, "machine1"), pod("m1.4", "small", NEG, "machine1"),
                  pod("m2.1", "large", MID, "machine2"), pod("m2.2", "medium", NEG, "machine2"),
                  pod("m3.1", "medium", MID, "machine3"), pod("m3.2", "small", NEG, "machine3"),
                  pod("m3.3", "small", LOW, "machine3")],
                 {"machine2"}, id="when highest priority and sum are the same, minimum number of pods is picked"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "very_large", HIGH),
                 [pod("m1.1", "small", MID, "machine1"), pod("m1.2", "small", NEG, "machine1"),
                  pod("m1.3", "small", NEG, "machine1"),
                  pod("m2.1", "large", MID, "machine2"), pod("m2.2", "medium", NEG, "machine2"),
                  pod("m3.1", "medium", MID, "machine3"), pod("m3.2", "small", NEG, "machine3"),
                  pod("m3.3", "small", LOW, "machine3")],
                 {"machine2"}, id="sum of adjusted priorities is considered"),
    pytest.param(["machine1", "machine2", "machine3", "machine4"], pod("pod1", "very_large", VERY_HIGH),
                 [pod("m1.1", "small", MID, "machine1"), pod("m1.2", "small", LOW, "machine1"),
                  pod("m1.3", "small", LOW, "machine1"),
                  pod("m2.1", "large", HIGH, "machine2"),
                  pod("m3.1", "medium", MID, "machine3"), pod("m3.2", "small", LOW, "machine3"),
                  pod("m3.3", "small", LOW, "machine3"), pod("m3.4", "medium", LOW, "machine3"),
                  pod("m4.1", "medium", MID, "machine4"), pod("m4.2", "small", MID, "machine4"),
                  pod("m4.3", "small", MID, "machine4"), pod("m4.4", "small", NEG, "machine4")],
                 {"machine1"}, id="non-overlapping lowest high priority, sum priorities, and number of pods"),
    pytest.param(["machine1", "machine2", "machine3"], pod("p", "very_large", HIGH),
                 [pod("m1.1", "medium", MID, "machine1", start="2026-01-01T00:00:00Z"),
                  pod("m1.2", "medium", MID, "machine1", start="2026-01-01T00:00:00Z"),
                  pod("m2.1", "medium", MID, "machine2", start="2026-01-01T00:00:02Z"),
                  pod("m2.2", "medium", MID, "machine2", start="2026-01-01T00:00:02Z"),
                  pod("m3.1", "medium", MID, "machine3", start="2026-01-01T00:00:01Z"),
                  pod("m3.2", "medium", MID, "machine3", start="2026-01-01T00:00:01Z")],
                 {"machine2"}, id="same priority, same number of victims, different start time for each machine's pod"),
])
def test_pick_one_node_for_preemption(nodes, preemptor, pods, expected) -> None:
    result = preempt(preemptor, nodes, pods)
    if result.node is not None:  # fits without preemption
        assert result.node in expected
        return
    assert result.post_filter_result.nominated_node_name in expected


def test_minimal_victims_lowest_first_and_the_more_important_reprieved() -> None:
    pods = [pod("m1.1", "small", MID, "n1"), pod("m1.2", "large", LOW, "n1", start="2026-01-01T00:00:05Z"),
            pod("m1.3", "small", LOW, "n1", start="2026-01-01T00:00:01Z")]
    result = preempt(pod("p", "large", HIGH), ["n1"], pods)
    assert result.fit_error.message() == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    post = result.post_filter_result
    # all three lower pods out, then m1.1 (mid) and m1.3 (low, started first) fit back; m1.2 does not
    assert (post.nominated_node_name, names(post.victims)) == ("n1", ["m1.2"])


def test_victims_are_listed_most_important_first() -> None:
    pods = [pod("a", "small", LOW, "n1"), pod("b", "medium", MID, "n1"), pod("c", "medium", NEG, "n1")]
    post = preempt(pod("p", "very_large", HIGH), ["n1"], pods).post_filter_result
    assert names(post.victims) == ["b", "a", "c"]


@pytest.mark.parametrize(("preemptor", "pods", "message"), [
    pytest.param(pod("p", "large", MID), [pod("h", "large", HIGH, "n1"), pod("l", "medium", LOW, "n1")],
                 "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes are "
                 "available: 1 Insufficient cpu, 1 Insufficient memory.",
                 id="removing every lower-priority pod is not enough: the filter's reasons"),
    pytest.param(pod("p", "large", MID), [pod("h", "large", MID, "n1")],
                 "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes are "
                 "available: 1 No preemption victims found for incoming pod.",
                 id="equal priority is never a victim"),
    pytest.param(pod("p", "large", HIGH, spec={"preemptionPolicy": "Never"}), [pod("l", "large", LOW, "n1")],
                 "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: not eligible due "
                 "to preemptionPolicy=Never.",
                 id="preemptionPolicy Never"),
    pytest.param(pod("p", "large", HIGH, spec={"nodeSelector": {"disk": "ssd"}}), [pod("l", "large", LOW, "n1")],
                 "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes "
                 "are available: 1 Preemption is not helpful for scheduling.",
                 id="an unresolvable rejection is not tried"),
])
def test_when_preemption_cannot_help(preemptor, pods, message) -> None:
    profile = build_profile({"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
        {"name": "NodeAffinity"}, {"name": "NodeResourcesFit"}, {"name": "DefaultPreemption"}]}}})
    result = schedule_one(preemptor, snapshot(["n1"], pods), profile, random.Random(0))
    assert result.node is None
    assert result.fit_error.message() == message
    assert result.post_filter_result is None or not result.post_filter_result.victims


def test_not_eligible_while_a_victim_on_the_nominated_node_is_terminating() -> None:
    victim = pod("l", "large", LOW, "n1", status={"conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]})
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    preemptor = pod("p", "large", HIGH, status={"nominatedNodeName": "n1"})
    result = preempt(preemptor, ["n1"], [victim, pod("m", "medium", LOW, "n1")])
    assert result.fit_error.post_filter_message == \
        "preemption: not eligible due to a terminating pod on the nominated node."


def test_lower_priority_pods_nominated_to_the_chosen_node_lose_their_nomination() -> None:
    nominated_low = pod("waiting", "small", LOW)
    nominated_high = pod("vip", "small", VERY_HIGH)
    result = preempt(pod("p", "large", HIGH), ["n1"], [pod("l", "large", LOW, "n1")],
                     nominated={"n1": (PodInfo.of(nominated_low), PodInfo.of(nominated_high))})
    assert names(result.post_filter_result.clear_nominations) == ["waiting"]


def test_a_nominated_pod_holds_its_room_for_pods_of_lower_or_equal_priority() -> None:
    nominated = {"n1": (PodInfo.of(pod("vip", "large", HIGH)),)}
    lower = preempt(pod("low", "large", LOW), ["n1"], [], nominated=nominated)
    assert lower.node is None
    assert lower.fit_error.message().startswith("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.")
    assert preempt(pod("equal", "large", HIGH), ["n1"], [], nominated=nominated).node is None
    assert preempt(pod("higher", "large", VERY_HIGH), ["n1"], [], nominated=nominated).node == "n1"
    assert preempt(pod("vip", "large", HIGH), ["n1"], [], nominated=nominated).node == "n1"  # its own room


def test_the_nominated_node_is_tried_first() -> None:
    busy = [pod("b", "medium", LOW, "n1")]
    preemptor = pod("p", "small", HIGH, status={"nominatedNodeName": "n1"})
    result = preempt(preemptor, ["n1", "n2", "n3"], busy)
    assert (result.node, result.evaluated_nodes) == ("n1", 1)


@pytest.mark.parametrize(("candidates", "expected"), [
    pytest.param([Candidate("a", (pod("x", "small", LOW),), 1), Candidate("b", (pod("y", "small", HIGH),), 0)],
                 "b", id="fewest PDB violations first"),
    pytest.param([Candidate("a", (pod("x", "small", MID),)), Candidate("b", (pod("y", "small", MID),))],
                 "a", id="a full tie: the first"),
    pytest.param([Candidate("a", (pod("x", "small", MID, "a", start="2026-01-01T00:00:09Z"),
                                  pod("x2", "small", NEG, "a", start="2026-01-01T00:00:00Z"))),
                  Candidate("b", (pod("y", "small", MID, "b", start="2026-01-01T00:00:05Z"),
                                  pod("y2", "small", NEG, "b", start="2026-01-01T00:00:10Z")))],
                 "a", id="latest start among the highest-priority victims only"),
])
def test_pick_one_node_criteria(candidates, expected) -> None:
    assert pick_one_node_for_preemption(candidates).node == expected


# -- PodDisruptionBudgets (upstream TestDryRunPreemption's PDB cases, TestFilterPodsWithPDBViolation) -----------

def labelled(made: dict[str, Any], **labels: str) -> dict[str, Any]:
    made["metadata"]["labels"] = labels
    return made


def pdb(allowed: int, *, disrupted: tuple[str, ...] = (), selector: dict | None = None,
        namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": "foo"}} if selector is None else selector},
            "status": {"disruptionsAllowed": allowed,
                       "disruptedPods": {name: "2026-01-01T00:00:00Z" for name in disrupted}}}


def with_pdbs(*pdbs: dict[str, Any]) -> Listers:
    return Listers(pod_disruption_budgets=StaticLister(pdbs))


TWO_FOO = [labelled(pod("p1", "medium", MID, "node1"), app="foo"),
           labelled(pod("p2", "medium", MID, "node1"), app="foo")]


@pytest.mark.parametrize(("budget", "violations"), [
    pytest.param(pdb(1), 1, id="violation of the same pdb"),
    pytest.param(pdb(1, disrupted=("p3",)), 1, id="a processed eviction of another pod does not help"),
    pytest.param(pdb(1, disrupted=("p1",)), 0, id="a victim in disruptedPods is not counted"),
    pytest.param(pdb(0, disrupted=("p1",)), 1, id="a victim in disruptedPods, none allowed: the other violates"),
    pytest.param(pdb(2), 0, id="enough disruptions allowed"),
    pytest.param(pdb(0, selector={}), 0, id="an empty selector matches nothing"),
    pytest.param(pdb(0, namespace="other"), 0, id="another namespace"),
])
def test_victims_violating_a_pdb_are_counted(budget, violations) -> None:
    preemptor = pod("p", "very_large", HIGH)
    result = preempt(preemptor, ["node1"], TWO_FOO, listers=with_pdbs(budget))
    post = result.post_filter_result
    assert (post.nominated_node_name, sorted(names(post.victims))) == ("node1", ["p1", "p2"])
    snap = snapshot(["node1"], TWO_FOO)
    state = CycleState(snap)
    framework = Framework(PROFILE, snap, random.Random(0))
    find_feasible(preemptor, framework, state)  # runs the PreFilters
    node = snap.get("node1")
    assert node is not None
    victims, counted, status = select_victims_on_node(state.clone(), preemptor, node.clone(), framework, [budget])
    assert (status.is_success, sorted(names(victims)), counted) == (True, ["p1", "p2"], violations)


def test_pdb_violating_victims_are_reprieved_first() -> None:
    """Without budgets the more important pod (mid) is put back and the low one evicted; with the low one
    protected by a budget that allows nothing, it is tried first, fits back, and the mid one goes."""
    pods = [labelled(pod("protected", "medium", LOW, "node1"), app="foo"), pod("free", "medium", MID, "node1"),
            pod("filler", "small", HIGH, "node1")]
    preemptor = pod("p", "medium", HIGH)
    assert names(preempt(preemptor, ["node1"], pods).post_filter_result.victims) == ["protected"]
    assert names(preempt(preemptor, ["node1"], pods, listers=with_pdbs(pdb(0))).post_filter_result.victims) == [
        "free"]


def test_the_node_with_fewer_pdb_violations_is_picked() -> None:
    pods = [labelled(pod("cheap", "large", NEG, "node1"), app="foo"), pod("dear", "large", MID, "node2")]
    preemptor = pod("p", "large", HIGH)
    assert preempt(preemptor, ["node1", "node2"], pods).post_filter_result.nominated_node_name == "node1"
    assert preempt(preemptor, ["node1", "node2"], pods,
                   listers=with_pdbs(pdb(0))).post_filter_result.nominated_node_name == "node2"


def test_filter_pods_with_pdb_violation_keeps_the_order_and_counts_down_the_budget() -> None:
    infos = [PodInfo.of(labelled(pod(name, "small", LOW, "n1"), app="foo")) for name in ("a", "b", "c")]
    infos.append(PodInfo.of(pod("unlabelled", "small", LOW, "n1")))
    violating, others = filter_pods_with_pdb_violation(infos, [pdb(2)])
    assert ([i.pod["metadata"]["name"] for i in violating], [i.pod["metadata"]["name"] for i in others]) == (
        ["c"], ["a", "b", "unlabelled"])
