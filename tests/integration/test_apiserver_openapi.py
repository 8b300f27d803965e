"""On the wire, against a real server on 127.0.0.1: /openapi/v2 (JSON and protobuf) and /openapi/v3 (index,
`?hash=` URLs, redirects of stale hashes), fieldValidation Ignore/Warn/Strict over JSON and YAML bodies and
patches (Warning headers, 400s, unknown fields never stored), and dryRun=All on every write verb and
subresource storing nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import yaml

from control.apiserver.openapi import gnostic
from tests.support.apiserver import Endpoint, running_server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


@pytest.fixture
def ns(api: Endpoint) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def test_openapi_v2_json_and_protobuf(api):
    as_json = api.request("GET", "/openapi/v2", headers={"Accept": "application/json"})
    assert as_json.status_code == 200 and as_json.headers["Content-Type"].startswith("application/json")
    document = as_json.json()
    assert "io.k8s.api.core.v1.Pod" in document["definitions"]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in document["paths"]
    as_protobuf = api.request("GET", "/openapi/v2", headers={
        "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert as_protobuf.status_code == 200
    top = dict(gnostic.decode_fields(as_protobuf.content))
    assert top[1] == b"2.0" and 8 in top and 9 in top  # swagger, paths, definitions


def test_openapi_v3_index_documents_and_hashes(api):
    index = api.request("GET", "/openapi/v3").json()["paths"]
    url = index["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    current = api.request("GET", url)
    assert current.status_code == 200 and current.headers["Cache-Control"] == "public, immutable"
    document = current.json()
    assert document["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    stale = api.request("GET", "/openapi/v3/api/v1?hash=0123", allow_redirects=False)
    assert stale.status_code == 301 and stale.headers["Location"] == url
    assert api.request("GET", "/openapi/v3/apis/apps/v1").json()["paths"]
    assert api.request("GET", "/openapi/v3/apis/nothing.example.com/v1").status_code == 404


def configmap(name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}, **extra}


def test_field_validation_directives_on_create(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    warned = api.request("POST", path, json=configmap("warn", dta={"x": "y"}))
    assert warned.status_code == 201
    assert warned.headers.get("Warning") == '299 - "unknown field \\"dta\\""'
    assert "dta" not in api.request("GET", f"{path}/warn").json()  # pruned before storage
    strict = api.request("POST", f"{path}?fieldValidation=Strict", json=configmap("strict", dta={}))
    assert strict.status_code == 400
    assert strict.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict '
                                        'decoding error: unknown field "dta"')
    assert api.request("GET", f"{path}/strict").status_code == 404
    ignored = api.request("POST", f"{path}?fieldValidation=Ignore", json=configmap("ignore", dta={}))
    assert ignored.status_code == 201 and "Warning" not in ignored.headers and "dta" not in ignored.json()
    duplicate = api.request("POST", f"{path}?fieldValidation=Strict", headers={"Content-Type": "application/json"},
                            data=b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"d","name":"d"}}')
    assert duplicate.status_code == 400
    assert duplicate.json()["message"].endswith('strict decoding error: duplicate field "metadata.name"')
    in_yaml = api.request("POST", f"{path}?fieldValidation=Strict", headers={"Content-Type": "application/yaml"},
                          data=b"kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: y\ndata: {a: '1', a: '2'}\n")
    assert in_yaml.status_code == 400
    assert in_yaml.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding '
                                         'error: yaml: unmarshal errors:\n  line 5: key "a" already set in map')
    assert api.request("POST", f"{path}?fieldValidation=strict", json=configmap("bad")).status_code == 422


def test_field_validation_on_yaml_update_and_patch(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.request("POST", path, json=configmap("c"))
    current = api.request("GET", f"{path}/c").json()
    current["bogus"] = 1
    put = api.request("PUT", f"{path}/c", data=yaml.safe_dump(current), headers={"Content-Type": "application/yaml"})
    assert put.status_code == 200 and put.headers.get("Warning") == '299 - "unknown field \\"bogus\\""'
    merge = {"Content-Type": "application/merge-patch+json"}
    refused = api.request("PATCH", f"{path}/c?fieldValidation=Strict", headers=merge,
                          data=json.dumps({"data": {"a": "2"}, "metadata": {"nmae": "x"}}))
    assert refused.status_code == 400
    assert refused.json()["message"] == 'strict decoding error: unknown field "metadata.nmae"'
    patched = api.request("PATCH", f"{path}/c", headers=merge, data=json.dumps({"data": {"a": "3"}, "bogus": 2}))
    assert patched.status_code == 200 and patched.json()["data"] == {"a": "3"} and "bogus" not in patched.json()
    assert patched.headers.get("Warning") == '299 - "unknown field \\"bogus\\""'


def test_dry_run_on_every_write_stores_nothing(api, ns):
    pods = f"/api/v1/namespaces/{ns}/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
           "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    assert api.request("POST", f"{pods}?dryRun=All", json=pod).status_code == 201
    assert api.request("GET", f"{pods}/p").status_code == 404
    created = api.request("POST", pods, json=pod).json()
    version = created["metadata"]["resourceVersion"]

    def unchanged() -> None:
        now = api.request("GET", f"{pods}/p").json()
        assert now["metadata"]["resourceVersion"] == version and now["metadata"]["labels"] == {"a": "b"}
        assert "nodeName" not in now["spec"] and "deletionTimestamp" not in now["metadata"]

    changed = json.loads(json.dumps(created))
    changed["metadata"]["labels"] = {"a": "c"}
    writes = [
        ("PUT", f"{pods}/p", {"json": changed}),
        ("PATCH", f"{pods}/p", {"data": '{"metadata":{"labels":{"a":"d"}}}',
                                "headers": {"Content-Type": "application/merge-patch+json"}}),
        ("PUT", f"{pods}/p/status", {"json": {**changed, "status": {"phase": "Running"}}}),
        ("POST", f"{pods}/p/binding", {"json": {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                                                "target": {"kind": "Node", "name": "n1"}}}),
        ("POST", f"{pods}/p/eviction", {"json": {"apiVersion": "policy/v1", "kind": "Eviction",
                                                 "metadata": {"name": "p"}}}),
        ("DELETE", f"{pods}/p", {}),
        ("DELETE", pods, {}),
    ]
    for method, path, kwargs in writes:
        response = api.request(method, f"{path}?dryRun=All", **kwargs)
        assert response.status_code < 300, (method, path, response.text)
        unchanged()
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}},
                                        "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}
    api.request("POST", deployments, json=deployment)
    scaled = api.request("PATCH", f"{deployments}/d/scale?dryRun=All", data='{"spec":{"replicas":5}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert scaled.status_code == 200 and scaled.json()["spec"]["replicas"] == 5
    assert api.request("GET", f"{deployments}/d").json()["spec"]["replicas"] == 1
