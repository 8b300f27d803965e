"""ResourceQuota and PodDisruptionBudget against a real API server on 127.0.0.1 with the controller manager: the quota
controller keeps status.used true as pods and claims come and go, and admission refuses what exceeds the quota with
upstream's 403 (claims counted by storage and StorageClass alike in both); the disruption controller computes a
PDB's status, and pods/eviction deletes a pod the budget allows (201, the PDB charged) and refuses one it does not
(429 with upstream's message and the DisruptionBudget cause); a pod under two PDBs is a 500; a Pending pod is
evicted without a PDB check, also with kubectl 1.20's policy/v1beta1 body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from control.client.errors import Conflict, NotFound
from control.client.rest import RESTClient
from tests.support.apiserver import Endpoint
from tests.support.controlplane import new_namespace, server_with_controllers
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RESTClient, Endpoint]]:
    with server_with_controllers(str(tmp_path_factory.mktemp("apiserver"))) as served:
        yield served


def make_pod(client: RESTClient, ns: str, name: str, *, running: bool = True) -> dict[str, Any]:
    client.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    if not running:
        return client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    for _ in range(10):  # as a kubelet would; re-read when the scheduler wrote meanwhile
        current = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        current["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        try:
            return client.update(f"/api/v1/namespaces/{ns}/pods/{name}/status", current)
        except Conflict:
            continue
    raise AssertionError("could not write the pod's status")


def quota_used(client: RESTClient, ns: str) -> dict[str, str]:
    return (client.get(f"/api/v1/namespaces/{ns}/resourcequotas/q").get("status") or {}).get("used") or {}


def evict(endpoint: Endpoint, ns: str, name: str, api_version: str = "policy/v1") -> Any:
    return endpoint.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", json={
        "apiVersion": api_version, "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})


def pdb_status(client: RESTClient, ns: str, name: str = "pdb") -> dict[str, Any]:
    return client.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}").get("status") or {}


def gone(client: RESTClient, ns: str, name: str) -> bool:
    try:
        pod = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    except NotFound:
        return True
    return bool(pod["metadata"].get("deletionTimestamp"))


def test_quota_status_used_tracks_pods_and_admission_refuses_the_excess(server):
    client, endpoint = server
    ns = new_namespace(client)
    client.create(f"/api/v1/namespaces/{ns}/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "2", "configmaps": "5"}}})
    assert wait_until(lambda: quota_used(client, ns).get("pods") == "0", timeout=10)
    status = client.get(f"/api/v1/namespaces/{ns}/resourcequotas/q")["status"]
    assert status["hard"] == {"pods": "2", "configmaps": "5"}
    assert int(status["used"]["configmaps"]) >= 0  # kube-root-ca.crt may or may not be published yet

    make_pod(client, ns, "a", running=False)
    make_pod(client, ns, "b", running=False)
    assert wait_until(lambda: quota_used(client, ns).get("pods") == "2", timeout=10)
    refused = endpoint.request("POST", f"/api/v1/namespaces/{ns}/pods", json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"},
        "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    assert refused.status_code == 403
    assert refused.json()["message"] == ('pods "c" is forbidden: exceeded quota: q, requested: pods=1, '
                                         'used: pods=2, limited: pods=2')

    client.delete(f"/api/v1/namespaces/{ns}/pods/b", grace_period_seconds=0)
    assert wait_until(lambda: quota_used(client, ns).get("pods") == "1", timeout=10)
    make_pod(client, ns, "c", running=False)
    assert wait_until(lambda: quota_used(client, ns).get("pods") == "2", timeout=10)


def test_claims_count_by_storage_and_class_alike_in_admission_and_the_controller(server):
    """A claim naming no class gets the default `local-path` before quota admission counts it, so the
    per-class limit holds it; the controller's status.used counts the stored claims the same way."""
    client, endpoint = server
    ns = new_namespace(client)
    local = "local-path.storageclass.storage.k8s.io/"
    hard = {"persistentvolumeclaims": "3", "requests.storage": "10Gi", local + "requests.storage": "2Gi",
            local + "persistentvolumeclaims": "2"}
    client.create(f"/api/v1/namespaces/{ns}/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}})
    assert wait_until(lambda: quota_used(client, ns).get("requests.storage") == "0", timeout=10)

    def claim(name: str, size: str, storage_class: str | None = None) -> Any:
        spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
        if storage_class is not None:
            spec["storageClassName"] = storage_class
        return endpoint.request("POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", json={
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec})

    assert claim("a", "1Gi").status_code == 201
    assert claim("b", "1Gi", "other").status_code == 201
    refused = claim("c", "1536Mi")
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        f'persistentvolumeclaims "c" is forbidden: exceeded quota: q, requested: {local}requests.storage=1536Mi, '
        f"used: {local}requests.storage=1Gi, limited: {local}requests.storage=2Gi")
    assert wait_until(lambda: quota_used(client, ns) == {
        "persistentvolumeclaims": "2", "requests.storage": "2Gi", local + "requests.storage": "1Gi",
        local + "persistentvolumeclaims": "1"}, timeout=10), quota_used(client, ns)

    client.delete(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/b")
    assert wait_until(lambda: quota_used(client, ns).get("requests.storage") == "1Gi", timeout=10)
    assert claim("c", "1Gi").status_code == 201
    assert wait_until(lambda: quota_used(client, ns).get(local + "requests.storage") == "2Gi", timeout=10)


def test_eviction_honours_the_pod_disruption_budget(server):
    client, endpoint = server
    ns = new_namespace(client)
    for name in ("a", "b", "c"):
        make_pod(client, ns, name)
    client.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    assert wait_until(lambda: pdb_status(client, ns).get("disruptionsAllowed") == 1, timeout=10)
    status = pdb_status(client, ns)
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"],
            status["observedGeneration"]) == (3, 2, 3, 1)

    allowed = evict(endpoint, ns, "a")
    assert allowed.status_code == 201, allowed.text
    assert allowed.json()["status"] == "Success"
    assert gone(client, ns, "a")
    charged = pdb_status(client, ns)
    assert charged["disruptionsAllowed"] == 0
    assert wait_until(lambda: pdb_status(client, ns).get("currentHealthy") == 2, timeout=10)

    refused = evict(endpoint, ns, "b")
    assert refused.status_code == 429, refused.text
    body = refused.json()
    assert (body["reason"], body["message"]) == ("TooManyRequests",
                                                 "Cannot evict pod as it would violate the pod's disruption budget.")
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget",
                                          "message": "The disruption budget pdb needs 2 healthy pods and has 2 "
                                                     "currently"}]
    assert not gone(client, ns, "b")


def test_eviction_shortcuts_and_two_budgets(server):
    client, endpoint = server
    ns = new_namespace(client)
    make_pod(client, ns, "pending", running=False)
    make_pod(client, ns, "running")
    for name in ("one", "two"):
        client.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}})
    two = evict(endpoint, ns, "running")
    assert two.status_code == 500
    assert two.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
                          "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                                     "subresource does not support."}
    pending = evict(endpoint, ns, "pending", api_version="policy/v1beta1")  # kubectl 1.20's body
    assert pending.status_code == 201, pending.text
    assert gone(client, ns, "pending")
    mismatch = endpoint.request("POST", f"/api/v1/namespaces/{ns}/pods/running/eviction", json={
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}})
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == "name in URL does not match name in Eviction object"


def test_discovery_and_tables(server):
    client, endpoint = server
    core = endpoint.request("GET", "/api/v1").json()
    eviction = next(r for r in core["resources"] if r["name"] == "pods/eviction")
    assert (eviction["group"], eviction["version"], eviction["kind"], eviction["verbs"]) == (
        "policy", "v1", "Eviction", ["create"])
    policy = endpoint.request("GET", "/apis/policy/v1").json()
    pdbs = next(r for r in policy["resources"] if r["name"] == "poddisruptionbudgets")
    assert pdbs["shortNames"] == ["pdb"] and pdbs["kind"] == "PodDisruptionBudget"
    ns = new_namespace(client)
    created = client.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
        "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 9}})
    assert {k: created["status"][k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                               "expectedPods")} == {"disruptionsAllowed": 0, "currentHealthy": 0,
                                                                    "desiredHealthy": 0, "expectedPods": 0}
    table = endpoint.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
                             headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Min Available", "Max Unavailable",
                                                               "Allowed Disruptions", "Age"]
    assert table["rows"][0]["cells"][:4] == ["pdb", "N/A", "50%", 0]
    both = endpoint.request("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", json={
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "both"},
        "spec": {"minAvailable": 1, "maxUnavailable": "150%"}})
    assert both.status_code == 422
    causes = {(c["field"], c["message"].rsplit(": ", 1)[-1]) for c in both.json()["details"]["causes"]}
    assert causes == {("spec", "minAvailable and maxUnavailable cannot be both set"),
                      ("spec.maxUnavailable", "must not be greater than 100%")}
