"""schedule_one and profiles (upstream schedule_one_test.go, default_plugins_test.go)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from control.scheduler.algorithm import NO_NODES_AVAILABLE, schedule_one
from control.scheduler.cache import Snapshot
from control.scheduler.nodeinfo import node_info
from control.scheduler.profile import DEFAULT_SCHEDULER_NAME, build_profiles, num_feasible_nodes_to_find
from tests.support.scheduler_objects import make_node, make_pod

DEFAULT = build_profiles()[DEFAULT_SCHEDULER_NAME]


def _snapshot(*nodes, pods=()) -> Snapshot:
    return Snapshot.of(*[node_info(n, *[p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]])
                         for n in nodes])


def test_fit_error_message_is_upstreams_histogram() -> None:
    snapshot = _snapshot(make_node("a", cpu="1"), make_node("b", labels={"disk": "hdd"}),
                         make_node("c", labels={"disk": "hdd"}))
    pod = make_pod("p", requests=[{"cpu": "2"}], node_selector={"disk": "ssd"})
    result = schedule_one(pod, snapshot, DEFAULT, random.Random(0))
    assert result.node is None
    assert result.fit_error.message() == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    pod = make_pod("p", requests=[{"cpu": "2"}])
    snapshot = _snapshot(make_node("a", cpu="1"), make_node("b", cpu="1", labels={"x": "y"}),
                         make_node("c", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    assert schedule_one(pod, snapshot, DEFAULT, random.Random(0)).fit_error.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.")


def test_the_issue_example_message() -> None:
    snapshot = _snapshot(make_node("a", cpu="1", labels={"disk": "ssd"}), make_node("b"), make_node("c"))
    pod = make_pod("p", requests=[{"cpu": "2"}], node_selector={"disk": "ssd"})
    assert schedule_one(pod, snapshot, DEFAULT, random.Random(0)).fit_error.message() == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")


def test_no_nodes() -> None:
    assert schedule_one(make_pod("p"), Snapshot(), DEFAULT, random.Random(0)).fit_error.message() == NO_NODES_AVAILABLE


def test_least_allocated_node_wins() -> None:
    busy = make_pod("busy", requests=[{"cpu": "3", "memory": "16Gi"}], node_name="a")
    snapshot = _snapshot(make_node("a"), make_node("b"), pods=[busy])
    result = schedule_one(make_pod("p", requests=[{"cpu": "1", "memory": "1Gi"}]), snapshot, DEFAULT,
                          random.Random(0))
    assert result.node == "b" and result.feasible_nodes == 2 and result.scores["b"] > result.scores["a"]


def test_ties_are_broken_at_random_and_evenly() -> None:
    snapshot = _snapshot(make_node("a"), make_node("b"), make_node("c"))
    rng = random.Random(42)
    picks = Counter(schedule_one(make_pod("p"), snapshot, DEFAULT, rng).node for _ in range(3000))
    assert set(picks) == {"a", "b", "c"} and min(picks.values()) > 850


def test_preferred_affinity_and_prefer_no_schedule_steer_the_choice() -> None:
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}}]}}
    snapshot = _snapshot(make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"}))
    assert schedule_one(make_pod("p", affinity=preferred), snapshot, DEFAULT, random.Random(0)).node == "b"
    snapshot = _snapshot(make_node("a", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), make_node("b"))
    assert {schedule_one(make_pod("p"), snapshot, DEFAULT, random.Random(s)).node for s in range(20)} == {"b"}


@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    (None, 10, 10), (None, 99, 99), (None, 1000, 420), (None, 5000, 500), (None, 6000, 300), (None, 1500, 570),
    (10, 1000, 100), (10, 500, 100), (100, 1000, 1000), (None, 150, 100),
])
def test_num_feasible_nodes_to_find_is_upstreams_adaptive_default(percentage, nodes, expected) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_filtering_stops_once_enough_nodes_fit_and_starts_where_told() -> None:
    nodes = [make_node(f"n{i:03d}") for i in range(200)]
    profile = build_profiles({"percentageOfNodesToScore": 10})[DEFAULT_SCHEDULER_NAME]
    result = schedule_one(make_pod("p"), _snapshot(*nodes), profile, random.Random(0), start_index=150)
    assert result.evaluated_nodes == 100 and result.feasible_nodes == 100


def test_profiles_from_a_kube_scheduler_configuration() -> None:
    profiles = build_profiles({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {"schedulerName": "no-scoring", "percentageOfNodesToScore": 30,
             "plugins": {"score": {"disabled": [{"name": "*"}],
                                   "enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
                         "filter": {"disabled": [{"name": "TaintToleration"}]}},
             "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                 "type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}]}}}]},
        ]})
    default = profiles["default-scheduler"]
    assert [(p.name, w) for p, w in default.score] == [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1)]
    assert [p.name for p in default.filter] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                                                "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding",
                                                "PodTopologySpread", "InterPodAffinity"]
    other = profiles["no-scoring"]
    assert [(p.name, w) for p, w in other.score] == [("NodeResourcesFit", 5)]
    assert "TaintToleration" not in [p.name for p in other.filter]
    assert other.percentage_of_nodes_to_score == 30
    assert [r.name for r in other.score[0][0].resources] == ["cpu"]


def test_an_unknown_plugin_is_refused() -> None:
    with pytest.raises(ValueError, match="VolumeZone"):
        build_profiles({"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "VolumeZone"}]}}}]})
