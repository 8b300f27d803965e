"""PersistentVolumeClaims on the shared `up --nodes 3`: a fresh cluster has the default
`local-path` StorageClass; a claim naming no class gets it; its first pod's node gets a hostPath volume
made by that node's kubelet under its data dir; the data outlives the pod, and a new pod lands on the same
node (VolumeBinding) and reads it; deleting the claim removes the volume and its directory (reclaimPolicy
Delete).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from control.client.errors import NotFound
from control.client.rest import RESTClient
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(240)


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}}}


def pod_with_claim(name: str, claim_name: str, script: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "terminationGracePeriodSeconds": 1,
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        "containers": [{"name": "app", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                        "command": ["sh", "-c", f"{script} && exec sleep 3600"],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}


def gone(client: RESTClient, path: str) -> bool:
    try:
        client.get(path)
    except NotFound:
        return True
    return False


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def test_local_path_claim_follows_its_node_and_is_deleted_with_the_claim(
        workload_cluster: RunningCluster, cluster_namespace: str) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    started = time.monotonic()
    local_path = client.get("/apis/storage.k8s.io/v1/storageclasses/local-path")
    assert local_path["provisioner"] == "slimkube.io/local-path"
    assert local_path["volumeBindingMode"] == "WaitForFirstConsumer" and local_path["reclaimPolicy"] == "Delete"
    assert local_path["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"

    created = client.create(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", claim("data"))
    assert created["spec"]["storageClassName"] == "local-path"  # DefaultStorageClass admission
    claim_path = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data"
    wait_for(lambda: any(e["reason"] == "WaitForFirstConsumer" for e in client.list(
        f"/api/v1/namespaces/{ns}/events")["items"]), 30, "the WaitForFirstConsumer event")
    assert client.get(claim_path)["status"]["phase"] == "Pending"

    client.create(f"/api/v1/namespaces/{ns}/pods", pod_with_claim("writer", "data", "echo written > /data/f"))
    writer = wait_running(client, f"/api/v1/namespaces/{ns}/pods/writer", timeout=60)
    node = writer["spec"]["nodeName"]
    bound = client.get(claim_path)
    assert bound["status"]["phase"] == "Bound"
    assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    volume_name = bound["spec"]["volumeName"]
    assert volume_name == f"pvc-{bound['metadata']['uid']}"
    volume = client.get(f"/api/v1/persistentvolumes/{volume_name}")
    assert volume["status"]["phase"] == "Bound" and volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert volume["spec"]["claimRef"]["name"] == "data" and volume["spec"]["claimRef"]["namespace"] == ns
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]
    directory = volume["spec"]["hostPath"]["path"]
    assert directory.startswith(workload_cluster.data_dir) and f"_{ns}_data" in directory
    wait_for(lambda: read(os.path.join(directory, "f")) == "written", 10, "the writer's file on the node")

    client.delete(f"/api/v1/namespaces/{ns}/pods/writer", grace_period_seconds=0)
    wait_for(lambda: gone(client, f"/api/v1/namespaces/{ns}/pods/writer"), 30, "the writer pod gone")
    assert client.get(claim_path)["status"]["phase"] == "Bound"
    client.create(f"/api/v1/namespaces/{ns}/pods", pod_with_claim("reader", "data", "cat /data/f > /data/seen"))
    reader = wait_running(client, f"/api/v1/namespaces/{ns}/pods/reader", timeout=60)
    assert reader["spec"]["nodeName"] == node  # the volume's node affinity (VolumeBinding)
    wait_for(lambda: read(os.path.join(directory, "seen")) == "written", 10, "the reader saw the writer's data")

    client.delete(f"/api/v1/namespaces/{ns}/pods/reader", grace_period_seconds=0)
    wait_for(lambda: gone(client, f"/api/v1/namespaces/{ns}/pods/reader"), 30, "the reader pod gone")
    client.delete(claim_path)
    wait_for(lambda: gone(client, f"/api/v1/persistentvolumes/{volume_name}"), 30, "the volume deleted")
    wait_for(lambda: not os.path.exists(directory), 10, "the volume's directory removed")
    assert time.monotonic() - started < 120
