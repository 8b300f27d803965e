"""The namespace controller's pure decisions (control/controllers/namespace/deletion.py) with upstream's
numbers, reasons and messages (namespaced_resources_deleter.go, namespace_condition_updater.go)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from control.controllers.namespace import deletion as nd

DELETED = datetime(2026, 1, 1, tzinfo=UTC)


def pod(grace=None, phase="Running"):
    spec = {} if grace is None else {"terminationGracePeriodSeconds": grace}
    return {"spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(("pods", "elapsed", "expected"), [
    pytest.param([], 0, 0, id="no-pods"),
    pytest.param([pod(30), pod(45), pod(10)], 0, 45, id="longest-grace"),
    pytest.param([pod(30), pod(600, "Succeeded"), pod(900, "Failed")], 0, 30, id="terminal-pods-skipped"),
    pytest.param([pod(30)], 29, 30, id="still-within-grace"),
    pytest.param([pod(30)], 30, 0, id="grace-passed"),
    pytest.param([pod()], 0, 0, id="no-grace-field"),
])
def test_pods_grace_estimate(pods, elapsed, expected):
    assert nd.pods_grace_estimate(pods, deleted_at=DELETED, now=DELETED + timedelta(seconds=elapsed)) == expected


def item(*finalizers):
    return {"metadata": {"finalizers": list(finalizers)}}


@pytest.mark.parametrize(("items", "estimate", "expected"), [
    pytest.param([], 0, nd.Leftovers(0), id="all-gone"),
    pytest.param([], 30, nd.Leftovers(30), id="all-gone-estimate-kept"),
    pytest.param([item(), item()], 30, nd.Leftovers(30, 2, {}), id="pods-terminating"),
    pytest.param([item("a", "b"), item("a")], 0, nd.Leftovers(15, 2, {"a": 2, "b": 1}), id="finalizers-15s"),
    pytest.param([item()], 0, nd.Leftovers(0, 1, unexpected=True), id="unexplained"),
])
def test_leftovers(items, estimate, expected):
    assert nd.leftovers(items, estimate=estimate) == expected


@pytest.mark.parametrize(("estimate", "seconds"), [(1, 1), (15, 8), (30, 16), (31, 16)])
def test_requeue_is_half_plus_one(estimate, seconds):
    assert nd.requeue_seconds(estimate) == seconds


def test_all_ok_conditions_in_upstream_order():
    conditions = nd.updated_conditions([], [], now=DELETED)
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        ("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered", "All resources successfully discovered"),
        ("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions",
         "All legacy kube types successfully parsed"),
        ("NamespaceDeletionContentFailure", "False", "ContentDeleted",
         "All content successfully deleted, may be waiting on finalization"),
        ("NamespaceContentRemaining", "False", "ContentRemoved", "All content successfully removed"),
        ("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
         "All content-preserving finalizers finished"),
    ]
    assert {c["lastTransitionTime"] for c in conditions} == {"2026-01-01T00:00:00Z"}
    assert nd.updated_conditions(conditions, [], now=DELETED + timedelta(seconds=5)) is None


def test_failure_conditions_messages_sorted():
    found = nd.failure_conditions(discovery_error="unable to retrieve the complete list of server APIs: x/v1: down",
                                  content_errors=["z failed", "a failed"],
                                  remaining={("", "pods"): 2, ("apps", "deployments"): 1, ("", "secrets"): 0},
                                  finalizers={"foregroundDeletion": 1, "example.com/keep": 2})
    assert found == [
        nd.Condition("NamespaceDeletionDiscoveryFailure", "True", "DiscoveryFailed",
                     "unable to retrieve the complete list of server APIs: x/v1: down"),
        nd.Condition("NamespaceDeletionContentFailure", "True", "ContentDeletionFailed",
                     "Failed to delete all resource types, 2 remaining: a failed, z failed"),
        nd.Condition("NamespaceContentRemaining", "True", "SomeResourcesRemain",
                     "Some resources are remaining: deployments.apps has 1 resource instances, "
                     "pods. has 2 resource instances"),
        nd.Condition("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                     "Some content in the namespace has finalizers remaining: example.com/keep in 2 resource "
                     "instances, foregroundDeletion in 1 resource instances"),
    ]


def test_transition_time_moves_only_with_status():
    first = nd.updated_conditions([], [nd.Condition(nd.CONTENT_REMAINING, "True", "SomeResourcesRemain", "m1")],
                                  now=DELETED)
    later = DELETED + timedelta(seconds=10)
    second = nd.updated_conditions(first, [nd.Condition(nd.CONTENT_REMAINING, "True", "SomeResourcesRemain", "m2")],
                                   now=later)
    remaining = next(c for c in second if c["type"] == nd.CONTENT_REMAINING)
    assert remaining["message"] == "m2" and remaining["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    third = nd.updated_conditions(second, [], now=later)
    remaining = next(c for c in third if c["type"] == nd.CONTENT_REMAINING)
    assert remaining["status"] == "False" and remaining["lastTransitionTime"] == "2026-01-01T00:00:10Z"


def test_other_conditions_are_kept():
    mine = {"type": "Custom", "status": "True"}
    assert nd.updated_conditions([mine], [], now=DELETED)[0] == mine
