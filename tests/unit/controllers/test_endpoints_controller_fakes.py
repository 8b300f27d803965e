"""EndpointsController (control/controllers/endpoints.py) with fake informers and a recording client:
pod changes map to the services selecting them, Endpoints are created on change only, never rewritten
when equal, deleted with the service, selector-less services untouched, a 409 retried; the trigger-time
annotation written with changes only, and the over-capacity truncation through a sync."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from control.client.errors import Conflict, NotFound
from control.client.store import Lister, Store
from control.controllers.endpoints import EndpointsController
from control.controllers.endpoints_subsets import OVER_CAPACITY_ANNOTATION, TRIGGER_TIME_ANNOTATION
from tests.support.polling import wait_until


class FakeInformer:
    def __init__(self) -> None:
        self.store = Store()
        self.handlers: list[dict[str, Callable[..., None] | None]] = []

    def add_event_handler(self, *, on_add=None, on_update=None, on_delete=None) -> object:
        self.handlers.append({"add": on_add, "update": on_update, "delete": on_delete})
        return self

    def lister(self) -> Lister:
        return Lister(self.store)

    def has_synced(self) -> bool:
        return True

    def add(self, obj: dict[str, Any]) -> None:
        self.store.add(obj)
        for handler in self.handlers:
            if handler["add"]:
                handler["add"](obj)

    def update(self, obj: dict[str, Any]) -> None:
        old = self.store.update(obj)
        for handler in self.handlers:
            if handler["update"]:
                handler["update"](old, obj)

    def delete(self, obj: dict[str, Any]) -> None:
        self.store.delete(obj)
        for handler in self.handlers:
            if handler["delete"]:
                handler["delete"](obj)


class FakeInformers:
    def __init__(self) -> None:
        self.by_plural = {plural: FakeInformer() for plural in ("services", "pods", "endpoints")}

    def informer(self, api_version: str, plural: str) -> FakeInformer:
        return self.by_plural[plural]


class RecordingClient:
    """Records writes; the Endpoints it writes land in the endpoints informer, as a watch would deliver."""

    def __init__(self, endpoints: FakeInformer) -> None:
        self.endpoints = endpoints
        self.calls: list[tuple[str, str]] = []
        self.fail_next: list[Exception] = []
        self.revision = 100

    def _stored(self, body: dict) -> dict:
        self.revision += 1
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.revision)}}

    def create(self, path: str, body: dict) -> dict:
        self.calls.append(("create", path))
        stored = self._stored(body)
        self.endpoints.add(stored)
        return stored

    def update(self, path: str, body: dict) -> dict:
        self.calls.append(("update", path))
        if self.fail_next:
            raise self.fail_next.pop(0)
        stored = self._stored(body)
        self.endpoints.update(stored)
        return stored

    def delete(self, path: str) -> dict:
        self.calls.append(("delete", path))
        meta = path.rsplit("/", 3)
        existing = self.endpoints.store.get_by_key(f"{meta[-3]}/{meta[-1]}")
        if existing is None:
            raise NotFound(404, "NotFound", "not found")
        self.endpoints.delete(existing)
        return {}


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


class Harness:
    def __init__(self) -> None:
        self.informers = FakeInformers()
        self.services = self.informers.by_plural["services"]
        self.pods = self.informers.by_plural["pods"]
        self.endpoints = self.informers.by_plural["endpoints"]
        self.client = RecordingClient(self.endpoints)
        self.controller = EndpointsController(self.client, self.informers, workers=1)

    def queued(self) -> list[str]:
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
        return keys

    def ips(self, name: str = "web") -> tuple[list[str], list[str]]:
        ep = self.endpoints.store.get_by_key(f"ns/{name}")
        assert ep is not None
        ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("addresses", [])]
        not_ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("notReadyAddresses", [])]
        return ready, not_ready


def test_creates_once_and_does_not_rewrite_equal_endpoints():
    h = Harness()
    h.pods.add(pod("a", "10.0.0.1"))
    h.services.add(service(selector={"app": "web"}))
    assert h.drain() == ["ns/web"]
    assert h.client.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    assert h.ips() == (["10.0.0.1"], [])
    h.controller.queue.add("ns/web")  # a resync, a no-op pod change: nothing to write
    h.drain()
    assert h.client.calls == [("create", "/api/v1/namespaces/ns/endpoints")]


def test_pod_changes_update_only_the_services_that_select_the_pod():
    h = Harness()
    h.services.add(service(selector={"app": "web"}))
    h.services.add(service("db", selector={"app": "db"}))
    h.services.add(service("manual"))  # no selector
    h.drain()
    h.client.calls.clear()
    h.pods.add(pod("a", "10.0.0.1"))
    assert h.queued() == ["ns/web"]
    h.controller.sync("ns/web")
    h.pods.update(pod("a", "10.0.0.1", ready=False, rv="2"))
    assert h.drain() == ["ns/web"]
    assert h.ips() == ([], ["10.0.0.1"])
    assert h.client.calls[-1] == ("update", "/api/v1/namespaces/ns/endpoints/web")
    h.pods.update(pod("a", "10.0.0.1", ready=False, labels={"app": "db"}, rv="3"))  # moves from web to db
    assert sorted(h.drain()) == ["ns/db", "ns/web"]
    assert h.ips("web") == ([], [])
    assert h.ips("db") == ([], ["10.0.0.1"])
    h.pods.delete(pod("a", "10.0.0.1", labels={"app": "db"}, rv="3"))
    assert h.drain() == ["ns/db"]
    assert h.ips("db") == ([], [])


def test_resync_with_the_same_resource_version_enqueues_nothing():
    h = Harness()
    h.services.add(service(selector={"app": "web"}))
    h.pods.add(pod("a", "10.0.0.1"))
    h.queued()
    h.pods.update(pod("a", "10.0.0.1"))
    assert h.queued() == []


def test_selectorless_service_endpoints_are_left_alone():
    h = Harness()
    manual = {"metadata": {"name": "manual", "namespace": "ns", "resourceVersion": "5"},
              "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 1, "protocol": "TCP"}]}]}
    h.endpoints.add(manual)
    h.services.add(service("manual"))
    h.pods.add(pod("a", "10.0.0.1"))
    h.drain()
    assert h.client.calls == []
    assert h.endpoints.store.get_by_key("ns/manual") == manual


def test_endpoints_deleted_with_the_service_and_404_is_fine():
    h = Harness()
    svc = service(selector={"app": "web"})
    h.services.add(svc)
    h.drain()
    h.services.delete(svc)
    h.drain()
    assert h.client.calls[-1] == ("delete", "/api/v1/namespaces/ns/endpoints/web")
    assert h.endpoints.store.get_by_key("ns/web") is None
    h.controller.sync("ns/web")  # already gone: NotFound swallowed
    assert h.client.calls[-1] == ("delete", "/api/v1/namespaces/ns/endpoints/web")


def test_deleted_endpoints_are_written_again():
    h = Harness()
    h.services.add(service(selector={"app": "web"}))
    h.pods.add(pod("a", "10.0.0.1"))
    h.drain()
    h.endpoints.delete(h.endpoints.store.get_by_key("ns/web"))
    assert h.drain() == ["ns/web"]
    assert h.ips() == (["10.0.0.1"], [])


def test_run_retries_a_conflict_and_removes_leftover_endpoints():
    h = Harness()
    h.services.add(service(selector={"app": "web"}))
    h.drain()
    h.endpoints.add({"metadata": {"name": "orphan", "namespace": "ns", "resourceVersion": "3"}, "subsets": []})
    h.endpoints.add({"metadata": {"name": "lock", "namespace": "ns", "resourceVersion": "4",
                                  "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}})
    h.client.fail_next.append(Conflict(409, "Conflict", "the object has been modified"))
    h.pods.add(pod("a", "10.0.0.1"))
    stop = threading.Event()
    thread = threading.Thread(target=h.controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: h.ips() == (["10.0.0.1"], []), interval=0.01)
        assert wait_until(lambda: h.endpoints.store.get_by_key("ns/orphan") is None, interval=0.01)
        assert h.client.calls.count(("update", "/api/v1/namespaces/ns/endpoints/web")) == 2
        assert h.endpoints.store.get_by_key("ns/lock") is not None
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_trigger_time_written_with_changes_only():
    h = Harness()
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
    writes = len(h.client.calls)
    again = pod("a", "10.0.0.1", rv="3")  # a new transition time, but the Endpoints would not change
    again["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:09Z"
    h.pods.update(again)
    assert h.drain() == ["ns/web"]
    assert len(h.client.calls) == writes


def test_over_capacity_truncated_and_annotated_until_under_again():
    h = Harness()
    h.services.add(service(selector={"app": "web"}))
    pods = [pod(f"p{i}", f"10.1.{i // 250}.{i % 250}") for i in range(1001)]
    for each in pods:
        h.pods.add(each)
    h.drain()
    assert h.client.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    assert len(h.ips()[0]) == 1000
    assert h.endpoints.store.get_by_key("ns/web")["metadata"]["annotations"] == {OVER_CAPACITY_ANNOTATION: "truncated"}
    h.controller.queue.add("ns/web")  # still over capacity: nothing new to write
    h.drain()
    assert h.client.calls == [("create", "/api/v1/namespaces/ns/endpoints")]
    h.pods.delete(pods[0])
    h.pods.delete(pods[1])
    h.drain()
    assert h.client.calls[-1] == ("update", "/api/v1/namespaces/ns/endpoints/web")
    assert len(h.ips()[0]) == 999
    assert "annotations" not in h.endpoints.store.get_by_key("ns/web")["metadata"]
