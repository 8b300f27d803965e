"""A node whose kubelet stops: its ReplicaSet's pod is evicted after the pod's toleration and recreated on
another node: stop one node's kubelet, and its pods are recreated on the others after the toleration
(shortened for the test).

Its own `up --nodes 3` (the shared cluster's nodes must not be stopped): a ReplicaSet of one pod that
prefers node 2 and tolerates `node.kubernetes.io/unreachable` / `not-ready` for 3 s instead of the
default 300 s. `node stop` of node 2 → its Lease runs out, the node lifecycle controller marks it
Ready=Unknown and taints it unreachable (NoExecute), the taint eviction controller deletes the pod 3 s
later, and the ReplicaSet controller's replacement is scheduled on a node that is not tainted and runs.
`node start` → the kubelet confirms the old pod's deletion and it is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from control.client.rest import RESTClient
from tests.e2e.test_multinode import GRACE_SECONDS, LEASE_SECONDS, NODES, cli, cluster, ready_status  # noqa: F401
from tests.e2e.test_up_down import UpProcess
from tests.support.apiserver import free_port
from tests.support.polling import wait_for

TOLERATION_SECONDS = 3
PODS = "/api/v1/namespaces/default/pods"
SELECTOR = {"labelSelector": "app=sktest-failover"}


def replica_set(preferred_node: str) -> dict[str, Any]:
    tolerations = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION_SECONDS}
                   for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [preferred_node]}]}}]}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "sktest-failover"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "sktest-failover"}},
                     "template": {"metadata": {"labels": {"app": "sktest-failover"}}, "spec": {
                         "terminationGracePeriodSeconds": 1, "tolerations": tolerations, "affinity": affinity,
                         "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                                         "command": ["sleep", "3600"]}]}}}}


def running_pods(client: RESTClient) -> list[dict[str, Any]]:
    return [pod for pod in client.list(PODS, params=SELECTOR)["items"]
            if pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")]


def test_a_stopped_nodes_pod_is_recreated_on_another_node_after_its_toleration(cluster: dict,  # noqa: F811
                                                                              cleanup: Callable) -> None:
    data_dir, names = cluster["data_dir"], cluster["names"]
    up = UpProcess(data_dir, free_port(), "--nodes", str(NODES), "--nodes-cidr", cluster["nodes_cidr"],
                   "--service-cidr", cluster["service_cidr"], "--node-monitor-grace-period", f"{GRACE_SECONDS}s",
                   bind_address="0.0.0.0")
    cleanup(up.kill)
    kubeconfig = up.wait_for("[up] kubeconfig: ").split(": ", 1)[1]
    up.wait_for("[up] ready: ")
    stopped = names[1]
    with RESTClient.from_kubeconfig(kubeconfig) as client:
        wait_for(lambda: len(client.get("/api/v1/nodes")["items"]) == NODES, 60, f"{NODES} nodes registered")
        client.create("/apis/apps/v1/namespaces/default/replicasets", replica_set(stopped))
        wait_for(lambda: [p["spec"]["nodeName"] for p in running_pods(client)] == [stopped], 60,
                 lambda: f"the pod Running on {stopped}: {client.list(PODS, params=SELECTOR)['items']}")
        (first,) = running_pods(client)

        done = cli("node", "stop", stopped, "--data-dir", data_dir)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: ready_status(client, stopped)[0] == "Unknown", LEASE_SECONDS + GRACE_SECONDS + 20,
                 lambda: f"{stopped} Ready=Unknown: {ready_status(client, stopped)}")

        def replaced() -> bool:
            pods = running_pods(client)
            return len(pods) == 1 and pods[0]["metadata"]["uid"] != first["metadata"]["uid"]
        wait_for(replaced, TOLERATION_SECONDS + 60,
                 lambda: f"a replacement Running: {client.list(PODS, params=SELECTOR)['items']}")
        (second,) = running_pods(client)
        assert second["spec"]["nodeName"] != stopped
        old = client.get(f"{PODS}/{first['metadata']['name']}")
        assert old["metadata"].get("deletionTimestamp"), old["metadata"]  # evicted, awaiting its kubelet
        events = client.list("/api/v1/namespaces/default/events",
                             params={"fieldSelector": f"involvedObject.name={first['metadata']['name']}"})["items"]
        assert "TaintManagerEviction" in {e.get("reason") for e in events}, events

        done = cli("node", "start", stopped, "--data-dir", data_dir)
        assert done.returncode == 0, done.stderr

        def gone() -> bool:
            names_now = {p["metadata"]["name"] for p in client.list(PODS, params=SELECTOR)["items"]}
            return first["metadata"]["name"] not in names_now
        wait_for(gone, 60, "the evicted pod removed once its kubelet is back")
        client.delete("/apis/apps/v1/namespaces/default/replicasets/sktest-failover")

    assert up.interrupt() == 0, "\n".join(up.lines)
    down = cli("down", "--data-dir", data_dir)
    assert down.returncode == 0, down.stderr
