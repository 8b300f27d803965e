"""EndpointsController (control/controllers/endpoints/controller.py) against the shared fake API server with real
informers: pod changes map to the services selecting them, Endpoints are created on change only, never
rewritten when equal, deleted with the service, selector-less services untouched, a 409 retried; the
trigger-time annotation written with changes only, and the over-capacity truncation through a sync."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.errors import Conflict
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.endpoints.controller import EndpointsController
from control.controllers.endpoints.subsets import OVER_CAPACITY_ANNOTATION
from control.controllers.shared.endpoint_util import TRIGGER_TIME_ANNOTATION
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

CONTROLLER = "endpoint-controller"  # the name the controller's calls are recorded under
KINDS = {"services": "Service", "pods": "Pod", "endpoints": "Endpoints"}


class Delivered:
    """The last handler of an informer: what has been delivered to every handler before it (key → rv)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, str] = {}

    def on_add(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.seen[key_of(obj)] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        with self.lock:
            self.seen.pop(key_of(obj), None)

    def snapshot(self) -> dict[str, str]:
        with self.lock:
            return dict(self.seen)


class Kind:
    """Writes the test makes to one resource, as a user would through the API."""

    def __init__(self, harness: Harness, plural: str) -> None:
        self.harness, self.plural = harness, plural
        self.informer = harness.factory.informer("v1", plural)
        self.store = self.informer.store

    def _path(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return resource_path("v1", self.plural, namespace=meta["namespace"], name=meta["name"])

    @staticmethod
    def _body(obj: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(obj)
        body["metadata"].pop("resourceVersion", None)  # the server assigns it; updates are unconditional
        return body

    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Stored as given (uid and timestamps kept), as a fixture: FakeAPIServer.add."""
        return self.harness.api.add({"apiVersion": "v1", "kind": KINDS[self.plural], **obj})

    def update(self, obj: dict[str, Any]) -> None:
        stored = self.harness.user.update(self._path(obj), self._body(obj))
        if "status" in obj:  # the status goes through its subresource, as the kubelet writes it
            self.harness.user.update_status(self._path(obj), {**stored, "status": obj["status"]})

    def delete(self, obj: dict[str, Any]) -> None:
        self.harness.user.delete(self._path(obj), grace_period_seconds=0)


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


class Harness:
    def __init__(self) -> None:
        self.api = FakeAPIServer()
        self.user = self.api.client("user")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = EndpointsController(self.api.client(CONTROLLER), self.factory, workers=1)
        self.services, self.pods, self.endpoints = (Kind(self, plural) for plural in KINDS)
        self.delivered = {}
        for kind in (self.services, self.pods, self.endpoints):
            self.delivered[kind.plural] = Delivered()
            kind.informer.add_event_handler(self.delivered[kind.plural])
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)
        self._calls_from = 0

    def close(self) -> None:
        self.stop.set()
        self.controller.recorder.shutdown(1)

    @property
    def calls(self) -> list[tuple[str, str]]:
        """The controller's writes (since `forget_calls`)."""
        writes = self.api.actions_of(CONTROLLER, "create", "update", "patch", "delete")
        return [(a.verb, a.path) for a in writes[self._calls_from:]]

    def forget_calls(self) -> None:
        self._calls_from = len(self.api.actions_of(CONTROLLER, "create", "update", "patch", "delete"))

    def settle(self) -> None:
        """Wait until every informer's handlers have heard of every write so far."""
        def caught_up() -> bool:
            for plural, delivered in self.delivered.items():
                items = self.api.client("harness").list(resource_path("v1", plural))["items"]
                if delivered.snapshot() != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def queued(self) -> list[str]:
        self.settle()
        keys = []
        while len(self.controller.queue):
            key = self.controller.queue.get()
            self.controller.queue.done(key)
            keys.append(key)
        return keys

    def drain(self) -> list[str]:
        """Sync every queued key, as a worker would; returns the keys synced."""
        keys = self.queued()
        for key in keys:
            self.controller.sync(key)
        self.settle()
        return keys

    def ips(self, name: str = "web") -> tuple[list[str], list[str]]:
        ep = self.endpoints.store.get_by_key(f"ns/{name}")
        assert ep is not None
        ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("addresses", [])]
        not_ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("notReadyAddresses", [])]
        return ready, not_ready


def service(name: str = "web", selector: dict[str, str] | None = None, rv: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterIP": "10.96.0.10",
                            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": spec}


def pod(name: str, ip: str, *, ready: bool = True, labels: dict[str, str] | None = None, rv: str = "1") -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv,
                         "labels": {"app": "web"} if labels is None else labels},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_creates_once_and_does_not_rewrite_equal_endpoints(h: Harness):
    h.pods.add(pod("a", "10.0.0.1"))
    h.services.add(service(selector={"app": "web"}))
    assert h.drain() == ["ns/web"]
    assert h.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    assert h.ips() == (["10.0.0.1"], [])
    h.controller.queue.add("ns/web")  # a resync, a no-op pod change: nothing to write
    h.drain()
    assert h.calls == [("create", "/api/v1/namespaces/ns/endpoints")]


def test_pod_changes_update_only_the_services_that_select_the_pod(h: Harness):
    h.services.add(service(selector={"app": "web"}))
    h.services.add(service("db", selector={"app": "db"}))
    h.services.add(service("manual"))  # no selector
    h.drain()
    h.forget_calls()
    h.pods.add(pod("a", "10.0.0.1"))
    assert h.queued() == ["ns/web"]
    h.controller.sync("ns/web")
    h.pods.update(pod("a", "10.0.0.1", ready=False, rv="2"))
    assert h.drain() == ["ns/web"]
    assert h.ips() == ([], ["10.0.0.1"])
    assert h.calls[-1] == ("update", "/api/v1/namespaces/ns/endpoints/web")
    h.pods.update(pod("a", "10.0.0.1", ready=False, labels={"app": "db"}, rv="3"))  # moves from web to db
    assert sorted(h.drain()) == ["ns/db", "ns/web"]
    assert h.ips("web") == ([], [])
    assert h.ips("db") == ([], ["10.0.0.1"])
    h.pods.delete(pod("a", "10.0.0.1", labels={"app": "db"}, rv="3"))
    assert h.drain() == ["ns/db"]
    assert h.ips("db") == ([], [])


def test_resync_with_the_same_resource_version_enqueues_nothing(h: Harness):
    h.services.add(service(selector={"app": "web"}))
    h.pods.add(pod("a", "10.0.0.1"))
    h.queued()
    same = h.pods.store.get_by_key("ns/a")  # a resync hands the handlers the cached object as old and new
    h.controller.on_pod_update(same, same)
    assert h.queued() == []


def test_selectorless_service_endpoints_are_left_alone(h: Harness):
    manual = {"metadata": {"name": "manual", "namespace": "ns", "resourceVersion": "5"},
              "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 1, "protocol": "TCP"}]}]}
    manual = h.endpoints.add(manual)
    h.services.add(service("manual"))
    h.pods.add(pod("a", "10.0.0.1"))
    h.drain()
    assert h.calls == []
    assert h.endpoints.store.get_by_key("ns/manual") == manual


def test_endpoints_deleted_with_the_service_and_404_is_fine(h: Harness):
    svc = service(selector={"app": "web"})
    h.services.add(svc)
    h.drain()
    h.services.delete(svc)
    h.drain()
    assert h.calls[-1] == ("delete", "/api/v1/namespaces/ns/endpoints/web")
    assert h.endpoints.store.get_by_key("ns/web") is None
    h.controller.sync("ns/web")  # already gone: NotFound swallowed
    assert h.calls[-1] == ("delete", "/api/v1/namespaces/ns/endpoints/web")


def test_deleted_endpoints_are_written_again(h: Harness):
    h.services.add(service(selector={"app": "web"}))
    h.pods.add(pod("a", "10.0.0.1"))
    h.drain()
    h.endpoints.delete(h.endpoints.store.get_by_key("ns/web"))
    assert h.drain() == ["ns/web"]
    assert h.ips() == (["10.0.0.1"], [])


def test_run_retries_a_conflict_and_removes_leftover_endpoints(h: Harness):
    h.services.add(service(selector={"app": "web"}))
    h.drain()
    h.endpoints.add({"metadata": {"name": "orphan", "namespace": "ns", "resourceVersion": "3"}, "subsets": []})
    h.endpoints.add({"metadata": {"name": "lock", "namespace": "ns", "resourceVersion": "4",
                                  "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}})
    h.api.fail_next(Conflict(409, "Conflict", "the object has been modified"), verb="update", client=CONTROLLER)
    h.pods.add(pod("a", "10.0.0.1"))
    h.settle()  # the caches hold what the test wrote, as they would after the real first list
    stop = threading.Event()
    thread = threading.Thread(target=h.controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: h.ips() == (["10.0.0.1"], []), interval=0.01)
        assert wait_until(lambda: h.endpoints.store.get_by_key("ns/orphan") is None, interval=0.01)
        assert h.calls.count(("update", "/api/v1/namespaces/ns/endpoints/web")) == 2
        assert h.endpoints.store.get_by_key("ns/lock") is not None
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_trigger_time_written_with_changes_only(h: Harness):
    svc = service(selector={"app": "web"})
    svc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    h.services.add(svc)
    h.drain()
    annotations = h.endpoints.store.get_by_key("ns/web")["metadata"]["annotations"]
    assert annotations == {TRIGGER_TIME_ANNOTATION: "2026-01-01T00:00:00Z"}  # a new Service: its creation
    ready = pod("a", "10.0.0.1", rv="2")
    ready["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:05.25Z"
    h.pods.add(ready)
    h.drain()
    assert h.endpoints.store.get_by_key("ns/web")["metadata"]["annotations"] == {
        TRIGGER_TIME_ANNOTATION: "2026-01-01T00:00:05.25Z"}
    writes = len(h.calls)
    again = pod("a", "10.0.0.1", rv="3")  # a new transition time, but the Endpoints would not change
    again["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:09Z"
    h.pods.update(again)
    assert h.drain() == ["ns/web"]
    assert len(h.calls) == writes


def test_over_capacity_truncated_and_annotated_until_under_again(h: Harness):
    h.services.add(service(selector={"app": "web"}))
    pods = [pod(f"p{i}", f"10.1.{i // 250}.{i % 250}") for i in range(1001)]
    for each in pods:
        h.pods.add(each)
    h.drain()
    assert h.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    assert len(h.ips()[0]) == 1000
    assert h.endpoints.store.get_by_key("ns/web")["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
    h.controller.queue.add("ns/web")  # still over capacity: nothing new to write
    h.drain()
    assert h.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    h.pods.delete(pods[0])
    h.pods.delete(pods[1])
    h.drain()
    assert h.calls[-1] == ("update", "/api/v1/namespaces/ns/endpoints/web")
    assert len(h.ips()[0]) == 999
    assert "annotations" not in h.endpoints.store.get_by_key("ns/web")["metadata"]
