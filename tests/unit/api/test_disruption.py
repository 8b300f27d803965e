"""PodDisruptionBudget arithmetic (control/api/disruption.py) with the numbers of upstream's
pkg/controller/disruption/disruption_test.go cases (VerifyPdbStatus: disruptionsAllowed, currentHealthy,
desiredHealthy, expectedPods) and the eviction handler's decisions (eviction.go checkAndDecrement)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from control.api import disruption
from control.apimachinery.meta import format_timestamp

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def pdb(*, min_available=None, max_unavailable=None, selector=None, status=None, generation=1, name="pdb"):
    spec = {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"metadata": {"name": name, "namespace": "ns", "generation": generation}, "spec": spec,
            "status": status or {}}


def pod(name, *, ready=True, deleting=False, phase="Running", labels=None):
    metadata = {"name": name, "namespace": "ns", "labels": {"app": "web"} if labels is None else labels}
    if deleting:
        metadata["deletionTimestamp"] = format_timestamp(NOW)
    return {"metadata": metadata, "status": {"phase": phase,
                                              "conditions": [{"type": "Ready", "status": str(ready)}]}}


@pytest.mark.parametrize(("value", "total", "up", "expected"), [
    pytest.param(3, 10, True, 3, id="int"),
    pytest.param("34%", 3, True, 2, id="34%-of-3-up"),
    pytest.param("34%", 3, False, 1, id="34%-of-3-down"),
    pytest.param("20%", 10, True, 2, id="exact"),
    pytest.param("28%", 22, True, 7, id="28%-of-22"),
    pytest.param("0%", 5, True, 0, id="zero"),
    pytest.param("100%", 7, True, 7, id="all"),
])
def test_scaled_value(value, total, up, expected):
    assert disruption.scaled_value(value, total, round_up=up) == expected


@pytest.mark.parametrize("value", ["34", "x%", None])
def test_scaled_value_refuses_what_is_not_int_or_percent(value):
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        disruption.scaled_value(value, 3, round_up=True)


@pytest.mark.parametrize(("budget", "pods", "scale", "expected"), [
    # TestUnavailable / TestNakedPod: an int minAvailable needs no controller: expected = the pods found.
    pytest.param(pdb(min_available=3), 4, 0, disruption.Expected(4, 3), id="int-min-available"),
    # TestReplicationController and TestStatefulSetController: 34% of 3 replicas rounds up to 2.
    pytest.param(pdb(min_available="34%"), 3, 3, disruption.Expected(3, 2), id="34%-of-rc-3"),
    # TestReplicaSet: 20% of 10 replicas with one pod so far.
    pytest.param(pdb(min_available="20%"), 1, 10, disruption.Expected(10, 2), id="20%-of-rs-10"),
    # TestTwoControllers: an RC of 11 and a Deployment of 11, 28% → ceil(6.16) = 7.
    pytest.param(pdb(min_available="28%"), 22, 22, disruption.Expected(22, 7), id="28%-of-two-controllers"),
    # TestIntegerMaxUnavailable / TestPercentageMaxUnavailable.
    pytest.param(pdb(max_unavailable=1), 2, 3, disruption.Expected(3, 2), id="max-unavailable-1"),
    pytest.param(pdb(max_unavailable="30%"), 4, 4, disruption.Expected(4, 2), id="max-unavailable-30%-rounds-up"),
    pytest.param(pdb(max_unavailable=5), 2, 3, disruption.Expected(3, 0), id="desired-never-negative"),
])
def test_expected_pods(budget, pods, scale, expected):
    assert disruption.expected_pods(budget, pods, scale) == expected


def test_unmanaged_pods_are_reported_only_where_the_scale_matters():
    assert disruption.expected_pods(pdb(max_unavailable=1), 2, 0, ["naked"]).unmanaged == ("naked",)
    assert disruption.expected_pods(pdb(min_available=1), 2, 0, ["naked"]).unmanaged == ()


@pytest.mark.parametrize(("healthy", "desired", "expected", "allowed"), [
    pytest.param(4, 3, 4, 1, id="one-spare"),
    pytest.param(3, 3, 4, 0, id="at-the-limit"),
    pytest.param(1, 3, 1, 0, id="below"),
    pytest.param(3, 0, 0, 0, id="no-pods-expected-yet"),
])
def test_disruptions_allowed(healthy, desired, expected, allowed):
    assert disruption.disruptions_allowed(healthy, desired, expected) == allowed


def test_count_healthy_skips_unready_deleting_and_recently_evicted_pods():
    pods = [pod("a"), pod("b", ready=False), pod("c", deleting=True), pod("d"), pod("e")]
    disrupted = {"d": format_timestamp(NOW - timedelta(seconds=30)),  # eviction approved: about to go
                 "e": format_timestamp(NOW - timedelta(minutes=3))}  # its 2 minutes passed: healthy again
    assert disruption.count_healthy(pods, disrupted, NOW) == 2


def test_disrupted_pods_keeps_live_entries_and_reports_the_late_ones():
    recorded = {"a": format_timestamp(NOW - timedelta(seconds=90)), "b": format_timestamp(NOW - timedelta(seconds=30)),
                "late": format_timestamp(NOW - timedelta(minutes=5)), "gone": format_timestamp(NOW),
                "deleting": format_timestamp(NOW)}
    result = disruption.disrupted_pods([pod("a"), pod("b"), pod("late"), pod("deleting", deleting=True)],
                                       recorded, NOW)
    assert result.pods == {"a": recorded["a"], "b": recorded["b"]}
    assert result.recheck == NOW + timedelta(seconds=30)  # a's deadline, the earliest
    assert result.not_deleted == ("late",)


def test_desired_status_sets_the_condition_and_is_none_when_nothing_changed():
    budget = pdb(min_available=3)
    status = disruption.desired_status(budget, current_healthy=4, expected=disruption.Expected(4, 3), disrupted={},
                                       now=NOW)
    assert status is not None
    assert {k: status[k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods",
                                   "observedGeneration")} == {"disruptionsAllowed": 1, "currentHealthy": 4,
                                                              "desiredHealthy": 3, "expectedPods": 4,
                                                              "observedGeneration": 1}
    assert status["conditions"] == [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                     "message": "", "observedGeneration": 1,
                                     "lastTransitionTime": format_timestamp(NOW)}]
    assert "disruptedPods" not in status
    budget["status"] = status
    assert disruption.desired_status(budget, current_healthy=4, expected=disruption.Expected(4, 3), disrupted={},
                                     now=NOW + timedelta(seconds=5)) is None
    later = NOW + timedelta(seconds=9)
    fewer = disruption.desired_status(budget, current_healthy=3, expected=disruption.Expected(4, 3), disrupted={},
                                      now=later)
    assert fewer is not None and fewer["disruptionsAllowed"] == 0
    assert fewer["conditions"][0] == {"type": "DisruptionAllowed", "status": "False",
                                           "reason": "InsufficientPods", "message": "", "observedGeneration": 1,
                                           "lastTransitionTime": format_timestamp(later)}


def test_fail_safe_allows_nothing_and_says_why():
    budget = pdb(min_available=1, status={"disruptionsAllowed": 2, "currentHealthy": 3, "observedGeneration": 1})
    status = disruption.fail_safe_status(budget, 'found no controllers for pod "a"', NOW)
    assert status["disruptionsAllowed"] == 0 and status["currentHealthy"] == 3
    assert status["conditions"][0]["reason"] == "SyncFailed"
    assert status["conditions"][0]["message"] == 'found no controllers for pod "a"'


# -- the eviction handler -----------------------------------------------------------------------------------


def counted(allowed, *, healthy=3, desired=2, observed=1, generation=1, disrupted=None):
    return pdb(min_available=desired, generation=generation, status={
        "disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": 3,
        "observedGeneration": observed, "disruptedPods": disrupted or {}})


def test_check_and_decrement_records_the_pod_and_takes_one():
    new = disruption.check_and_decrement(counted(1), "a", now=NOW, dry_run=False)
    assert isinstance(new, dict)
    assert new["disruptionsAllowed"] == 0 and new["disruptedPods"] == {"a": format_timestamp(NOW)}
    assert new["conditions"][0]["reason"] == "InsufficientPods"  # the last disruption taken: False at once
    more = disruption.check_and_decrement(counted(2), "a", now=NOW, dry_run=False)
    assert isinstance(more, dict) and more["disruptionsAllowed"] == 1 and more["conditions"] == []
    dry = disruption.check_and_decrement(counted(1), "a", now=NOW, dry_run=True)
    assert isinstance(dry, dict) and dry["disruptedPods"] == {}


@pytest.mark.parametrize(("budget", "code", "cause"), [
    pytest.param(counted(0), 429, "The disruption budget pdb needs 2 healthy pods and has 3 currently", id="none-left"),
    pytest.param(counted(1, observed=1, generation=2), 429, "The disruption budget pdb is still being processed by "
                 "the server.", id="not-yet-observed"),
    pytest.param(counted(-1), 403, "", id="negative"),
    pytest.param(counted(1, disrupted={str(i): "" for i in range(2001)}), 403, "", id="too-many-pending"),
])
def test_check_and_decrement_refusals(budget, code, cause):
    refusal = disruption.check_and_decrement(budget, "a", now=NOW, dry_run=False)
    assert isinstance(refusal, disruption.Refusal)
    assert (refusal.code, refusal.cause) == (code, cause)
    if code == 429:
        assert refusal.message == "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.mark.parametrize(("target", "ignore", "enforce"), [
    pytest.param(pod("a"), False, True, id="running"),
    pytest.param(pod("a", phase="Pending"), True, True, id="pending"),
    pytest.param(pod("a", phase="Succeeded"), True, False, id="succeeded"),
    pytest.param(pod("a", phase="Failed"), True, False, id="failed"),
    pytest.param(pod("a", deleting=True), True, False, id="terminating"),
])
def test_pods_a_pdb_cannot_protect(target, ignore, enforce):
    assert disruption.can_ignore_pdb(target) is ignore
    assert disruption.should_enforce_resource_version(target) is enforce


@pytest.mark.parametrize(("selector", "labels", "namespace", "selects"), [
    pytest.param({"matchLabels": {"app": "web"}}, {"app": "web"}, "ns", True, id="match"),
    pytest.param({"matchLabels": {"app": "web"}}, {"app": "db"}, "ns", False, id="other-labels"),
    pytest.param({"matchLabels": {"app": "web"}}, {"app": "web"}, "other", False, id="other-namespace"),
    pytest.param({}, {"app": "web"}, "ns", False, id="empty-selector-matches-nothing"),
])
def test_eviction_selects(selector, labels, namespace, selects):
    target = pod("a", labels=labels)
    target["metadata"]["namespace"] = namespace
    assert disruption.eviction_selects(pdb(selector=selector), target) is selects


def test_the_controller_counts_every_pod_for_an_empty_selector():
    selector = disruption.controller_selector(pdb(selector={}))
    assert selector is not None and selector.matches({"any": "thing"})
    assert disruption.controller_selector({"spec": {}}) is None


def test_unready_pod_goes_without_a_decrement_while_the_budget_holds():
    assert disruption.unready_within_budget(pod("a", ready=False), counted(0, healthy=2, desired=2))
    assert not disruption.unready_within_budget(pod("a", ready=False), counted(0, healthy=1, desired=2))
    assert not disruption.unready_within_budget(pod("a"), counted(0, healthy=2, desired=2))
