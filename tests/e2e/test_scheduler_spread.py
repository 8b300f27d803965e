"""PodTopologySpread on `slimkube up --nodes 3`: six pods of a group with a hard spread
constraint (maxSkew 1 on kubernetes.io/hostname) land 2/2/2 although each prefers the first node (a
preferred node affinity that alone would put all six there); a pod of the group pinned to the first node
fits once (3/2/2) and the next one stays Pending with upstream's FailedScheduling message; when pods of
the group land on the other two nodes (assigned pods added, the event PodTopologySpread registered for)
the Pending pod is retried and bound.

The cluster is the session's shared `up --nodes 3` (tests/e2e/shared_cluster.py); the test works in a
namespace of its own and changes no node.
"""

from __future__ import annotations

from collections import Counter

import pytest

from control.client.rest import RESTClient
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_multinode import NODES
from tests.e2e.test_scheduler import failed_scheduling, pod_scheduled
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(120)
HOSTNAME = "kubernetes.io/hostname"
GROUP = {"app": "spread-e2e"}


def group_pod(name: str, *, prefer: str = "", pin: str = "") -> dict:
    """A sleeper of the group with the hard constraint; `prefer`: a preferred node affinity (weight 100) to
    that hostname; `pin`: a nodeSelector on it (its spread still counts every node: nodeAffinityPolicy
    Ignore)."""
    constraint = {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": GROUP}}
    spec: dict = {"terminationGracePeriodSeconds": 1, "topologySpreadConstraints": [constraint],
                  "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                                  "command": ["sleep", "3600"]}]}
    if prefer:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [
                {"key": HOSTNAME, "operator": "In", "values": [prefer]}]}}]}}
    if pin:
        spec["nodeSelector"] = {HOSTNAME: pin}
        constraint["nodeAffinityPolicy"] = "Ignore"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(GROUP)}, "spec": spec}


def bound_node(client: RESTClient, path: str) -> str:
    return client.get(path)["spec"].get("nodeName") or ""


def test_a_hard_spread_constraint_spreads_two_per_node_and_holds_back_a_pod_that_would_break_the_skew(
        workload_cluster: RunningCluster, cluster_namespace: str) -> None:
    client, names, ns = workload_cluster.client, workload_cluster.names, cluster_namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    hosts = [client.get(f"/api/v1/nodes/{name}")["metadata"]["labels"][HOSTNAME] for name in names]
    first = hosts[0]
    for i in range(6):
        client.create(pods, group_pod(f"spread-{i}", prefer=first))
    placed = wait_for(lambda: all(nodes := [bound_node(client, f"{pods}/spread-{i}") for i in range(6)]) and nodes,
                      30, "six spread pods bound")
    assert Counter(placed) == {name: 2 for name in names}, placed

    client.create(pods, group_pod("pinned-1", pin=first))
    assert wait_for(lambda: bound_node(client, f"{pods}/pinned-1"), 20, "pinned-1 bound") == names[0]  # 3/2/2
    client.create(pods, group_pod("pinned-2", pin=first))  # 4 - 2 > maxSkew 1
    event = wait_for(lambda: failed_scheduling(client, ns, "pinned-2"), 20, "FailedScheduling for pinned-2")[0]
    assert event["message"] == (
        f"0/{NODES} nodes are available: 1 node(s) didn't match pod topology spread constraints, 2 node(s) "
        f"didn't match Pod's node affinity/selector. preemption: 0/{NODES} nodes are available: 1 No preemption "
        "victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
    condition = wait_for(lambda: pod_scheduled(client, ns, "pinned-2"), 10, "pinned-2's PodScheduled condition")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert bound_node(client, f"{pods}/pinned-2") == ""

    client.create(pods, group_pod("fill-1", pin=hosts[1]))  # 3/3/2
    client.create(pods, group_pod("fill-2", pin=hosts[2]))  # 3/3/3: now 4 - 3 is within the skew
    assert wait_for(lambda: bound_node(client, f"{pods}/pinned-2"), 30, "pinned-2 bound") == names[0]
    assert [bound_node(client, f"{pods}/fill-{i}") for i in (1, 2)] == names[1:]
