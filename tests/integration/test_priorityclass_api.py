"""PriorityClasses on the wire, against a real API server on 127.0.0.1 (upstream scheduling.k8s.io/v1):
discovery with short name `pc`, the two system classes created at start-up and not deletable, validation
and the one-globalDefault rule with upstream's messages, `kubectl get` columns, and the Priority admission
plugin filling a pod's priority (403 for an unknown class)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.apiserver import Endpoint, running_server

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


def pc(name: str, value: int, **extra) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def test_discovery_and_the_system_classes(api: Endpoint) -> None:
    resources = api.request("GET", "/apis/scheduling.k8s.io/v1").json()["resources"]
    entry = next(r for r in resources if r["name"] == "priorityclasses")
    assert (entry["kind"], entry["namespaced"], entry["shortNames"], entry["singularName"]) == \
        ("PriorityClass", False, ["pc"], "priorityclass")
    groups = {g["name"]: g for g in api.request("GET", "/apis").json()["groups"]}
    assert groups["scheduling.k8s.io"]["preferredVersion"]["groupVersion"] == "scheduling.k8s.io/v1"
    table = api.request("GET", PCS, headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Value", "Global-Default", "Age",
                                                               "PreemptionPolicy"]
    rows = {row["cells"][0]: row["cells"] for row in table["rows"]}
    assert rows["system-cluster-critical"][1:3] == [2000000000, False]
    assert rows["system-node-critical"][1:3] == [2000001000, False]
    assert rows["system-node-critical"][4] == "PreemptLowerPriority"
    refused = api.request("DELETE", f"{PCS}/system-cluster-critical")
    assert refused.status_code == 403
    assert refused.json()["message"] == ('priorityclasses.scheduling.k8s.io "system-cluster-critical" is forbidden: '
                                         'this is a system priority class and cannot be deleted')


@pytest.mark.parametrize(("body", "code", "message"), [
    pytest.param(pc("too-big", 1_000_000_001), 422,
                 'PriorityClass.scheduling.k8s.io "too-big" is invalid: value: Forbidden: maximum allowed value of a '
                 'user defined priority is 1000000000', id="too big"),
    pytest.param(pc("system-mine", 1), 422,
                 'PriorityClass.scheduling.k8s.io "system-mine" is invalid: metadata.name: Forbidden: priority class '
                 "names with 'system-' prefix are reserved for system use only. error: system-mine is not a known "
                 "system priority class", id="reserved name"),
])
def test_invalid_classes_are_refused(api: Endpoint, body: dict, code: int, message: str) -> None:
    response = api.request("POST", PCS, json=body)
    assert (response.status_code, response.json()["message"]) == (code, message)


def test_defaults_immutability_one_default_and_pod_admission(api: Endpoint) -> None:
    suffix = uuid.uuid4().hex[:6]
    created = api.request("POST", PCS, json=pc(f"batch-{suffix}", -5, globalDefault=True)).json()
    assert created["preemptionPolicy"] == "PreemptLowerPriority"
    try:
        second = api.request("POST", PCS, json=pc(f"other-{suffix}", 5, globalDefault=True))
        assert (second.status_code, second.json()["message"]) == \
            (403, f'priorityclasses.scheduling.k8s.io "other-{suffix}" is forbidden: PriorityClass batch-{suffix} '
                  'is already marked as default. Only one default can exist')
        changed = api.request("PATCH", f"{PCS}/batch-{suffix}", json={"value": 6},
                              headers={"Content-Type": "application/merge-patch+json"})
        assert (changed.status_code, changed.json()["message"]) == \
            (422, f'PriorityClass.scheduling.k8s.io "batch-{suffix}" is invalid: value: Forbidden: may not be '
                  'changed in an update.')
        ns = f"t-{suffix}"
        assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
        spec = api.request("POST", f"/api/v1/namespaces/{ns}/pods", json=pod).json()["spec"]
        assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == \
            (f"batch-{suffix}", -5, "PreemptLowerPriority")
        critical = {**pod, "metadata": {"name": "q"},
                    "spec": {**pod["spec"], "priorityClassName": "system-node-critical"}}
        assert api.request("POST", f"/api/v1/namespaces/{ns}/pods", json=critical).json()["spec"]["priority"] == \
            2000001000
        unknown = {**pod, "metadata": {"name": "r"}, "spec": {**pod["spec"], "priorityClassName": "gold"}}
        refused = api.request("POST", f"/api/v1/namespaces/{ns}/pods", json=unknown)
        assert (refused.status_code, refused.json()["reason"], refused.json()["message"]) == \
            (403, "Forbidden", 'pods "r" is forbidden: no PriorityClass with name gold was found')
    finally:
        assert api.request("DELETE", f"{PCS}/batch-{suffix}").status_code == 200
