"""Input bounds and the admission plugins on the wire, against a real API server on 127.0.0.1: each bomb is
a clear 4xx Status in under a second while the server keeps answering other requests, and nothing of it is
stored; Pod Security refusals and warnings (the `Warning` header kubectl prints) and a LimitRange default."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import requests

from tests.support.apiserver import Endpoint, running_server

NS = "bounds"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        assert endpoint.request("POST", "/api/v1/namespaces", json={"metadata": {"name": NS}}).status_code == 201
        yield endpoint


def bombed(api: Endpoint, bomb: Callable[[], requests.Response]) -> tuple[requests.Response, float]:
    """Send `bomb` while another client keeps reading; returns its answer and how long it took, and checks
    that every read made meanwhile was answered in under a second."""
    stop = threading.Event()
    reads: list[tuple[int, float]] = []

    def read() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {api.token}"
        while not stop.is_set():
            start = time.monotonic()
            code = session.get(api.url + "/api/v1/namespaces/default", verify=api.verify, timeout=10).status_code
            reads.append((code, time.monotonic() - start))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        start = time.monotonic()
        response = bomb()
        took = time.monotonic() - start
    finally:
        stop.set()
        reader.join()
    assert reads and all(code == 200 and seconds < 1.0 for code, seconds in reads), reads
    return response, took


def configmap(api: Endpoint, name: str, **data: str) -> None:
    response = api.request("POST", CONFIGMAPS, json={"metadata": {"name": name}, "data": data})
    assert response.status_code == 201, response.text


def test_a_json_patch_of_10001_operations(api: Endpoint) -> None:
    configmap(api, "ops", a="1")
    operations = [{"op": "add", "path": f"/data/k{i}", "value": "v"} for i in range(10_001)]
    response, took = bombed(api, lambda: api.request(
        "PATCH", f"{CONFIGMAPS}/ops", json=operations, headers={"Content-Type": "application/json-patch+json"}))
    assert response.status_code == 413 and took < 1.0
    assert response.json()["message"] == ("Request entity too large: The allowed maximum operations in a JSON "
                                          "patch is 10000, got 10001")
    assert api.request("GET", f"{CONFIGMAPS}/ops").json()["data"] == {"a": "1"}


def test_a_json_patch_that_copies_its_way_up(api: Endpoint) -> None:
    configmap(api, "copies", a="x" * 1000)
    operations = [{"op": "add", "path": "/metadata/annotations", "value": {"a": ["x" * 1000]}}] + [
        {"op": "copy", "from": "/metadata/annotations/a", "path": "/metadata/annotations/a/-"} for _ in range(30)]
    response, took = bombed(api, lambda: api.request(
        "PATCH", f"{CONFIGMAPS}/copies", json=operations, headers={"Content-Type": "application/json-patch+json"}))
    assert response.status_code == 413 and took < 1.0
    assert "exceeding the limit 3145728" in response.json()["message"]


def test_a_yaml_alias_bomb(api: Endpoint) -> None:
    lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: lol}', 'a0: &a0 ["lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    response, took = bombed(api, lambda: api.request(
        "POST", CONFIGMAPS, data="\n".join(lines).encode(), headers={"Content-Type": "application/yaml"}))
    assert response.status_code == 400 and took < 1.0
    assert response.json()["message"] == "yaml: document contains excessive aliasing"
    assert api.request("GET", f"{CONFIGMAPS}/lol").status_code == 404


def test_a_configmap_with_2_mib_of_data(api: Endpoint) -> None:
    response, took = bombed(api, lambda: api.request(
        "POST", CONFIGMAPS, json={"metadata": {"name": "big"}, "data": {"big": "x" * (2 * 1024 * 1024)}}))
    assert response.status_code == 422 and took < 1.0
    assert response.json()["message"] == ('ConfigMap "big" is invalid: data: Too long: may not be more than '
                                          "1048576 bytes")


def test_a_body_over_3_mib(api: Endpoint) -> None:
    response, took = bombed(api, lambda: api.request(
        "POST", CONFIGMAPS, data=b'{"metadata":{"name":"huge"},"data":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}',
        headers={"Content-Type": "application/json"}))
    assert response.status_code == 413 and took < 1.0


def test_an_object_grown_past_what_storage_takes(api: Endpoint) -> None:
    deployments = f"/apis/apps/v1/namespaces/{NS}/deployments"
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    deployment = {"metadata": {"name": "grown"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
                                                          "template": template}}
    assert api.request("POST", deployments, json=deployment).status_code == 201
    args = ["x" * 1000] * 1700  # 1.7 MB in one patch, under the 3 MiB body limit
    response, took = bombed(api, lambda: api.request(
        "PATCH", f"{deployments}/grown", json={"spec": {"template": {"spec": {"containers": [
            {"name": "c", "args": args}]}}}}, headers={"Content-Type": "application/strategic-merge-patch+json"}))
    assert response.status_code == 413 and took < 1.0
    assert "over the limit of 1572864 bytes" in response.json()["message"]
    stored = api.request("GET", f"{deployments}/grown").json()
    assert "args" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_pod_security_refusal_and_warning(api: Endpoint) -> None:
    labels = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
    for name, label in (("locked", labels), ("warned", {"pod-security.kubernetes.io/warn": "baseline"})):
        assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name, "labels": label}}
                           ).status_code == 201
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1", "securityContext": {"privileged": True}}]}}
    refused = api.request("POST", "/api/v1/namespaces/locked/pods", json=pod)
    assert refused.status_code == 403
    assert refused.json()["message"].startswith(
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set '
        "securityContext.privileged=true)")
    warned = api.request("POST", "/api/v1/namespaces/warned/pods", json=pod)
    assert warned.status_code == 201
    assert warned.headers["Warning"] == ('299 - "would violate PodSecurity \\"baseline:latest\\": privileged '
                                         '(container \\"c\\" must not set securityContext.privileged=true)"')


def test_a_limit_range_default_lands_on_a_pod(api: Endpoint) -> None:
    limits = {"metadata": {"name": "defaults"}, "spec": {"limits": [
        {"type": "Container", "default": {"memory": "128Mi"}, "defaultRequest": {"memory": "64Mi"}}]}}
    assert api.request("POST", f"/api/v1/namespaces/{NS}/limitranges", json=limits).status_code == 201
    pod = {"metadata": {"name": "defaulted"}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    created = api.request("POST", PODS, json=pod).json()
    assert created["spec"]["containers"][0]["resources"] == {"limits": {"memory": "128Mi"},
                                                             "requests": {"memory": "64Mi"}}
    table = api.request("GET", f"/api/v1/namespaces/{NS}/limitranges",
                        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]


def test_the_cluster_default_comes_from_the_admission_configuration_file(tmp_path) -> None:
    config = tmp_path / "admission.yaml"
    config.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
                      "- name: PodSecurity\n  configuration:\n"
                      "    apiVersion: pod-security.admission.config.k8s.io/v1\n"
                      "    kind: PodSecurityConfiguration\n    defaults: {enforce: baseline}\n"
                      "    exemptions: {namespaces: [kube-system]}\n")
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "busybox:1", "securityContext": {"privileged": True}}]}}
    with running_server(str(tmp_path / "server"), admission_config_file=str(config)) as api:
        refused = api.request("POST", "/api/v1/namespaces/default/pods", json=pod)
        assert refused.status_code == 403
        assert 'violates PodSecurity "baseline:latest": privileged' in refused.json()["message"]
        assert api.request("POST", "/api/v1/namespaces/kube-system/pods", json=pod).status_code == 201
