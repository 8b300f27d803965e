"""NodeLifecycleController and TaintEvictionController (control/controllers/nodelifecycle/controller.py,
tainteviction/controller.py) against the shared fake API server with real informers and the fake clock: heartbeats
stop → Unknown conditions and the unreachable taints after the grace period; heartbeats back → the
kubelet's conditions stand and the taints go; pods evicted at once or after their tolerationSeconds;
DaemonSet pods kept. Workers are not run: the test syncs the keys itself, as a worker would."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import format_timestamp, get_condition, key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.daemonset.decisions import DAEMON_TOLERATIONS
from control.controllers.nodelifecycle.controller import NodeLifecycleController
from control.controllers.tainteviction.controller import TaintEvictionController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

LIFECYCLE, EVICTION = "nodelifecycle-controller", "taint-eviction-controller"
GRACE = 40.0
LEASES = resource_path("coordination.k8s.io/v1", "leases", namespace="kube-node-lease")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.kubelet = self.api.client("kubelet")
        self.factory = InformerFactory(self.api.client("informers"))
        self.lifecycle = NodeLifecycleController(self.api.client(LIFECYCLE), self.factory, grace_period=GRACE,
                                                 clock=self.clock)
        self.eviction = TaintEvictionController(self.api.client(EVICTION), self.factory, workers=1,
                                                clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        for controller in (self.lifecycle, self.eviction):
            controller.queue.shut_down()
            controller.recorder.shutdown(1)

    def settle(self) -> None:
        """Wait until the informers hold every object the server holds, at its resourceVersion."""
        informers = [("v1", "nodes", None), ("v1", "pods", None), ("coordination.k8s.io/v1", "leases",
                                                                      "kube-node-lease")]

        def caught_up() -> bool:
            for version, plural, namespace in informers:
                informer = self.factory.informer(version, plural, namespace=namespace)
                items = self.api.client("harness").list(resource_path(version, plural, namespace=namespace))["items"]
                cached = {key: obj["metadata"]["resourceVersion"] for key, obj in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def beat(self, name: str = "n1") -> None:
        """What a live kubelet does: renew its Lease and post Ready conditions with a new heartbeat."""
        now = self.clock.now()
        self.kubelet.update(f"{LEASES}/{name}", {"metadata": {"name": name, "namespace": "kube-node-lease"},
                                                 "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                                          "renewTime": format_timestamp(now, micro=True)}})
        node = self.kubelet.get(resource_path("v1", "nodes", name=name))
        node["status"]["conditions"] = kubelet_conditions(format_timestamp(now))
        self.kubelet.update(resource_path("v1", "nodes", name=name) + "/status", node)

    def renew_lease_only(self, name: str = "n1") -> None:
        lease = self.kubelet.get(f"{LEASES}/{name}")
        lease["spec"]["renewTime"] = format_timestamp(self.clock.now(), micro=True)
        self.kubelet.update(f"{LEASES}/{name}", lease)

    def sync_nodes(self, name: str = "n1") -> dict[str, Any]:
        self.settle()
        self.lifecycle.sync(name)
        self.settle()
        return self.node(name)

    def node(self, name: str = "n1") -> dict[str, Any]:
        return self.api.client("harness").get(resource_path("v1", "nodes", name=name))

    def sync_pods(self) -> None:
        self.settle()
        for pod in self.api.client("harness").list(resource_path("v1", "pods"))["items"]:
            self.eviction.sync(key_of(pod))
        self.settle()

    def pods(self) -> list[str]:
        items = self.api.client("harness").list(resource_path("v1", "pods"))["items"]
        return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))

    def events(self) -> list[tuple[str, str]]:
        self.eviction.recorder.flush(2)
        self.lifecycle.recorder.flush(2)
        items = self.api.client("harness").list(resource_path("v1", "events"))["items"]
        return sorted((e["reason"], e["message"]) for e in items)


def kubelet_conditions(beat: str) -> list[dict[str, Any]]:
    return [{"type": kind, "status": status, "reason": reason, "message": "from the kubelet",
             "lastHeartbeatTime": beat, "lastTransitionTime": beat}
            for kind, status, reason in (("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                         ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                         ("PIDPressure", "False", "KubeletHasSufficientPID"),
                                         ("Ready", "True", "KubeletReady"))]


def pod(name: str, *, tolerations: list[dict] | None = None, owner: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "uid-o",
                                        "controller": True}]
    spec: dict[str, Any] = {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running"}}


def default_tolerations(seconds: int = 300) -> list[dict[str, Any]]:
    return [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


def taint_keys(node: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or ()]


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    now = format_timestamp(harness.clock.now())
    harness.api.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "creationTimestamp": now},
                     "spec": {}, "status": {"conditions": kubelet_conditions(now)}})
    harness.beat()
    # a second node, never synced, so Ready stays True: one silent node alone would be a fully disrupted
    # cluster, where no eviction starts (zones.py)
    harness.api.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "creationTimestamp": now},
                     "spec": {}, "status": {"conditions": kubelet_conditions(now)}})
    yield harness
    harness.close()


def test_heartbeats_stop_unknown_and_taints_after_grace_then_back(h: Harness):
    assert h.sync_nodes()["status"]["conditions"] == h.node()["status"]["conditions"]
    for _ in range(3):  # a live kubelet: never Unknown however long
        h.clock.step(30)
        h.beat()
        assert get_condition(h.sync_nodes(), "Ready")["status"] == "True"
    assert h.api.actions_of(LIFECYCLE, "update", "patch") == []
    h.clock.step(GRACE)  # silent for exactly the grace period: not yet
    assert get_condition(h.sync_nodes(), "Ready")["status"] == "True"
    h.clock.step(1)
    node = h.sync_nodes()
    for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        condition = get_condition(node, kind)
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert taint_keys(node) == [("node.kubernetes.io/unreachable", "NoExecute"),
                                ("node.kubernetes.io/unreachable", "NoSchedule")]
    assert node["spec"]["taints"][0]["timeAdded"] == format_timestamp(h.clock.now())
    assert [a.path for a in h.api.actions_of(LIFECYCLE, "update", "patch")] == [
        "/api/v1/nodes/n1/status", "/api/v1/nodes/n1"]
    assert ("NodeNotReady", "Node n1 status is now: NodeNotReady") in h.events()
    h.sync_nodes()  # nothing new to write
    assert len(h.api.actions_of(LIFECYCLE, "update", "patch")) == 2
    h.clock.step(5)
    h.beat()  # the kubelet is back: its own conditions stand, the taints go
    node = h.sync_nodes()
    assert get_condition(node, "Ready")["status"] == "True"
    assert get_condition(node, "Ready")["reason"] == "KubeletReady"
    assert taint_keys(node) == []


def ready_pod(name: str, node_name: str = "n1") -> dict[str, Any]:
    obj = pod(name)
    obj["spec"]["nodeName"] = node_name
    obj["status"]["conditions"] = [{"type": kind, "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
                                   for kind in ("ContainersReady", "Ready")]
    return obj


def pod_ready(h: Harness, name: str) -> tuple[str, str]:
    obj = h.api.client("harness").get(resource_path("v1", "pods", namespace="ns", name=name))
    return get_condition(obj, "ContainersReady")["status"], get_condition(obj, "Ready")["status"]


def test_pods_of_an_unknown_node_are_marked_not_ready_once(h: Harness):
    h.api.add(ready_pod("a"))
    h.api.add(ready_pod("b"))
    h.api.add(ready_pod("elsewhere", "n2"))
    h.sync_nodes()
    h.clock.step(GRACE + 1)
    h.sync_nodes()
    assert [pod_ready(h, name) for name in ("a", "b", "elsewhere")] == [
        ("True", "False"), ("True", "False"), ("True", "True")]
    assert sorted(a.path for a in h.api.actions_of(LIFECYCLE, "update") if "/pods/" in a.path) == [
        "/api/v1/namespaces/ns/pods/a/status", "/api/v1/namespaces/ns/pods/b/status"]
    assert h.events().count(("NodeNotReady", "Node is not ready")) == 2
    h.api.add(ready_pod("late"))  # bound to the node while it is Unknown: marked at its next sync
    h.clock.step(5)
    h.sync_nodes()
    assert pod_ready(h, "late") == ("True", "False")
    assert len([a for a in h.api.actions_of(LIFECYCLE, "update") if "/pods/" in a.path]) == 3  # a, b not again


def test_a_kubelet_posting_not_ready_keeps_its_pods(h: Harness):
    """Ready=False comes from a live kubelet, which keeps its pods' statuses itself (upstream marks only
    when the controller itself finds the node silent)."""
    h.api.add(ready_pod("a"))
    node = h.node()
    get_condition(node, "Ready").update(status="False", reason="KubeletNotReady")
    h.kubelet.update(resource_path("v1", "nodes", name="n1") + "/status", node)
    h.sync_nodes()
    assert pod_ready(h, "a") == ("True", "True")


def test_a_renewed_lease_alone_keeps_the_node_from_going_unknown(h: Harness):
    h.sync_nodes()
    for _ in range(4):
        h.clock.step(30)
        h.renew_lease_only()
        assert get_condition(h.sync_nodes(), "Ready")["status"] == "True"


def test_other_taints_are_kept(h: Harness):
    node = h.node()
    node["spec"]["taints"] = [{"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}]
    h.kubelet.update(resource_path("v1", "nodes", name="n1"), node)
    h.sync_nodes()
    h.clock.step(GRACE + 1)
    assert taint_keys(h.sync_nodes()) == [("example.com/dedicated", "NoSchedule"),
                                         ("node.kubernetes.io/unreachable", "NoExecute"),
                                         ("node.kubernetes.io/unreachable", "NoSchedule")]
    h.beat()
    assert taint_keys(h.sync_nodes()) == [("example.com/dedicated", "NoSchedule")]


def test_not_ready_node_gets_not_ready_taints(h: Harness):
    node = h.node()
    get_condition(node, "Ready").update(status="False", reason="KubeletNotReady")
    h.kubelet.update(resource_path("v1", "nodes", name="n1") + "/status", node)
    assert taint_keys(h.sync_nodes()) == [("node.kubernetes.io/not-ready", "NoExecute"),
                                          ("node.kubernetes.io/not-ready", "NoSchedule")]


def test_eviction_at_once_after_toleration_seconds_and_daemonset_pods_kept(h: Harness):
    h.api.add(pod("bare"))  # tolerates nothing: goes at once
    h.api.add(pod("default", tolerations=default_tolerations()))  # the API server's defaults: 300 s
    h.api.add(pod("short", tolerations=default_tolerations(10)))
    h.api.add(pod("forever", tolerations=[{"operator": "Exists"}]))
    # the tolerations the DaemonSet controller gives its pods keep them; no special case by owner
    h.api.add(pod("daemon", owner="DaemonSet", tolerations=[dict(t) for t in DAEMON_TOLERATIONS]))
    h.sync_nodes()
    h.sync_pods()
    assert h.pods() == ["bare", "daemon", "default", "forever", "short"]  # a healthy node: nothing goes
    h.clock.step(GRACE + 1)
    h.sync_nodes()
    tainted_at = h.clock.now()
    h.sync_pods()
    assert h.pods() == ["daemon", "default", "forever", "short"]
    assert h.events().count(("TaintManagerEviction", "Marking for deletion Pod ns/bare")) == 1
    h.clock.step(9)
    h.sync_pods()
    assert h.pods() == ["daemon", "default", "forever", "short"]
    h.clock.step(1)  # 10 s after the taint was added
    h.sync_pods()
    assert h.pods() == ["daemon", "default", "forever"]
    h.clock.step(300 - 10 - 1)
    h.sync_pods()
    assert h.pods() == ["daemon", "default", "forever"]
    h.clock.step(1)
    assert (h.clock.now() - tainted_at).total_seconds() == 300
    h.sync_pods()
    assert h.pods() == ["daemon", "forever"]
    deletes = h.api.actions_of(EVICTION, "delete")
    assert [a.path.rsplit("/", 1)[-1] for a in deletes] == ["bare", "short", "default"]
    assert deletes[0].params["preconditions"] == {"uid": "uid-bare"}


def test_the_node_back_before_the_toleration_ends_keeps_the_pods(h: Harness):
    h.api.add(pod("default", tolerations=default_tolerations()))
    h.sync_nodes()
    h.clock.step(GRACE + 1)
    h.sync_nodes()
    h.sync_pods()
    h.clock.step(100)
    h.beat()
    assert taint_keys(h.sync_nodes()) == []
    h.clock.step(300)
    h.sync_pods()
    assert h.pods() == ["default"]
    assert h.api.actions_of(EVICTION, "delete") == []


def test_handlers_enqueue_the_pods_of_a_node_whose_noexecute_taints_change(h: Harness):
    h.api.add(pod("a", tolerations=default_tolerations()))
    h.settle()
    # The informer's store is current once settle() returns, but its handlers may still be running: wait for
    # the pod's own add to be queued before draining it, or it could arrive after the drain.
    assert wait_until(lambda: len(h.eviction.queue) == 1, interval=0.005)
    h.eviction.queue.done(h.eviction.queue.get())
    h.sync_nodes()  # no taint change: nothing queued
    assert len(h.eviction.queue) == 0
    h.clock.step(GRACE + 1)
    h.sync_nodes()
    assert wait_until(lambda: len(h.eviction.queue) == 1, interval=0.005)
    assert h.eviction.queue.get() == "ns/a"


def test_a_second_silent_node_waits_for_its_zones_eviction_rate(h: Harness):
    """0.1 nodes/s: n1 takes the zone's token, n3 going silent just after gets its NoExecute taint only
    once the bucket has refilled (10 s), its NoSchedule one at once."""
    now = format_timestamp(h.clock.now())
    h.api.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3", "creationTimestamp": now},
               "spec": {}, "status": {"conditions": kubelet_conditions(now)}})
    h.beat("n3")
    h.sync_nodes("n1")
    h.sync_nodes("n3")
    h.clock.step(GRACE + 1)
    assert ("node.kubernetes.io/unreachable", "NoExecute") in taint_keys(h.sync_nodes("n1"))
    assert taint_keys(h.sync_nodes("n3")) == [("node.kubernetes.io/unreachable", "NoSchedule")]
    h.clock.step(5)
    assert ("node.kubernetes.io/unreachable", "NoExecute") not in taint_keys(h.sync_nodes("n3"))
    h.clock.step(5)
    assert ("node.kubernetes.io/unreachable", "NoExecute") in taint_keys(h.sync_nodes("n3"))


def test_every_node_silent_stops_evictions(h: Harness):
    """All zones fully disrupted: the control plane is more likely cut off than every node dead."""
    h.sync_nodes("n1")
    node = h.node("n2")
    get_condition(node, "Ready").update(status="Unknown")
    h.kubelet.update(resource_path("v1", "nodes", name="n2") + "/status", node)
    h.clock.step(GRACE + 1)
    assert taint_keys(h.sync_nodes("n1")) == [("node.kubernetes.io/unreachable", "NoSchedule")]
