"""The Priority admission plugin's decisions and PriorityClass validation (control/api/priority.py,
validation/scheduling.py), with upstream's messages (plugin/pkg/admission/priority/admission_test.go,
pkg/apis/scheduling/validation/validation_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from control.api import priority
from control.api.defaults import apply_defaults
from control.api.validation import validate


def pc(name: str, value: int, *, default: bool = False, policy: str | None = "PreemptLowerPriority") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                           "value": value}
    if default:
        obj["globalDefault"] = True
    if policy is not None:
        obj["preemptionPolicy"] = policy
    return obj


HIGH = pc("high", 1000)
LOW_DEFAULT = pc("low-default", -10, default=True, policy="Never")
SYSTEM = [dict(c, preemptionPolicy="PreemptLowerPriority") for c in priority.SYSTEM_PRIORITY_CLASSES]


@pytest.mark.parametrize(("spec", "classes", "expected", "error"), [
    pytest.param({}, [HIGH], {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}, None,
                 id="no class, no default: 0"),
    pytest.param({}, [HIGH, LOW_DEFAULT], {"priorityClassName": "low-default", "priority": -10,
                                           "preemptionPolicy": "Never"}, None, id="the globalDefault class"),
    pytest.param({}, [pc("d1", 5, default=True), pc("d2", 3, default=True)],
                 {"priorityClassName": "d2", "priority": 3, "preemptionPolicy": "PreemptLowerPriority"}, None,
                 id="of two defaults the lowest value"),
    pytest.param({"priorityClassName": "high"}, [HIGH, LOW_DEFAULT],
                 {"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}, None,
                 id="named class"),
    pytest.param({"priorityClassName": "system-node-critical"}, SYSTEM,
                 {"priorityClassName": "system-node-critical", "priority": 2000001000,
                  "preemptionPolicy": "PreemptLowerPriority"}, None, id="system class"),
    pytest.param({"priorityClassName": "high", "priority": 1000}, [HIGH],
                 {"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}, None,
                 id="the class's own priority may be given"),
    pytest.param({"priorityClassName": "nope"}, [HIGH], None, "no PriorityClass with name nope was found",
                 id="unknown class"),
    pytest.param({"priorityClassName": "high", "priority": 7}, [HIGH], None,
                 "the integer value of priority (7) must not be provided in pod spec; priority admission controller "
                 "computed 1000 from the given PriorityClass name", id="a priority other than the class's"),
    pytest.param({"priority": 7}, [], None,
                 "the integer value of priority (7) must not be provided in pod spec; priority admission controller "
                 "computed 0 from the given PriorityClass name", id="a priority without a class"),
    pytest.param({"priorityClassName": "high", "preemptionPolicy": "Never"}, [HIGH], None,
                 "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission "
                 "controller computed PreemptLowerPriority from the given PriorityClass name",
                 id="a preemptionPolicy other than the class's"),
    pytest.param({"priorityClassName": ["x"]}, [HIGH], {"priorityClassName": ["x"]}, None,
                 id="a class name of the wrong type is left to validation"),
])
def test_admit_pod(spec, classes, expected, error) -> None:
    assert priority.admit_pod(spec, classes) == error
    if expected is not None:
        assert spec == expected


def test_an_update_keeps_priority_and_policy() -> None:
    spec: dict[str, Any] = {"containers": []}
    priority.keep_on_update(spec, {"priority": 5, "preemptionPolicy": "Never"})
    assert (spec["priority"], spec["preemptionPolicy"]) == (5, "Never")


@pytest.mark.parametrize(("new", "classes", "update", "error"), [
    pytest.param(pc("b", 1, default=True), [pc("a", 2, default=True)], False,
                 "PriorityClass a is already marked as default. Only one default can exist", id="second default"),
    pytest.param(pc("b", 1, default=True), [pc("a", 2, default=True), pc("b", 1)], True,
                 "PriorityClass a is already marked as default. Only one default can exist", id="made default"),
    pytest.param(pc("a", 2, default=True), [pc("a", 2, default=True)], True, None, id="the default itself"),
    pytest.param(pc("b", 1), [pc("a", 2, default=True)], False, None, id="not a default"),
])
def test_one_global_default(new, classes, update, error) -> None:
    assert priority.check_global_default(new, classes, update=update) == error


@pytest.mark.parametrize(("obj", "old", "messages"), [
    pytest.param(pc("ok", 1_000_000_000), None, [], id="the highest user value"),
    pytest.param(pc("toobig", 1_000_000_001), None,
                 ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"], id="too big"),
    pytest.param(pc("system-mine", 10), None,
                 ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
                  "only. error: system-mine is not a known system priority class"], id="reserved prefix"),
    pytest.param(pc("system-node-critical", 5), None,
                 ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
                  "only. error: value of system-node-critical PriorityClass must be 2000001000"],
                 id="system class with another value"),
    pytest.param(pc("system-cluster-critical", 2_000_000_000), None, [], id="the system class itself"),
    pytest.param(pc("p", 1, policy="Sometimes"), None,
                 ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", '
                  '"Never"'], id="unknown policy"),
    pytest.param(pc("p", 2), pc("p", 1), ["value: Forbidden: may not be changed in an update."], id="value immutable"),
    pytest.param(pc("p", 1, policy="Never"), pc("p", 1),
                 ['preemptionPolicy: Invalid value: "Never": field is immutable'], id="policy immutable"),
])
def test_priority_class_validation(obj, old, messages) -> None:
    assert [str(e) for e in validate("priorityclasses", obj, old=old)] == messages


def test_priority_class_defaults_to_preempt_lower_priority() -> None:
    obj = pc("p", 1, policy=None)
    apply_defaults("priorityclasses", obj)
    assert obj["preemptionPolicy"] == "PreemptLowerPriority"


def test_pod_spec_priority_fields_are_validated() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}],
                                               "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                                               "priorityClassName": "Bad_Name", "preemptionPolicy": "Sometimes"}}
    messages = [str(e) for e in validate("pods", pod)]
    assert any(m.startswith('spec.priorityClassName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
               for m in messages), messages
    assert 'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", ' \
           '"Never"' in messages
