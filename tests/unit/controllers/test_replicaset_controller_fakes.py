"""ReplicaSetController (control/controllers/replicaset/controller.py) against the shared fake API server with real
informers, for ReplicaSets and ReplicationControllers: creates with expectations and events, deletes in
ranking order, adoption and release, status, slow start on failures and the ReplicaFailure condition.
Workers are not run: the test syncs keys itself, after the informers caught up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.errors import ApiError
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.replicaset.controller import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    ReplicaKind,
    ReplicaSetController,
)
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

PODS = resource_path("v1", "pods", namespace="ns")
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


class Harness:
    def __init__(self, kind: ReplicaKind) -> None:
        self.kind = kind
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = ReplicaSetController(self.api.client("rs"), self.factory, kind=kind, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    @property
    def owners(self) -> str:
        return resource_path(self.kind.api_version, self.kind.plural, namespace="ns")

    def create_owner(self, name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
        selector = {"app": "web"} if self.kind is REPLICATION_CONTROLLER else {"matchLabels": {"app": "web"}}
        body = {"metadata": {"name": name},
                "spec": {"replicas": replicas, "selector": selector, "template": TEMPLATE, **spec}}
        return self.client.create(self.owners, body)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in (("v1", "pods"), (self.kind.api_version, self.kind.plural)):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def sync(self, name: str = "web", *, observed: bool = True) -> dict[str, Any]:
        """Sync once the caches caught up and (`observed`) the pod handlers have seen the last round's
        creates and deletes (they run on the informers' threads, after the caches change)."""
        self.settle()
        if observed:
            assert wait_until(lambda: self.controller.expectations.satisfied_expectations(f"ns/{name}"))
        self.controller.sync(f"ns/{name}")
        self.settle()
        return self.client.get(f"{self.owners}/{name}")

    def pods(self) -> list[dict[str, Any]]:
        return self.client.list(PODS)["items"]

    def set_ready(self, pod: dict[str, Any], *, node: str = "n1") -> None:
        path = f"{PODS}/{pod['metadata']['name']}"
        fresh = self.client.get(path)
        fresh["spec"]["nodeName"] = node
        self.client.update(path, fresh)
        fresh = self.client.get(path)
        fresh["status"] = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
        self.client.update(f"{path}/status", fresh)

    def events(self) -> list[tuple[str, str]]:
        self.controller.recorder.flush(5)
        items = self.client.list(resource_path("v1", "events", namespace="ns"))["items"]
        return sorted((e["reason"], e["message"]) for e in items)


@pytest.fixture(params=[REPLICA_SET, REPLICATION_CONTROLLER], ids=["replicaset", "replicationcontroller"])
def harness(request) -> Iterator[Harness]:
    h = Harness(request.param)
    try:
        yield h
    finally:
        h.close()


def test_creates_the_missing_pods_with_owner_references_and_events(harness):
    owner = harness.create_owner(replicas=3)
    status = harness.sync()["status"]
    pods = harness.pods()
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["generateName"] == "web-" and pod["metadata"]["labels"] == {"app": "web"}
        assert pod["metadata"]["ownerReferences"] == [
            {"apiVersion": harness.kind.api_version, "kind": harness.kind.kind, "name": "web",
             "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        assert pod["spec"] == TEMPLATE["spec"]
    creates = [a for a in harness.api.actions_of("rs", "create") if "/pods" in a.path]
    assert len(creates) == 3
    assert harness.events() == sorted(("SuccessfulCreate", f"Created pod: {p['metadata']['name']}") for p in pods)
    sources = {e["source"]["component"] for e in harness.client.list(resource_path("v1", "events"))["items"]}
    assert sources == {"replicaset-controller" if harness.kind is REPLICA_SET else "replication-controller"}
    # As upstream, the status counts the pods the sync started from; the pods' add events sync again.
    assert status == {"replicas": 0, "observedGeneration": 1}
    assert harness.sync()["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1}
    for pod in pods:
        harness.set_ready(pod)
    status = harness.sync()["status"]
    assert (status["readyReplicas"], status["availableReplicas"], status["fullyLabeledReplicas"]) == (3, 3, 3)


def test_expectations_hold_back_a_second_round_until_the_creates_are_seen(harness):
    harness.create_owner(replicas=2)
    harness.settle()
    key = "ns/web"
    harness.controller.sync(key)
    assert len(harness.pods()) == 2
    # The pod informer's handlers observe both creates (asynchronously): the expectations are met.
    assert wait_until(lambda: harness.controller.expectations.satisfied_expectations(key))
    # Now as if two creates were still unseen: a sync on a cache that lacks the pods must not create again.
    harness.controller.expectations.expect_creations(key, 2)
    for pod in harness.pods():
        harness.client.delete(f"{PODS}/{pod['metadata']['name']}")
    harness.sync(observed=False)
    assert harness.pods() == []  # expectations unsatisfied: nothing created
    harness.controller.expectations.creation_observed(key)
    harness.controller.expectations.creation_observed(key)
    harness.sync()
    assert len(harness.pods()) == 2


def test_a_deleted_pod_is_replaced(harness):
    harness.create_owner(replicas=2)
    harness.sync()
    victim = harness.pods()[0]["metadata"]["name"]
    harness.client.delete(f"{PODS}/{victim}")
    harness.sync()
    names = [p["metadata"]["name"] for p in harness.pods()]
    assert len(names) == 2 and victim not in names


def test_scale_down_deletes_in_ranking_order_and_records_events(harness):
    harness.create_owner(replicas=3)
    harness.sync()
    pods = sorted(harness.pods(), key=lambda p: p["metadata"]["name"])
    harness.set_ready(pods[0])
    harness.set_ready(pods[1])  # pods[2] stays unscheduled: deleted first
    owner = harness.client.get(f"{harness.owners}/web")
    owner["spec"]["replicas"] = 2
    harness.client.update(f"{harness.owners}/web", owner)
    status = harness.sync()["status"]
    left = [p["metadata"]["name"] for p in harness.pods()]
    assert sorted(left) == [pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]]
    assert ("SuccessfulDelete", f"Deleted pod: {pods[2]['metadata']['name']}") in harness.events()
    assert status["replicas"] == 3 and status["observedGeneration"] == 2  # counted before the deletes
    assert harness.sync()["status"]["replicas"] == 2
    owner = harness.client.get(f"{harness.owners}/web")
    owner["spec"]["replicas"] = 0
    harness.client.update(f"{harness.owners}/web", owner)
    harness.sync()
    assert harness.sync()["status"] == {"replicas": 0, "observedGeneration": 3}
    # Pods on a node are only marked deleted (their kubelet finishes): no longer active, no longer counted.
    assert all(p["metadata"].get("deletionTimestamp") for p in harness.pods())


def test_adopts_a_matching_orphan_and_releases_a_pod_that_stopped_matching(harness):
    orphan = harness.client.create(PODS, {"metadata": {"name": "orphan", "labels": {"app": "web"}},
                                          "spec": {"containers": [{"name": "c", "image": "x"}]}})
    harness.client.create(PODS, {"metadata": {"name": "stranger", "labels": {"app": "other"}},
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}})
    owner = harness.create_owner(replicas=2)
    harness.sync()
    adopted = harness.client.get(f"{PODS}/orphan")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
    assert not harness.client.get(f"{PODS}/stranger")["metadata"].get("ownerReferences")
    assert len(harness.pods()) == 3  # the orphan counts: one pod created
    adopted["metadata"]["labels"] = {"app": "moved"}
    harness.client.update(f"{PODS}/orphan", adopted)
    harness.sync()
    assert not harness.client.get(f"{PODS}/orphan")["metadata"].get("ownerReferences")
    owned = [p for p in harness.pods() if p["metadata"].get("ownerReferences")]
    assert len(owned) == 2  # a replacement was made for the released pod


def test_pods_of_another_controller_are_left_alone(harness):
    harness.client.create(PODS, {"metadata": {"name": "theirs", "labels": {"app": "web"}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "o-uid", "controller": True}]},
        "spec": {"containers": [{"name": "c", "image": "x"}]}})
    harness.create_owner(replicas=1)
    harness.sync()
    assert harness.client.get(f"{PODS}/theirs")["metadata"]["ownerReferences"][0]["uid"] == "o-uid"
    assert len(harness.pods()) == 2


def test_failed_creates_stop_the_slow_start_and_set_replica_failure(harness):
    harness.create_owner(replicas=10)
    harness.settle()
    message = 'pods "web-x" is forbidden: exceeded quota: q'
    lock, pod_creates = threading.Lock(), []

    def second_create_fails(action) -> None:  # batch 1 (one create) passes, batch 2 (two) has one failure
        if action.client != "rs" or action.verb != "create" or not action.path.endswith("/pods"):
            return
        with lock:
            pod_creates.append(action)
            number = len(pod_creates)
        if number == 2:
            raise ApiError(403, "Forbidden", message)

    harness.api.prepend_reactor(second_create_fails)
    with pytest.raises(ApiError):
        harness.controller.sync("ns/web")
    harness.settle()
    assert len(pod_creates) == 3 and len(harness.pods()) == 2  # batches 4, 8, ... never tried
    status = harness.client.get(f"{harness.owners}/web")["status"]
    assert status["replicas"] == 0  # counted before the round, as upstream
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("ReplicaFailure", "True", "FailedCreate", message)]
    assert ("FailedCreate", f"Error creating: {message}") in harness.events()
    # Failed and skipped creates are not expected: the two made are seen, so the next sync acts at once.
    assert wait_until(lambda: harness.controller.expectations.satisfied_expectations("ns/web"))
    status = harness.sync()["status"]
    assert len(harness.pods()) == 10 and status["replicas"] == 2 and "conditions" not in status
    assert harness.sync()["status"]["replicas"] == 10


def test_a_deleted_owner_forgets_its_expectations(harness):
    harness.create_owner(replicas=1)
    harness.settle()
    harness.controller.expectations.expect_creations("ns/web", 5)
    harness.client.delete(f"{harness.owners}/web", propagation_policy="Background")
    harness.settle()
    harness.controller.sync("ns/web")
    assert harness.controller.expectations.get_expectations("ns/web") is None


def test_running_workers_reach_the_wanted_state_through_the_handlers(harness):
    """The loop as the manager runs it: handlers observe the creates (expectations met), enqueue the owner
    again, and the status follows; a deleted pod is replaced by the same path."""
    thread = threading.Thread(target=harness.controller.run, args=(harness.stop,), daemon=True)
    thread.start()
    harness.create_owner(replicas=3)

    def status_replicas() -> int:
        return int((harness.client.get(f"{harness.owners}/web").get("status") or {}).get("replicas") or 0)

    assert wait_until(lambda: status_replicas() == 3 and len(harness.pods()) == 3, timeout=10)
    victim = harness.pods()[0]["metadata"]["name"]
    harness.client.delete(f"{PODS}/{victim}")
    assert wait_until(lambda: len(harness.pods()) == 3 and victim not in {p["metadata"]["name"] for p in
                                                                         harness.pods()}, timeout=10)
    assert harness.controller.expectations.satisfied_expectations("ns/web")
    harness.stop.set()
    thread.join(10)
