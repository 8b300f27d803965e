"""PersistentVolumeController (control/controllers/persistentvolume/controller.py) against the shared fake API server
with real informers: a static bind writes both sides in upstream's order, a provisioner is asked for a
WaitForFirstConsumer claim once a node is selected, and a claim's deletion releases its volume."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.persistentvolume.controller import CLAIM, VOLUME, PersistentVolumeController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_until

CLAIMS = resource_path("v1", "persistentvolumeclaims", namespace="ns")
VOLUMES = resource_path("v1", "persistentvolumes")
CLASSES = resource_path("storage.k8s.io/v1", "storageclasses")


class Harness:
    def __init__(self) -> None:
        self.api = FakeAPIServer()
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = PersistentVolumeController(self.api.client("pv"), self.factory)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in (("v1", "persistentvolumes"), ("v1", "persistentvolumeclaims"),
                                    ("storage.k8s.io/v1", "storageclasses")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, 5)

    def sync_all(self, rounds: int = 4) -> None:
        for _ in range(rounds):
            self.settle()
            for claim in self.client.list(resource_path("v1", "persistentvolumeclaims"))["items"]:
                self.controller.sync(CLAIM + key_of(claim))
            self.settle()
            for volume in self.client.list(VOLUMES)["items"]:
                self.controller.sync(VOLUME + key_of(volume))

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


def volume(name: str, size: str, **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                                                 "hostPath": {"path": f"/v/{name}"},
                                                 "persistentVolumeReclaimPolicy": "Retain", **spec},
            "status": {"phase": "Available"}}


def claim(name: str = "c", size: str = "1Gi", **spec) -> dict:
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                     "storageClassName": "", **spec}}


def test_static_bind_release_and_retain(harness: Harness) -> None:
    harness.client.create(VOLUMES, volume("big", "10Gi"))
    harness.client.create(VOLUMES, volume("fit", "2Gi"))
    harness.client.create(CLAIMS, claim())
    harness.sync_all()
    bound = harness.client.get(f"{CLAIMS}/c")
    assert bound["spec"]["volumeName"] == "fit" and bound["status"]["phase"] == "Bound"
    assert bound["status"]["capacity"] == {"storage": "2Gi"}
    fit = harness.client.get(f"{VOLUMES}/fit")
    assert fit["spec"]["claimRef"]["uid"] == bound["metadata"]["uid"] and fit["status"]["phase"] == "Bound"
    assert harness.client.get(f"{VOLUMES}/big")["status"]["phase"] == "Available"
    writes = [a.path for a in harness.api.actions_of("pv", "update")]
    assert writes[:4] == [f"{VOLUMES}/fit", f"{VOLUMES}/fit/status", f"{CLAIMS}/c", f"{CLAIMS}/c/status"]

    harness.client.delete(f"{CLAIMS}/c")
    harness.sync_all()
    released = harness.client.get(f"{VOLUMES}/fit")
    assert released["status"]["phase"] == "Released" and released["spec"]["claimRef"]["name"] == "c"


def test_wait_for_first_consumer_then_ask_the_provisioner(harness: Harness) -> None:
    harness.client.create(CLASSES, {"metadata": {"name": "local-path"}, "provisioner": "slimkube.io/local-path",
                                    "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"})
    harness.client.create(CLAIMS, claim(storageClassName="local-path"))
    harness.sync_all()
    pending = harness.client.get(f"{CLAIMS}/c")
    assert pending["status"]["phase"] == "Pending"
    assert "volume.kubernetes.io/storage-provisioner" not in (pending["metadata"].get("annotations") or {})
    harness.client.patch(f"{CLAIMS}/c", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}})
    harness.sync_all()
    asked = harness.client.get(f"{CLAIMS}/c")
    assert asked["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == "slimkube.io/local-path"
    # the provisioner's volume, pre-bound to the claim, is bound by the controller
    harness.client.create(VOLUMES, volume("pvc-x", "1Gi", storageClassName="local-path",
                                          claimRef={"namespace": "ns", "name": "c", "uid": asked["metadata"]["uid"]}))
    harness.sync_all()
    assert harness.client.get(f"{CLAIMS}/c")["spec"]["volumeName"] == "pvc-x"
    assert harness.client.get(f"{VOLUMES}/pvc-x")["status"]["phase"] == "Bound"
