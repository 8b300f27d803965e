"""PodTopologySpread (control/scheduler/plugins/podtopologyspread/) with upstream's own tables
(podtopologyspread/filtering_test.go TestSingleConstraint / TestMultipleConstraints / minDomains and node
inclusion policies, scoring_test.go TestPodTopologySpreadScore), the critical paths, AddPod/RemovePod for
preemption, the system default constraints with the default selector, and the plugin in schedule_one."""

from __future__ import annotations

import random
from typing import Any

import pytest

from control.apimachinery import labels
from control.apimachinery.meta import key_of
from control.client.store import Lister, Store
from control.scheduler.algorithm import schedule_one
from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState, Listers
from control.scheduler.nodeinfo import PodInfo, node_info
from control.scheduler.plugins.podtopologyspread import PodTopologySpread
from control.scheduler.plugins.podtopologyspread.common import (
    count_node_pods_match_selector,
    count_pods_match_selector,
)
from control.scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    CriticalPaths,
)
from control.scheduler.plugins.podtopologyspread.scoring import topology_normalizing_weight
from control.scheduler.profile import build_profile
from tests.support.scheduler_objects import make_node

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def _pod(name: str, *, node: str = "", labels: dict | None = None, namespace: str = "default",
         spread: list | None = None, affinity_in: tuple[str, list[str]] | None = None, terminating: bool = False,
         owner: tuple[str, str, str] | None = None, tolerations: list | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                                "labels": labels if labels is not None else {"foo": ""}}
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                        "controller": True, "uid": "u"}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if spread:
        spec["topologySpreadConstraints"] = spread
    if affinity_in:
        key, values = affinity_in
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": values}]}]}}}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _c(max_skew: int, key: str, when: str, selector: dict | None, **extra: Any) -> dict[str, Any]:
    constraint: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        constraint["labelSelector"] = selector
    return constraint


def _hard(max_skew: int, key: str, selector: dict | None = FOO, **extra: Any) -> dict[str, Any]:
    return _c(max_skew, key, "DoNotSchedule", selector, **extra)


def _soft(max_skew: int, key: str, selector: dict | None = FOO, **extra: Any) -> dict[str, Any]:
    return _c(max_skew, key, "ScheduleAnyway", selector, **extra)


def _node(name: str, taints: list | None = None, **node_labels: str) -> dict[str, Any]:
    return make_node(name, labels=dict(node_labels), taints=taints)


def _zn(name: str, zone: str) -> dict[str, Any]:
    """A node as upstream's tables build them: labels zone and node."""
    return _node(name, zone=zone, node=name)


def _existing(spec: str) -> list[dict[str, Any]]:
    """"node-a:2,node-b:1" → that many pods labelled foo on each node."""
    pods = []
    for part in spec.split(","):
        node, count = part.split(":")
        pods += [_pod(f"p-{node}-{i}", node=node) for i in range(int(count))]
    return pods


def _snapshot(nodes: list[dict], pods: list[dict]) -> Snapshot:
    infos = [node_info(n, *[p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]]) for n in nodes]
    return Snapshot.of(*infos)


def _filter_codes(plugin: PodTopologySpread, pod: dict, nodes: list[dict], pods: list[dict],
                  listers: Listers | None = None) -> dict[str, Code]:
    snapshot = _snapshot(nodes, pods)
    state = CycleState(snapshot, listers)
    status = plugin.pre_filter(state, pod, snapshot)
    if status.code is Code.SKIP:
        return {n.name: S for n in snapshot.node_list}
    assert status.is_success
    return {n.name: plugin.filter(state, pod, n).code for n in snapshot.node_list}


FOUR = [_zn("node-a", "zone1"), _zn("node-b", "zone1"), _zn("node-x", "zone2"), _zn("node-y", "zone2")]
SPREAD_2_1_0_3 = "node-a:2,node-b:1,node-y:3"


@pytest.mark.parametrize(("pod", "nodes", "existing", "want"), [
    pytest.param(_pod("p", spread=[_hard(1, "zone")]), FOUR, [], [S, S, S, S], id="no-existing-pods"),
    pytest.param(_pod("p", spread=[_hard(1, "zone", BAR)]), FOUR, [], [S, S, S, S],
                 id="no-existing-pods-incoming-pod-does-not-match-itself"),
    pytest.param(_pod("p", spread=[_hard(1, "zone")]), FOUR,
                 [_pod("p-a1", node="node-a", namespace="ns1"), _pod("p-b1", node="node-a", namespace="ns2"),
                  _pod("p-x1", node="node-x"), _pod("p-y1", node="node-y")], [S, S, U, U],
                 id="existing-pods-in-a-different-namespace-do-not-count"),
    pytest.param(_pod("p", spread=[_hard(1, "zone")]), FOUR, _existing("node-a:2,node-b:1,node-y:3"), [S, S, S, S],
                 id="pods-spread-across-zones-as-3/3-all-nodes-fit"),
    pytest.param(_pod("p", spread=[_hard(1, "zone")]),
                 [_zn("node-a", "zone1"), _node("node-b", zon="zone1", node="node-b"), _zn("node-x", "zone2"),
                  _zn("node-y", "zone2")], _existing("node-a:1,node-b:1,node-x:1,node-y:1"), [S, UU, U, U],
                 id="spread-1/2-as-node-b-lacks-the-zone-label"),
    pytest.param(_pod("p", spread=[_hard(1, "rack")]), [_zn("node-a", "zone1"), _zn("node-x", "zone2")], [],
                 [UU, UU], id="no-node-has-the-rack-label"),
    pytest.param(_pod("p", spread=[_hard(1, "node")]), FOUR, _existing(SPREAD_2_1_0_3), [U, U, S, U],
                 id="nodes-2/1/0/3-only-node-x-fits"),
    pytest.param(_pod("p", spread=[_hard(2, "node")]), FOUR, _existing(SPREAD_2_1_0_3), [U, S, S, U],
                 id="nodes-2/1/0/3-maxSkew-2-node-b-and-node-x-fit"),
    pytest.param(_pod("p", labels={"bar": ""}, spread=[_hard(1, "node")]), FOUR, _existing(SPREAD_2_1_0_3),
                 [U, S, S, U], id="nodes-2/1/0/3-pod-does-not-match-itself"),
    pytest.param(_pod("p", spread=[_hard(1, "node")], affinity_in=("node", ["node-a", "node-y"])), FOUR,
                 _existing(SPREAD_2_1_0_3), [S, S, S, U], id="node-affinity-counts-only-node-a-and-node-y"),
    pytest.param(_pod("p", spread=[_hard(1, "node")]), [_node("node-a", node="node-a"), _node("node-b", node="node-b")],
                 [_pod("p-a", node="node-a", terminating=True), _pod("p-b", node="node-b")], [S, U],
                 id="terminating-pods-are-excluded"),
    # TestMultipleConstraints
    pytest.param(_pod("p", spread=[_hard(1, "zone"), _hard(1, "node")]), FOUR, _existing(SPREAD_2_1_0_3),
                 [U, U, S, U], id="zone-and-node-spreads-3/3-and-2/1/0/3"),
    pytest.param(_pod("p", spread=[_hard(1, "zone"), _hard(1, "node")]), FOUR,
                 _existing("node-a:2,node-b:1,node-y:4"), [U, U, U, U], id="zone-and-node-spreads-3/4-and-2/1/0/4"),
    # minDomains: fewer domains than minDomains make the global minimum 0
    pytest.param(_pod("p", spread=[_hard(1, "zone", minDomains=3)]), FOUR, _existing("node-a:1,node-x:1"),
                 [U, U, U, U], id="minDomains-3-with-2-zones-global-minimum-is-0"),
    pytest.param(_pod("p", spread=[_hard(1, "zone", minDomains=2)]), FOUR, _existing("node-a:1,node-x:1"),
                 [S, S, S, S], id="minDomains-2-with-2-zones"),
    # node inclusion policies
    pytest.param(_pod("p", spread=[_hard(1, "zone", nodeTaintsPolicy="Honor")]),
                 [_zn("node-a", "zone1"),
                  _node("node-x", [{"key": "k", "value": "v", "effect": "NoSchedule"}], zone="zone2", node="node-x")],
                 [], [S, S], id="nodeTaintsPolicy-Honor-leaves-out-the-tainted-zone"),
    pytest.param(_pod("p", spread=[_hard(1, "zone", nodeTaintsPolicy="Honor")]),
                 [_zn("node-a", "zone1"),
                  _node("node-x", [{"key": "k", "value": "v", "effect": "NoSchedule"}], zone="zone2", node="node-x")],
                 _existing("node-a:1"), [S, S], id="nodeTaintsPolicy-Honor-one-domain-counted"),
    pytest.param(_pod("p", spread=[_hard(1, "zone")]),
                 [_zn("node-a", "zone1"),
                  _node("node-x", [{"key": "k", "value": "v", "effect": "NoSchedule"}], zone="zone2", node="node-x")],
                 _existing("node-a:1"), [U, S], id="nodeTaintsPolicy-Ignore-counts-the-tainted-zone"),
    pytest.param(_pod("p", spread=[_hard(1, "node", nodeAffinityPolicy="Ignore")],
                      affinity_in=("node", ["node-a", "node-y"])), FOUR, _existing(SPREAD_2_1_0_3),
                 [U, U, S, U], id="nodeAffinityPolicy-Ignore-counts-every-node"),
])
def test_filter(pod, nodes, existing, want) -> None:
    codes = _filter_codes(PodTopologySpread(), pod, nodes, existing)
    assert [codes[n["metadata"]["name"]] for n in nodes] == want


def test_filter_reasons_are_upstreams() -> None:
    pod = _pod("p", spread=[_hard(1, "zone")])
    nodes = [_zn("node-a", "zone1"), _node("node-b", node="node-b"), _zn("node-x", "zone2")]
    snapshot = _snapshot(nodes, _existing("node-a:1"))
    plugin, state = PodTopologySpread(), CycleState(snapshot)
    assert plugin.pre_filter(state, pod, snapshot).is_success
    statuses = [plugin.filter(state, pod, n) for n in snapshot.node_list]
    assert [s.reasons for s in statuses] == [(ERR_REASON_CONSTRAINTS_NOT_MATCH,), (ERR_REASON_NODE_LABEL_NOT_MATCH,),
                                             ()]
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert ERR_REASON_NODE_LABEL_NOT_MATCH == \
        "node(s) didn't match pod topology spread constraints (missing required label)"


def test_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    pod = _pod("p", labels={"foo": "", "rev": "2"}, spread=[_hard(1, "node", matchLabelKeys=["rev"])])
    old = [_pod(f"old-{i}", node="node-a", labels={"foo": "", "rev": "1"}) for i in range(3)]
    nodes = [_node("node-a", node="node-a"), _node("node-b", node="node-b")]
    assert _filter_codes(PodTopologySpread(), pod, nodes, old) == {"node-a": S, "node-b": S}
    without = _pod("q", labels={"foo": "", "rev": "2"}, spread=[_hard(1, "node")])
    assert _filter_codes(PodTopologySpread(), without, nodes, old) == {"node-a": U, "node-b": S}


def test_a_pod_without_hard_constraints_skips_the_filter() -> None:
    snapshot = _snapshot(FOUR, [])
    assert PodTopologySpread().pre_filter(CycleState(snapshot), _pod("p", spread=[_soft(1, "zone")]),
                                          snapshot).code is Code.SKIP
    assert PodTopologySpread().pre_filter(CycleState(snapshot), _pod("p"), snapshot).code is Code.SKIP


@pytest.mark.parametrize(("updates", "want"), [
    pytest.param([("a", 1)], [("a", 1), ("", 2 ** 31 - 1)], id="first"),
    pytest.param([("a", 3), ("b", 1)], [("b", 1), ("a", 3)], id="smaller-becomes-first"),
    pytest.param([("a", 1), ("b", 3), ("c", 2)], [("a", 1), ("c", 2)], id="between-replaces-second"),
    pytest.param([("a", 1), ("b", 2), ("a", 3)], [("b", 2), ("a", 3)], id="existing-grows-and-swaps"),
    pytest.param([("a", 1), ("b", 2), ("c", 5)], [("a", 1), ("b", 2)], id="larger-ignored"),
])
def test_critical_paths_keep_the_minimum_first(updates, want) -> None:
    paths = CriticalPaths()
    for value, num in updates:
        paths.update(value, num)
    assert paths.paths == want


def test_add_pod_and_remove_pod_update_the_counts_for_preemption() -> None:
    pod = _pod("p", spread=[_hard(1, "node")])
    pods = _existing("node-a:1,node-b:2")
    snapshot = _snapshot([_node("node-a", node="node-a"), _node("node-b", node="node-b")], pods)
    plugin, state = PodTopologySpread(), CycleState(snapshot)
    plugin.pre_filter(state, pod, snapshot)
    node_a, node_b = snapshot.node_list
    assert [plugin.filter(state, pod, n).code for n in (node_a, node_b)] == [S, U]
    copy = state.clone()
    victim = PodInfo.of(pods[1])
    plugin.remove_pod(copy, pod, victim, node_b)
    plugin.remove_pod(copy, pod, PodInfo.of(pods[2]), node_b)
    assert [plugin.filter(copy, pod, n).code for n in (node_a, node_b)] == [U, S]
    assert [plugin.filter(state, pod, n).code for n in (node_a, node_b)] == [S, U]  # the original is untouched
    plugin.add_pod(copy, pod, victim, node_b)
    plugin.add_pod(copy, pod, PodInfo.of(_pod("other-ns", node="node-b", namespace="other")), node_b)
    assert [plugin.filter(copy, pod, n).code for n in (node_a, node_b)] == [S, S]


def _scores(plugin: PodTopologySpread, pod: dict, nodes: list[dict], failed: list[dict], pods: list[dict],
            listers: Listers | None = None) -> list[int]:
    snapshot = _snapshot(nodes + failed, pods)
    state = CycleState(snapshot, listers)
    feasible = [info for info in snapshot.node_list if info.name in {n["metadata"]["name"] for n in nodes}]
    if plugin.pre_score(state, pod, feasible).code is Code.SKIP:
        return [0 for _ in feasible]
    scores = {info.name: plugin.score(state, pod, info) for info in feasible}
    plugin.normalize_scores(state, pod, scores)
    return [scores[info.name] for info in feasible]


def _h(name: str, **extra: str) -> dict[str, Any]:
    return make_node(name, labels={HOST: name, **extra})


def _hz(name: str, zone: str) -> dict[str, Any]:
    return make_node(name, labels={HOST: name, "zone": zone})


H4 = [_h("node-a"), _h("node-b"), _h("node-c"), _h("node-d")]


@pytest.mark.parametrize(("pod", "nodes", "failed", "existing", "want"), [
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _h("node-b")], [], [], [100, 100],
                 id="one-constraint-on-node-no-existing-pods"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a")], [_h("node-b")], _existing("node-a:2,node-b:1"),
                 [100], id="only-one-node-is-candidate"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _h("node-b")], [], _existing("node-a:1,node-b:1"),
                 [100, 100], id="same-number-of-matching-pods"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), H4, [], _existing("node-a:2,node-b:1,node-d:3"),
                 [20, 60, 100, 0], id="2/1/0/3-all-4-nodes-candidates"),
    pytest.param(_pod("p", spread=[_soft(1, HOST, None)]), H4, [], _existing("node-a:2,node-b:1,node-d:3"),
                 [100, 100, 100, 100], id="null-selector"),
    pytest.param(_pod("p", spread=[_soft(2, HOST)]), H4, [], _existing("node-a:2,node-b:1,node-d:3"),
                 [33, 66, 100, 16], id="2/1/0/3-maxSkew-2"),
    pytest.param(_pod("p", spread=[_soft(3, HOST)]), H4, [], _existing("node-a:4,node-b:3,node-c:2,node-d:1"),
                 [44, 66, 77, 100], id="4/3/2/1-maxSkew-3"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _h("node-b"), _h("node-x")], [_h("node-y")],
                 _existing("node-a:4,node-b:2,node-x:1,node-y:3"), [33, 83, 100], id="4/2/1/~3~"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _node("node-b", n="node-b"), _h("node-x")],
                 [_h("node-y")], _existing("node-a:4,node-b:2,node-x:1,node-y:3"), [16, 0, 100],
                 id="4/?2?/1/~3~-node-b-lacks-the-hostname-label"),
    pytest.param(_pod("p", spread=[_soft(1, "zone")]),
                 [_hz("node-a", "zone1"), _hz("node-b", "zone1"), _hz("node-x", "zone2")], [_hz("node-y", "zone2")],
                 _existing("node-a:4,node-b:2,node-x:1,node-y:3"), [75, 75, 100], id="zone-4/2/1/~3~"),
    pytest.param(_pod("p", spread=[_soft(1, "zone"), _soft(1, HOST)]),
                 [_hz("node-a", "zone1"), _hz("node-x", "zone2")], [_hz("node-b", "zone1"), _hz("node-y", "zone2")],
                 _existing("node-a:2,node-b:1,node-x:2,node-y:4"), [100, 63], id="zone-and-node-2/~1~/2/~4~"),
    pytest.param(_pod("p", labels={"foo": "", "bar": ""}, spread=[_soft(1, "zone"), _soft(1, "zone", BAR)]),
                 [_node("node-a", zone="zone1"), _node("node-x", zone="zone2")],
                 [_node("node-b", zone="zone1"), _node("node-y", zone="zone2")],
                 [_pod("p-a1", node="node-a", labels={"foo": "", "bar": ""}), _pod("p-a2", node="node-a"),
                  _pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}), _pod("p-y1", node="node-y"),
                  _pod("p-y2", node="node-y", labels={"foo": "", "bar": ""}), _pod("p-y3", node="node-y")],
                 [85, 100], id="two-constraints-on-zone"),
    pytest.param(_pod("p", labels={"foo": "", "bar": ""}, spread=[_soft(1, "zone"), _soft(1, HOST, BAR)]),
                 [_hz("node-a", "zone1"), _hz("node-b", "zone1"), _hz("node-x", "zone2"), _hz("node-y", "zone2")], [],
                 [_pod("p-a1", node="node-a"), _pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}),
                  _pod("p-y1", node="node-y"), _pod("p-y2", node="node-y", labels={"bar": ""})],
                 [60, 20, 100, 60], id="zone-and-node-different-selectors"),
    pytest.param(_pod("p", labels={"foo": "", "bar": ""}, spread=[_soft(1, "zone"), _soft(1, HOST, BAR)]),
                 [_hz("node-a", "zone1"), _hz("node-b", "zone1"), _hz("node-x", "zone2"), _hz("node-y", "zone2")], [],
                 [_pod("p-b1", node="node-b", labels={"bar": ""}), _pod("p-x1", node="node-x"),
                  _pod("p-y1", node="node-y", labels={"foo": "", "bar": ""})],
                 [100, 60, 40, 0], id="zone-and-node-different-selectors-some-nodes-empty"),
    pytest.param(_pod("p", labels={"foo": "", "bar": ""}, spread=[_soft(1, "zone"), _soft(1, HOST, BAR)]),
                 [_hz("node-a", "zone1"), _hz("node-b", "zone1"), _hz("node-x", "zone2")], [_hz("node-y", "zone2")],
                 [_pod("p-a1", node="node-a"), _pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}),
                  _pod("p-y1", node="node-y"), _pod("p-y2", node="node-y", labels={"bar": ""})],
                 [50, 25, 100], id="zone-and-node-different-selectors-3-of-4-candidates"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _h("node-b")], [],
                 [_pod("p-a1", node="node-a", namespace="ns1"), _pod("p-a2", node="node-a"),
                  _pod("p-b1", node="node-b"), _pod("p-b2", node="node-b")], [100, 33],
                 id="existing-pods-in-a-different-namespace-do-not-count"),
    pytest.param(_pod("p", spread=[_soft(1, HOST)]), [_h("node-a"), _h("node-b")], [],
                 [_pod("p-a", node="node-a", terminating=True), _pod("p-b", node="node-b")], [100, 0],
                 id="terminating-pods-are-excluded"),
])
def test_score(pod, nodes, failed, existing, want) -> None:
    assert _scores(PodTopologySpread(), pod, nodes, failed, existing) == want


def _listers(*services: dict, replica_sets: tuple[dict, ...] = ()) -> Listers:
    service_store, rs_store = Store(), Store()
    for obj in services:
        service_store.add(obj)
    for obj in replica_sets:
        rs_store.add(obj)
    return Listers(services=Lister(service_store), replica_sets=Lister(rs_store))


def _service(selector: dict | None) -> dict[str, Any]:
    return {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": selector}}


def test_system_defaults_spread_by_the_services_selector_and_without_zone_labels() -> None:
    """Upstream "system defaulting, nodes don't have zone, pods match service": same scores as one hostname
    constraint with maxSkew 3."""
    pods = _existing("node-a:4,node-b:3,node-c:2,node-d:1")
    listers = _listers(_service({"foo": ""}))
    assert _scores(PodTopologySpread(), _pod("p"), H4, [], pods, listers) == [44, 66, 77, 100]
    assert _scores(PodTopologySpread(), _pod("p"), H4, [], pods) == [0, 0, 0, 0]  # nothing selects it: skipped
    # List defaulting requires every topology key: without zone labels every node is ignored.
    listed = PodTopologySpread({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]})
    assert _scores(listed, _pod("p"), H4, [], pods, listers) == [0, 0, 0, 0]


def test_default_selector_adds_the_controlling_replica_sets_selector() -> None:
    rs = {"metadata": {"name": "rs1", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    mine = {"foo": "", "app": "web"}
    pod = _pod("p", labels=mine, owner=("apps/v1", "ReplicaSet", "rs1"))
    pods = [_pod("web-1", node="node-a", labels=mine), _pod("web-2", node="node-a", labels=mine),
            _pod("other", node="node-b", labels={"foo": ""})]
    listers = _listers(_service({"foo": ""}), replica_sets=(rs,))
    nodes = [_h("node-a"), _h("node-b")]
    # foo AND app=web: node-a has 2, node-b 0 → weight log(4), scores 2·1.386+2=5 and 2 → 100·(5+2-s)/5
    assert _scores(PodTopologySpread(), pod, nodes, [], pods, listers) == [40, 100]
    assert topology_normalizing_weight(2) == pytest.approx(1.3862943611)


def test_hard_default_constraints_filter() -> None:
    plugin = PodTopologySpread({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}]})
    listers = _listers(_service({"foo": ""}))
    codes = _filter_codes(plugin, _pod("p"), FOUR, _existing(SPREAD_2_1_0_3), listers)
    assert codes == {"node-a": U, "node-b": U, "node-x": S, "node-y": U}


@pytest.mark.parametrize("args", [
    {"defaultingType": "Other"},
    {"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOST}]},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOST, "labelSelector": {}}]},
])
def test_invalid_args_are_refused(args) -> None:
    with pytest.raises(ValueError, match="PodTopologySpread"):
        PodTopologySpread(args)


def test_schedule_one_keeps_the_skew_and_says_why_a_pod_fits_nowhere() -> None:
    """Through the default profile: with 2/2/1 the next pod must go to node-c; with node-c excluded by
    nodeSelector (its pods still count), no node fits, with upstream's message."""
    profile = build_profile({})
    assert ("PodTopologySpread", 2) in [(p.name, w) for p, w in profile.score]
    nodes = [_h("node-a", pool="x"), _h("node-b", pool="x"), _h("node-c", pool="y")]
    existing = _existing("node-a:2,node-b:2,node-c:1")
    spread = [_hard(1, HOST)]
    result = schedule_one(_pod("p", spread=spread), _snapshot(nodes, existing), profile, random.Random(0))
    assert result.node == "node-c"
    pinned = _pod("q", spread=spread)
    pinned["spec"]["nodeSelector"] = {"pool": "x"}
    pinned["spec"]["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = "Ignore"
    result = schedule_one(pinned, _snapshot(nodes, existing), profile, random.Random(0))
    assert result.node is None and result.fit_error is not None
    assert result.fit_error.message() == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't match pod topology spread constraints. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")
    assert result.fit_error.plugins == frozenset({"NodeAffinity", "PodTopologySpread"})


def test_a_node_count_is_remembered_until_a_pod_comes_or_goes() -> None:
    selector = labels.selector_from_label_selector(FOO)
    other = {"bar": ""}
    info = node_info(_node("n1", hostname="n1"), _pod("a", node="n1"), _pod("b", node="n1", labels=other))
    assert count_node_pods_match_selector(info, selector, "default") == 1
    sneaked = _pod("c", node="n1")
    info.pods[key_of(sneaked)] = PodInfo.of(sneaked)  # behind NodeInfo's back: the generation is unchanged
    assert count_node_pods_match_selector(info, selector, "default") == 1
    del info.pods[key_of(sneaked)]
    info.add_pod(PodInfo.of(_pod("d", node="n1")))
    assert count_node_pods_match_selector(info, selector, "default") == 2
    clone = info.clone()
    clone.remove_pod(key_of(_pod("a", node="n1")))
    assert count_node_pods_match_selector(clone, selector, "default") == 1
    assert count_node_pods_match_selector(info, selector, "default") == 2
    assert count_node_pods_match_selector(info, selector, "other") == 0


def test_terminating_pods_and_other_namespaces_are_not_counted() -> None:
    selector = labels.selector_from_label_selector(FOO)
    pods = [PodInfo.of(p) for p in (_pod("a", terminating=True), _pod("b", namespace="other"),
                                    _pod("c", labels={"foo": "", "x": "1"}), _pod("d", labels={"bar": ""}),
                                    _pod("e"))]
    assert count_pods_match_selector(pods, selector, "default") == 2
