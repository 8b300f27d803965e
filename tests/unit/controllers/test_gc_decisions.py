"""The garbage collector's pure parts: the ownership graph's bookkeeping (garbagecollector/graph.py) and the decision
for one object (garbagecollector/decisions.py), as upstream's graph_builder.go and attemptToDeleteItem have them."""

from __future__ import annotations

import pytest

from control.controllers.garbagecollector.decisions import (
    Action,
    Decision,
    OwnerState,
    References,
    classify_references,
    decide,
)
from control.controllers.garbagecollector.graph import Graph, Identity

A, P, W = OwnerState.ABSENT, OwnerState.PRESENT, OwnerState.DELETING_DEPENDENTS


def ref(uid, block=None):
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{uid}", "uid": uid}
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return reference


@pytest.mark.parametrize(("states", "expected"), [
    pytest.param({"a": P}, References(solid=("a",)), id="solid"),
    pytest.param({"a": A}, References(dangling=("a",)), id="dangling"),
    pytest.param({"a": W}, References(waiting_for_dependents_deletion=("a",)), id="waiting"),
    pytest.param({"a": A, "b": P, "c": W}, References(("b",), ("a",), ("c",)), id="mixed-in-order"),
])
def test_classify_references(states, expected):
    assert classify_references([ref(uid) for uid in states], states) == expected


def obj(*finalizers):
    return {"metadata": {"finalizers": list(finalizers)}}


@pytest.mark.parametrize(("item", "references", "has_dependents", "cycle", "expected"), [
    pytest.param(obj(), References(solid=("a",)), False, False, Decision(Action.NOTHING), id="solid-owner-keeps"),
    pytest.param(obj(), References(("a",), ("b",), ("c",)), False, False,
                 Decision(Action.REMOVE_REFERENCES, ("b", "c")), id="solid-drops-dangling-and-waiting"),
    pytest.param(obj(), References(dangling=("a",)), False, False, Decision(Action.DELETE, policy="Background"),
                 id="dangling-background"),
    pytest.param(obj("orphan"), References(dangling=("a",)), True, False, Decision(Action.DELETE, policy="Orphan"),
                 id="dangling-own-orphan-finalizer"),
    pytest.param(obj("foregroundDeletion"), References(dangling=("a",)), False, False,
                 Decision(Action.DELETE, policy="Foreground"), id="dangling-own-foreground-finalizer"),
    pytest.param(obj(), References(waiting_for_dependents_deletion=("a",)), True, False,
                 Decision(Action.DELETE, policy="Foreground"), id="waiting-with-dependents-foreground"),
    pytest.param(obj(), References(waiting_for_dependents_deletion=("a",)), True, True,
                 Decision(Action.DELETE, policy="Foreground", unblock_first=True), id="cycle-unblocks"),
    pytest.param(obj(), References(waiting_for_dependents_deletion=("a",)), False, False,
                 Decision(Action.DELETE, policy="Background"), id="waiting-without-dependents-background"),
])
def test_decide(item, references, has_dependents, cycle, expected):
    assert decide(item, references, has_dependents=has_dependents, a_dependent_deletes_dependents=cycle) == expected


def identity(uid, namespace="ns"):
    return Identity("v1", "ConfigMap", namespace, f"n-{uid}", uid)


def configmap(uid, *owners, deleting=False, finalizers=()):
    metadata = {"name": f"n-{uid}", "namespace": "ns", "uid": uid, "ownerReferences": list(owners),
                "finalizers": list(finalizers)}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata}


def test_dependent_of_an_unseen_owner_is_checked_and_of_a_seen_one_not():
    graph = Graph()
    assert graph.observe(identity("d1"), configmap("d1", ref("o"))).attempt_to_delete == {"d1"}
    assert graph.observe(identity("o"), configmap("o")).attempt_to_delete == set()
    assert graph.observe(identity("d2"), configmap("d2", ref("o"))).attempt_to_delete == set()
    assert [n.identity.uid for n in graph.dependents("o")] == ["d1", "d2"]


def test_owners_settled_only_when_every_owner_is_observed_and_alive():
    graph = Graph()
    graph.observe(identity("d"), configmap("d", ref("o1"), ref("o2")))
    assert not graph.owners_settled("d")
    graph.observe(identity("o1"), configmap("o1"))
    graph.observe(identity("o2"), configmap("o2"))
    assert graph.owners_settled("d")
    graph.observe(identity("o2"), configmap("o2", deleting=True, finalizers=["orphan"]))
    assert not graph.owners_settled("d")
    graph.observe(identity("lone"), configmap("lone"))
    assert not graph.owners_settled("lone")  # no owners: nothing to hold it, nothing settled


def test_owner_gone_queues_its_dependents_and_is_remembered_absent():
    graph = Graph()
    graph.observe(identity("o"), configmap("o"))
    graph.observe(identity("d"), configmap("d", ref("o")))
    work = graph.forget("o")
    assert work.attempt_to_delete == {"d"} and graph.is_absent("ns", "o") and not graph.is_absent("other", "o")
    assert [n.identity.uid for n in graph.dependents("o")] == ["d"]  # still found through the absent owner


def test_foreground_start_queues_owner_and_dependents_once():
    graph = Graph()
    graph.observe(identity("o"), configmap("o"))
    graph.observe(identity("d"), configmap("d", ref("o", block=True)))
    old, new = configmap("o"), configmap("o", deleting=True, finalizers=["foregroundDeletion"])
    work = graph.observe(identity("o"), new, old)
    assert work.attempt_to_delete == {"o", "d"} and graph.node("o").deleting_dependents
    assert graph.observe(identity("o"), new, new).attempt_to_delete == set()  # not a new transition
    assert [n.identity.uid for n in graph.blocking_dependents("o")] == ["d"]
    assert graph.forget("d").attempt_to_delete == {"o"}  # the owner may go on now


def test_orphan_start_queues_the_owner_for_orphaning():
    graph = Graph()
    graph.observe(identity("o"), configmap("o"))
    work = graph.observe(identity("o"), configmap("o", deleting=True, finalizers=["orphan"]), configmap("o"))
    assert work.attempt_to_orphan == {"o"} and work.attempt_to_delete == set()


def test_unblocking_a_reference_wakes_a_foreground_owner():
    graph = Graph()
    graph.observe(identity("o"), configmap("o", deleting=True, finalizers=["foregroundDeletion"]))
    graph.observe(identity("d"), configmap("d", ref("o", block=True)))
    assert graph.observe(identity("d"), configmap("d", ref("o", block=False))).attempt_to_delete == {"o"}
    assert graph.blocking_dependents("o") == []
    graph.observe(identity("d"), configmap("d", ref("o", block=True)))
    assert graph.observe(identity("d"), configmap("d")).attempt_to_delete == {"o"}  # reference removed
    assert graph.dependents("o") == []


def test_absent_cache_is_bounded_lru():
    graph = Graph(absent_cache_size=2)
    graph.mark_absent("ns", "a")
    graph.mark_absent("ns", "b")
    assert graph.is_absent("ns", "a")  # a is now the most recent
    graph.mark_absent("ns", "c")
    assert graph.is_absent("ns", "a") and not graph.is_absent("ns", "b") and graph.is_absent("ns", "c")
