"""The Job controller's pure decisions (control/controllers/job/decisions.py): who is created and deleted,
the failed-pod back-off, the pod failure policy, which finished pods count, and the completed-index
intervals — tables against upstream's rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.api.batch import JOB_COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER
from control.controllers.job.decisions import (
    BackoffRecord,
    FailureAction,
    backoff_remaining,
    failure,
    format_indexes,
    manage_indexed,
    manage_non_indexed,
    match_pod_failure_policy,
    new_finished_pods,
    parse_indexes,
    succeeded_criteria,
    update_backoff,
)

NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def job(**spec: Any) -> dict[str, Any]:
    base = {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}
    base.update(spec)
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": {k: v for k, v in base.items() if v is not None}}


def pod(name: str, phase: str = "Running", *, index: int | None = None, code: int | None = None,
        deleting: bool = False, finalizer: bool = True, restarts: int = 0,
        conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                                "finalizers": [JOB_TRACKING_FINALIZER] if finalizer else []}
    if index is not None:
        metadata["annotations"] = {JOB_COMPLETION_INDEX_ANNOTATION: str(index)}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T12:00:00Z"
    state = {"terminated": {"exitCode": code, "finishedAt": "2024-01-01T11:59:00Z"}} if code is not None else {}
    return {"metadata": metadata, "status": {"phase": phase, "conditions": conditions or [], "containerStatuses": [
        {"name": "main", "restartCount": restarts, "state": state}]}}


@pytest.mark.parametrize(("spec", "active", "succeeded", "terminating", "create", "delete"), [
    pytest.param({"completions": 5, "parallelism": 2}, 0, 0, 0, 2, 0, id="start-at-parallelism"),
    pytest.param({"completions": 5, "parallelism": 2}, 2, 3, 0, 0, 0, id="two-left-two-active"),
    pytest.param({"completions": 5, "parallelism": 2}, 2, 4, 0, 0, 1, id="one-left-two-active"),
    pytest.param({"completions": 5, "parallelism": 2}, 1, 3, 0, 1, 0, id="replace-finished"),
    pytest.param({"completions": 5, "parallelism": 0}, 1, 0, 0, 0, 1, id="parallelism-zero"),
    pytest.param({"completions": None, "parallelism": 3}, 1, 0, 0, 2, 0, id="work-queue-before-success"),
    pytest.param({"completions": None, "parallelism": 3}, 1, 1, 0, 0, 0, id="work-queue-after-success"),
    pytest.param({"completions": 5, "parallelism": 2}, 0, 0, 1, 2, 0, id="terminating-or-failed-replaces"),
    pytest.param({"completions": 5, "parallelism": 2, "podReplacementPolicy": "Failed"}, 0, 0, 1, 1, 0,
                 id="failed-policy-waits-for-terminating"),
])
def test_manage_non_indexed(spec, active, succeeded, terminating, create, delete):
    pods = [pod(f"p{i}") for i in range(active)]
    decision = manage_non_indexed(job(**spec), pods, succeeded=succeeded, terminating=terminating)
    assert (decision.create, len(decision.delete)) == (create, delete)
    assert list(decision.delete) == pods[:delete]  # the caller's order decides who goes first


@pytest.mark.parametrize(("active", "succeeded", "parallelism", "create", "delete"), [
    pytest.param([], set(), 3, (0, 1, 2), [], id="lowest-first"),
    pytest.param([], set(), 2, (0, 1), [], id="parallelism-bound"),
    pytest.param([1], {0}, 2, (2,), [], id="skip-succeeded-and-active"),
    pytest.param([1], {0}, 3, (2, 3), [], id="skip-succeeded-and-active-wider"),
    pytest.param([1, 1], set(), 4, (0, 2, 3), ["1b"], id="duplicate-index-deleted"),
    pytest.param([7, 2], set(), 4, (0, 1, 3), ["7a"], id="out-of-range-deleted"),
    pytest.param([0, 1, 2], set(), 1, (), ["2c", "1b"], id="too-many-highest-go"),
    pytest.param([0], {0}, 1, (1,), ["0a"], id="succeeded-index-pod-deleted"),
])
def test_manage_indexed(active, succeeded, parallelism, create, delete):
    names = "abcdefgh"
    pods = [pod(f"{index}{names[i]}", index=index) for i, index in enumerate(active)]
    decision = manage_indexed(job(completions=4, parallelism=parallelism, completionMode="Indexed"), pods,
                              succeeded_indexes=frozenset(succeeded), terminating=0)
    assert decision.indexes == create and decision.create == len(create)
    assert [p["metadata"]["name"] for p in decision.delete] == delete


@pytest.mark.parametrize(("failures", "since", "remaining"), [
    pytest.param(0, 0, 0.0, id="no-failures"),
    pytest.param(1, 0, 10.0, id="first-10s"),
    pytest.param(1, 4, 6.0, id="first-partly-waited"),
    pytest.param(2, 0, 20.0, id="second-20s"),
    pytest.param(3, 0, 40.0, id="third-40s"),
    pytest.param(6, 0, 320.0, id="sixth-320s"),
    pytest.param(7, 0, 360.0, id="capped-at-six-minutes"),
    pytest.param(20, 0, 360.0, id="still-capped"),
    pytest.param(2, 30, 0.0, id="waited-out"),
])
def test_backoff_remaining(failures, since, remaining):
    record = BackoffRecord(failures, NOW - timedelta(seconds=since))
    assert backoff_remaining(record, NOW, base=10, cap=360) == remaining


def test_backoff_base_is_configurable_and_success_resets():
    record = update_backoff(BackoffRecord(), succeeded=[], failed=[NOW, NOW - timedelta(seconds=1)])
    assert record == BackoffRecord(2, NOW)
    assert backoff_remaining(record, NOW, base=0.5, cap=360) == 1.0
    later = NOW + timedelta(seconds=5)
    assert update_backoff(record, succeeded=[later], failed=[]) == BackoffRecord()
    mixed = update_backoff(record, succeeded=[later], failed=[later + timedelta(seconds=1), NOW])
    assert mixed == BackoffRecord(1, later + timedelta(seconds=1))


POLICY = {"rules": [
    {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
]}


@pytest.mark.parametrize(("the_pod", "action", "message"), [
    pytest.param(pod("p", "Failed", code=42), FailureAction.FAIL_JOB,
                 "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0", id="fail"),
    pytest.param(pod("p", "Failed", code=1, conditions=[{"type": "DisruptionTarget", "status": "True"}]),
                 FailureAction.IGNORE, "Pod ns/p has condition DisruptionTarget matching Ignore rule at index 1",
                 id="ignore-condition"),
    pytest.param(pod("p", "Failed", code=1, conditions=[{"type": "DisruptionTarget", "status": "False"}]),
                 None, "", id="condition-status-differs"),
    pytest.param(pod("p", "Failed", code=5), FailureAction.COUNT,
                 "Container main for pod ns/p failed with exit code 5 matching Count rule at index 2", id="notin"),
    pytest.param(pod("p", "Failed", code=2), None, "", id="no-rule"),
])
def test_pod_failure_policy(the_pod, action, message):
    assert match_pod_failure_policy(POLICY, the_pod) == (action, message)


def test_new_finished_pods_counts_each_pod_once():
    pods = [pod("ok", "Succeeded", code=0), pod("bad", "Failed", code=1), pod("gone", deleting=True),
            pod("run"), pod("old", "Failed", code=1, finalizer=False), pod("seen", "Succeeded", code=0),
            pod("removed", "Failed", code=1)]
    found = new_finished_pods(job(), pods, counted=frozenset({"uid-seen"}), removed=frozenset({"uid-removed"}))
    assert [p["metadata"]["name"] for p in found.succeeded] == ["ok"]
    assert [p["metadata"]["name"] for p in found.failed] == ["bad", "gone"]  # deleted counts as failed
    only_failed = new_finished_pods(job(podReplacementPolicy="Failed"), pods, counted=frozenset(),
                                    removed=frozenset())
    assert "gone" not in [p["metadata"]["name"] for p in only_failed.failed]
    suspended = new_finished_pods(job(suspend=True), pods, counted=frozenset(), removed=frozenset())
    assert [p["metadata"]["name"] for p in suspended.ignored] == ["gone"]
    with_policy = new_finished_pods(job(podFailurePolicy=POLICY), [pod("x", "Failed", code=42)],
                                    counted=frozenset(), removed=frozenset())
    assert with_policy.fail_job_message.endswith("matching FailJob rule at index 0")


def test_indexed_success_of_a_done_index_is_ignored():
    pods = [pod("a", "Succeeded", index=0), pod("b", "Succeeded", index=1), pod("c", "Succeeded", index=9)]
    found = new_finished_pods(job(completions=3, completionMode="Indexed"), pods, counted=frozenset(),
                              removed=frozenset(), succeeded_indexes=frozenset({1}))
    assert [p["metadata"]["name"] for p in found.succeeded] == ["a"]
    assert [p["metadata"]["name"] for p in found.ignored] == ["b", "c"]


@pytest.mark.parametrize(("spec", "failed", "active", "started", "expected"), [
    pytest.param({"backoffLimit": 2}, 2, [], None, None, id="at-limit"),
    pytest.param({"backoffLimit": 2}, 3, [], None, "BackoffLimitExceeded", id="past-limit"),
    pytest.param({"backoffLimit": 0}, 1, [], None, "BackoffLimitExceeded", id="zero-limit"),
    pytest.param({"backoffLimit": 2, "template": {"spec": {"restartPolicy": "OnFailure"}}}, 0,
                 [pod("a", restarts=2)], None, "BackoffLimitExceeded", id="on-failure-restarts"),
    pytest.param({"backoffLimit": 3, "template": {"spec": {"restartPolicy": "OnFailure"}}}, 0,
                 [pod("a", restarts=2)], None, None, id="on-failure-under"),
    pytest.param({"activeDeadlineSeconds": 60}, 0, [], 61, "DeadlineExceeded", id="deadline"),
    pytest.param({"activeDeadlineSeconds": 60}, 0, [], 59, None, id="before-deadline"),
])
def test_failure(spec, failed, active, started, expected):
    the_job = job(**spec)
    if started is not None:
        the_job["status"] = {"startTime": (NOW - timedelta(seconds=started)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    found = failure(the_job, failed=failed, active=active, fail_job_message="", now=NOW)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize(("spec", "succeeded", "active", "done"), [
    pytest.param({"completions": 3}, 3, 0, True, id="reached"),
    pytest.param({"completions": 3}, 2, 0, False, id="not-yet"),
    pytest.param({"completions": None}, 1, 1, False, id="work-queue-still-active"),
    pytest.param({"completions": None}, 1, 0, True, id="work-queue-done"),
])
def test_succeeded_criteria(spec, succeeded, active, done):
    assert succeeded_criteria(job(**spec), succeeded=succeeded, active=active) is done


@pytest.mark.parametrize(("indexes", "text"), [
    pytest.param([], "", id="empty"), pytest.param([0], "0", id="one"),
    pytest.param([0, 1, 2, 5, 7, 8], "0-2,5,7-8", id="intervals"), pytest.param([3, 1, 2], "1-3", id="unsorted"),
])
def test_completed_indexes_round_trip(indexes, text):
    assert format_indexes(indexes) == text
    assert parse_indexes(text) == frozenset(indexes)
    assert parse_indexes("0-3,9", completions=4) == frozenset({0, 1, 2, 3})
