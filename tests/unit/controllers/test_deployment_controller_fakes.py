"""DeploymentController (control/controllers/deployment/controller.py) against the shared fake API server with real
informers. The ReplicaSet controller is played by the test: `h.report(name, available)` writes the
ReplicaSet's status as that controller would once its pods exist. Workers are not run: the test syncs
the key itself, so every step of a rollout is observed."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.deployment import util
from control.controllers.deployment.controller import DeploymentController
from control.controllers.shared.helpers import compute_hash
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

DEPLOYMENTS = resource_path("apps/v1", "deployments", namespace="ns")
RSS = resource_path("apps/v1", "replicasets", namespace="ns")
PODS = resource_path("v1", "pods", namespace="ns")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = DeploymentController(self.api.client("deployment"), self.factory, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    def settle(self) -> None:
        def caught_up() -> bool:
            for version, plural in (("apps/v1", "deployments"), ("apps/v1", "replicasets"), ("v1", "pods")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {key: obj["metadata"]["resourceVersion"] for key, obj in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def queued(self) -> set[str]:
        keys = set()
        while True:
            try:
                key = self.controller.queue.get(timeout=0.05)
            except queue.Empty:
                return keys
            self.controller.queue.done(key)
            keys.add(key)

    def sync(self, name: str = "web") -> dict[str, Any]:
        self.settle()
        self.controller.sync(f"ns/{name}")
        self.settle()
        return self.deployment(name)

    def deployment(self, name: str = "web") -> dict[str, Any]:
        return self.client.get(f"{DEPLOYMENTS}/{name}")

    def replica_sets(self) -> dict[str, dict[str, Any]]:
        return {rs["metadata"]["name"]: rs for rs in self.client.list(RSS)["items"]}

    def sizes(self) -> dict[str, int]:
        return {name: rs["spec"]["replicas"] for name, rs in self.replica_sets().items()}

    def report(self, name: str, available: int | None = None, *, replicas: int | None = None) -> None:
        """The ReplicaSet controller's status for `name`: its pods exist, `available` of them available."""
        rs = self.client.get(f"{RSS}/{name}")
        size = rs["spec"]["replicas"] if replicas is None else replicas
        count = size if available is None else available
        rs["status"] = {"replicas": size, "readyReplicas": count, "availableReplicas": count,
                        "fullyLabeledReplicas": size, "observedGeneration": rs["metadata"]["generation"]}
        self.client.update(f"{RSS}/{name}/status", rs)

    def report_all(self) -> None:
        for name in self.replica_sets():
            self.report(name)

    def events(self) -> list[str]:
        self.controller.recorder.flush(2)
        return [e["message"] for e in sorted(self.client.list(resource_path("v1", "events"))["items"],
                                             key=lambda e: e["metadata"]["resourceVersion"])]

    def edit(self, change: Any, name: str = "web") -> dict[str, Any]:
        d = self.deployment(name)
        change(d)
        return self.client.update(f"{DEPLOYMENTS}/{name}", d)


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    try:
        yield harness
    finally:
        harness.close()


def deployment(name: str = "web", replicas: int = 3, *, image: str = "busybox:1", strategy: str = "RollingUpdate",
               surge: Any = "25%", unavailable: Any = "25%", **spec: Any) -> dict[str, Any]:
    strategy_obj: dict[str, Any] = {"type": strategy}
    if strategy == "RollingUpdate":
        strategy_obj["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "strategy": strategy_obj,
                     "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def set_image(image: str) -> Any:
    def change(d: dict[str, Any]) -> None:
        d["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return change


def only(mapping: dict[str, Any]) -> Any:
    assert len(mapping) == 1, mapping
    return next(iter(mapping.values()))


def test_create_makes_one_owned_replica_set_with_the_hash(h: Harness):
    created = h.client.create(DEPLOYMENTS, deployment())
    d = h.sync()
    rs = only(h.replica_sets())
    pod_hash = compute_hash(created["spec"]["template"], None)
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": pod_hash}}
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_hash
    assert rs["spec"]["replicas"] == 3
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                  "uid": created["metadata"]["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]
    assert rs["metadata"]["annotations"] == {util.REVISION_ANNOTATION: "1", util.DESIRED_REPLICAS_ANNOTATION: "3",
                                             util.MAX_REPLICAS_ANNOTATION: "4"}
    assert d["metadata"]["annotations"][util.REVISION_ANNOTATION] == "1"
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["reason"], progressing["message"]) == ("NewReplicaSetCreated",
                                                               f'Created new replica set "web-{pod_hash}"')
    assert f"Scaled up replica set web-{pod_hash} from 0 to 3" in h.events()

    h.report(rs["metadata"]["name"])
    d = h.sync()
    assert {k: v for k, v in d["status"].items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
        "unavailableReplicas": 0}
    reasons = {c["type"]: (c["status"], c["reason"]) for c in d["status"]["conditions"]}
    assert reasons == {"Progressing": ("True", "NewReplicaSetAvailable"),
                       "Available": ("True", "MinimumReplicasAvailable")}


def test_rolling_update_stays_within_surge_and_availability(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=4, surge=1, unavailable=1))
    h.sync()
    first = only(h.replica_sets())["metadata"]["name"]
    h.report(first)
    h.sync()
    h.clock.step(5)
    h.edit(set_image("busybox:2"))
    d = h.sync()
    second = next(name for name in h.replica_sets() if name != first)
    assert h.replica_sets()[second]["metadata"]["annotations"][util.REVISION_ANNOTATION] == "2"
    assert d["metadata"]["annotations"][util.REVISION_ANNOTATION] == "2"
    # Let the "ReplicaSet controller" report every set as fully available after each sync and check
    # the bounds each time: at most 4 + 1 pods, at least 4 - 1 available.
    for _ in range(20):
        sizes = h.sizes()
        assert sum(sizes.values()) <= 5
        available = sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in h.replica_sets().values())
        assert available >= 3
        if sizes == {first: 0, second: 4} and available == 4:
            break
        h.report_all()
        h.sync()
    else:
        pytest.fail(f"rollout did not finish: {h.sizes()}")
    d = h.sync()
    assert d["status"]["updatedReplicas"] == 4 and d["status"]["replicas"] == 4
    assert next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")["reason"] == \
        "NewReplicaSetAvailable"
    events = h.events()
    assert f"Scaled up replica set {second} from 0 to 1" in events
    assert f"Scaled down replica set {first} from 4 to 3" in events
    assert f"Scaled down replica set {first} from 1 to 0" in events


def test_scaling_during_a_rollout_is_proportional(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=10, surge=3, unavailable=2))
    h.sync()
    first = only(h.replica_sets())["metadata"]["name"]
    h.report(first)
    h.sync()
    h.clock.step(5)
    h.edit(set_image("busybox:2"))
    h.sync()  # new set gets 3 (surge)
    h.report_all()
    h.sync()  # old set down to 8 - 0 ... within availability
    sizes_before = h.sizes()
    assert sum(sizes_before.values()) == 13
    h.report_all()
    h.edit(lambda d: d["spec"].update(replicas=20))
    d = h.sync()
    sizes = h.sizes()
    assert sum(sizes.values()) == 20 + 3  # the new spec.replicas plus maxSurge
    assert all(sizes[name] > sizes_before[name] for name in sizes)
    for rs in h.replica_sets().values():
        assert rs["metadata"]["annotations"][util.DESIRED_REPLICAS_ANNOTATION] == "20"
        assert rs["metadata"]["annotations"][util.MAX_REPLICAS_ANNOTATION] == "23"
    assert d["spec"]["replicas"] == 20


def test_paused_deployment_scales_but_does_not_roll_out(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=2))
    h.sync()
    first = only(h.replica_sets())["metadata"]["name"]
    h.report(first)
    h.sync()
    h.edit(lambda d: d["spec"].update(paused=True))
    d = h.sync()
    progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "Unknown", "DeploymentPaused", "Deployment is paused")
    h.edit(set_image("busybox:2"))
    h.sync()
    assert list(h.replica_sets()) == [first]
    h.edit(lambda d: d["spec"].update(replicas=5))
    h.sync()
    assert h.sizes() == {first: 5}
    h.edit(lambda d: d["spec"].update(paused=False))
    d = h.sync()
    assert len(h.replica_sets()) == 2
    reasons = [c["reason"] for c in d["status"]["conditions"] if c["type"] == "Progressing"]
    assert reasons == ["NewReplicaSetCreated"]


def test_recreate_waits_for_old_pods(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=2, strategy="Recreate"))
    h.sync()
    first = only(h.replica_sets())["metadata"]["name"]
    h.report(first)
    rs = h.replica_sets()[first]
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": first,
                                             "uid": rs["metadata"]["uid"], "controller": True}]},
           "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}, "status": {"phase": "Running"}}
    h.client.create(PODS, pod)
    h.sync()
    h.edit(set_image("busybox:2"))
    h.sync()
    assert h.sizes() == {first: 0}  # old ones down first, nothing new yet
    assert f"Scaled down replica set {first} from 2 to 0" in h.events()
    h.report(first)  # the ReplicaSet reports no replicas, but its pod still runs
    h.sync()
    assert list(h.sizes()) == [first]
    h.client.delete(f"{PODS}/p")
    h.settle()
    assert "ns/web" in h.queued()  # the last old pod's deletion wakes the rollout
    h.sync()
    sizes = h.sizes()
    assert len(sizes) == 2 and sorted(sizes.values()) == [0, 2]


def test_old_replica_sets_beyond_history_limit_are_deleted(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=1, surge=1, unavailable=0, revisionHistoryLimit=1))
    for image in ("busybox:1", "busybox:2", "busybox:3"):
        h.clock.step(2)
        h.edit(set_image(image))
        for _ in range(6):
            h.sync()
            h.report_all()
    names = h.replica_sets()
    assert len(names) == 2  # the current one and one old revision
    revisions = sorted(rs["metadata"]["annotations"][util.REVISION_ANNOTATION] for rs in names.values())
    assert revisions == ["2", "3"]


def test_adopts_matching_orphans_and_releases_what_no_longer_matches(h: Harness):
    d = h.client.create(DEPLOYMENTS, deployment(replicas=1))
    template = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    h.client.create(RSS, {"metadata": {"name": "orphan", "namespace": "ns", "labels": {"app": "web"}},
                          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    h.sync()
    orphan = h.replica_sets()["orphan"]
    assert orphan["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    assert len(h.replica_sets()) == 1  # its template is the Deployment's: it is the new set
    orphan["metadata"]["labels"] = {"app": "other"}
    h.client.update(f"{RSS}/orphan", orphan)
    h.settle()
    assert "ns/web" in h.queued()
    h.sync()
    assert not h.replica_sets()["orphan"]["metadata"].get("ownerReferences")


def test_a_name_taken_by_another_template_bumps_the_collision_count(h: Harness):
    spec = deployment()
    pod_hash = compute_hash(spec["spec"]["template"], None)
    h.client.create(RSS, {"metadata": {"name": f"web-{pod_hash}", "namespace": "ns", "labels": {"app": "other"}},
                          "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "other"}},
                                   "template": {"metadata": {"labels": {"app": "other"}}, "spec": {}}}})
    h.client.create(DEPLOYMENTS, spec)
    with pytest.raises(Exception, match="AlreadyExists"):
        h.sync()
    d = h.deployment()
    assert d["status"]["collisionCount"] == 1
    h.sync()
    other_hash = compute_hash(spec["spec"]["template"], 1)
    assert f"web-{other_hash}" in h.replica_sets()


def test_deprecated_rollback_annotation_restores_the_old_template(h: Harness):
    h.client.create(DEPLOYMENTS, deployment(replicas=1))
    h.sync()
    h.report_all()
    h.clock.step(2)
    h.edit(set_image("busybox:2"))
    for _ in range(4):
        h.sync()
        h.report_all()
    h.edit(lambda d: d["metadata"].setdefault("annotations", {}).update({util.DEPRECATED_ROLLBACK_TO: "0"}))
    d = h.sync()
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1"
    assert "pod-template-hash" not in d["spec"]["template"]["metadata"]["labels"]
    assert util.DEPRECATED_ROLLBACK_TO not in d["metadata"]["annotations"]
    assert 'Rolled back deployment "web" to revision 1' in h.events()
    h.sync()
    old = next(rs for rs in h.replica_sets().values()
               if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1")
    assert old["metadata"]["annotations"][util.REVISION_ANNOTATION] == "3"
    assert old["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1"


def test_selecting_all_is_refused_with_an_event(h: Harness):
    spec = deployment()
    spec["spec"]["selector"] = {}
    h.client.create(DEPLOYMENTS, spec)
    d = h.sync()
    assert h.replica_sets() == {}
    assert d["status"]["observedGeneration"] == 1
    assert "This deployment is selecting all pods. A non-empty selector is required." in h.events()


def test_replica_set_changes_enqueue_their_deployment(h: Harness):
    h.client.create(DEPLOYMENTS, deployment())
    h.sync()
    h.queued()
    h.report(only(h.replica_sets())["metadata"]["name"])
    h.settle()
    assert h.queued() == {"ns/web"}
