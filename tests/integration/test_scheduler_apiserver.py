"""The scheduler against a real API server on 127.0.0.1 (no kubelet: Node objects only), started as
`slimkube server` starts it (slimkube/controlplane.py `start_parts`, under leader election): a pending pod
is bound through pods/binding with a Scheduled event, one that fits nowhere gets FailedScheduling with
upstream's message and PodScheduled=False, the Lease kube-system/kube-scheduler names this server, and
`--disable scheduler` leaves pods pending; a pod of a high PriorityClass that fits nowhere preempts a
lower-priority pod (DefaultPreemption) and is bound to the node it was nominated to."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from control.client.errors import NotFound
from control.client.rest import RESTClient
from slimkube.controlplane import SCHEDULER_LEASE, start_parts
from tests.support.apiserver import ThreadServer
from tests.support.polling import wait_until


def _node(client: RESTClient, name: str, *, cpu: str = "2") -> None:
    client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    allocatable = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    client.patch(f"/api/v1/nodes/{name}/status", {"status": {
        "allocatable": allocatable, "capacity": allocatable, "conditions": [{"type": "Ready", "status": "True"}]}})
    # a new Node is tainted not-ready (TaintNodesByCondition) until the node lifecycle controller sees it Ready
    wait_until(lambda: not client.get(f"/api/v1/nodes/{name}")["spec"].get("taints"), 20)


def _pod(client: RESTClient, ns: str, name: str, *, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return client.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1",
                                 "resources": {"requests": {"cpu": cpu}}}], **spec}})


def _lease(client: RESTClient, name: str) -> dict[str, Any] | None:
    try:
        return client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    except NotFound:
        return None


def _events(client: RESTClient, ns: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in client.list(f"/api/v1/namespaces/{ns}/events")["items"] if e["reason"] == reason]


@pytest.fixture
def cluster(tmp_path, request) -> Iterator[tuple[RESTClient, str]]:
    server = ThreadServer(str(tmp_path))
    endpoint = server.start()
    parts = start_parts(server.server, disable=getattr(request, "param", ()))
    try:
        with RESTClient.from_kubeconfig(endpoint.kubeconfig) as client:
            ns = f"t-{uuid.uuid4().hex[:8]}"
            client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            yield client, ns
    finally:
        parts.stop()
        server.stop()


def test_pending_pods_are_bound_and_unfit_ones_explained(cluster) -> None:
    client, ns = cluster
    _node(client, "n1")
    _node(client, "n2")
    _pod(client, ns, "small")
    node = wait_until(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/small")["spec"].get("nodeName"), 20)
    assert node in ("n1", "n2")
    scheduled = wait_until(lambda: _events(client, ns, "Scheduled"), 10)
    assert scheduled[0]["message"] == f"Successfully assigned {ns}/small to {node}"
    _pod(client, ns, "huge", cpu="64")
    failed = wait_until(lambda: _events(client, ns, "FailedScheduling"), 10)
    assert failed[0]["message"] == ("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                                    "available: 2 No preemption victims found for incoming pod.")

    def condition() -> dict | None:
        pod = client.get(f"/api/v1/namespaces/{ns}/pods/huge")
        return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)

    found = wait_until(condition, 10)
    assert (found["status"], found["reason"]) == ("False", "Unschedulable")
    lease = _lease(client, SCHEDULER_LEASE)
    assert lease is not None and lease["spec"]["holderIdentity"]


@pytest.mark.parametrize("cluster", [("scheduler",)], indirect=True)
def test_disable_scheduler_leaves_pods_pending(cluster) -> None:
    client, ns = cluster
    _node(client, "n1")
    _pod(client, ns, "waiting")
    assert wait_until(lambda: _lease(client, "kube-controller-manager"), 10)
    assert _lease(client, SCHEDULER_LEASE) is None
    assert not client.get(f"/api/v1/namespaces/{ns}/pods/waiting")["spec"].get("nodeName")


def test_a_high_priority_pod_preempts_and_runs_where_it_was_nominated(cluster) -> None:
    client, ns = cluster
    _node(client, "n1")
    _node(client, "n2")
    high = f"high-{ns}"
    client.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": high}, "value": 1000})
    try:
        for name in ("low-a", "low-b"):  # grace 0: no kubelet here to confirm a graceful deletion
            _pod(client, ns, name, cpu="1500m", terminationGracePeriodSeconds=0)
        placed = wait_until(lambda: all(client.get(f"/api/v1/namespaces/{ns}/pods/{n}")["spec"].get("nodeName")
                                        for n in ("low-a", "low-b")), 20)
        assert placed
        vip = _pod(client, ns, "vip", cpu="1", priorityClassName=high)
        assert vip["spec"]["priority"] == 1000
        preempted = wait_until(lambda: _events(client, ns, "Preempted"), 20)[0]
        victim = preempted["involvedObject"]["name"]
        pods = {p["metadata"]["name"]: p for p in client.list(f"/api/v1/namespaces/{ns}/pods")["items"]}
        assert victim in ("low-a", "low-b") and victim not in pods
        survivor = ({"low-a", "low-b"} - {victim}).pop()
        node = ({"n1", "n2"} - {pods[survivor]["spec"]["nodeName"]}).pop()
        assert preempted["message"] == f"Preempted by pod {vip['metadata']['uid']} on node {node}"
        bound = wait_until(lambda: (p := client.get(f"/api/v1/namespaces/{ns}/pods/vip"))["spec"].get("nodeName")
                           and p.get("status", {}).get("nominatedNodeName") and p, 20)
        assert (bound["spec"]["nodeName"], bound["status"]["nominatedNodeName"]) == (node, node)
    finally:
        client.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{high}")
