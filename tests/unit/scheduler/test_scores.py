"""Score plugins with upstream's own table numbers (noderesources/least_allocated_test.go,
balanced_allocation_test.go, tainttoleration, nodeaffinity and imagelocality tests)."""

from __future__ import annotations

from typing import Any

import pytest

from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState
from control.scheduler.nodeinfo import node_info
from control.scheduler.plugins.imagelocality import ImageLocality, calculate_priority, normalized_image_name
from control.scheduler.plugins.nodeaffinity import NodeAffinity
from control.scheduler.plugins.noderesources import BalancedAllocation, Fit
from control.scheduler.plugins.tainttoleration import TaintToleration
from tests.support.scheduler_objects import make_node, make_pod

MB = 1024 * 1024


def _pod(*requests: dict[str, str], node: str = "") -> dict[str, Any]:
    """A pod with one container per request dict (none: no containers at all, as st.MakePod().Obj())."""
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "resources": {"requests": r}}
                                           for i, r in enumerate(requests)]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": f"p{id(spec)}", "namespace": "default"}, "spec": spec}


def _scores(plugin, pod, nodes, existing=()) -> list[int]:
    infos = [node_info(node, *[p for p in existing if p["spec"].get("nodeName") == node["metadata"]["name"]])
             for node in nodes]
    snapshot = Snapshot.of(*infos)
    state = CycleState(snapshot)
    for point in ("pre_filter", "pre_score"):
        method = getattr(plugin, point, None)
        if method is not None:
            status = method(state, pod, snapshot if point == "pre_filter" else infos)
            if status.code is Code.SKIP and point == "pre_score":
                return [0 for _ in infos]
    scores = {info.name: plugin.score(state, pod, info) for info in infos}
    plugin.normalize_scores(state, pod, scores)
    return [scores[info.name] for info in infos]


def _node(name: str, cpu: str, memory: str, **kw) -> dict[str, Any]:
    return make_node(name, cpu=cpu, memory=memory, **kw)


CPU_AND_MEMORY = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


@pytest.mark.parametrize(("pod", "nodes", "existing", "expected"), [
    pytest.param(_pod(), [_node("node1", "4000", "10000"), _node("node2", "4000", "10000")], [], [100, 100],
                 id="nothing-scheduled-nothing-requested"),
    pytest.param(_pod(*CPU_AND_MEMORY), [_node("node1", "4000", "10000"), _node("node2", "6000", "10000")], [],
                 [37, 50], id="differently-sized-nodes"),
    pytest.param(_pod(), [_node("node1", "10000", "20000"), _node("node2", "10000", "20000")],
                 [_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                  _pod({"cpu": "3000", "memory": "0"}, node="node1"),
                  _pod({"cpu": "3000", "memory": "0"}, node="node2"),
                  _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
                 [70, 57], id="no-resources-requested-pods-scheduled-with-resources"),
    pytest.param(_pod(*CPU_AND_MEMORY), [_node("node1", "10000", "20000"), _node("node2", "10000", "50000")],
                 [_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                  _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
                 [57, 60], id="pods-scheduled-with-resources-differently-sized-nodes"),
    pytest.param(_pod({"cpu": "3000", "memory": "0"}),
                 [_node("node1", "4000", "10000"), _node("node2", "4000", "10000")],
                 [_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                  _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
                 [50, 25], id="requested-exceeds-capacity"),
])
def test_least_allocated(pod, nodes, existing, expected) -> None:
    assert _scores(Fit(), pod, nodes, existing) == expected


def test_least_allocated_weights() -> None:
    fit = Fit({"scoringStrategy": {"type": "LeastAllocated",
                                   "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]}})
    assert _scores(fit, _pod(*CPU_AND_MEMORY), [_node("node1", "4000", "10000"), _node("node2", "6000", "10000")]) \
        == [41, 50]


@pytest.mark.parametrize("weight", [0, -1, 101])
def test_least_allocated_rejects_weights_out_of_range(weight) -> None:
    with pytest.raises(ValueError, match=r"resources\[1\].weight"):
        Fit({"scoringStrategy": {"resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": weight}]}})


CPU_ONLY_M = ({"cpu": "1000m"}, {"cpu": "2000m"})
CPU_AND_MEMORY_M = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})


@pytest.mark.parametrize(("pod", "nodes", "existing", "expected"), [
    pytest.param(_pod(*CPU_AND_MEMORY_M), [_node("node1", "4000m", "10000"), _node("node2", "6000m", "10000")], [],
                 [87, 100], id="differently-sized-nodes"),
    pytest.param(_pod(*CPU_AND_MEMORY_M), [_node("node1", "10000m", "20000"), _node("node2", "10000m", "20000")],
                 [_pod(*CPU_ONLY_M, node="node1"), _pod(*CPU_AND_MEMORY_M, node="node2")],
                 [82, 95], id="pods-scheduled-with-resources"),
    pytest.param(_pod(*CPU_AND_MEMORY_M), [_node("node1", "10000m", "20000"), _node("node2", "10000m", "50000")],
                 [_pod(*CPU_ONLY_M, node="node1"), _pod(*CPU_AND_MEMORY_M, node="node2")],
                 [82, 80], id="pods-scheduled-differently-sized-nodes"),
    pytest.param(_pod(*CPU_ONLY_M), [_node("node1", "6000m", "10000"), _node("node2", "6000m", "10000")],
                 [_pod(*CPU_ONLY_M, node="node1"), _pod(*CPU_AND_MEMORY_M, node="node2")],
                 [50, 75], id="requested-at-node-capacity"),
    pytest.param(_pod(), [_node("node1", "4000m", "10000"), _node("node2", "4000m", "10000")], [],
                 [0, 0], id="best-effort-skipped"),
])
def test_balanced_allocation(pod, nodes, existing, expected) -> None:
    assert _scores(BalancedAllocation(), pod, nodes, existing) == expected


def test_balanced_allocation_three_resources_uses_the_standard_deviation() -> None:
    gpu = {"nvidia.com/gpu": "8"}
    plugin = BalancedAllocation({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]})
    pod = _pod({"memory": "0", "nvidia.com/gpu": "1"})
    existing = [_pod(*CPU_AND_MEMORY_M, node="node1"), _pod(*CPU_AND_MEMORY_M, node="node2"),
                {**_pod({"nvidia.com/gpu": "3"}, node="node1")}]
    nodes = [_node("node1", "3500m", "40000", extra=gpu), _node("node2", "3500m", "40000", extra=gpu)]
    # node1: cpu 3000/3500, memory 5000/40000, gpu 4/8 → 70 (upstream's "include scalar resource" case);
    # node2: gpu 1/8 → 65
    assert _scores(plugin, pod, nodes, existing) == [70, 65]


def test_taint_toleration_score_counts_untolerated_prefer_no_schedule_taints_reversed() -> None:
    prefer = [{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"},
              {"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]
    nodes = [_node("n0", "1", "1Gi"), _node("n1", "1", "1Gi", taints=prefer[:1]),
             _node("n2", "1", "1Gi", taints=prefer)]
    pod = make_pod("p", tolerations=[{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}])
    assert _scores(TaintToleration(), pod, nodes) == [100, 100, 0]
    assert _scores(TaintToleration(), make_pod("q"), nodes) == [100, 50, 0]


def test_node_affinity_score_sums_weights_and_normalises_to_the_best() -> None:
    preferred = [
        {"weight": 2, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}},
        {"weight": 4, "preference": {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]}},
        {"weight": 5, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]},
                                                          {"key": "key", "operator": "In", "values": ["value"]},
                                                          {"key": "az", "operator": "In", "values": ["az1"]}]}},
    ]
    pod = make_pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    nodes = [_node("n1", "1", "1Gi", labels={"foo": "bar"}), _node("n2", "1", "1Gi", labels={"key": "value"}),
             _node("n3", "1", "1Gi", labels={"foo": "bar", "key": "value", "az": "az1"})]
    # raw 2, 4, 11 → upstream's TestNodeAffinityPriority "all matched with different weights": 18, 36, 100
    assert _scores(NodeAffinity(), pod, nodes) == [18, 36, 100]


@pytest.mark.parametrize(("name", "normalized"), [("busybox", "busybox:latest"), ("gcr.io/a/b:1", "gcr.io/a/b:1"),
                                                   ("localhost:5000/b", "localhost:5000/b:latest")])
def test_image_names_without_a_tag_are_latest(name, normalized) -> None:
    assert normalized_image_name(name) == normalized


def test_image_locality_scales_by_size_and_spread() -> None:
    images = [{"names": ["gcr.io/40:latest"], "sizeBytes": 40 * MB}, {"names": ["gcr.io/300:latest"],
                                                                       "sizeBytes": 300 * MB}]
    nodes = [_node("n1", "1", "1Gi", images=images[:1]), _node("n2", "1", "1Gi", images=images[1:]),
             _node("n3", "1", "1Gi")]
    pod = make_pod("p", requests=[{}, {}], images=["gcr.io/40", "gcr.io/300"])
    # n1: 40 MB · 1/3 = 13 MB < 23 MB → 0; n2: 300 MB · 1/3 = 100 MB → 100 · (100-23) / (2000-23) = 3
    assert _scores(ImageLocality(), pod, nodes) == [0, 3, 0]
    assert calculate_priority(2000 * MB, 2) == 100 and calculate_priority(0, 1) == 0


# -- NodeResourcesFit's other scoring strategies (most_allocated_test.go, requested_to_capacity_ratio_test.go) --

MOST_ALLOCATED = {"scoringStrategy": {"type": "MostAllocated"}}


@pytest.mark.parametrize(("pod", "nodes", "existing", "expected"), [
    # cpu 3000·100/4000 = 75, memory 5000·100/10000 = 50 → 62; on the bigger node 50 and 50 → 50.
    pytest.param(_pod(*CPU_AND_MEMORY), [_node("node1", "4000", "10000"), _node("node2", "6000", "10000")], [],
                 [62, 50], id="differently-sized-nodes"),
    # node1 holds 3000 cpu and, counted non-zero, 2 × 200Mi memory (more than its 20000): (60 + 100) / 2 = 80;
    # node2 holds 3000 cpu and 5000 memory: (6000·100/10000 + 10000·100/20000) / 2 = (60 + 50) / 2 = 55.
    pytest.param(_pod(*CPU_AND_MEMORY), [_node("node1", "10000", "20000"), _node("node2", "10000", "20000")],
                 [_pod({"cpu": "1000"}, {"cpu": "2000"}, node="node1"), _pod(*CPU_AND_MEMORY, node="node2")],
                 [80, 55], id="resources-requested-with-pods-scheduled"),
    # more requested than the node has: counted as full (100), memory 5000·100/10000 = 50 → 75.
    pytest.param(_pod({"cpu": "5000", "memory": "5000"}), [_node("node1", "4000", "10000")], [], [75],
                 id="requested-exceeds-capacity"),
])
def test_most_allocated(pod, nodes, existing, expected) -> None:
    assert _scores(Fit(MOST_ALLOCATED), pod, nodes, existing) == expected


def _ratio(*points: tuple[int, int], resources=None) -> Fit:
    strategy: dict[str, Any] = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": u, "score": s} for u, s in points]}}
    if resources is not None:
        strategy["resources"] = resources
    return Fit({"scoringStrategy": strategy})


@pytest.mark.parametrize(("fit", "pod", "expected"), [
    # shape (0,10)-(100,0) is least-allocated-like: cpu util 75 → 25, memory 50 → 50; (25 + 50) / 2 = 37.5 → 38
    pytest.param(_ratio((0, 10), (100, 0)), _pod(*CPU_AND_MEMORY), [38, 50], id="least-like"),
    # shape (0,0)-(100,10) is bin packing: 75 and 50 → 62.5 → 63 (Go rounds halves away from zero)
    pytest.param(_ratio((0, 0), (100, 10)), _pod(*CPU_AND_MEMORY), [63, 50], id="most-like"),
    # a resource scoring 0 is left out of the mean: node1's memory (util 50, below 60) scores 0, so its cpu
    # alone counts, 100·(75-60)/40 = 37.5 → 37 (integer line); node2's cpu and memory both score 0
    pytest.param(_ratio((60, 0), (100, 10)), _pod(*CPU_AND_MEMORY), [37, 0], id="zero-scores-left-out"),
    # weights: cpu 3, memory 1 with the bin-packing shape: (75·3 + 50) / 4 = 68.75 → 69; node2 50
    pytest.param(_ratio((0, 0), (100, 10), resources=[{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]),
                 _pod(*CPU_AND_MEMORY), [69, 50], id="weighted"),
])
def test_requested_to_capacity_ratio(fit, pod, expected) -> None:
    assert _scores(fit, pod, [_node("node1", "4000", "10000"), _node("node2", "6000", "10000")]) == expected


@pytest.mark.parametrize(("points", "message"), [
    pytest.param((), r"shape: Required value", id="empty"),
    pytest.param(((50, 1), (50, 2)), r"shape\[1\].utilization: .*sorted in increasing order", id="unsorted"),
    pytest.param(((0, 1), (101, 2)), r"shape\[1\].utilization: Invalid value: 101", id="over-100"),
    pytest.param(((0, 11),), r"shape\[0\].score: Invalid value: 11", id="score-over-10"),
])
def test_requested_to_capacity_ratio_shape_is_checked(points, message) -> None:
    with pytest.raises(ValueError, match=message):
        _ratio(*points)


def test_an_unknown_scoring_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match=r"scoringStrategy.type: Unsupported value: 'Random'"):
        Fit({"scoringStrategy": {"type": "Random"}})
