"""The REST client against a real API server: the admin kubeconfig as written by the server (HTTPS with
its own CA, bearer token), CRUD and error mapping, the three patch types, paging, watch with bookmarks,
410 for a compacted revision, and a watch that rides through a kill -9 and restart of the server."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from control.client import errors
from control.client.paths import resource_path
from control.client.rest import RESTClient, WatchEvent
from control.storage.sqlite import SQLiteStorage
from tests.support.apiserver import Endpoint, ProcessServer, running_server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("client-api")), bookmark_seconds=0.5) as endpoint:
        yield endpoint


@pytest.fixture
def client(api: Endpoint) -> Iterator[RESTClient]:
    rest = RESTClient.from_kubeconfig(api.kubeconfig)
    yield rest
    rest.close()


def new_namespace(client: RESTClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create(resource_path("v1", "namespaces"), {"metadata": {"name": name}})
    return name


@pytest.fixture
def ns(client: RESTClient) -> str:
    return new_namespace(client)


def configmap(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Collector:
    """Runs a watch in a thread and keeps what it yields (or raised)."""

    def __init__(self, client: RESTClient, path: str, **kw: object) -> None:
        self.stop = threading.Event()
        self.events: list[WatchEvent] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(client, path, kw), daemon=True)
        self._thread.start()

    def _run(self, client: RESTClient, path: str, kw: dict) -> None:
        try:
            for event in client.watch(path, stop=self.stop, **kw):
                self.events.append(event)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc

    def changes(self) -> list[tuple[str, str, str]]:
        return [(e.type, e.object["metadata"]["name"], e.object["metadata"]["resourceVersion"])
                for e in self.events if e.type != "BOOKMARK"]

    def wait_for(self, count: int, timeout: float = 20) -> list[tuple[str, str, str]]:
        deadline = time.monotonic() + timeout
        while len(self.changes()) < count and self.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.error is None, self.error
        return self.changes()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(5)
        assert not self._thread.is_alive()


def test_crud_and_error_mapping(client, ns):
    path = resource_path("v1", "configmaps", namespace=ns)
    created = client.create(path, configmap("a", k="1"))
    one = resource_path("v1", "configmaps", namespace=ns, name="a")
    assert client.get(one)["data"] == {"k": "1"}
    updated = client.update(one, {**created, "data": {"k": "2"}})
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(errors.Conflict) as stale:
        client.update(one, {**created, "data": {"k": "3"}})
    with pytest.raises(errors.Conflict) as exists:
        client.create(path, configmap("a"))
    assert (stale.value.reason, exists.value.reason) == ("Conflict", "AlreadyExists")
    with pytest.raises(errors.Invalid) as invalid:
        client.create(resource_path("v1", "pods", namespace=ns), {"metadata": {"name": "p"}, "spec": {}})
    assert invalid.value.status["details"]["causes"]
    client.delete(one)
    with pytest.raises(errors.NotFound):
        client.get(one)
    with pytest.raises(errors.NotFound):
        client.delete(one)


def test_the_three_patch_types(client, ns):
    path = resource_path("apps/v1", "deployments", namespace=ns)
    client.create(path, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "a", "image": "slimkube/busybox:1"}, {"name": "b", "image": "slimkube/busybox:1"}]}}}})
    one = resource_path("apps/v1", "deployments", namespace=ns, name="d")
    client.patch(one, {"metadata": {"labels": {"x": "1"}}})
    strategic = client.patch(one, {"spec": {"template": {"spec": {"containers": [
        {"name": "b", "image": "slimkube/busybox:2"}]}}}}, patch_type="strategic")
    containers = strategic["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("a", "slimkube/busybox:1"), ("b", "slimkube/busybox:2")]
    final = client.patch(one, [{"op": "replace", "path": "/spec/replicas", "value": 3}], patch_type="json")
    assert final["spec"]["replicas"] == 3 and final["metadata"]["labels"] == {"x": "1"}


def test_list_pages_through_continue(client, ns):
    path = resource_path("v1", "configmaps", namespace=ns)
    for i in range(7):
        client.create(path, configmap(f"c{i}"))
    paged = client.list(path, params={"limit": "3"})
    whole = client.list(path)
    assert [i["metadata"]["name"] for i in paged["items"]] == [f"c{i}" for i in range(7)]
    assert paged["metadata"]["resourceVersion"] == whole["metadata"]["resourceVersion"]
    assert "continue" not in paged["metadata"]


def test_watch_sees_changes_and_bookmarks_then_stops(client, ns):
    path = resource_path("v1", "configmaps", namespace=ns)
    rv = client.list(path)["metadata"]["resourceVersion"]
    watch = Collector(client, path, resource_version=rv)
    try:
        client.create(path, configmap("w"))
        client.patch(resource_path("v1", "configmaps", namespace=ns, name="w"), {"data": {"k": "v"}})
        client.delete(resource_path("v1", "configmaps", namespace=ns, name="w"))
        changes = watch.wait_for(3)
        new_namespace(client)  # a write this watch does not see: the next bookmark carries its revision
        deadline = time.monotonic() + 5  # the test server sends a bookmark after 0.5 s of quiet
        while not any(e.type == "BOOKMARK" for e in watch.events) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        watch.close()
    assert [(kind, name) for kind, name, _ in changes] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    bookmark = next(e for e in watch.events if e.type == "BOOKMARK")
    assert int(bookmark.object["metadata"]["resourceVersion"]) > int(changes[-1][2])


def test_watch_ends_at_timeout_seconds(client, ns):
    path = resource_path("v1", "configmaps", namespace=ns)
    started = time.monotonic()
    assert [e for e in client.watch(path, resource_version=client.list(path)["metadata"]["resourceVersion"],
                                    timeout_seconds=1) if e.type != "BOOKMARK"] == []
    assert 0.9 <= time.monotonic() - started < 5


def test_watch_from_a_compacted_revision_is_gone(client, api):
    """Revisions from before the server started are older than its watch cache's window; they are
    served from the store's history until the store compacts them (here from a second connection)."""
    path = resource_path("v1", "namespaces")
    assert [e.type for e in client.watch(path, resource_version="1", timeout_seconds=1)][:1] == ["ADDED"]
    store = SQLiteStorage(os.path.join(os.path.dirname(api.kubeconfig), "state.db"))
    try:
        store.compact(2)
    finally:
        store.close()
    with pytest.raises(errors.Gone):
        list(client.watch(path, resource_version="1", timeout_seconds=5))


def test_a_watch_continues_across_a_kill_9_and_restart_of_the_server(tmp_path):
    # The publisher's kube-root-ca.crt in the new namespace would be one more event than the test writes.
    server = ProcessServer(str(tmp_path / "server"), args=("--disable", "root-ca-cert-publisher"))
    endpoint = server.start()
    client = RESTClient.from_kubeconfig(endpoint.kubeconfig)
    watch: Collector | None = None
    try:
        ns = new_namespace(client)
        path = resource_path("v1", "configmaps", namespace=ns)
        rv = client.list(path)["metadata"]["resourceVersion"]
        watch = Collector(client, path, resource_version=rv)
        client.create(path, configmap("before-0"))
        client.create(path, configmap("before-1"))
        watch.wait_for(2)
        # A write the watch does not see moves the store past its last resourceVersion, so the restarted
        # server's watch cache starts after it: the resumed watch must be served from the store's history.
        client.create(resource_path("v1", "secrets", namespace=ns), {"metadata": {"name": "s"}})
        server.kill()
        assert server.start().url == endpoint.url  # same port, same data directory
        client.create(path, configmap("after-0"))
        client.patch(resource_path("v1", "configmaps", namespace=ns, name="before-0"), {"data": {"k": "v"}})
        client.delete(resource_path("v1", "configmaps", namespace=ns, name="before-1"))
        changes = watch.wait_for(5)
        time.sleep(0.3)  # anything doubled would arrive now
        changes = watch.changes()
    finally:
        if watch is not None:
            watch.close()
        client.close()
        server.stop()
    assert [(kind, name) for kind, name, _ in changes] == [
        ("ADDED", "before-0"), ("ADDED", "before-1"),
        ("ADDED", "after-0"), ("MODIFIED", "before-0"), ("DELETED", "before-1")]
    revisions = [int(rv) for _, _, rv in changes]
    assert revisions == sorted(set(revisions))
