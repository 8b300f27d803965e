"""The ReplicaSet and ReplicationController controllers on the shared `up --nodes 3` with real kubelets:
a ReplicaSet of 3 gets 3 Running pods and reports readyReplicas 3; a deleted pod is
replaced; scaled to 0 through /scale its pods go, and `kubectl scale rs` (real kubectl 1.33) brings 2 back;
a bare pod matching a new ReplicaSet's selector is adopted (ownerReference controller=true) instead of a
new one being made; a ReplicationController of 2 runs 2 pods.

The owners are deleted (Background) at the end so the namespace teardown does not race a controller
recreating pods.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from control.client.rest import RESTClient
from tests.conftest import unavailable
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
TIMEOUT = 45
POD_SPEC = {"terminationGracePeriodSeconds": 1, "containers": [{
    "name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}


def replica_set(name: str, replicas: int, labels: dict[str, str]) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": POD_SPEC}}}


def active_pods(client: RESTClient, ns: str, labels: dict[str, str]) -> list[dict]:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items = client.list(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": selector})["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running_ready(pods: list[dict]) -> int:
    return sum(1 for p in pods if p.get("status", {}).get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or ()))


def wait_ready(client: RESTClient, path: str, ns: str, labels: dict[str, str], count: int) -> dict:
    """Wait until the owner at `path` reports `count` ready replicas and exactly `count` active pods run."""
    def settled() -> dict:
        owner = client.get(path)
        status = owner.get("status") or {}
        pods = active_pods(client, ns, labels)
        if (int(status.get("readyReplicas") or 0) == count and status.get("replicas") == count
                and len(pods) == count and running_ready(pods) == count):
            return owner
        return {}
    return wait_for(settled, TIMEOUT, f"{count} ready replicas of {path}")


def test_replica_set_runs_replaces_scales_and_adopts(workload_cluster: RunningCluster, cluster_namespace: str,
                                                     cleanup: Callable, tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    binary = KUBECTLS["1.33"]
    if not os.access(binary, os.X_OK):
        unavailable("kubectl 1.33", f"{binary} is missing")
    kubectl = Kubectl(binary, workload_cluster.kubeconfig, str(tmp_path))
    rs_path = f"/apis/apps/v1/namespaces/{ns}/replicasets"
    labels = {"app": "web"}
    cleanup(lambda: client.delete(f"{rs_path}/web", propagation_policy="Background"))
    client.create(rs_path, replica_set("web", 3, labels))
    rs = wait_ready(client, f"{rs_path}/web", ns, labels, 3)
    pods = active_pods(client, ns, labels)
    for pod in pods:
        name = pod["metadata"]["name"]
        assert name.startswith("web-") and len(name) == len("web-") + 5
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    assert rs["status"]["availableReplicas"] == 3 and rs["status"]["observedGeneration"] == 1

    victim = pods[0]["metadata"]["name"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    wait_for(lambda: victim not in {p["metadata"]["name"] for p in active_pods(client, ns, labels)}
             and len(active_pods(client, ns, labels)) == 3, TIMEOUT, "the deleted pod replaced")
    wait_ready(client, f"{rs_path}/web", ns, labels, 3)
    reasons = {(e["reason"], e["message"].split(":")[0]) for e in
               client.list(f"/api/v1/namespaces/{ns}/events")["items"] if e["involvedObject"]["name"] == "web"}
    assert {("SuccessfulCreate", "Created pod")} <= reasons

    client.patch(f"{rs_path}/web/scale", {"spec": {"replicas": 0}})
    wait_for(lambda: not active_pods(client, ns, labels) and
             client.get(f"{rs_path}/web")["status"]["replicas"] == 0, TIMEOUT, "scaled to 0")
    kubectl.run("scale", "rs", "web", "-n", ns, "--replicas=2")
    wait_ready(client, f"{rs_path}/web", ns, labels, 2)
    assert ("SuccessfulDelete", "Deleted pod") in {
        (e["reason"], e["message"].split(":")[0]) for e in client.list(f"/api/v1/namespaces/{ns}/events")["items"]}

    # Adoption: a Running bare pod that a new ReplicaSet of 1 selects becomes its pod; none is created.
    orphan_labels = {"app": "orphan"}
    client.create(f"/api/v1/namespaces/{ns}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "stray", "labels": orphan_labels}, "spec": POD_SPEC})
    wait_for(lambda: running_ready(active_pods(client, ns, orphan_labels)) == 1, TIMEOUT, "the stray pod running")
    cleanup(lambda: client.delete(f"{rs_path}/adopter", propagation_policy="Background"))
    adopter = client.create(rs_path, replica_set("adopter", 1, orphan_labels))
    wait_for(lambda: (client.get(f"/api/v1/namespaces/{ns}/pods/stray")["metadata"].get("ownerReferences") or [{}])
             [0].get("uid") == adopter["metadata"]["uid"], TIMEOUT, "the stray pod adopted")
    wait_ready(client, f"{rs_path}/adopter", ns, orphan_labels, 1)
    assert [p["metadata"]["name"] for p in active_pods(client, ns, orphan_labels)] == ["stray"]


def test_replication_controller_runs_its_pods(workload_cluster: RunningCluster, cluster_namespace: str,
                                              cleanup: Callable) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    rc_path = f"/api/v1/namespaces/{ns}/replicationcontrollers"
    labels = {"app": "legacy"}
    cleanup(lambda: client.delete(f"{rc_path}/legacy", propagation_policy="Background"))
    client.create(rc_path, {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
                            "spec": {"replicas": 2, "selector": labels,
                                     "template": {"metadata": {"labels": labels}, "spec": POD_SPEC}}})
    rc = wait_ready(client, f"{rc_path}/legacy", ns, labels, 2)
    for pod in active_pods(client, ns, labels):
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rc["metadata"]["uid"]
