"""StatefulSetController (control/controllers/statefulset/controller.py) against the shared fake API server with real
informers: pods come one at a time in ordinal order with their claims, the revision is recorded as a
ControllerRevision, status counts follow, scale-down removes the highest ordinal first, and a template
change rolls from the highest ordinal down."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.statefulset.controller import StatefulSetController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

SETS = resource_path("apps/v1", "statefulsets", namespace="ns")
PODS = resource_path("v1", "pods", namespace="ns")
CLAIMS = resource_path("v1", "persistentvolumeclaims", namespace="ns")
REVISIONS = resource_path("apps/v1", "controllerrevisions", namespace="ns")
WATCHED = (("v1", "pods"), ("apps/v1", "statefulsets"), ("v1", "persistentvolumeclaims"),
           ("apps/v1", "controllerrevisions"))


class Harness:
    def __init__(self) -> None:
        self.api = FakeAPIServer()
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = StatefulSetController(self.api.client("sts"), self.factory)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in WATCHED:
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, 5)

    def sync(self) -> None:
        self.settle()
        self.controller.sync("ns/web")
        self.settle()

    def pods(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.client.list(PODS)["items"]
                      if not p["metadata"].get("deletionTimestamp"))

    def ready(self, name: str) -> None:
        pod = self.client.get(f"{PODS}/{name}")
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        self.client.update(f"{PODS}/{name}/status", pod)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


def statefulset(replicas: int = 3, image: str = "busybox:1") -> dict:
    return {"metadata": {"name": "web"}, "spec": {
        "replicas": replicas, "serviceName": "web", "podManagementPolicy": "OrderedReady",
        "selector": {"matchLabels": {"app": "web"}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def test_ordered_creation_status_scale_down_and_rollout(harness: Harness) -> None:
    harness.client.create(SETS, statefulset())
    harness.sync()
    assert harness.pods() == ["web-0"]
    assert [c["metadata"]["name"] for c in harness.client.list(CLAIMS)["items"]] == ["data-web-0"]
    revisions = harness.client.list(REVISIONS)["items"]
    assert len(revisions) == 1
    web0 = harness.client.get(f"{PODS}/web-0")
    assert web0["metadata"]["labels"]["controller-revision-hash"] == revisions[0]["metadata"]["name"]
    harness.sync()
    assert harness.pods() == ["web-0"]  # web-0 is not Ready yet
    for name in ("web-0", "web-1", "web-2"):
        harness.ready(name)
        harness.sync()
    harness.sync()
    assert harness.pods() == ["web-0", "web-1", "web-2"]
    status = harness.client.get(f"{SETS}/web")["status"]
    assert status["replicas"] == 3 and status["readyReplicas"] == 3 and status["updatedReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"] == revisions[0]["metadata"]["name"]

    harness.client.patch(f"{SETS}/web", {"spec": {"replicas": 1}})
    harness.sync()
    assert harness.pods() == ["web-0", "web-1"]
    harness.sync()
    assert harness.pods() == ["web-0"]
    assert len(harness.client.list(CLAIMS)["items"]) == 3  # whenScaled: Retain

    harness.client.patch(f"{SETS}/web", {"spec": {"replicas": 2, "template": {"spec": {"containers": [
        {"name": "c", "image": "busybox:2"}]}}}})
    harness.sync()
    assert len(harness.client.list(REVISIONS)["items"]) == 2
    harness.ready("web-1")
    harness.sync()
    harness.sync()
    # web-1 was created at the new revision; web-0 (old) was deleted by the rollout and made again, new
    deletes = [a.path for a in harness.api.actions_of("sts", "delete")]
    assert deletes[-1] == f"{PODS}/web-0"
    assert harness.pods() == ["web-0", "web-1"]
    assert [p["spec"]["containers"][0]["image"] for p in harness.client.list(PODS)["items"]] == ["busybox:2"] * 2
