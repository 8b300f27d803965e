"""InterPodAffinity (plugins/interpodaffinity.py) with upstream's own cases: filtering_test.go (required
affinity and anti-affinity, existing pods' anti-affinity, the first pod of a series, namespaceSelector,
AddPod/RemovePod) and scoring_test.go TestPreferredAffinity / TestPreferredAffinityWithHardPodAffinitySymmetricWeight
(regions China/India, zones az1/az2, pods labelled security=S1/S2, the same weights and expected scores)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from control.scheduler.algorithm import schedule_one
from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState, Listers, StaticLister
from control.scheduler.nodeinfo import PodInfo, node_info
from control.scheduler.plugins.interpodaffinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    InterPodAffinity,
    pod_may_fit_after_pod_change,
)
from control.scheduler.profile import build_profile
from tests.support.scheduler_objects import make_node, make_pod

CHINA, INDIA = {"region": "China"}, {"region": "India"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1, S2 = {"security": "S1"}, {"security": "S2"}
NAMESPACES = StaticLister([{"metadata": {"name": name, "labels": {"team": team}}} for name, team in (
    ("subteam1.team1", "team1"), ("subteam2.team1", "team1"), ("subteam1.team2", "team2"),
    ("subteam2.team2", "team2"))])


def term(key: str, operator: str, *values: str, topology: str, **extra: Any) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {"labelSelector": {"matchExpressions": [expression]}, "topologyKey": topology, **extra}


def preferred(weight: int, raw: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": raw}


def affinity(*, required: list | None = None, anti: list | None = None, pref: list | None = None,
             pref_anti: list | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if required or pref:
        result["podAffinity"] = {k: v for k, v in (("requiredDuringSchedulingIgnoredDuringExecution", required),
                                                   ("preferredDuringSchedulingIgnoredDuringExecution", pref)) if v}
    if anti or pref_anti:
        result["podAntiAffinity"] = {k: v for k, v in (("requiredDuringSchedulingIgnoredDuringExecution", anti),
                                                       ("preferredDuringSchedulingIgnoredDuringExecution", pref_anti))
                                     if v}
    return result


STAY_WITH_S1_IN_REGION = affinity(pref=[preferred(5, term("security", "In", "S1", topology="region"))])
STAY_WITH_S2_IN_REGION = affinity(pref=[preferred(6, term("security", "In", "S2", topology="region"))])
AFFINITY3 = affinity(pref=[
    preferred(8, {"labelSelector": {"matchExpressions": [{"key": "security", "operator": "NotIn", "values": ["S1"]},
                                                         {"key": "security", "operator": "In", "values": ["S2"]}]},
                  "topologyKey": "region"}),
    preferred(2, {"labelSelector": {"matchExpressions": [{"key": "security", "operator": "Exists"},
                                                         {"key": "wrongkey", "operator": "DoesNotExist"}]},
                  "topologyKey": "region"})])
HARD_AFFINITY = affinity(required=[
    term("security", "In", "S1", "value2", topology="region"),
    {"labelSelector": {"matchExpressions": [{"key": "security", "operator": "Exists"},
                                            {"key": "wrongkey", "operator": "DoesNotExist"}]},
     "topologyKey": "region"}])
AWAY_FROM_S1_IN_AZ = affinity(pref_anti=[preferred(5, term("security", "In", "S1", topology="az"))])
AWAY_FROM_S2_IN_AZ = affinity(pref_anti=[preferred(5, term("security", "In", "S2", topology="az"))])
WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(pref=[preferred(8, term("security", "In", "S1", topology="region"))],
                                                pref_anti=[preferred(5, term("security", "In", "S2", topology="az"))])
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}
AFFINITY_NAMESPACE_SELECTOR = affinity(pref=[preferred(5, term(
    "security", "In", "S1", topology="region", namespaces=["subteam2.team2"], namespaceSelector=TEAM1))])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(pref_anti=[preferred(5, term(
    "security", "In", "S1", topology="region", namespaces=["subteam2.team2"], namespaceSelector=TEAM1))])


def pod(name: str, labels: dict | None = None, *, node: str = "", aff: dict | None = None,
        namespace: str = "default") -> dict[str, Any]:
    return make_pod(name, labels=labels, node_name=node, affinity=aff, namespace=namespace)


def snapshot(nodes: list[tuple[str, dict]], pods: list[dict[str, Any]]) -> Snapshot:
    return Snapshot.of(*[node_info(make_node(name, labels=labels),
                                   *[p for p in pods if p["spec"].get("nodeName") == name]) for name, labels in nodes])


def scores(incoming: dict, pods: list, nodes: list[tuple[str, dict]], *, args: dict | None = None,
           listers: Listers | None = None) -> list[int] | Code:
    plugin = InterPodAffinity(args)
    snap = snapshot(nodes, pods)
    state = CycleState(snap, listers)
    status = plugin.pre_score(state, incoming, snap.node_list)
    if not status.is_success:
        return status.code
    by_node = {info.name: plugin.score(state, incoming, info) for info in snap.node_list}
    plugin.normalize_scores(state, incoming, by_node)
    return [by_node[info.name] for info in snap.node_list]


N3 = [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "expected"), [
    pytest.param(pod("p", S1), [], N3, Code.SKIP, id="all nodes are same priority as Affinity is nil"),
    pytest.param(pod("p", S1, aff=STAY_WITH_S1_IN_REGION),
                 [pod("a", S1, node="node1"), pod("b", S2, node="node2"), pod("c", S1, node="node3")], N3,
                 [100, 0, 0], id="affinity: matching topology key and pods scores high"),
    pytest.param(pod("p", aff=STAY_WITH_S1_IN_REGION), [pod("a", S1, node="node1")],
                 [("node1", CHINA), ("node2", CHINA_AZ1), ("node3", INDIA)], [100, 100, 0],
                 id="nodes of the same topology value score the same"),
    pytest.param(pod("p", S1, aff=STAY_WITH_S2_IN_REGION),
                 [pod("a", S2, node="node1"), pod("b", S2, node="node1"), pod("c", S2, node="node2"),
                  pod("d", S2, node="node3"), pod("e", S2, node="node4"), pod("f", S2, node="node5")],
                 [("node1", CHINA), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)],
                 [100, 0, 100, 100, 0], id="the region with more matching pods scores high"),
    pytest.param(pod("p", S1, aff=AFFINITY3),
                 [pod("a", S1, node="node1"), pod("b", S2, node="node2"), pod("c", S1, node="node3")], N3,
                 [20, 100, 0], id="different operators and values, some match failures"),
    pytest.param(pod("p", S2),
                 [pod("a", S1, node="node1", aff=STAY_WITH_S1_IN_REGION),
                  pod("b", S2, node="node2", aff=STAY_WITH_S2_IN_REGION)], N3, [0, 100, 0],
                 id="affinity symmetry: existing pods' preferred terms"),
    pytest.param(pod("p", S1, namespace="subteam1.team1"),
                 [pod("a", S1, node="node1", aff=AFFINITY_NAMESPACE_SELECTOR),
                  pod("b", S2, node="node2", aff=STAY_WITH_S2_IN_REGION)], N3, [100, 0, 0],
                 id="affinity symmetry with namespace selector"),
    pytest.param(pod("p", S1, namespace="subteam1.team1"),
                 [pod("a", S1, node="node1", aff=ANTI_AFFINITY_NAMESPACE_SELECTOR),
                  pod("b", S2, node="node2", aff=STAY_WITH_S2_IN_REGION)], N3, [0, 100, 100],
                 id="anti-affinity symmetry with namespace selector"),
    pytest.param(pod("p", S1),
                 [pod("a", S1, node="node1", aff=HARD_AFFINITY), pod("b", S2, node="node2", aff=HARD_AFFINITY)],
                 N3, [100, 100, 0], id="affinity symmetry: existing pods' required terms count hardPodAffinityWeight"),
    pytest.param(pod("p", S1, aff=AWAY_FROM_S1_IN_AZ), [pod("a", S1, node="node1"), pod("b", S2, node="node2")],
                 [("node1", AZ1), ("node2", CHINA)], [0, 100], id="anti-affinity: non-matching pods score high"),
    pytest.param(pod("p", S1, aff=AWAY_FROM_S1_IN_AZ),
                 [pod("a", S1, node="node1"), pod("b", S1, node="node1"), pod("c", S2, node="node2")],
                 [("node1", AZ1), ("node2", INDIA)], [0, 100], id="anti-affinity: more matching pods score lower"),
    pytest.param(pod("p", S2),
                 [pod("a", S1, node="node1", aff=AWAY_FROM_S2_IN_AZ),
                  pod("b", S2, node="node2", aff=AWAY_FROM_S1_IN_AZ)],
                 [("node1", AZ1), ("node2", AZ2)], [0, 100], id="anti-affinity symmetry"),
    pytest.param(pod("p", S1, aff=WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                 [pod("a", S1, node="node1"), pod("b", S1, node="node1"), pod("c", S1, node="node2"),
                  pod("d", S1, node="node3"), pod("e", S1, node="node3"), pod("f", S1, node="node4"),
                  pod("g", S1, node="node5")],
                 [("node1", CHINA_AZ1), ("node2", INDIA), ("node3", CHINA), ("node4", CHINA), ("node5", INDIA)],
                 [100, 0, 100, 100, 0], id="affinity and anti-affinity: same labels, stay in region"),
    pytest.param(pod("p", S1, aff=WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                 [pod("a", S1, node="node1"), pod("b", S2, node="node2"),
                  pod("c", node="node3", aff=WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                  pod("d", node="node4", aff=AWAY_FROM_S1_IN_AZ)],
                 [("node1", CHINA), ("node2", AZ1), ("node3", INDIA), ("node4", AZ2)], [100, 0, 100, 0],
                 id="affinity, anti-affinity and symmetry together"),
    pytest.param(pod("p", S1), [pod("a", S1, node="node1"), pod("b", node="node2",
                                                                   aff=WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
                 [("node1", CHINA), ("node2", CHINA)], [0, 0], id="partial nodes of a topology have affinity pods"),
    pytest.param(pod("p", aff=affinity(pref=[preferred(8, term("security", "In", "{{.bad-value.}}",
                                                                topology="region"))])),
                 [], [("node1", CHINA), ("node2", CHINA)], Code.ERROR, id="invalid affinity fails PreScore"),
])
def test_preferred_affinity(incoming, pods, nodes, expected) -> None:
    assert scores(incoming, pods, nodes, listers=Listers(namespaces=NAMESPACES)) == expected


def test_preferred_affinity_with_namespace_selector_counts_pods_of_selected_namespaces() -> None:
    incoming = pod("p", S1, namespace="subteam1.team1", aff=AFFINITY_NAMESPACE_SELECTOR)
    pods = [pod("a", S1, node="node1", namespace="subteam1.team1"),
            pod("b", S1, node="node1", namespace="subteam1.team1"),
            pod("c", S1, node="node2", namespace="subteam2.team2"),
            pod("d", S1, node="node3", namespace="subteam1.team2")]  # team2, not listed: ignored
    nodes = [("node1", CHINA), ("node2", INDIA), ("node3", {"region": "Japan"})]
    assert scores(incoming, pods, nodes, listers=Listers(namespaces=NAMESPACES)) == [100, 50, 0]
    assert scores(incoming, pods, nodes) == [0, 100, 0]  # no namespace known: only the listed one


@pytest.mark.parametrize(("weight", "expected"), [
    pytest.param(1, [100, 100, 0], id="hard pod affinity symmetric weight 1"),
    pytest.param(0, Code.SKIP, id="hard pod affinity symmetric weight 0"),
])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(weight, expected) -> None:
    pods = [pod("a", S1, node="node1", aff=affinity(required=[term("service", "In", "S1", topology="region")])),
            pod("b", S2, node="node2", aff=affinity(required=[term("service", "In", "S1", topology="region")])),
            pod("c", S1, node="node3", aff=affinity(required=[term("service", "NotIn", "S1", topology="region")]))]
    nodes = [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]
    assert scores(pod("p", {"service": "S1"}), pods, nodes, args={"hardPodAffinityWeight": weight}) == expected


def test_ignore_preferred_terms_of_existing_pods_skips_a_pod_without_preferences() -> None:
    pods = [pod("a", S1, node="node1", aff=STAY_WITH_S2_IN_REGION), pod("b", S2, node="node2")]
    assert scores(pod("p", S2), pods, N3) == [100, 0, 0]  # a prefers S2 pods in its region, China
    assert scores(pod("p", S2), pods, N3, args={"ignorePreferredTermsOfExistingPods": True}) == Code.SKIP


def test_hard_pod_affinity_weight_is_validated() -> None:
    with pytest.raises(ValueError, match=r"hardPodAffinityWeight: Invalid value: 101: not in valid range \[0, 100\]"):
        InterPodAffinity({"hardPodAffinityWeight": 101})


# -- filtering ---------------------------------------------------------------------------------------------------

HOST = "kubernetes.io/hostname"


def filter_statuses(incoming: dict, pods: list, nodes: list[tuple[str, dict]],
                    listers: Listers | None = None) -> dict[str, tuple[Code, tuple[str, ...]]] | Code:
    plugin = InterPodAffinity()
    snap = snapshot(nodes, pods)
    state = CycleState(snap, listers)
    status = plugin.pre_filter(state, incoming, snap)
    if not status.is_success:
        return status.code
    return {info.name: (result.code, result.reasons)
            for info in snap.node_list for result in [plugin.filter(state, incoming, info)]}


OK = (Code.SUCCESS, ())
NO_AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY_REASON,))
NO_ANTI = (Code.UNSCHEDULABLE, (ANTI_AFFINITY_REASON,))
NO_EXISTING = (Code.UNSCHEDULABLE, (EXISTING_ANTI_AFFINITY_REASON,))
REGION_NODES = [("node1", {"region": "r1", "zone": "z11", HOST: "node1"}),
                ("node2", {"region": "r1", "zone": "z12", HOST: "node2"}),
                ("node3", {"region": "r2", "zone": "z21", HOST: "node3"})]


@pytest.mark.parametrize(("incoming", "pods", "expected"), [
    pytest.param(pod("p", S1), [pod("a", S1, node="node1")], Code.SKIP,
                 id="a pod without affinity and no existing anti-affinity skips"),
    pytest.param(pod("p", aff=affinity(required=[term("service", "In", "securityscan", "value2", topology="region")])),
                 [pod("a", {"service": "securityscan"}, node="node1")],
                 {"node1": OK, "node2": OK, "node3": NO_AFFINITY},
                 id="required affinity: the pod's topology domain and only it"),
    pytest.param(pod("p", aff=affinity(required=[term("service", "NotIn", "securityscan3", topology="zone")])),
                 [pod("a", {"service": "securityscan"}, node="node1")],
                 {"node1": OK, "node2": NO_AFFINITY, "node3": NO_AFFINITY}, id="required affinity NotIn per zone"),
    pytest.param(pod("p", aff=affinity(required=[term("service", "In", "antivirusscan", topology="region")])),
                 [pod("a", {"service": "securityscan"}, node="node1")],
                 {"node1": NO_AFFINITY, "node2": NO_AFFINITY, "node3": NO_AFFINITY},
                 id="required affinity matching no pod, the pod not matching itself"),
    pytest.param(pod("p", {"service": "antivirusscan"},
                     aff=affinity(required=[term("service", "In", "antivirusscan", topology="region")])),
                 [pod("a", {"service": "securityscan"}, node="node1")], {"node1": OK, "node2": OK, "node3": OK},
                 id="the first pod of a series may go anywhere the topology key exists"),
    pytest.param(pod("p", {"service": "antivirusscan"},
                     aff=affinity(required=[term("service", "In", "antivirusscan", topology="rack")])),
                 [], {"node1": NO_AFFINITY, "node2": NO_AFFINITY, "node3": NO_AFFINITY},
                 id="the first pod of a series still needs the topology key"),
    pytest.param(pod("p", {"service": "x"}, aff=affinity(required=[
        term("service", "In", "x", topology="region"), term("app", "In", "web", topology="zone")])),
                 [pod("a", {"service": "x"}, node="node1"), pod("b", {"app": "web"}, node="node2")],
                 {"node1": NO_AFFINITY, "node2": NO_AFFINITY, "node3": NO_AFFINITY},
                 id="one existing pod must match all required terms"),
    pytest.param(pod("p", S1, aff=affinity(anti=[term("security", "In", "S1", topology=HOST)])),
                 [pod("a", S1, node="node1")], {"node1": NO_ANTI, "node2": OK, "node3": OK},
                 id="required anti-affinity per host"),
    pytest.param(pod("p", S1, aff=affinity(anti=[term("security", "In", "S1", topology="region")])),
                 [pod("a", S1, node="node1")], {"node1": NO_ANTI, "node2": NO_ANTI, "node3": OK},
                 id="required anti-affinity per region"),
    pytest.param(pod("p", S1), [pod("a", S2, node="node2", aff=affinity(anti=[term("security", "In", "S1",
                                                                                  topology="zone")]))],
                 {"node1": OK, "node2": NO_EXISTING, "node3": OK}, id="an existing pod's anti-affinity"),
    pytest.param(pod("p", S1, namespace="other"),
                 [pod("a", S2, node="node2", aff=affinity(anti=[term("security", "In", "S1", topology="zone")]))],
                 Code.SKIP, id="an existing pod's anti-affinity covers its own namespace only"),
    pytest.param(pod("p", {"service": "web"}, aff=affinity(required=[term("service", "In", "db", topology="region")],
                                                              anti=[term("service", "In", "web", topology=HOST)])),
                 [pod("a", {"service": "db"}, node="node1"), pod("b", {"service": "web"}, node="node2")],
                 {"node1": OK, "node2": NO_ANTI, "node3": NO_AFFINITY}, id="affinity and anti-affinity together"),
])
def test_required_affinity_filter(incoming, pods, expected) -> None:
    assert filter_statuses(incoming, pods, REGION_NODES) == expected


def test_namespace_selector_of_required_affinity_uses_the_namespace_lister() -> None:
    incoming = pod("p", namespace="subteam1.team1", aff=affinity(required=[term(
        "service", "In", "db", topology="region", namespaceSelector=TEAM1)]))
    pods = [pod("a", {"service": "db"}, node="node1", namespace="subteam2.team1"),
            pod("b", {"service": "db"}, node="node3", namespace="subteam1.team2")]
    assert filter_statuses(incoming, pods, REGION_NODES, Listers(namespaces=NAMESPACES)) == {
        "node1": OK, "node2": OK, "node3": NO_AFFINITY}
    everywhere = pod("p", aff=affinity(required=[term("service", "In", "db", topology=HOST, namespaceSelector={})]))
    assert filter_statuses(everywhere, pods, REGION_NODES) == {"node1": OK, "node2": NO_AFFINITY, "node3": OK}


def test_existing_anti_affinity_namespace_selector_reads_the_incoming_pods_namespace_labels() -> None:
    existing = pod("a", node="node1", namespace="subteam1.team2",
                   aff=affinity(anti=[term("security", "In", "S1", topology="region", namespaceSelector=TEAM1)]))
    incoming = pod("p", S1, namespace="subteam2.team1")
    assert filter_statuses(incoming, [existing], REGION_NODES, Listers(namespaces=NAMESPACES)) == {
        "node1": NO_EXISTING, "node2": NO_EXISTING, "node3": OK}
    assert filter_statuses(incoming, [existing], REGION_NODES) == Code.SKIP  # namespace unknown: no labels


def test_an_invalid_selector_is_unschedulable_and_unresolvable() -> None:
    incoming = pod("p", aff=affinity(required=[term("security", "In", "{{.bad-value.}}", topology="region")]))
    assert filter_statuses(incoming, [], REGION_NODES) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_add_pod_and_remove_pod_keep_the_counts() -> None:
    """Upstream TestPreFilterStateAddRemovePod: the state after AddPod equals the one PreFilter computes
    with that pod in the snapshot, and RemovePod gives back the original."""
    plugin = InterPodAffinity()
    incoming = pod("p", S1, aff=affinity(required=[term("service", "In", "db", topology="region")],
                                          anti=[term("security", "In", "S1", topology=HOST)]))
    base = [pod("a", {"service": "db"}, node="node1")]
    added = pod("b", {"service": "db", "security": "S1"}, node="node3",
                aff=affinity(anti=[term("security", "In", "S1", topology="zone")]))
    before, after = snapshot(REGION_NODES, base), snapshot(REGION_NODES, [*base, added])
    state, expected = CycleState(before), CycleState(after)
    assert plugin.pre_filter(state, incoming, before).is_success
    assert plugin.pre_filter(expected, incoming, after).is_success
    original = state.read("PreFilterInterPodAffinity").clone()
    node3 = before.get("node3")
    assert node3 is not None
    plugin.add_pod(state, incoming, PodInfo.of(added), node3)
    got, want = state.read("PreFilterInterPodAffinity"), expected.read("PreFilterInterPodAffinity")
    counts = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts")
    assert [getattr(got, name) for name in counts] == [getattr(want, name) for name in counts]
    assert got.affinity_counts == {("region", "r1"): 1, ("region", "r2"): 1}
    assert got.anti_affinity_counts == {(HOST, "node3"): 1}
    assert got.existing_anti_affinity_counts == {("zone", "z21"): 1}
    plugin.remove_pod(state, incoming, PodInfo.of(added), node3)
    assert [getattr(state.read("PreFilterInterPodAffinity"), name) for name in counts] == [
        getattr(original, name) for name in counts]


def test_anti_affinity_spreads_pods_and_the_last_one_fits_nowhere() -> None:
    """Through schedule_one with the default profile: three replicas with required anti-affinity on the
    hostname take three nodes; the fourth gets upstream's FitError message and preemption cannot help."""
    profile = build_profile({})
    anti = affinity(anti=[term("app", "In", "web", topology=HOST)])
    nodes = [(name, {HOST: name}) for name in ("n1", "n2", "n3")]
    placed: list[dict[str, Any]] = []
    for index in range(3):
        replica = pod(f"web-{index}", {"app": "web"}, aff=anti)
        result = schedule_one(replica, snapshot(nodes, placed), profile, random.Random(index))
        assert result.node is not None
        placed.append({**replica, "spec": {**replica["spec"], "nodeName": result.node}})
    assert sorted(p["spec"]["nodeName"] for p in placed) == ["n1", "n2", "n3"]
    result = schedule_one(pod("web-3", {"app": "web"}, aff=anti), snapshot(nodes, placed), profile, random.Random(0))
    assert result.node is None and result.fit_error is not None
    assert result.fit_error.message() == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod.")


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(None, pod("a", {"app": "db"}, node="n1"), True, id="an added pod matching the affinity"),
    pytest.param(None, pod("a", {"app": "web"}, node="n1"), False, id="an added pod not matching it"),
    pytest.param(None, pod("a", {"app": "db"}), False, id="an unassigned pod"),
    pytest.param(pod("a", {"app": "web"}, node="n1"), None, True, id="a deleted pod matching the anti-affinity"),
    pytest.param(pod("a", {"app": "db"}, node="n1"), None, False, id="a deleted pod not matching it"),
    pytest.param(pod("a", {"app": "x"}, node="n1"), pod("a", {"app": "db"}, node="n1"), True,
                 id="relabelled to match the affinity"),
    pytest.param(pod("a", {"app": "web"}, node="n1"), pod("a", {"app": "x"}, node="n1"), True,
                 id="relabelled to stop matching the anti-affinity"),
    pytest.param(pod("a", {"app": "x"}, node="n1"), pod("a", {"app": "y"}, node="n1"), False,
                 id="relabelled, still matching neither"),
])
def test_queueing_hint_on_assigned_pod_events(old, new, expected) -> None:
    pending = pod("p", aff=affinity(required=[term("app", "In", "db", topology=HOST)],
                                    anti=[term("app", "In", "web", topology=HOST)]))
    assert pod_may_fit_after_pod_change(pending, old, new) is expected


def test_node_info_keeps_the_pods_with_affinity_as_they_come_and_go() -> None:
    anti = pod("anti", node="n1", aff=affinity(anti=[term("app", "In", "web", topology=HOST)]))
    pref = pod("pref", node="n1", aff=STAY_WITH_S1_IN_REGION)
    info = node_info(make_node("n1"), pod("plain", node="n1"), anti, pref)
    assert [i.pod["metadata"]["name"] for i in info.pods_with_affinity()] == ["anti", "pref"]
    assert [i.pod["metadata"]["name"] for i in info.clone().pods_with_required_anti_affinity()] == ["anti"]
    info.remove_pod("default/anti")
    assert (info.num_with_affinity, info.num_with_required_anti_affinity) == (1, 0)
    assert info.pods_with_required_anti_affinity() == []
