"""HorizontalPodAutoscalers on the wire, against a real API server on 127.0.0.1: autoscaling/v2 stored and
preferred, autoscaling/v1 served as a converted view (what `kubectl autoscale` writes, with kubectl 1.33 and
1.20), upstream's defaults and validation messages, the `kubectl get hpa` columns."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.support.apiserver import Endpoint, running_server

V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        endpoint.request("POST", "/apis/apps/v1/namespaces/default/deployments", json={
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        yield endpoint


def hpa(name: str, **spec) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 3, **spec}}


def test_discovery_prefers_v2_and_serves_v1(api: Endpoint) -> None:
    groups = {g["name"]: g for g in api.request("GET", "/apis").json()["groups"]}
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]
    assert groups["autoscaling"]["preferredVersion"]["version"] == "v2"
    for version in ("v2", "v1"):
        entry = next(r for r in api.request("GET", f"/apis/autoscaling/{version}").json()["resources"]
                     if r["name"] == "horizontalpodautoscalers")
        assert (entry["kind"], entry["shortNames"], entry["categories"]) == ("HorizontalPodAutoscaler", ["hpa"],
                                                                             ["all"])


def test_v2_defaults_and_validation(api: Endpoint) -> None:
    created = api.request("POST", V2, json=hpa("defaults", behavior={"scaleDown": {
        "stabilizationWindowSeconds": 5}})).json()
    spec = created["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"]["scaleUp"] == {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 5, "selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    bad = api.request("POST", V2, json=hpa("bad", minReplicas=4, metrics=[
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}],
        behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 2000}]}}))
    assert bad.status_code == 422
    causes = {(c["field"], c["message"].rsplit(": ", 1)[-1]) for c in bad.json()["details"]["causes"]}
    assert causes >= {
        ("spec.maxReplicas", "must be greater than or equal to `minReplicas`"),
        ("spec.metrics[0].resource.target.averageUtilization",
         "must set either a target raw value or a target utilization"),
        ("spec.behavior.scaleUp.policies[0].value", "must be greater than zero"),
        ("spec.behavior.scaleUp.policies[0].periodSeconds", "must be less than or equal to 1800"),
    }, causes


def test_v1_view_round_trips_through_v2(api: Endpoint) -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "viewed"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}}
    created = api.request("POST", V1, json=v1)
    assert created.status_code == 201, created.text
    assert created.json()["apiVersion"] == "autoscaling/v1"
    assert created.json()["spec"] == {**v1["spec"], "minReplicas": 1}
    stored = api.request("GET", f"{V2}/viewed").json()
    assert stored["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50}}}]
    # a v2-only field survives a v1 read-modify-write through the annotations
    stored["spec"]["metrics"].append({"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": "64Mi"}}})
    assert api.request("PUT", f"{V2}/viewed", json=stored).status_code == 200
    view = api.request("GET", f"{V1}/viewed").json()
    assert "autoscaling.alpha.kubernetes.io/metrics" in view["metadata"]["annotations"]
    view["spec"]["maxReplicas"] = 7
    assert api.request("PUT", f"{V1}/viewed", json=view).status_code == 200
    again = api.request("GET", f"{V2}/viewed").json()
    assert again["spec"]["maxReplicas"] == 7 and len(again["spec"]["metrics"]) == 2
    assert "annotations" not in again["metadata"]
    patched = api.request("PATCH", f"{V1}/viewed", data='{"spec":{"targetCPUUtilizationPercentage":60}}',
                          headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    assert api.request("GET", f"{V2}/viewed").json()["spec"]["metrics"][0]["resource"]["target"][
        "averageUtilization"] == 60
    assert [i["apiVersion"] for i in api.request("GET", V1).json()["items"]] == ["autoscaling/v1"] * len(
        api.request("GET", V2).json()["items"])
    assert api.request("GET", V1, params={"watch": "1"}).status_code == 405
    assert api.request("DELETE", f"{V1}/viewed").status_code == 200
    assert api.request("GET", f"{V2}/viewed").status_code == 404


def test_table_columns(api: Endpoint) -> None:
    api.request("POST", V2, json=hpa("table", minReplicas=2, metrics=[
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
    ]))
    table = api.request("GET", f"{V2}/table", headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Reference", "Targets", "MinPods", "MaxPods",
                                                               "Replicas", "Age"]
    assert table["rows"][0]["cells"][:6] == ["table", "Deployment/web", "cpu: <unknown>/50%, memory: <unknown>/1Gi",
                                             "2", 3, 0]


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_kubectl_autoscale_writes_v1(api: Endpoint, tmp_path: Path, version: str) -> None:
    if not os.access(KUBECTLS[version], os.X_OK):
        pytest.skip(f"kubectl {version} is missing")
    kubectl = Kubectl(KUBECTLS[version], api.kubeconfig, str(tmp_path))
    name = f"web-{version.replace('.', '')}"
    kubectl.run("autoscale", "deployment", "web", f"--name={name}", "--cpu-percent=50", "--min=1", "--max=3")
    stored = api.request("GET", f"{V2}/{name}").json()
    assert stored["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (stored["spec"]["minReplicas"], stored["spec"]["maxReplicas"]) == (1, 3)
    assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
    header, row = kubectl.run("get", "hpa", name).stdout.splitlines()[:2]
    assert header.split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row.split()[:2] == [name, "Deployment/web"]
