"""The garbage collector, the namespace controller, the service account controller and the root CA
publisher against a real API server on 127.0.0.1 (the controller manager with every controller): deleting
an owner ConfigMap with each propagation policy; deleting a namespace holding configmaps, secrets,
services, a deployment and pods (unbound: no kubelet) → the namespace is gone; a new namespace gets its
`default` ServiceAccount and `kube-root-ca.crt` holding the server's CA."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from control.client.errors import NotFound
from control.client.rest import RESTClient
from control.controllers.rootcacertpublisher.controller import DESCRIPTION
from tests.support.apiserver import Endpoint
from tests.support.controlplane import new_namespace, server_with_controllers
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RESTClient, Endpoint]]:
    with server_with_controllers(str(tmp_path_factory.mktemp("apiserver"))) as served:
        yield served


def get(client: RESTClient, path: str) -> dict[str, Any] | None:
    try:
        return client.get(path)
    except NotFound:
        return None


def configmap(client: RESTClient, ns: str, name: str, *owners: dict[str, Any],
              finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"],
             **({"blockOwnerDeletion": True} if block else {})} for o, block in owners]
    return client.create(f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": refs, "finalizers": list(finalizers)}})


def settle() -> None:
    """Give the collector's informers a moment to see what was just made (as they would long before a
    user deletes an owner)."""
    time.sleep(1.0)


def test_background_deletes_dependents(server):
    client, _ = server
    ns = new_namespace(client)
    owner = configmap(client, ns, "owner")
    configmap(client, ns, "dep", (owner, False))
    settle()
    client.delete(f"/api/v1/namespaces/{ns}/configmaps/owner", propagation_policy="Background")
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}/configmaps/dep") is None, 30)


def test_orphan_keeps_dependents_without_the_reference(server):
    client, _ = server
    ns = new_namespace(client)
    owner = configmap(client, ns, "owner")
    configmap(client, ns, "dep", (owner, True))
    settle()
    deleted = client.delete(f"/api/v1/namespaces/{ns}/configmaps/owner", propagation_policy="Orphan")
    assert deleted["metadata"]["finalizers"] == ["orphan"]
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}/configmaps/owner") is None, 30)
    dep = client.get(f"/api/v1/namespaces/{ns}/configmaps/dep")
    assert not dep["metadata"].get("ownerReferences")


def test_foreground_waits_for_blocking_dependents(server):
    client, _ = server
    ns = new_namespace(client)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    owner = configmap(client, ns, "owner")
    configmap(client, ns, "blocking", (owner, True), finalizers=("example.com/hold",))
    configmap(client, ns, "free", (owner, False))
    settle()
    client.delete(f"{path}/owner", propagation_policy="Foreground")
    assert wait_until(lambda: get(client, f"{path}/free") is None, 30)
    assert wait_until(lambda: (get(client, f"{path}/blocking") or {}).get("metadata", {}).get("deletionTimestamp"), 30)
    held = client.get(f"{path}/owner")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == ["foregroundDeletion"]
    client.patch(f"{path}/blocking", {"metadata": {"finalizers": None}})
    assert wait_until(lambda: get(client, f"{path}/owner") is None, 30)


def test_deleting_a_namespace_deletes_its_content_then_the_namespace(server):
    client, _ = server
    ns = new_namespace(client)
    base = f"/api/v1/namespaces/{ns}"
    client.create(f"{base}/configmaps", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    client.create(f"{base}/secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    client.create(f"{base}/services", {"metadata": {"name": "svc"},
                                       "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    labels = {"app": "x"}
    client.create(f"/apis/apps/v1/namespaces/{ns}/deployments", {
        "metadata": {"name": "d"}, "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                                            "template": {"metadata": {"labels": labels}, "spec": {
                                                "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}}}})
    for i in range(3):
        client.create(f"{base}/pods", {"metadata": {"name": f"p{i}", "labels": labels},
                                       "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    started = time.monotonic()
    client.delete(f"/api/v1/namespaces/{ns}")
    terminating = client.get(f"/api/v1/namespaces/{ns}")
    assert terminating["status"]["phase"] == "Terminating"
    # 5 s namespaceDeletionGracePeriod, then the pods' 30 s grace estimate: the next look is 16 s later
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}") is None, 60, interval=0.5)
    assert time.monotonic() - started < 60
    for path in (f"{base}/configmaps", f"{base}/secrets", f"{base}/services", f"{base}/pods",
                 f"/apis/apps/v1/namespaces/{ns}/deployments"):
        assert client.list(path)["items"] == []


def test_namespace_conditions_while_content_remains(server):
    client, _ = server
    ns = new_namespace(client)
    configmap(client, ns, "held", finalizers=("example.com/hold",))
    client.delete(f"/api/v1/namespaces/{ns}")

    def condition(kind: str) -> dict[str, Any] | None:
        conditions = (client.get(f"/api/v1/namespaces/{ns}").get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind and c["status"] == "True"), None)

    remaining = wait_until(lambda: condition("NamespaceFinalizersRemaining"), 30)
    assert remaining["reason"] == "SomeFinalizersRemain"
    assert remaining["message"] == ("Some content in the namespace has finalizers remaining: "
                                    "example.com/hold in 1 resource instances")
    assert condition("NamespaceContentRemaining")["message"] == (
        "Some resources are remaining: configmaps. has 1 resource instances")
    client.patch(f"/api/v1/namespaces/{ns}/configmaps/held", {"metadata": {"finalizers": None}})
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}") is None, 60, interval=0.5)


def test_new_namespace_gets_default_service_account_and_root_ca(server):
    client, endpoint = server
    ns = new_namespace(client)
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 30)
    published = wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"), 30)
    assert endpoint.ca is not None
    with open(endpoint.ca, encoding="utf-8") as handle:
        assert published["data"] == {"ca.crt": handle.read()}
    assert published["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION
    client.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    assert wait_until(lambda: get(client, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 30)
