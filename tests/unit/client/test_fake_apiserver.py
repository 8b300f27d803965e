"""The shared fake API server (tests/support/fake_apiserver.py) keeps the API server's contract that the
controller and client tests rely on: errors as RESTClient raises them, one resourceVersion, status
subresource, selectors, watch from a resourceVersion, graceful and finalizer deletion, and a real
InformerFactory running against it."""

from __future__ import annotations

import threading

import pytest

from control.client.errors import Conflict, Gone, NotFound
from control.client.informer import InformerFactory
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

PODS = "/api/v1/namespaces/ns/pods"


def pod(name: str, *, labels: dict[str, str] | None = None, node: str = "") -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"nodeName": node, "containers": []}}


def test_create_get_update_conflict_and_errors() -> None:
    api = FakeAPIServer()
    client = api.client()
    created = client.create(PODS, pod("a"))
    assert created["kind"] == "Pod" and created["metadata"]["namespace"] == "ns" and created["metadata"]["uid"]
    assert created["metadata"]["generation"] == 1
    with pytest.raises(Conflict) as taken:
        client.create(PODS, pod("a"))
    assert taken.value.reason == "AlreadyExists"
    with pytest.raises(NotFound):
        client.get(f"{PODS}/b")
    updated = client.update(f"{PODS}/a", {**created, "spec": {"nodeName": "n1", "containers": []}})
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["metadata"]["generation"] == 2
    with pytest.raises(Conflict) as stale:
        client.update(f"{PODS}/a", created)
    assert stale.value.reason == "Conflict"
    assert client.update(f"{PODS}/a", updated) == updated  # nothing changed: not written


def test_status_subresource_and_patches() -> None:
    client = FakeAPIServer().client()
    created = client.create(PODS, pod("a"))
    with_status = client.update_status(f"{PODS}/a", {**created, "status": {"phase": "Running"}})
    assert with_status["status"] == {"phase": "Running"}
    ignored = client.update(f"{PODS}/a", {**with_status, "status": {"phase": "Failed"}})
    assert ignored["status"] == {"phase": "Running"}  # the object's update keeps the status
    patched = client.patch(f"{PODS}/a", {"metadata": {"labels": {"x": "1"}}})
    assert patched["metadata"]["labels"] == {"x": "1"}
    status = client.patch(f"{PODS}/a/status", {"status": {"phase": "Succeeded"}, "metadata": {"labels": {}}})
    assert status["status"]["phase"] == "Succeeded" and status["metadata"]["labels"] == {"x": "1"}


def test_selectors_and_cluster_scoped_paths() -> None:
    client = FakeAPIServer().client()
    client.create(PODS, pod("a", labels={"app": "web"}, node="n1"))
    client.create(PODS, pod("b", labels={"app": "db"}, node="n2"))
    client.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
    names = lambda listing: [item["metadata"]["name"] for item in listing["items"]]  # noqa: E731
    assert names(client.list("/api/v1/pods", params={"labelSelector": "app in (web)"})) == ["a"]
    assert names(client.list(PODS, params={"fieldSelector": "spec.nodeName=n2"})) == ["b"]
    assert client.get("/api/v1/nodes/n1")["metadata"].get("namespace") is None


def test_delete_preconditions_graceful_pods_and_finalizers() -> None:
    client = FakeAPIServer().client()
    on_node = client.create(PODS, pod("a", node="n1"))
    with pytest.raises(Conflict):
        client.delete(f"{PODS}/a", grace_period_seconds=0, preconditions={"uid": "other"})
    marked = client.delete(f"{PODS}/a")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    client.delete(f"{PODS}/a", grace_period_seconds=0, preconditions={"uid": on_node["metadata"]["uid"]})
    with pytest.raises(NotFound):
        client.get(f"{PODS}/a")
    kept = client.create("/api/v1/namespaces/ns/configmaps", {"metadata": {"name": "c", "finalizers": ["x"]}})
    client.delete("/api/v1/namespaces/ns/configmaps/c")
    assert client.get("/api/v1/namespaces/ns/configmaps/c")["metadata"]["deletionTimestamp"]
    client.patch("/api/v1/namespaces/ns/configmaps/c", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFound):
        client.get("/api/v1/namespaces/ns/configmaps/c")
    assert kept["metadata"]["finalizers"] == ["x"]


def test_watch_from_a_resource_version_with_selector_transitions_and_gone() -> None:
    api = FakeAPIServer()
    client = api.client()
    first = client.create(PODS, pod("a", labels={"app": "web"}))
    start = first["metadata"]["resourceVersion"]
    client.patch(f"{PODS}/a", {"metadata": {"labels": {"app": "db"}}})  # leaves the selector
    client.patch(f"{PODS}/a", {"metadata": {"labels": {"app": "web"}}})  # comes back
    client.delete(f"{PODS}/a")
    stop = threading.Event()
    events = client.watch(PODS, resource_version=start, params={"labelSelector": "app=web"}, stop=stop)
    seen = [next(events).type for _ in range(3)]
    stop.set()
    assert seen == ["DELETED", "ADDED", "DELETED"]
    api.compact()
    with pytest.raises(Gone):
        client.watch(PODS, resource_version=start, stop=stop)


def test_a_real_informer_factory_lists_and_watches_it() -> None:
    api = FakeAPIServer()
    client = api.client()
    client.create(PODS, pod("a"))
    factory = InformerFactory(api.client("informer"))
    informer = factory.informer("v1", "pods")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_sync(5)
        assert [p["metadata"]["name"] for p in informer.lister().list("ns")] == ["a"]
        client.create(PODS, pod("b"))
        client.delete(f"{PODS}/a")
        assert wait_until(lambda: [p["metadata"]["name"] for p in informer.lister().list("ns")] == ["b"])
    finally:
        stop.set()
