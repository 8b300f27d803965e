"""The kubelets' HTTPS API on the shared `up --nodes 3`: on every node — node 1 in the
host namespace, whose kubelet.yaml says `address: 127.0.0.1` although it advertises the node network
address, and nodes 2..3 in their namespaces — the kubelet answers at the InternalIP and daemonEndpoints port
the Node reports, with a certificate the cluster CA signed for that address; without credentials or with a
wrong token it answers 401 and lists nothing, with a token the API server vouches for it answers; and the
real kubectl 1.33 reads a pod's logs on every node through the API server's proxy (its kubelet-client
certificate).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from control.client.rest import RESTClient
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running

pytestmark = pytest.mark.timeout(180)


def echo_pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "echo", "image": "slimkube/busybox:1",
                "command": ["sh", "-c", f"echo hello-from-{node}; echo second-line; sleep 3600"]}]}}


def kubelet_url(client: RESTClient, node: str) -> str:
    status = client.get(f"/api/v1/nodes/{node}")["status"]
    address = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
    return f"https://{address}:{status['daemonEndpoints']['kubeletEndpoint']['Port']}"


def test_every_kubelet_requires_credentials_and_kubectl_logs_work(workload_cluster: RunningCluster,
                                                                   cluster_namespace: str, tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    ca = os.path.join(workload_cluster.data_dir, "tls", "ca.crt")
    admin_token = client.config.token
    assert admin_token
    for index, node in enumerate(workload_cluster.names):
        client.create(f"/api/v1/namespaces/{ns}/pods", echo_pod(f"echo-{index}", node))
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(cache))
    for index, node in enumerate(workload_cluster.names):
        wait_running(client, f"/api/v1/namespaces/{ns}/pods/echo-{index}", timeout=60)
        base = kubelet_url(client, node)
        # the serving certificate verifies against the cluster CA for the address the Node advertises
        assert requests.get(f"{base}/healthz", verify=ca, timeout=5).text == "ok"
        for path in ("/pods", "/stats/summary", f"/containerLogs/{ns}/echo-{index}/echo"):
            for headers in ({}, {"Authorization": "Bearer wrong-token"}):
                answer = requests.get(base + path, headers=headers, verify=ca, timeout=5)
                assert answer.status_code == 401, (node, path, headers, answer.text)
                assert answer.json()["reason"] == "Unauthorized" and "echo-" not in answer.text
        pods = requests.get(f"{base}/pods", headers={"Authorization": f"Bearer {admin_token}"}, verify=ca, timeout=5)
        assert pods.status_code == 200
        assert f"echo-{index}" in {p["metadata"]["name"] for p in pods.json()["items"]}
        logs = kubectl.run("logs", "-n", ns, f"echo-{index}")
        assert logs.stdout == f"hello-from-{node}\nsecond-line\n", logs.stderr
        tail = kubectl.run("logs", "-n", ns, f"echo-{index}", "--tail=1")
        assert tail.stdout == "second-line\n"
