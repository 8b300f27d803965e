"""A client that accepts only `application/vnd.kubernetes.protobuf` (as client-go's protobuf-only
clients do) against a real API server on 127.0.0.1: GET, LIST and create answer the Kubernetes protobuf
envelope, decoding to the JSON answers; errors are protobuf Status; what has no protobuf form is 406; and
a client that lists JSON too still gets JSON."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from control.apiserver.codec import protoencode
from tests.support.apiserver import Endpoint, running_server

PROTOBUF_ONLY = {"Accept": "application/vnd.kubernetes.protobuf"}
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "pb"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "1d"],
                                     "ports": [{"containerPort": 80, "name": "http"}],
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                                     "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}}]}}


def protobuf_answer(response: requests.Response, code: int = 200) -> dict[str, Any]:
    assert response.status_code == code, response.content[:300]
    assert response.headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
    decoded = protoencode.decode_object(response.content)
    assert decoded is not None
    return decoded


def test_get_and_list_pods_answer_protobuf_equal_to_json(api: Endpoint) -> None:
    name = f"pb-{uuid.uuid4().hex[:6]}"
    created = api.request("POST", PODS, json=pod(name))
    assert created.status_code == 201, created.text
    as_json = api.request("GET", f"{PODS}/{name}").json()
    assert protobuf_answer(api.request("GET", f"{PODS}/{name}", headers=PROTOBUF_ONLY)) == as_json
    listed_json = api.request("GET", PODS, params={"labelSelector": "app=pb"}).json()
    listed = protobuf_answer(api.request("GET", PODS, params={"labelSelector": "app=pb"}, headers=PROTOBUF_ONLY))
    assert listed["kind"] == "PodList" and listed["metadata"] == listed_json["metadata"]
    # list items carry no kind/apiVersion in protobuf (runtime.Unknown holds the List's only)
    assert listed["items"] == [{key: value for key, value in item.items() if key not in ("kind", "apiVersion")}
                               for item in listed_json["items"]]
    assert [item["metadata"]["name"] for item in listed["items"]] == [name]


def test_create_and_patch_answer_protobuf(api: Endpoint) -> None:
    name = f"pb-{uuid.uuid4().hex[:6]}"
    created = protobuf_answer(api.request("POST", PODS, json=pod(name), headers=PROTOBUF_ONLY), 201)
    assert created["metadata"]["name"] == name and created["metadata"]["uid"]
    assert created["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}
    assert created["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] == "http"
    patched = protobuf_answer(api.request("PATCH", f"{PODS}/{name}", data='{"metadata":{"labels":{"x":"1"}}}',
                                          headers={**PROTOBUF_ONLY,
                                                   "Content-Type": "application/merge-patch+json"}))
    assert patched["metadata"]["labels"] == {"app": "pb", "x": "1"}
    assert patched == api.request("GET", f"{PODS}/{name}").json()


def test_errors_are_protobuf_status(api: Endpoint) -> None:
    missing = protobuf_answer(api.request("GET", f"{PODS}/nope", headers=PROTOBUF_ONLY), 404)
    assert missing["kind"] == "Status" and missing["reason"] == "NotFound" and missing["code"] == 404
    assert missing["details"] == {"name": "nope", "kind": "pods"}


def test_answers_without_a_protobuf_form_are_406(api: Endpoint) -> None:
    watch = api.request("GET", PODS, params={"watch": "true", "timeoutSeconds": "1"}, headers=PROTOBUF_ONLY)
    assert watch.status_code == 406
    assert watch.json()["message"] == ("only the following media types are accepted: application/json, "
                                       "application/yaml, application/vnd.kubernetes.protobuf")
    table = api.request("GET", PODS, headers={"Accept": "application/vnd.kubernetes.protobuf;as=Table;v=v1;"
                                                        "g=meta.k8s.io"})
    assert table.status_code == 406 and table.json()["reason"] == "NotAcceptable"


@pytest.mark.parametrize("accept", ["application/vnd.kubernetes.protobuf, application/json", "*/*",
                                    "application/vnd.kubernetes.protobuf,*/*"])
def test_a_client_that_accepts_json_gets_json(api: Endpoint, accept: str) -> None:
    response = api.request("GET", PODS, headers={"Accept": accept})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json()["kind"] == "PodList"
