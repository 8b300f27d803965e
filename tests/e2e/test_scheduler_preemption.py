"""Priority and preemption on `slimkube up --nodes 3` as a user meets them: the three
nodes' allocatable cpu is filled with low-priority pods, then a pod of a high PriorityClass that fits
nowhere preempts one of them — the victim is deleted gracefully with a `Preempted` event, the preemptor gets
`status.nominatedNodeName` and then runs on that node; real kubectl lists the system PriorityClasses.

The cluster is the session's shared one (tests/e2e/shared_cluster.py); the test works in a namespace of its
own and deletes its PriorityClass again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from control.scheduler.resources import pod_requests, resource_from_list
from tests.e2e.conftest import KUBECTLS
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_scheduler import sleeper
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(240)
TERMINAL = ("Succeeded", "Failed")


def free_millicpu(cluster: RunningCluster, node: dict) -> int:
    """The node's allocatable cpu less the requests of the pods the scheduler counts on it."""
    name = node["metadata"]["name"]
    pods = cluster.client.list("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={name}"})["items"]
    used = sum(pod_requests(p).milli_cpu for p in pods if p["status"].get("phase") not in TERMINAL)
    return resource_from_list(node["status"]["allocatable"]).milli_cpu - used


def events(cluster: RunningCluster, ns: str, reason: str) -> list[dict]:
    return [e for e in cluster.client.list(f"/api/v1/namespaces/{ns}/events")["items"] if e["reason"] == reason]


def test_a_high_priority_pod_preempts_a_low_priority_one(workload_cluster: RunningCluster, cluster_namespace: str,
                                                          cleanup: Callable, run_id: str) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    high = f"sktest-high-{run_id}"
    client.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": high},
        "value": 1000000, "description": "preemption e2e"})
    cleanup(lambda: client.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{high}"))

    fillers = {}
    for node in client.list("/api/v1/nodes")["items"]:
        name = node["metadata"]["name"]
        free = free_millicpu(workload_cluster, node)
        assert free > 0, f"{name} is full before the test"
        filler = sleeper(f"low-{len(fillers)}", cpu=f"{free}m",
                         node_selector={"kubernetes.io/hostname": name})
        client.create(pods, filler)
        fillers[filler["metadata"]["name"]] = name
    for filler, node in fillers.items():
        assert wait_running(client, f"{pods}/{filler}")["spec"]["nodeName"] == node
        assert client.get(f"{pods}/{filler}")["spec"]["priority"] == 0

    vip = sleeper("vip", cpu="100m")
    vip["spec"]["priorityClassName"] = high
    created = client.create(pods, vip)
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (1000000, "PreemptLowerPriority")

    preempted = wait_for(lambda: events(workload_cluster, ns, "Preempted"), 60, "a Preempted event")[0]
    victim = preempted["involvedObject"]["name"]
    assert victim in fillers
    node = fillers[victim]
    assert preempted["message"] == f"Preempted by pod {created['metadata']['uid']} on node {node}"
    assert preempted["source"]["component"] == "default-scheduler"
    nominated = wait_for(lambda: client.get(f"{pods}/vip")["status"].get("nominatedNodeName"), 30,
                         "vip's nominatedNodeName")
    assert nominated == node
    failed = wait_for(lambda: [e for e in events(workload_cluster, ns, "FailedScheduling")
                               if e["involvedObject"]["name"] == "vip"], 30, "vip's FailedScheduling event")
    assert failed[0]["message"].startswith(f"0/{len(fillers)} nodes are available: {len(fillers)} Insufficient cpu.")

    running = wait_running(client, f"{pods}/vip", timeout=120)
    assert running["spec"]["nodeName"] == node
    remaining = {p["metadata"]["name"] for p in client.list(pods)["items"]}
    assert victim not in remaining
    assert remaining == (set(fillers) - {victim}) | {"vip"}


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_kubectl_get_pc_lists_the_system_classes(workload_cluster: RunningCluster, version: str, run_id: str,
                                                 cleanup: Callable) -> None:
    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTLS[version], f"--kubeconfig={workload_cluster.kubeconfig}", *args],
                              capture_output=True, text=True, timeout=60)

    mine = f"sktest-pc-{run_id}"
    created = kubectl("create", "priorityclass", mine, "--value=42", "--preemption-policy=Never")
    assert created.returncode == 0, created.stderr
    cleanup(lambda: kubectl("delete", "pc", mine))
    result = kubectl("get", "pc")
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert lines[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    rows = {line[0]: line for line in lines[1:]}
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]
    assert rows["system-node-critical"][4] == "PreemptLowerPriority"
    assert (rows[mine][1:3], rows[mine][4]) == (["42", "false"], "Never")
    refused = kubectl("delete", "pc", "system-cluster-critical")
    assert refused.returncode != 0
    assert "this is a system priority class and cannot be deleted" in refused.stderr
