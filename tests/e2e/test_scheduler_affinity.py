"""Inter-pod affinity on `slimkube up --nodes 3` as a user meets it: three replicas with required
anti-affinity on `kubernetes.io/hostname` take the three nodes, a fourth stays Pending with upstream's
FailedScheduling message naming anti-affinity and runs once one replica is deleted; pods with required
affinity to a labelled pod run on that pod's node.

The cluster is the session's shared one (tests/e2e/shared_cluster.py); the test works in a namespace of its
own, so its anti-affinity (scoped to the pod's namespace) sees only its own pods.
"""

from __future__ import annotations

import pytest

from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_multinode import NODES
from tests.e2e.test_scheduler import failed_scheduling, pod_scheduled, sleeper
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
HOST = "kubernetes.io/hostname"


def with_affinity(name: str, labels: dict[str, str], kind: str, selector: dict[str, str]) -> dict:
    pod = sleeper(name)
    pod["metadata"]["labels"] = labels
    pod["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector}, "topologyKey": HOST}]}}
    return pod


def test_anti_affinity_spreads_replicas_and_affinity_follows_a_pod(workload_cluster: RunningCluster,
                                                                    cluster_namespace: str) -> None:
    client, names, ns = workload_cluster.client, workload_cluster.names, cluster_namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    web = {"app": "web"}
    for i in range(NODES):
        client.create(pods, with_affinity(f"web-{i}", web, "podAntiAffinity", web))
    placed = {wait_running(client, f"{pods}/web-{i}")["spec"]["nodeName"]: f"web-{i}" for i in range(NODES)}
    assert sorted(placed) == sorted(names)  # one replica per node

    client.create(pods, with_affinity("web-extra", web, "podAntiAffinity", web))
    event = wait_for(lambda: failed_scheduling(client, ns, "web-extra"), 20, "a FailedScheduling event")[0]
    assert event["message"].startswith(
        f"0/{NODES} nodes are available: {NODES} node(s) didn't match pod anti-affinity rules. preemption: ")
    condition = wait_for(lambda: pod_scheduled(client, ns, "web-extra"), 10, "web-extra's PodScheduled condition")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert not client.get(f"{pods}/web-extra")["spec"].get("nodeName")

    freed = names[0]
    client.delete(f"{pods}/{placed[freed]}")  # the replica's node becomes free for the waiting one
    assert wait_running(client, f"{pods}/web-extra")["spec"]["nodeName"] == freed

    anchor = sleeper("anchor", node_selector={HOST: names[1]})
    anchor["metadata"]["labels"] = {"role": "anchor"}
    client.create(pods, anchor)
    assert wait_running(client, f"{pods}/anchor")["spec"]["nodeName"] == names[1]
    for i in range(2):
        client.create(pods, with_affinity(f"follower-{i}", {"role": "follower"}, "podAffinity", {"role": "anchor"}))
    assert [wait_running(client, f"{pods}/follower-{i}")["spec"]["nodeName"] for i in range(2)] == [names[1]] * 2
