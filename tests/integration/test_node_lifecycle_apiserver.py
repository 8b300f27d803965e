"""The node lifecycle and taint eviction controllers in a real `slimkube server` subprocess started with a
short `--node-monitor-grace-period`: a Node whose Lease stops being renewed goes Ready=Unknown (reason
NodeStatusUnknown) with the unreachable NoExecute and NoSchedule taints; a pod that tolerates it for 1 s is
marked for deletion (event TaintManagerEviction), one with the API server's default tolerations (300 s) is
not; renewing again and posting Ready brings the node back and removes the taints. A ready pod behind a
Service on a node that goes silent gets Ready=False, and its EndpointSlice endpoint `ready: false`, within
the grace period plus a few seconds. No kubelet runs: the test plays it through the API (not privileged)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from control.apimachinery.meta import format_timestamp, get_condition
from control.client.errors import Conflict
from control.client.rest import RESTClient
from tests.support.apiserver import ProcessServer
from tests.support.polling import wait_for

GRACE = 3  # seconds: the flag under test
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RESTClient]:
    server = ProcessServer(str(tmp_path_factory.mktemp("nodelife")),
                           args=("--node-monitor-grace-period", f"{GRACE}s"))
    endpoint = server.start()
    try:
        with RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
            # a node that keeps beating: with every node silent no eviction would start (a fully disrupted
            # cluster looks like a cut-off control plane)
            rest.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "keeper"},
                                          "status": {"conditions": conditions("True", format_timestamp(
                                              datetime.now(UTC)))}})
            wait_for(lambda: rest.list("/api/v1/namespaces/default/serviceaccounts")["items"], 30,
                     "the default service account (pods are admitted only once it exists)")
            stop = threading.Event()
            keeper = threading.Thread(target=keep_beating, args=(endpoint.kubeconfig, stop), daemon=True)
            keeper.start()
            try:
                yield rest
            finally:
                stop.set()
                keeper.join(10)
    finally:
        server.stop()


def conditions(status: str, now: str) -> list[dict]:
    return [{"type": kind, "status": value if kind == "Ready" else "False", "reason": "Kubelet", "message": "m",
             "lastHeartbeatTime": now, "lastTransitionTime": now}
            for kind, value in (("MemoryPressure", ""), ("DiskPressure", ""), ("PIDPressure", ""),
                                ("Ready", status))]


def beat(client: RESTClient, name: str) -> None:
    """What a kubelet does: renew the Lease (created the first time) and post Ready=True."""
    now = datetime.now(UTC)
    client.update(f"{LEASES}/{name}", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                       "metadata": {"name": name, "namespace": "kube-node-lease"},
                                       "spec": {"holderIdentity": name, "leaseDurationSeconds": GRACE,
                                                "renewTime": format_timestamp(now, micro=True)}})
    for _ in range(5):  # as a kubelet: a node other controllers also write is read again on a conflict
        node = client.get(f"/api/v1/nodes/{name}")
        node["status"]["conditions"] = conditions("True", format_timestamp(now))
        try:
            client.update(f"/api/v1/nodes/{name}/status", node)
            return
        except Conflict:
            continue
    raise AssertionError(f"node {name}: status update conflicted 5 times")


def keep_beating(kubeconfig: str, stop: threading.Event) -> None:
    with RESTClient.from_kubeconfig(kubeconfig) as rest:
        while not stop.wait(GRACE / 3):
            beat(rest, "keeper")


def taints(node: dict) -> list[tuple[str, str]]:
    return sorted((t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or ())


def pod(client: RESTClient, name: str, node: str, tolerations: list[dict] | None = None,
        labels: dict[str, str] | None = None) -> dict:
    spec: dict = {"nodeName": node, "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return client.create("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod",
                                                              "metadata": {"name": name, "labels": labels or {}},
                                                              "spec": spec})


def test_a_silent_node_goes_unknown_tainted_and_its_intolerant_pods_are_evicted(client: RESTClient):
    name = f"n-{uuid.uuid4().hex[:6]}"
    now = format_timestamp(datetime.now(UTC))
    client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                    "status": {"conditions": conditions("True", now)}})
    beat(client, name)
    short = pod(client, f"{name}-short", name, [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                                 "effect": "NoExecute", "tolerationSeconds": 1}])
    default = pod(client, f"{name}-default", name)
    assert {t["key"]: t["tolerationSeconds"] for t in default["spec"]["tolerations"]} == {
        "node.kubernetes.io/not-ready": 300, "node.kubernetes.io/unreachable": 300}
    for _ in range(3):  # heartbeats within the grace period: Ready stays True
        time.sleep(GRACE / 2)
        beat(client, name)
        assert get_condition(client.get(f"/api/v1/nodes/{name}"), "Ready")["status"] == "True"
    silent_since = time.monotonic()

    def unknown() -> dict | None:
        node = client.get(f"/api/v1/nodes/{name}")
        return node if get_condition(node, "Ready")["status"] == "Unknown" and taints(node) else None
    node = wait_for(unknown, 30, lambda: f"node {name} Unknown and tainted: {client.get(f'/api/v1/nodes/{name}')}")
    assert time.monotonic() - silent_since >= GRACE - 1  # not before the grace period (1 s for timing slack)
    assert get_condition(node, "Ready")["reason"] == "NodeStatusUnknown"
    assert get_condition(node, "Ready")["message"] == "Kubelet stopped posting node status."
    assert taints(node) == [("node.kubernetes.io/unreachable", "NoExecute"),
                            ("node.kubernetes.io/unreachable", "NoSchedule")]
    wait_for(lambda: client.get(f"/api/v1/namespaces/default/pods/{short['metadata']['name']}")["metadata"].get(
        "deletionTimestamp"), 20, "the pod tolerating 1 s marked for deletion")
    events = client.get("/api/v1/namespaces/default/events")["items"]
    assert any(e["reason"] == "TaintManagerEviction" and e["involvedObject"]["name"] == short["metadata"]["name"]
               and e["message"] == f"Marking for deletion Pod default/{short['metadata']['name']}" for e in events)
    assert not client.get(f"/api/v1/namespaces/default/pods/{default['metadata']['name']}")["metadata"].get(
        "deletionTimestamp")
    beat(client, name)  # back

    def ready_again() -> bool:
        node = client.get(f"/api/v1/nodes/{name}")
        return get_condition(node, "Ready")["status"] == "True" and not taints(node)
    wait_for(ready_again, 30, "the node Ready again without taints")


def test_a_silent_nodes_pods_turn_not_ready_and_leave_the_service(client: RESTClient):
    name = f"n-{uuid.uuid4().hex[:6]}"
    client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                    "status": {"conditions": conditions("True", format_timestamp(datetime.now(UTC)))}})
    beat(client, name)
    client.create("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}})
    web = pod(client, f"{name}-web", name, labels={"app": name})
    now = format_timestamp(datetime.now(UTC))
    web["status"] = {"phase": "Running", "podIP": "10.244.9.9", "podIPs": [{"ip": "10.244.9.9"}],
                     "conditions": [{"type": kind, "status": "True", "lastTransitionTime": now}
                                    for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled")]}
    client.update(f"/api/v1/namespaces/default/pods/{web['metadata']['name']}/status", web)

    def endpoint_ready() -> bool | None:
        slices = client.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                            params={"labelSelector": f"kubernetes.io/service-name={name}"})["items"]
        endpoints = [e for s in slices for e in s.get("endpoints") or ()]
        return endpoints[0]["conditions"].get("ready") if len(endpoints) == 1 else None
    wait_for(lambda: endpoint_ready() is True, 20, "the pod's endpoint ready")
    beat(client, name)
    silent_since = time.monotonic()
    wait_for(lambda: endpoint_ready() is False, GRACE + 15, "the endpoint not ready once the node is silent")
    took = time.monotonic() - silent_since
    assert GRACE - 1 <= took <= GRACE + 10, took
    marked = client.get(f"/api/v1/namespaces/default/pods/{web['metadata']['name']}")
    assert {c["type"]: c["status"] for c in marked["status"]["conditions"]} == {
        "Initialized": "True", "ContainersReady": "True", "Ready": "False", "PodScheduled": "True"}
    events = client.get("/api/v1/namespaces/default/events")["items"]
    assert any(e["reason"] == "NodeNotReady" and e["message"] == "Node is not ready"
               and e["involvedObject"]["name"] == web["metadata"]["name"] for e in events)
