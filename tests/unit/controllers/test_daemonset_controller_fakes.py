"""DaemonSetController (control/controllers/daemonset/controller.py) against the fake API server with real informers:
one pinned pod per eligible node, a node becoming eligible or not, the ControllerRevision history, a
rolling update within maxUnavailable, a rollback by the revision's patch, OnDelete, failed pods, status.
Workers are not run: the test syncs the key itself once the informers caught up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.daemonset.controller import DaemonSetController
from control.controllers.shared.history import CONTROLLER_REVISION_HASH_LABEL
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

PODS = resource_path("v1", "pods", namespace="ns")
DSS = resource_path("apps/v1", "daemonsets", namespace="ns")
REVISIONS = resource_path("apps/v1", "controllerrevisions", namespace="ns")
NODES = resource_path("v1", "nodes")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        for name in ("n1", "n2", "n3"):
            self.client.create(NODES, {"metadata": {"name": name, "labels": {}}})
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = DaemonSetController(self.api.client("ds"), self.factory, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    def create_ds(self, strategy: dict | None = None, **template_spec: Any) -> dict[str, Any]:
        spec = {"containers": [{"name": "c", "image": "busybox:1"}], **template_spec}
        body = {"metadata": {"name": "agent", "annotations": {"kubernetes.io/change-cause": "first"}},
                "spec": {"selector": {"matchLabels": {"app": "agent"}}, "revisionHistoryLimit": 10,
                         "updateStrategy": strategy or {"type": "RollingUpdate",
                                                        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                         "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}}}
        return self.client.create(DSS, body)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in (("v1", "pods"), ("apps/v1", "daemonsets"), ("apps/v1", "controllerrevisions"),
                                    ("v1", "nodes")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def sync(self) -> dict[str, Any]:
        self.settle()
        assert wait_until(lambda: self.controller.expectations.satisfied_expectations("ns/agent"))
        self.controller.sync("ns/agent")
        self.settle()
        return self.client.get(f"{DSS}/agent")

    def pods(self) -> list[dict[str, Any]]:
        return [p for p in self.client.list(PODS)["items"] if not p["metadata"].get("deletionTimestamp")]

    def schedule_and_ready(self) -> None:
        """What the scheduler and kubelets would do: bind each pod to its pinned node and make it Ready."""
        for pod in self.pods():
            path = f"{PODS}/{pod['metadata']['name']}"
            fresh = self.client.get(path)
            if not fresh["spec"].get("nodeName"):
                terms = fresh["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                fresh["spec"]["nodeName"] = terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
                self.client.update(path, fresh)
                fresh = self.client.get(path)
            fresh["status"] = {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
            self.client.update(f"{path}/status", fresh)

    def finish_deletions(self) -> None:
        for pod in self.client.list(PODS)["items"]:
            if pod["metadata"].get("deletionTimestamp"):
                self.client.delete(f"{PODS}/{pod['metadata']['name']}", grace_period_seconds=0)

    def revisions(self) -> list[dict[str, Any]]:
        return sorted(self.client.list(REVISIONS)["items"], key=lambda r: r["revision"])

    def nodes_of_pods(self, hash_: str | None = None) -> list[str]:
        def target(pod: dict[str, Any]) -> str:
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            return terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        return sorted(target(p) for p in self.pods()
                      if hash_ is None or p["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL] == hash_)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        h.close()


def test_one_pinned_pod_per_node_with_a_revision_and_status(harness):
    owner = harness.create_ds()
    harness.sync()
    assert harness.nodes_of_pods() == ["n1", "n2", "n3"]
    [revision] = harness.revisions()
    hash_ = revision["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]
    assert revision["metadata"]["name"] == f"agent-{hash_}" and revision["revision"] == 1
    assert revision["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    assert revision["metadata"]["annotations"] == {"kubernetes.io/change-cause": "first"}
    assert revision["data"]["spec"]["template"]["$patch"] == "replace"
    for pod in harness.pods():
        assert pod["metadata"]["labels"] == {"app": "agent", CONTROLLER_REVISION_HASH_LABEL: hash_}
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        assert not pod["spec"].get("nodeName")  # the scheduler places it
        assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"} in \
            pod["spec"]["tolerations"]
    harness.schedule_and_ready()
    status = harness.sync()["status"]
    assert status == {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3,
                      "numberAvailable": 3, "updatedNumberScheduled": 3, "numberMisscheduled": 0,
                      "observedGeneration": 1}
    assert harness.nodes_of_pods() == ["n1", "n2", "n3"]  # nothing more created
    creates = [a for a in harness.api.actions_of("ds", "create") if a.path.endswith("/pods")]
    assert len(creates) == 3


def test_follows_a_node_becoming_eligible_and_ineligible(harness):
    harness.create_ds(nodeSelector={"role": "edge"})
    harness.sync()
    assert harness.pods() == []
    queue = harness.controller.queue
    while len(queue):
        queue.done(queue.get())
    node = harness.client.get(f"{NODES}/n1")
    node["metadata"]["labels"] = {"other": "x"}
    harness.client.update(f"{NODES}/n1", node)  # not a change of eligibility: nothing queued
    node = harness.client.get(f"{NODES}/n2")
    node["metadata"]["labels"] = {"role": "edge"}
    harness.client.update(f"{NODES}/n2", node)
    harness.settle()
    assert wait_until(lambda: len(queue) == 1) and queue.get() == "ns/agent"  # the node change enqueued it
    queue.done("ns/agent")
    harness.sync()
    assert harness.nodes_of_pods() == ["n2"]
    harness.schedule_and_ready()
    node = harness.client.get(f"{NODES}/n2")
    node["metadata"]["labels"] = {}
    harness.client.update(f"{NODES}/n2", node)
    status = harness.sync()["status"]
    assert harness.pods() == []
    assert status["desiredNumberScheduled"] == 0


def test_rolling_update_then_rollback_through_the_revision_patch(harness):
    harness.create_ds()
    harness.sync()
    harness.schedule_and_ready()
    harness.sync()
    first_hash = harness.revisions()[0]["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]
    ds = harness.client.get(f"{DSS}/agent")
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    harness.client.update(DSS + "/agent", ds)
    harness.sync()
    first, second = harness.revisions()
    second_hash = second["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]
    assert (first["revision"], second["revision"]) == (1, 2) and second_hash != first_hash
    assert len(harness.pods()) == 2  # maxUnavailable 1: one old pod deleted
    for _ in range(6):
        harness.finish_deletions()
        harness.sync()
        harness.schedule_and_ready()
        harness.sync()
    assert harness.nodes_of_pods(second_hash) == ["n1", "n2", "n3"]
    assert harness.client.get(f"{DSS}/agent")["status"]["updatedNumberScheduled"] == 3
    # kubectl rollout undo: a strategic merge patch with revision 1's data
    harness.client.patch(f"{DSS}/agent", first["data"], patch_type="strategic")
    ds = harness.sync()
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1"
    numbers = {r["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]: r["revision"] for r in harness.revisions()}
    assert numbers == {first_hash: 3, second_hash: 2}
    for _ in range(6):
        harness.finish_deletions()
        harness.sync()
        harness.schedule_and_ready()
        harness.sync()
    assert harness.nodes_of_pods(first_hash) == ["n1", "n2", "n3"]


def test_on_delete_replaces_only_deleted_pods(harness):
    harness.create_ds(strategy={"type": "OnDelete"})
    harness.sync()
    harness.schedule_and_ready()
    ds = harness.client.get(f"{DSS}/agent")
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    harness.client.update(DSS + "/agent", ds)
    harness.sync()
    new_hash = harness.revisions()[-1]["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL]
    assert harness.nodes_of_pods(new_hash) == []
    victim = next(p for p in harness.pods() if p["spec"]["nodeName"] == "n2")
    harness.client.delete(f"{PODS}/{victim['metadata']['name']}", grace_period_seconds=0)
    harness.sync()
    assert harness.nodes_of_pods(new_hash) == ["n2"] and len(harness.pods()) == 3


def test_failed_pod_is_deleted_with_an_event_and_backoff(harness):
    harness.create_ds()
    harness.sync()
    harness.schedule_and_ready()
    pod = next(p for p in harness.pods() if p["spec"]["nodeName"] == "n1")
    path = f"{PODS}/{pod['metadata']['name']}"
    fresh = harness.client.get(path)
    fresh["status"]["phase"] = "Failed"
    harness.client.update(f"{path}/status", fresh)
    harness.sync()
    assert harness.client.get(path)["metadata"].get("deletionTimestamp") or pod["metadata"]["name"] not in {
        p["metadata"]["name"] for p in harness.client.list(PODS)["items"]}
    harness.controller.recorder.flush(5)
    reasons = [e["reason"] for e in harness.client.list(resource_path("v1", "events", namespace="ns"))["items"]]
    assert "FailedDaemonPod" in reasons
    assert harness.controller.backoff.in_backoff(f"{harness.client.get(DSS + '/agent')['metadata']['uid']}/n1") > 0


def test_history_beyond_the_limit_is_truncated(harness):
    harness.create_ds()
    ds = harness.client.get(f"{DSS}/agent")
    ds["spec"]["revisionHistoryLimit"] = 1
    harness.client.update(DSS + "/agent", ds)
    for image in ("busybox:2", "busybox:3", "busybox:4"):
        harness.sync()
        harness.schedule_and_ready()
        for _ in range(7):  # maxUnavailable 1: a delete round and a create round per node
            harness.finish_deletions()
            harness.sync()
            harness.schedule_and_ready()
        ds = harness.client.get(f"{DSS}/agent")
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = image
        harness.client.update(DSS + "/agent", ds)
    harness.sync()
    # current (4) and one old revision (3, which the pods still run): 1 and 2 are gone
    assert [r["revision"] for r in harness.revisions()] == [3, 4]
