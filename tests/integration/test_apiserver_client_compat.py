"""What real clients found, against a real API server on 127.0.0.1: discovery with a trailing
slash, Secret stringData merged into data, status fields Go never omits, the namespace name label,
StatefulSet mounts of claim templates, and a watch client going away without an error in the log."""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import struct
import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client, config, watch

from control.apimachinery.meta import group_version
from control.apiserver.registry.store import encode
from control.apiserver.resources import by_path, storage_key
from tests.support.apiserver import Endpoint, ThreadServer, running_server

ZERO_STATUS = {
    ("apps/v1", "replicasets"): {"replicas": 0},
    ("v1", "replicationcontrollers"): {"replicas": 0},
    ("apps/v1", "statefulsets"): {"replicas": 0, "availableReplicas": 0},
    ("apps/v1", "daemonsets"): {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                                "numberReady": 0},
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


@pytest.fixture
def ns(api: Endpoint) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def collection(api_version: str, plural: str, ns: str) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{base}/namespaces/{ns}/{plural}"


def workload(api_version: str, plural: str, name: str) -> dict:
    kind = {"replicasets": "ReplicaSet", "replicationcontrollers": "ReplicationController",
            "statefulsets": "StatefulSet", "daemonsets": "DaemonSet"}[plural]
    labels = {"app": name}
    spec: dict = {"template": {"metadata": {"labels": labels},
                               "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}}}
    spec["selector"] = labels if plural == "replicationcontrollers" else {"matchLabels": labels}
    if plural == "statefulsets":
        spec["serviceName"] = name
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("path", ["/version", "/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"])
def test_discovery_answers_with_and_without_a_trailing_slash(api, path):
    plain, slashed = api.request("GET", path), api.request("GET", path + "/")
    assert plain.status_code == slashed.status_code == 200
    assert plain.json() == slashed.json()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_secret_string_data_is_merged_into_data_on_create_update_and_patch(api, ns):
    path = f"/api/v1/namespaces/{ns}/secrets"
    created = api.request("POST", path, json={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"kept": b64("old"), "shared": b64("from-data")},
        "stringData": {"shared": "from-stringData", "plain": "text"}})
    assert created.status_code == 201, created.text
    body = created.json()
    assert "stringData" not in body
    assert body["data"] == {"kept": b64("old"), "shared": b64("from-stringData"), "plain": b64("text")}
    assert api.request("GET", f"{path}/s").json()["data"] == body["data"]

    body["stringData"] = {"plain": "changed"}
    updated = api.request("PUT", f"{path}/s", json=body)
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"]["plain"] == b64("changed") and "stringData" not in updated.json()

    patched = api.request("PATCH", f"{path}/s", data=json.dumps({"stringData": {"added": "by-patch"}}),
                          headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["added"] == b64("by-patch") and "stringData" not in patched.json()

    refused = api.request("POST", path, json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"},
                                               "stringData": {"n": 1}})
    assert refused.status_code == 422
    assert refused.json()["details"]["causes"][0]["field"].startswith("stringData")


@pytest.mark.parametrize("api_version,plural", list(ZERO_STATUS))
def test_workload_status_carries_go_zero_values_on_create_get_list_and_watch(api, ns, api_version, plural):
    path = collection(api_version, plural, ns)
    expected = ZERO_STATUS[(api_version, plural)]
    watch = api.request("GET", f"{path}?watch=1&timeoutSeconds=5", stream=True, timeout=10)
    created = api.request("POST", path, json=workload(api_version, plural, "w"))
    assert created.status_code == 201, created.text
    assert created.json()["status"] == expected
    assert api.request("GET", f"{path}/w").json()["status"] == expected
    assert [item["status"] for item in api.request("GET", path).json()["items"]] == [expected]
    with watch:
        event = json.loads(next(line for line in watch.iter_lines() if line))
    assert event["type"] == "ADDED" and event["object"]["status"] == expected
    # A status writer that sends none of them gets them back too.
    current = created.json()
    current["status"] = {}
    written = api.request("PUT", f"{path}/w/status", json=current)
    assert written.status_code == 200, written.text
    assert written.json()["status"] == expected


def test_a_service_status_always_has_a_load_balancer_object(api, ns):
    created = api.request("POST", f"/api/v1/namespaces/{ns}/services", json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80}]}})
    assert created.status_code == 201, created.text
    assert created.json()["status"] == {"loadBalancer": {}}


def test_the_official_client_reads_the_workloads_as_typed_objects(api, ns):
    for api_version, plural in ZERO_STATUS:
        assert api.request("POST", collection(api_version, plural, ns),
                           json=workload(api_version, plural, f"typed-{plural[:-1]}")).status_code == 201
    api_client = config.new_client_from_config(config_file=api.kubeconfig)
    try:
        apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
        assert apps.read_namespaced_replica_set("typed-replicaset", ns).status.replicas == 0
        assert core.read_namespaced_replication_controller("typed-replicationcontroller", ns).status.replicas == 0
        assert apps.read_namespaced_stateful_set("typed-statefulset", ns).status.replicas == 0
        assert apps.read_namespaced_daemon_set("typed-daemonset", ns).status.number_ready == 0
        assert len(apps.list_namespaced_daemon_set(ns).items) == 1
        assert len(apps.list_namespaced_replica_set(ns).items) == 1
    finally:
        api_client.close()


def test_every_namespace_carries_its_name_label_and_gets_it_back(api):
    name = f"t-{uuid.uuid4().hex[:8]}"
    created = api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name, "labels": {"team": "a"}}})
    assert created.status_code == 201
    assert created.json()["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": name}
    body = created.json()
    body["metadata"]["labels"] = {"kubernetes.io/metadata.name": "forged"}
    updated = api.request("PUT", f"/api/v1/namespaces/{name}", json=body)
    assert updated.status_code == 200, updated.text
    assert updated.json()["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}


def test_a_statefulset_container_may_mount_a_claim_template(api, ns):
    path = collection("apps/v1", "statefulsets", ns)
    body = workload("apps/v1", "statefulsets", "db")
    body["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    assert api.request("POST", path, json=body).status_code == 201
    body["metadata"]["name"] = "db2"
    body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "nope", "mountPath": "/data"}]
    refused = api.request("POST", path, json=body)
    assert refused.status_code == 422
    assert "not found in `spec.volumes`" in refused.text


def test_a_watch_client_going_away_is_not_an_error(api, ns, caplog):
    caplog.set_level(logging.DEBUG, logger="control.apiserver")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    host, port = api.url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=api.ca)
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET {path}?watch=1 HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {api.token}\r\n\r\n"
                    .encode())
        assert tls.recv(4096).startswith(b"HTTP/1.1 200")
        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    time.sleep(0.5)  # the server has seen the connection go before the next event is written
    for i in range(20):  # writes into the closed stream
        api.request("POST", path, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
    time.sleep(1)
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_objects_stored_without_the_zero_values_read_with_them(tmp_path):
    """An object in storage that lacks them (stored before the rule, or written past the strategies) gets
    them on every way out — get, list, and a watch event — so the official client's typed models, which
    require status.replicas, read it (the strategies' `decorate`, upstream's Store.Decorator)."""
    server = ThreadServer(str(tmp_path))
    endpoint = server.start()
    api_client = config.new_client_from_config(config_file=endpoint.kubeconfig)
    try:
        registry = server.server.registry
        assert registry is not None
        ns = f"t-{uuid.uuid4().hex[:8]}"
        assert endpoint.request("POST", "/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
        for api_version, plural, reader, lister in (
                ("apps/v1", "replicasets", apps.read_namespaced_replica_set, apps.list_namespaced_replica_set),
                ("v1", "replicationcontrollers", core.read_namespaced_replication_controller,
                 core.list_namespaced_replication_controller)):
            legacy = workload(api_version, plural, "legacy")
            legacy["metadata"].update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp="2024-01-01T00:00:00Z")
            legacy["status"] = {}
            resource = by_path(*group_version(api_version), plural)
            assert resource is not None
            key = storage_key(resource, ns, "legacy")
            record = registry.storage.create(key, encode(legacy))
            assert reader("legacy", ns).status.replicas == 0
            listed = lister(ns)
            assert [item.status.replicas for item in listed.items] == [0]
            legacy["metadata"]["labels"] = {"changed": "yes"}
            registry.storage.update(key, encode(legacy), expected_revision=record.mod_revision)
            events = list(watch.Watch().stream(lister, ns, resource_version=listed.metadata.resource_version,
                                               timeout_seconds=2))
            assert [(e["type"], e["object"].status.replicas) for e in events] == [("MODIFIED", 0)]
    finally:
        api_client.close()
        server.stop()
