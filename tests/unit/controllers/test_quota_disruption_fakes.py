"""ResourceQuotaController and DisruptionController (control/controllers/resourcequota/controller.py,
disruption/controller.py) against the shared fake API server with real informers: quota status follows
creates, deletes and usage changes (claims counted by storage and StorageClass as admission counts them),
and is not rewritten when true; PDB status follows pod readiness and the
pods' controllers' scale (a ReplicaSet owned by a Deployment counts as the Deployment), unmanaged pods are
reported, a pod of no scalable controller fails safe. Workers are not run: the test syncs the keys itself."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.api import quota
from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.disruption.controller import DisruptionController
from control.controllers.resourcequota.controller import ResourceQuotaController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

QUOTAS = resource_path("v1", "resourcequotas", namespace="ns")
PODS = resource_path("v1", "pods", namespace="ns")
PDBS = resource_path("policy/v1", "poddisruptionbudgets", namespace="ns")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.quota = ResourceQuotaController(self.api.client("resourcequota"), self.factory, resync_period=300,
                                             clock=self.clock)
        self.disruption = DisruptionController(self.api.client("disruption"), self.factory, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        for controller in (self.quota, self.disruption):
            controller.queue.shut_down()
            controller.recorder.shutdown(1)

    def settle(self) -> None:
        """Wait until the informers hold what the server holds."""
        def caught_up() -> bool:
            for version, plural in (("v1", "resourcequotas"), ("v1", "pods"), ("v1", "services"),
                                    ("v1", "persistentvolumeclaims"), ("policy/v1", "poddisruptionbudgets")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: obj["metadata"]["resourceVersion"] for key, obj in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def queued(self, controller: Any) -> set[str]:
        """Every key waiting in `controller`'s queue (taken out)."""
        keys = set()
        while True:
            try:
                key = controller.queue.get(timeout=0.05)
            except queue.Empty:
                return keys
            controller.queue.done(key)
            keys.add(key)

    def sync_quota(self, name: str = "q") -> dict[str, Any]:
        self.settle()
        self.quota.sync(f"ns/{name}")
        return self.client.get(f"{QUOTAS}/{name}")

    def sync_pdb(self, name: str = "pdb") -> dict[str, Any]:
        self.settle()
        self.disruption.sync(f"ns/{name}")
        return self.client.get(f"{PDBS}/{name}")

    def events(self, controller: Any) -> list[tuple[str, str]]:
        controller.recorder.flush(2)
        return sorted((e["reason"], e["message"]) for e in self.client.list(resource_path("v1", "events"))["items"])


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    try:
        yield harness
    finally:
        harness.close()


def pod(name: str, *, cpu: str = "100m", ready: bool = True, owner: dict[str, Any] | None = None,
        phase: str = "Running") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": "web"}}
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}}


# -- resource quota ---------------------------------------------------------------------------------------


def test_quota_status_follows_creates_deletes_and_usage_changes(h: Harness):
    h.client.create(QUOTAS, {"metadata": {"name": "q"}, "spec": {"hard": {
        "pods": "5", "requests.cpu": "2", "services": "2", "services.nodeports": "2", "configmaps": "3"}}})
    h.client.create(PODS, pod("a", cpu="250m"))
    h.client.create(PODS, pod("b", cpu="500m"))
    h.client.create(resource_path("v1", "services", namespace="ns"), {
        "metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    status = h.sync_quota()["status"]
    assert status == {"hard": {"pods": "5", "requests.cpu": "2", "services": "2", "services.nodeports": "2",
                               "configmaps": "3"},
                      "used": {"pods": "2", "requests.cpu": "750m", "services": "1", "services.nodeports": "1",
                               "configmaps": "0"}}
    h.queued(h.quota)

    h.client.delete(f"{PODS}/b")  # replenishment: a deletion recounts the namespace's quotas
    h.settle()
    assert h.queued(h.quota) == {"ns/q"}
    assert h.sync_quota()["status"]["used"]["requests.cpu"] == "250m"

    finished = h.client.get(f"{PODS}/a")
    finished["status"]["phase"] = "Succeeded"  # a pod that finished counts nothing: its usage changed
    h.client.update(f"{PODS}/a/status", finished)
    h.settle()
    assert h.queued(h.quota) == {"ns/q"}
    assert h.sync_quota()["status"]["used"]["pods"] == "0"

    relabelled = h.client.get(f"{PODS}/a")
    relabelled["metadata"]["labels"] = {"app": "other"}  # no usage change: no recount
    h.client.update(f"{PODS}/a", relabelled)
    h.settle()
    assert h.queued(h.quota) == set()


def test_quota_status_is_not_rewritten_when_true_and_hard_follows_spec(h: Harness):
    h.client.create(QUOTAS, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}})
    written = h.sync_quota()
    assert written["status"] == {"hard": {"pods": "1"}, "used": {"pods": "0"}}
    again = h.sync_quota()
    assert again["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    written["spec"]["hard"] = {"pods": "3", "count/deployments.apps": "1"}
    h.client.update(f"{QUOTAS}/q", written)
    h.settle()
    assert "ns/q" in h.queued(h.quota)
    assert h.sync_quota()["status"] == {"hard": {"pods": "3", "count/deployments.apps": "1"},
                                        "used": {"pods": "0", "count/deployments.apps": "0"}}


def test_quota_counts_claims_by_storage_and_class_as_admission_does(h: Harness):
    claims = resource_path("v1", "persistentvolumeclaims", namespace="ns")
    gold = "gold.storageclass.storage.k8s.io/"
    hard = {"persistentvolumeclaims": "5", "requests.storage": "10Gi", gold + "requests.storage": "5Gi",
            gold + "persistentvolumeclaims": "2"}
    h.client.create(QUOTAS, {"metadata": {"name": "q"}, "spec": {"hard": hard}})
    for name, size, storage_class in (("a", "1Gi", "gold"), ("b", "2Gi", "silver"), ("c", "500Mi", None)):
        spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
        if storage_class:
            spec["storageClassName"] = storage_class
        h.client.create(claims, {"metadata": {"name": name}, "spec": spec})
    stored = h.client.list(claims)["items"]
    admitted = quota.used_in("persistentvolumeclaims", stored)  # what quota admission would count
    used = h.sync_quota()["status"]["used"]
    assert used == {name: str(admitted[name]) for name in hard}
    assert used == {"persistentvolumeclaims": "3", "requests.storage": "3572Mi", gold + "requests.storage": "1Gi",
                    gold + "persistentvolumeclaims": "1"}
    h.queued(h.quota)

    h.client.delete(f"{claims}/a")  # replenishment: the claim's namespace is recounted
    h.settle()
    assert h.queued(h.quota) == {"ns/q"}
    assert h.sync_quota()["status"]["used"] == {"persistentvolumeclaims": "2", "requests.storage": "2548Mi",
                                                gold + "requests.storage": "0", gold + "persistentvolumeclaims": "0"}


# -- disruption -------------------------------------------------------------------------------------------


def test_pdb_with_integer_min_available_counts_ready_pods(h: Harness):
    h.client.create(PDBS, {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 2,
                                                                   "selector": {"matchLabels": {"app": "web"}}}})
    assert h.sync_pdb()["status"]["disruptionsAllowed"] == 0
    assert ("NoPods", "No matching pods found") in h.events(h.disruption)
    for name in ("a", "b", "c"):
        h.client.create(PODS, pod(name))
    h.client.create(PODS, pod("unready", ready=False))
    status = h.sync_pdb()["status"]
    assert {k: status[k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods",
                                   "observedGeneration")} == {"disruptionsAllowed": 1, "currentHealthy": 3,
                                                              "desiredHealthy": 2, "expectedPods": 4,
                                                              "observedGeneration": 1}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("DisruptionAllowed", "True", "SufficientPods")]


def test_pdb_percentage_uses_the_controllers_scale(h: Harness):
    deployment = h.client.create(resource_path("apps/v1", "deployments", namespace="ns"),
                                 {"metadata": {"name": "d"}, "spec": {"replicas": 10}})
    rs = h.client.create(resource_path("apps/v1", "replicasets", namespace="ns"), {
        "metadata": {"name": "d-1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                                                         "uid": deployment["metadata"]["uid"], "controller": True}]},
        "spec": {"replicas": 4}})
    rc = h.client.create(resource_path("v1", "replicationcontrollers", namespace="ns"),
                         {"metadata": {"name": "rc"}, "spec": {"replicas": 3}})
    rs_ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "d-1", "uid": rs["metadata"]["uid"]}
    rc_ref = {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": rc["metadata"]["uid"]}
    for index in range(3):
        h.client.create(PODS, pod(f"rs-{index}", owner=rs_ref))
    h.client.create(PODS, pod("rc-0", owner=rc_ref))
    h.client.create(PODS, pod("naked"))
    h.client.create(PDBS, {"metadata": {"name": "pdb"}, "spec": {"minAvailable": "28%",
                                                                   "selector": {"matchLabels": {"app": "web"}}}})
    status = h.sync_pdb()["status"]
    # The Deployment's 10 (not its ReplicaSet's 4) plus the RC's 3; 28% of 13 rounds up to 4.
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == (13, 4, 5, 1)
    assert any(reason == "UnmanagedPods" for reason, _ in h.events(h.disruption))


def test_pdb_of_a_pod_with_no_scalable_controller_fails_safe(h: Harness):
    h.client.create(PODS, pod("a", owner={"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u"}))
    h.client.create(PDBS, {"metadata": {"name": "pdb"}, "spec": {"maxUnavailable": 1,
                                                                   "selector": {"matchLabels": {"app": "web"}}},
                           "status": {"disruptionsAllowed": 3}})
    status = h.sync_pdb()["status"]
    assert status["disruptionsAllowed"] == 0
    assert [(c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("False", "SyncFailed", 'found no controllers for pod "a"')]


def test_pods_enqueue_the_pdbs_selecting_them_and_evictions_expire(h: Harness):
    h.client.create(PDBS, {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1,
                                                                   "selector": {"matchLabels": {"app": "web"}}}})
    h.client.create(PDBS, {"metadata": {"name": "other"}, "spec": {"minAvailable": 1,
                                                                     "selector": {"matchLabels": {"app": "db"}}}})
    h.settle()
    h.queued(h.disruption)
    h.client.create(PODS, pod("a"))
    h.client.create(PODS, pod("b"))
    h.settle()
    assert h.queued(h.disruption) == {"ns/pdb"}
    budget = h.sync_pdb()
    assert budget["status"]["disruptionsAllowed"] == 1
    # What the eviction handler writes: one disruption taken, pod a recorded.
    budget["status"]["disruptionsAllowed"] = 0
    budget["status"]["disruptedPods"] = {"a": h.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")}
    h.client.update(f"{PDBS}/pdb/status", budget)
    status = h.sync_pdb()["status"]
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (1, 0)  # a is about to go
    assert list(status["disruptedPods"]) == ["a"]
    h.clock.step(121)  # a was not deleted within 2 minutes: healthy again, the entry dropped
    status = h.sync_pdb()["status"]
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 1)
    assert "disruptedPods" not in status
    assert any(reason == "NotDeleted" for reason, _ in h.events(h.disruption))
