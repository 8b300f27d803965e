"""SelectorSpread (control/scheduler/plugins/selectorspread.py) and the default selector
(defaultselector.py) with upstream's tables (selectorspread/selector_spread_test.go TestSelectorSpreadScore,
TestZoneSelectorSpreadPriority), and the plugin usable through a profile."""

from __future__ import annotations

import random
from typing import Any

import pytest

from control.client.store import Lister, Store
from control.scheduler.algorithm import schedule_one
from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState, Listers
from control.scheduler.nodeinfo import node_info
from control.scheduler.plugins.defaultselector import default_selector
from control.scheduler.plugins.selectorspread import SelectorSpread, zone_key
from control.scheduler.profile import build_profile
from tests.support.scheduler_objects import make_node

L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
RC = ("v1", "ReplicationController")
RS = ("apps/v1", "ReplicaSet")
SS = ("apps/v1", "StatefulSet")
_count = iter(range(10 ** 6))


def _pod(node: str = "", labels: dict | None = None, namespace: str = "default",
         owner: tuple[tuple[str, str], str] | None = None, spread: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"p{next(_count)}", "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        (api_version, kind), name = owner
        metadata["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name, "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if spread:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "foo", "whenUnsatisfiable": "DoNotSchedule"}]
    return {"metadata": metadata, "spec": spec}


def _obj(name: str, selector: Any, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}


def _lister(*objects: dict) -> Lister:
    store = Store()
    for obj in objects:
        store.add(obj)
    return Lister(store)


def _listers(services=(), rcs=(), rss=(), sss=()) -> Listers:
    return Listers(services=_lister(*services), replication_controllers=_lister(*rcs), replica_sets=_lister(*rss),
                   stateful_sets=_lister(*sss))


def _scores(pod: dict, pods: list[dict], nodes: list[dict], listers: Listers) -> list[int]:
    infos = [node_info(n, *[p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]]) for n in nodes]
    snapshot = Snapshot.of(*infos)
    plugin, state = SelectorSpread(), CycleState(snapshot, listers)
    if plugin.pre_score(state, pod, infos).code is Code.SKIP:
        return [0 for _ in infos]  # the framework leaves the plugin out: it adds nothing
    scores = {info.name: plugin.score(state, pod, info) for info in infos}
    plugin.normalize_scores(state, pod, scores)
    return [scores[info.name] for info in infos]


TWO = [make_node("node1"), make_node("node2")]


@pytest.mark.parametrize(("pod", "pods", "listers", "want"), [
    pytest.param(_pod(), [], _listers(), [100, 100], id="nothing-scheduled"),
    pytest.param(_pod(labels=L1), [_pod("node1")], _listers(), [100, 100], id="no-services"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2)], _listers(services=[_obj("s1", {"key": "value"})]),
                 [100, 100], id="different-services"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2), _pod("node2", L1)], _listers(services=[_obj("s1", L1)]),
                 [100, 0], id="two-pods-one-service-pod"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2), _pod("node1", L1, "ns1"), _pod("node2", L1), _pod("node2", L2)],
                 _listers(services=[_obj("s1", L1)]), [100, 0], id="one-service-pod-in-the-pods-namespace"),
    pytest.param(_pod(labels=L1, namespace="ns1"),
                 [_pod("node1", L2), _pod("node1", L1), _pod("node1", L1, "ns2"), _pod("node2", L1, "ns1"),
                  _pod("node2", L2)], _listers(services=[_obj("s1", L1, "ns1")]), [100, 0],
                 id="five-pods-one-service-pod-in-specific-namespace"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", L1)]), [0, 0], id="three-pods-two-service-pods-on-different-nodes"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", L1)]), [50, 0], id="four-pods-three-service-pods"),
    pytest.param(_pod(labels=L1), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", {"baz": "blah"})]), [0, 50], id="service-with-partial-label-match"),
    pytest.param(_pod(labels=L1, owner=(RC, "rc1")), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", {"baz": "blah"})],
                          rcs=[_obj("rc1", {"foo": "bar"}), _obj("rc2", {"bar": "foo"})]), [0, 0],
                 id="service-and-replication-controller"),
    pytest.param(_pod(labels=L1, owner=(RS, "rs1")), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", {"baz": "blah"})],
                          rss=[_obj("rs1", {"matchLabels": {"foo": "bar"}}),
                               _obj("rs2", {"matchLabels": {"bar": "foo"}})]), [0, 0],
                 id="service-and-replica-set"),
    pytest.param(_pod(labels=L1, owner=(SS, "ss1")), [_pod("node1", L2), _pod("node1", L1), _pod("node2", L1)],
                 _listers(services=[_obj("s1", {"baz": "blah"})],
                          sss=[_obj("ss1", {"matchLabels": {"foo": "bar"}}),
                               _obj("ss2", {"matchLabels": {"bar": "foo"}})]), [0, 0],
                 id="service-and-stateful-set"),
    pytest.param(_pod(labels={"foo": "bar", "bar": "foo"}, owner=(RC, "rc3")),
                 [_pod("node1", L2, owner=(RC, "rc2")), _pod("node1", L1, owner=(RC, "rc1")),
                  _pod("node2", L1, owner=(RC, "rc1"))],
                 _listers(services=[_obj("s1", {"bar": "foo"})], rcs=[_obj("rc3", {"foo": "bar"})]), [100, 100],
                 id="disjoined-service-and-replication-controller-match-no-pods"),
    pytest.param(_pod(labels={"foo": "bar", "bar": "foo"}, owner=(RS, "rs3")),
                 [_pod("node1", L2, owner=(RS, "rs2")), _pod("node1", L1, owner=(RS, "rs1")),
                  _pod("node2", L1, owner=(RS, "rs1"))],
                 _listers(services=[_obj("s1", {"bar": "foo"})], rss=[_obj("rs3", {"matchLabels": {"foo": "bar"}})]),
                 [100, 100], id="disjoined-service-and-replica-set-match-no-pods"),
    pytest.param(_pod(labels=L1, owner=(SS, "ss1"), spread=True),
                 [_pod("node1", L2, owner=(SS, "ss2")), _pod("node1", L1, owner=(SS, "ss1")),
                  _pod("node2", L1, owner=(SS, "ss1"))],
                 _listers(sss=[_obj("ss1", {"matchLabels": {"baz": "blah"}})]), [0, 0],
                 id="a-pod-with-topology-spread-constraints-is-left-to-PodTopologySpread"),
])
def test_selector_spread_score(pod, pods, listers, want) -> None:
    assert _scores(pod, pods, TWO, listers) == want


ZONES = {"node1.zone1": "zone1", "node1.zone2": "zone2", "node2.zone2": "zone2", "node1.zone3": "zone3",
         "node2.zone3": "zone3", "node3.zone3": "zone3"}
ZL1 = {"label1": "l1", "baz": "blah"}
ZL2 = {"label2": "l2", "baz": "blah"}


@pytest.mark.parametrize(("pod", "pods", "listers", "want"), [
    pytest.param(_pod(), [], _listers(), [100] * 6, id="nothing-scheduled"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1")], _listers(), [100] * 6, id="no-services"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1", ZL2), _pod("node1.zone2", ZL2)],
                 _listers(services=[_obj("s1", ZL1)]), [100] * 6, id="two-pods-0-matching"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1", ZL2), _pod("node1.zone2", ZL1)],
                 _listers(services=[_obj("s1", ZL1)]), [100, 0, 33, 100, 100, 100], id="two-pods-1-matching-in-z2"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1", ZL2), _pod("node1.zone2", ZL1), _pod("node2.zone2", ZL1),
                                    _pod("node1.zone3", ZL2), _pod("node2.zone3", ZL1)],
                 _listers(services=[_obj("s1", ZL1)]), [100, 0, 0, 66, 33, 66], id="five-pods-3-matching-z2-2-z3-1"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1", ZL1), _pod("node1.zone2", ZL1), _pod("node2.zone2", ZL2),
                                    _pod("node1.zone3", ZL1)],
                 _listers(services=[_obj("s1", ZL1)]), [0, 0, 33, 0, 33, 33], id="four-pods-3-matching-one-per-zone"),
    pytest.param(_pod(labels=ZL1), [_pod("node1.zone1", ZL1), _pod("node1.zone2", ZL1), _pod("node2.zone2", ZL1),
                                    _pod("node2.zone2", ZL2), _pod("node1.zone3", ZL1)],
                 _listers(services=[_obj("s1", ZL1)]), [33, 0, 0, 33, 66, 66], id="five-pods-4-matching-z2-2"),
    pytest.param(_pod(labels=ZL1, owner=(RC, "rc1")),
                 [_pod("node1.zone3", ZL1), _pod("node1.zone2", ZL1), _pod("node1.zone3", ZL1)],
                 _listers(rcs=[_obj("rc1", ZL1)]), [100, 50, 66, 0, 33, 33],
                 id="replication-controller-spreading-z1-0-z2-1-z3-2"),
])
def test_zone_selector_spread(pod, pods, listers, want) -> None:
    nodes = [make_node(name, labels={"topology.kubernetes.io/zone": zone}) for name, zone in ZONES.items()]
    assert _scores(pod, pods, nodes, listers) == want


def test_zone_key_is_region_and_zone_ga_labels_first() -> None:
    assert zone_key(make_node("n")) == ""
    assert zone_key(make_node("n", labels={"topology.kubernetes.io/zone": "a"})) == ":\x00:a"
    assert zone_key(make_node("n", labels={"failure-domain.beta.kubernetes.io/region": "r",
                                           "failure-domain.beta.kubernetes.io/zone": "old",
                                           "topology.kubernetes.io/zone": "new"})) == "r:\x00:new"


def test_default_selector_ignores_services_without_selector_and_other_namespaces() -> None:
    listers = _listers(services=[_obj("none", None), _obj("elsewhere", {"app": "web"}, "other"),
                                 _obj("web", {"app": "web"})])
    assert str(default_selector(_pod(labels={"app": "web"}), listers)) == "app=web"
    assert default_selector(_pod(labels={"app": "db"}), listers).empty


def test_usable_through_a_profile_not_in_the_default_one() -> None:
    assert "SelectorSpread" not in [p.name for p, _ in build_profile({}).score]
    profile = build_profile({"plugins": {"multiPoint": {"enabled": [{"name": "SelectorSpread"}]},
                                         "score": {"disabled": [{"name": "*"}],
                                                   "enabled": [{"name": "SelectorSpread", "weight": 1}]}}})
    assert [(p.name, w) for p, w in profile.score] == [("SelectorSpread", 1)]
    pods = [_pod("node1", L1), _pod("node1", L1), _pod("node2", L1)]
    infos = [node_info(n, *[p for p in pods if p["spec"]["nodeName"] == n["metadata"]["name"]])
             for n in TWO + [make_node("node3")]]
    listers = _listers(services=[_obj("s1", L1)])
    result = schedule_one(_pod(labels=L1), Snapshot.of(*infos), profile, random.Random(0), listers=listers)
    assert result.node == "node3"
    assert dict(result.scores) == {"node1": 0, "node2": 50, "node3": 100}
