"""ValidatingAdmissionPolicy decisions without a server (control/apiserver/admission/policy.py): which
requests a policy's matchConstraints and a binding's matchResources take, what a validation's failure says,
the failurePolicy on an expression that errors, and the Deny/Warn/Audit actions through the plugin."""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import pytest

from control.apiserver.admission import policy
from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.admission.webhook import celexpr
from control.apiserver.admission.webhook.matching import GroupVersionResource as GVR
from control.apiserver.admission.webhook.matching import Request
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

DEPLOYMENTS = GVR("apps", "v1", "deployments")
RULES = {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                            "resources": ["deployments"]}]}


def request(name: str = "web", labels: dict | None = None) -> Request:
    return Request("CREATE", DEPLOYMENTS, "", "ns", {"metadata": {"name": name, "labels": labels or {}}}, None,
                   {"env": "test"})


@pytest.mark.parametrize(("match", "req", "required", "expected"), [
    pytest.param(RULES, request(), True, True, id="rule"),
    pytest.param(None, request(), False, True, id="no matchResources"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "test"}}}, request(), False, True,
                 id="a binding without rules only narrows"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "prod"}}}, request(), False, False, id="namespace"),
    pytest.param({"resourceRules": [{**RULES["resourceRules"][0], "resourceNames": ["other"]}]}, request(), True,
                 False, id="resourceNames"),
    pytest.param({**RULES, "excludeResourceRules": [{**RULES["resourceRules"][0], "resourceNames": ["web"]}]},
                 request(), True, False, id="excluded by name"),
    pytest.param({**RULES, "objectSelector": {"matchLabels": {"a": "1"}}}, request(labels={"a": "1"}), True, True,
                 id="objectSelector"),
])
def test_constraints(match: dict | None, req: Request, required: bool, expected: bool) -> None:
    assert policy.constraints_match(match, req, "web", [], rules_required=required) is expected


def spec(*validations: dict, failure_policy: str = "Fail", variables: list | None = None) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"failurePolicy": failure_policy, "validations": list(validations),
                                                "variables": variables or []}}


NAMES = celexpr.activation({"object": {"spec": {"replicas": 6}}, "oldObject": None, "params": {"max": 5}})


@pytest.mark.parametrize(("policy_obj", "messages"), [
    pytest.param(spec({"expression": "object.spec.replicas <= 5"}), ["failed expression: object.spec.replicas <= 5"],
                 id="expression"),
    pytest.param(spec({"expression": "object.spec.replicas <= 6"}), [], id="holds"),
    pytest.param(spec({"expression": "object.spec.replicas <= params.max", "message": "too many"}), ["too many"],
                 id="message and params"),
    pytest.param(spec({"expression": "false", "message": "m", "messageExpression": "'at most ' + string(params.max)"}),
                 ["at most 5"], id="messageExpression"),
    pytest.param(spec({"expression": "false", "message": "m", "messageExpression": "object.nope"}), ["m"],
                 id="a failing messageExpression falls back"),
    pytest.param(spec({"expression": "object.nope > 1"}), ["expression 'object.nope > 1' resulted in error: "],
                 id="error under Fail"),
    pytest.param(spec({"expression": "object.nope > 1"}, failure_policy="Ignore"), [], id="error under Ignore"),
    pytest.param(spec({"expression": "variables.big"},
                      variables=[{"name": "big", "expression": "object.spec.replicas > 5"}]), [], id="variables"),
])
def test_evaluate(policy_obj: dict, messages: list[str]) -> None:
    found = policy.evaluate(policy_obj, NAMES)
    assert len(found) == len(messages)
    for failure, message in zip(found, messages, strict=True):
        assert failure.message.startswith(message)


POLICIES, BINDINGS = by_path("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"), \
    by_path("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings")
DEPLOYMENT_RESOURCE = by_path("apps", "v1", "deployments")


class Reader:
    def __init__(self, actions: list[str]) -> None:
        self.actions = actions

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return {"metadata": {"name": name, "labels": {}}}

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]:
        if resource is POLICIES:
            return [{"metadata": {"name": "max"}, "spec": {"matchConstraints": RULES, "validations": [
                {"expression": "object.spec.replicas <= 5", "reason": "Forbidden"}]}}]
        if resource is BINDINGS:
            return [{"metadata": {"name": "b"}, "spec": {"policyName": "max", "validationActions": self.actions}}]
        return []


def attributes() -> Attributes:
    assert DEPLOYMENT_RESOURCE is not None
    return Attributes(Operation.CREATE, DEPLOYMENT_RESOURCE, "ns", "web", {"metadata": {"name": "web"},
                                                                          "spec": {"replicas": 6}})


def test_deny_with_the_validations_reason() -> None:
    with pytest.raises(APIError) as caught:
        policy.ValidatingAdmissionPolicies(Reader(["Deny"])).validate(attributes(), ExitStack())
    assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
    assert caught.value.message == ('deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'max\' with '
                                    "binding 'b' denied request: failed expression: object.spec.replicas <= 5")


def test_audit_keeps_the_failure() -> None:
    attrs = attributes()
    policy.ValidatingAdmissionPolicies(Reader(["Audit"])).validate(attrs, ExitStack())
    assert json.loads(attrs.annotations[policy.AUDIT_KEY]) == [
        {"message": "failed expression: object.spec.replicas <= 5", "policy": "max", "binding": "b",
         "expressionIndex": 0, "validationActions": ["Audit"]}]
