"""The scheduler on `slimkube up --nodes 3` as a user meets it: pods created without
`spec.nodeName` are bound by the scheduler, spread over the three nodes and run there; a nodeSelector is
respected; a pod that fits nowhere (a huge cpu request) stays Pending with upstream's FailedScheduling event
and PodScheduled=False.

The cluster is the session's shared `up --nodes 3` (tests/e2e/shared_cluster.py); the test works in a
namespace of its own and takes its node label off again.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from control.client.rest import RESTClient
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_multinode import NODES
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
SPREAD_PODS = 6
LABEL = "sktest-disk"


def sleeper(name: str, *, node_selector: dict | None = None, cpu: str | None = None) -> dict:
    container = {"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                 "command": ["sleep", "3600"]}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def pod_scheduled(client: RESTClient, ns: str, name: str) -> dict | None:
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def failed_scheduling(client: RESTClient, ns: str, name: str) -> list[dict]:
    events = client.list(f"/api/v1/namespaces/{ns}/events",
                         params={"fieldSelector": f"involvedObject.name={name}"})["items"]
    return [e for e in events if e["reason"] == "FailedScheduling"]


def test_pods_without_node_name_are_spread_selectors_respected_and_unfit_pods_explained(
        workload_cluster: RunningCluster, cluster_namespace: str, cleanup: Callable) -> None:
    client, names, ns = workload_cluster.client, workload_cluster.names, cluster_namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    client.patch(f"/api/v1/nodes/{names[2]}", {"metadata": {"labels": {LABEL: "ssd"}}})
    cleanup(lambda: client.patch(f"/api/v1/nodes/{names[2]}", {"metadata": {"labels": {LABEL: None}}}))
    for i in range(SPREAD_PODS):
        client.create(pods, sleeper(f"spread-{i}"))
    running = [wait_running(client, f"{pods}/spread-{i}") for i in range(SPREAD_PODS)]
    placed = [pod["spec"]["nodeName"] for pod in running]
    assert set(placed) == set(names), placed  # LeastAllocated spreads equal nodes
    assert pod_scheduled(client, ns, "spread-0")["status"] == "True"

    client.create(pods, sleeper("picky", node_selector={LABEL: "ssd"}))
    assert wait_running(client, f"{pods}/picky")["spec"]["nodeName"] == names[2]

    client.create(pods, sleeper("huge", cpu="100000"))
    event = wait_for(lambda: failed_scheduling(client, ns, "huge"), 20, "a FailedScheduling event for huge")[0]
    assert event["message"] == (f"0/{NODES} nodes are available: {NODES} Insufficient cpu. preemption: 0/{NODES} "
                                f"nodes are available: {NODES} No preemption victims found for incoming pod.")
    assert event["source"]["component"] == "default-scheduler"
    condition = wait_for(lambda: pod_scheduled(client, ns, "huge"), 10, "huge's PodScheduled condition")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    pod = client.get(f"{pods}/huge")
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
