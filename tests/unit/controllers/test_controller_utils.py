"""control/controllers/shared/controller_utils.py: upstream's deletion ranking rule by rule, the slow-start
batches, active/available pods and the pod a template makes; shared/controller_ref_manager.py's claim table;
replicaset/status.py's status."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.controllers.replicaset.status import calculate_status, status_unchanged, with_observed_generation
from control.controllers.shared.controller_ref_manager import Claim, adopt_patch, claim_action, release_patch
from control.controllers.shared.controller_utils import (
    deletion_order,
    is_pod_active,
    is_pod_available,
    pod_from_template,
    pods_prefix,
    pods_to_delete,
    ranks_by_related_pods_on_node,
    slow_start_batch,
    slow_start_batches,
)

NOW = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready_since: float | None = 100.0,
        restarts: int = 0, created: float = 1000.0, cost: str | None = None, uid: str | None = None,
        labels: dict[str, str] | None = None, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}",
                                "creationTimestamp": ts(created), "labels": labels or {"app": "a"}}
    if cost is not None:
        metadata["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if deleting:
        metadata["deletionTimestamp"] = ts(0)
    conditions = [{"type": "Ready", "status": "True" if ready_since is not None else "False",
                   "lastTransitionTime": ts(ready_since if ready_since is not None else 50)}]
    return {"metadata": metadata, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


@pytest.mark.parametrize("first,second,rank_first,rank_second", [
    pytest.param(pod("a", node=""), pod("b"), 0, 0, id="1-unscheduled-before-scheduled"),
    pytest.param(pod("a", phase="Pending"), pod("b", phase="Unknown"), 0, 0, id="2-pending-before-unknown"),
    pytest.param(pod("a", phase="Unknown"), pod("b", phase="Running"), 0, 0, id="2-unknown-before-running"),
    pytest.param(pod("a", ready_since=None), pod("b"), 0, 0, id="3-not-ready-before-ready"),
    pytest.param(pod("a", cost="-5"), pod("b"), 0, 0, id="4-lower-deletion-cost-first"),
    pytest.param(pod("a", cost="2", node=""), pod("b", cost="1"), 0, 0, id="1-beats-4"),
    pytest.param(pod("a"), pod("b"), 3, 1, id="5-doubled-up-first"),
    pytest.param(pod("a", ready_since=10), pod("b", ready_since=10_000), 0, 0, id="6-ready-shorter-first"),
    pytest.param(pod("a", restarts=5, ready_since=100), pod("b", restarts=0, ready_since=100), 0, 0,
                 id="7-more-restarts-first"),
    pytest.param(pod("a", created=10), pod("b", created=100_000), 0, 0, id="8-newer-first"),
    pytest.param(pod("a", ready_since=10, restarts=0), pod("b", ready_since=10_000, restarts=9), 0, 0,
                 id="6-beats-7"),
])
def test_deletion_order_rule_by_rule(first, second, rank_first, rank_second):
    for pods, ranks in (([first, second], [rank_first, rank_second]), ([second, first], [rank_second, rank_first])):
        ordered = deletion_order(pods, ranks, now=NOW)
        assert [p["metadata"]["name"] for p in ordered] == ["a", "b"]


def test_times_in_one_log2_bucket_are_ordered_by_uid():
    # 100 s and 101 s ago fall in the same log2(nanoseconds) bucket: the UID decides, pseudo-randomly.
    older, newer = pod("old", created=101, uid="uid-1"), pod("new", created=100, uid="uid-2")
    assert [p["metadata"]["name"] for p in deletion_order([newer, older], [0, 0], now=NOW)] == ["old", "new"]
    # Without `now` the times compare exactly: newer first.
    assert [p["metadata"]["name"] for p in deletion_order([older, newer], [0, 0], now=None)] == ["new", "old"]


def test_pods_to_delete_ranks_by_related_pods_on_the_same_node():
    pods = [pod("a", node="n1"), pod("b", node="n2"), pod("c", node="n3")]
    related = [*pods, pod("x", node="n2"), pod("y", node="n2"), pod("z", node="n3"),
               pod("gone", node="n1", phase="Failed")]
    assert ranks_by_related_pods_on_node(pods, related) == [1, 3, 2]
    assert [p["metadata"]["name"] for p in pods_to_delete(pods, related, 2, now=NOW)] == ["b", "c"]
    assert pods_to_delete(pods, related, 5, now=NOW) == pods


@pytest.mark.parametrize("count,batches", [
    pytest.param(0, [], id="none"), pytest.param(1, [1], id="one"), pytest.param(3, [1, 2], id="three"),
    pytest.param(10, [1, 2, 4, 3], id="ten"), pytest.param(500, [1, 2, 4, 8, 16, 32, 64, 128, 245], id="burst"),
])
def test_slow_start_batches_double_from_one(count, batches):
    assert slow_start_batches(count) == batches and sum(batches) == count


def test_slow_start_batch_stops_after_a_batch_with_a_failure():
    calls, lock = [], threading.Lock()

    def fn() -> None:
        with lock:
            calls.append(1)
            number = len(calls)
        if number in (2, 3):  # the second batch (calls 2 and 3) fails
            raise RuntimeError(f"call {number}")

    successes, error = slow_start_batch(10, fn)
    assert len(calls) == 3 and successes == 1 and isinstance(error, RuntimeError)
    assert slow_start_batch(7, lambda: None) == (7, None)


def test_active_and_available():
    assert is_pod_active(pod("a")) and not is_pod_active(pod("a", phase="Succeeded"))
    assert not is_pod_active(pod("a", phase="Failed")) and not is_pod_active(pod("a", deleting=True))
    assert is_pod_available(pod("a", ready_since=5), 0, NOW)
    assert not is_pod_available(pod("a", ready_since=5), 10, NOW)
    assert is_pod_available(pod("a", ready_since=11), 10, NOW)
    assert not is_pod_available(pod("a", ready_since=None), 0, NOW)


def test_pod_from_template_as_upstream():
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": True,
           "blockOwnerDeletion": True}
    template = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}, "name": "ignored"},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}
    made = pod_from_template(template, controller_name="web", controller_ref=ref)
    assert made == {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"generateName": "web-", "ownerReferences": [ref], "labels": {"app": "web"},
                                 "annotations": {"a": "1"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}
    made["spec"]["containers"].append({})
    assert len(template["spec"]["containers"]) == 1  # a copy
    assert pods_prefix("x" * 62) == "x" * 62


OWNER = {"metadata": {"name": "rs", "namespace": "ns", "uid": "me"}}
OURS = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "me", "controller": True}]
THEIRS = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "other", "controller": True}]


def child(refs=None, *, deleting=False, namespace="ns"):
    metadata: dict[str, Any] = {"name": "p", "namespace": namespace, "uid": "p-uid"}
    if refs:
        metadata["ownerReferences"] = refs
    if deleting:
        metadata["deletionTimestamp"] = ts(0)
    return {"metadata": metadata}


DELETING_OWNER = {"metadata": {**OWNER["metadata"], "deletionTimestamp": ts(0)}}


@pytest.mark.parametrize("obj,owner,matches,expected", [
    pytest.param(child(OURS), OWNER, True, Claim.CLAIMED, id="ours-matching"),
    pytest.param(child(OURS), OWNER, False, Claim.RELEASE, id="ours-not-matching"),
    pytest.param(child(OURS), DELETING_OWNER, False, Claim.IGNORE, id="ours-not-matching-owner-deleting"),
    pytest.param(child(THEIRS), OWNER, True, Claim.IGNORE, id="someone-elses"),
    pytest.param(child(), OWNER, True, Claim.ADOPT, id="orphan-matching"),
    pytest.param(child(), OWNER, False, Claim.IGNORE, id="orphan-not-matching"),
    pytest.param(child(deleting=True), OWNER, True, Claim.IGNORE, id="orphan-being-deleted"),
    pytest.param(child(), DELETING_OWNER, True, Claim.IGNORE, id="orphan-owner-deleting"),
    pytest.param(child(namespace="other"), OWNER, True, Claim.IGNORE, id="orphan-other-namespace"),
    pytest.param(child([{**OURS[0], "controller": False}]), OWNER, True, Claim.ADOPT, id="non-controller-ref"),
])
def test_claim_action(obj, owner, matches, expected):
    assert claim_action(obj, owner=owner, matches=matches) is expected


def test_adopt_and_release_patches_name_the_uids():
    assert adopt_patch(child(), OURS[0]) == {"metadata": {"ownerReferences": OURS, "uid": "p-uid"}}
    assert release_patch(child(OURS), "me") == {
        "metadata": {"ownerReferences": [{"$patch": "delete", "uid": "me"}], "uid": "p-uid"}}


RS = {"metadata": {"name": "rs", "namespace": "ns", "generation": 4},
      "spec": {"replicas": 3, "minReadySeconds": 30, "template": {"metadata": {"labels": {"app": "a", "tier": "t"}}}},
      "status": {"replicas": 0}}


def test_status_counts_fully_labeled_ready_and_available():
    pods = [pod("a", labels={"app": "a", "tier": "t", "x": "y"}, ready_since=60),
            pod("b", labels={"app": "a"}, ready_since=5), pod("c", ready_since=None)]
    status = calculate_status(RS, pods, manage_error=None, now=NOW)
    assert status == {"replicas": 3, "fullyLabeledReplicas": 1, "readyReplicas": 2, "availableReplicas": 1}
    assert not status_unchanged(RS, status)
    written = with_observed_generation(RS, status)
    assert written["observedGeneration"] == 4
    assert status_unchanged({**RS, "status": written}, status)


def test_status_zero_counts_are_omitted_but_replicas_stays():
    assert calculate_status(RS, [], manage_error=None, now=NOW) == {"replicas": 0}


def test_replica_failure_condition_is_set_once_and_cleared():
    failed = calculate_status(RS, [pod("a")], manage_error="quota exceeded", now=NOW)
    condition = failed["conditions"][0]
    assert condition == {"type": "ReplicaFailure", "status": "True", "lastTransitionTime": ts(0),
                         "reason": "FailedCreate", "message": "quota exceeded"}
    later = calculate_status({**RS, "status": failed}, [pod("a")], manage_error="other", now=NOW + timedelta(1))
    assert later["conditions"] == [condition]  # kept as it was while failures go on
    too_many = calculate_status(RS, [pod(n) for n in "abcd"], manage_error="boom", now=NOW)
    assert too_many["conditions"][0]["reason"] == "FailedDelete"
    assert "conditions" not in calculate_status({**RS, "status": failed}, [pod("a")], manage_error=None, now=NOW)
