"""ValidatingAdmissionPolicies on the wire, against a real API server on 127.0.0.1: a policy refuses a
Deployment over 5 replicas with upstream's message and code, a Warn binding returns the message as a Warning
header, params from a ConfigMap set the limit, a missing param under `Deny`, and `kubectl get` columns."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.apiserver import Endpoint, running_server

GROUP = "/apis/admissionregistration.k8s.io/v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


@pytest.fixture
def namespace(api: Endpoint) -> Iterator[str]:
    name = f"vap-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"vap-test": name}}}
    assert api.request("POST", "/api/v1/namespaces", json=body).status_code == 201
    yield name


def create(api: Endpoint, path: str, body: dict) -> None:
    response = api.request("POST", path, json=body)
    assert response.status_code == 201, response.text


def policy(name: str, *, param_kind: dict | None = None, expression: str = "object.spec.replicas <= 5",
           **validation) -> dict:
    spec: dict = {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"],
                                                          "resources": ["deployments"]}]},
                  "validations": [{"expression": expression, **validation}]}
    if param_kind:
        spec["paramKind"] = param_kind
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": spec}


def binding(name: str, policy_name: str, namespace: str, actions: list[str], **extra) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": actions,
                     "matchResources": {"namespaceSelector": {"matchLabels": {"vap-test": namespace}}}, **extra}}


def deployment(name: str, replicas: int) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_a_policy_refuses_a_deployment_over_five_replicas(api: Endpoint, namespace: str) -> None:
    create(api, f"{GROUP}/validatingadmissionpolicies", policy(f"{namespace}-max"))
    create(api, f"{GROUP}/validatingadmissionpolicybindings", binding(f"{namespace}-b", f"{namespace}-max",
                                                                      namespace, ["Deny"]))
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    refused = api.request("POST", deployments, json=deployment("big", 6))
    assert refused.status_code == 422, refused.text
    assert refused.json()["reason"] == "Invalid"
    assert refused.json()["message"] == (
        f'deployments.apps "big" is forbidden: ValidatingAdmissionPolicy \'{namespace}-max\' with binding '
        f"'{namespace}-b' denied request: failed expression: object.spec.replicas <= 5")
    create(api, deployments, deployment("small", 5))
    scaled = api.request("PATCH", f"{deployments}/small", json={"spec": {"replicas": 7}},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert scaled.status_code == 422, "an update is checked too"
    elsewhere = api.request("POST", "/apis/apps/v1/namespaces/default/deployments", json=deployment(namespace, 6))
    assert elsewhere.status_code == 201, "the binding's namespaceSelector leaves other namespaces alone"
    api.request("DELETE", f"/apis/apps/v1/namespaces/default/deployments/{namespace}")
    table = api.request("GET", f"{GROUP}/validatingadmissionpolicies/{namespace}-max", headers={"Accept": TABLE})
    assert [c["name"] for c in table.json()["columnDefinitions"]] == ["Name", "Validations", "ParamKind", "Age"]
    assert table.json()["rows"][0]["cells"][1:3] == [1, "<unset>"]


def test_warn_and_params(api: Endpoint, namespace: str) -> None:
    create(api, f"/api/v1/namespaces/{namespace}/configmaps",
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"max": "2"}})
    create(api, f"{GROUP}/validatingadmissionpolicies",
           policy(f"{namespace}-param", param_kind={"apiVersion": "v1", "kind": "ConfigMap"},
                  expression="object.spec.replicas <= int(params.data.max)",
                  messageExpression="'at most ' + params.data.max + ' replicas'"))
    create(api, f"{GROUP}/validatingadmissionpolicybindings",
           binding(f"{namespace}-warn", f"{namespace}-param", namespace, ["Warn", "Audit"],
                   paramRef={"name": "limits", "parameterNotFoundAction": "Deny"}))
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    warned = api.request("POST", deployments, json=deployment("three", 3))
    assert warned.status_code == 201, warned.text
    assert warned.headers["Warning"] == (f"299 - \"Validation failed for ValidatingAdmissionPolicy '{namespace}-param'"
                                         f" with binding '{namespace}-warn': at most 2 replicas\"")
    api.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/limits")
    create(api, f"{GROUP}/validatingadmissionpolicybindings",
           binding(f"{namespace}-deny", f"{namespace}-param", namespace, ["Deny"],
                   paramRef={"name": "limits", "parameterNotFoundAction": "Deny"}))
    refused = api.request("POST", deployments, json=deployment("one", 1))
    assert refused.status_code == 422
    assert refused.json()["message"].endswith(
        "denied request: no params found for policy binding with `Deny` parameterNotFoundAction")


def test_bindings_are_validated(api: Endpoint) -> None:
    body = binding("bad", "", "x", ["Deny", "Warn"])
    response = api.request("POST", f"{GROUP}/validatingadmissionpolicybindings", json=body)
    assert response.status_code == 422
    assert [c["field"] for c in response.json()["details"]["causes"]] == ["spec.policyName", "spec.validationActions"]
