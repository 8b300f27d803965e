"""The namespace controller and the garbage collector on the shared `up --nodes 3`, through the real
kubectl 1.33: `kubectl delete namespace` of a namespace full of objects, running pods included,
returns once the namespace is gone, within a bound; `kubectl delete --cascade=orphan` leaves the
dependents without the reference; `kubectl delete --cascade=foreground` returns only after the dependents
(a running pod with blockOwnerDeletion) are gone; the default cascade (background) takes them too.

Every test works in namespaces of its own (`sktest-nsgc-…`), deleted at teardown even on failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from control.client.errors import NotFound
from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(300)
NAMESPACE_GONE_BOUND = 90.0  # seconds: 5 s deletion grace + pod termination + the retries


@pytest.fixture
def kubectl(workload_cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    return Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(cache))


def own_namespace(client: RESTClient, name: str, cleanup: Callable) -> str:
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def remove() -> None:
        try:
            for pod in client.list(f"/api/v1/namespaces/{name}/pods")["items"]:
                client.delete(f"/api/v1/namespaces/{name}/pods/{pod['metadata']['name']}", grace_period_seconds=0)
            client.delete(f"/api/v1/namespaces/{name}")
        except NotFound:
            pass
    cleanup(remove)
    return name


def get(client: RESTClient, path: str) -> dict[str, Any] | None:
    try:
        return client.get(path)
    except NotFound:
        return None


def sleeper(name: str, owners: list[dict] | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": "nsgc"}}
    if owners:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {
        "terminationGracePeriodSeconds": 2,
        "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                        "command": ["sleep", "3600"]}]}}


def reference(owner: dict, *, block: bool = False) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block}


def test_kubectl_delete_namespace_full_of_objects(workload_cluster: RunningCluster, kubectl: Kubectl,
                                                  run_id: str, cleanup: Callable) -> None:
    client = workload_cluster.client
    ns = own_namespace(client, f"sktest-nsgc-{run_id}", cleanup)
    base = f"/api/v1/namespaces/{ns}"
    for i in range(3):
        client.create(f"{base}/configmaps", {"metadata": {"name": f"c{i}"}, "data": {"k": "v"}})
    client.create(f"{base}/secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    client.create(f"{base}/services", {"metadata": {"name": "svc"},
                                       "spec": {"selector": {"app": "nsgc"}, "ports": [{"port": 80}]}})
    for i in range(3):
        client.create(f"{base}/pods", sleeper(f"p{i}"))
    for i in range(3):
        wait_running(client, f"{base}/pods/p{i}")
    assert wait_for(lambda: get(client, f"{base}/serviceaccounts/default"), 30, "the default ServiceAccount")
    assert wait_for(lambda: get(client, f"{base}/configmaps/kube-root-ca.crt"), 30, "kube-root-ca.crt")

    started = time.monotonic()
    result = kubectl.run("delete", "namespace", ns, timeout=NAMESPACE_GONE_BOUND + 30)
    took = time.monotonic() - started
    assert result.stdout.strip() == f'namespace "{ns}" deleted'
    assert get(client, f"/api/v1/namespaces/{ns}") is None
    assert took < NAMESPACE_GONE_BOUND, took
    for plural in ("pods", "configmaps", "secrets", "services", "serviceaccounts", "endpoints"):
        assert client.list(f"{base}/{plural}")["items"] == [], plural


def test_kubectl_delete_cascade_orphan_foreground_and_background(workload_cluster: RunningCluster, kubectl: Kubectl,
                                                                run_id: str, cleanup: Callable) -> None:
    client = workload_cluster.client
    ns = own_namespace(client, f"sktest-nsgc-{run_id}-own", cleanup)
    cms, pods = f"/api/v1/namespaces/{ns}/configmaps", f"/api/v1/namespaces/{ns}/pods"

    orphaner = client.create(cms, {"metadata": {"name": "orphaner"}})
    client.create(cms, {"metadata": {"name": "kept", "ownerReferences": [reference(orphaner)]}})
    time.sleep(1)  # the collector's informers see the dependent, as they would long before a delete
    kubectl.run("delete", "-n", ns, "configmap", "orphaner", "--cascade=orphan")
    assert get(client, f"{cms}/orphaner") is None  # kubectl waited for it
    assert not client.get(f"{cms}/kept")["metadata"].get("ownerReferences")

    owner = client.create(cms, {"metadata": {"name": "owner"}})
    client.create(pods, sleeper("child", [reference(owner, block=True)]))
    wait_running(client, f"{pods}/child")
    kubectl.run("delete", "-n", ns, "configmap", "owner", "--cascade=foreground", timeout=120)
    assert get(client, f"{cms}/owner") is None
    assert get(client, f"{pods}/child") is None  # foreground: the owner went only after its blocking pod

    owner = client.create(cms, {"metadata": {"name": "owner2"}})
    client.create(pods, sleeper("child2", [reference(owner)]))
    wait_running(client, f"{pods}/child2")
    kubectl.run("delete", "-n", ns, "configmap", "owner2")  # kubectl's default: background
    assert get(client, f"{cms}/owner2") is None
    wait_for(lambda: get(client, f"{pods}/child2") is None, 60, "the background-collected pod gone")
