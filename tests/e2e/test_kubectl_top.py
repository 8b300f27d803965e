"""`kubectl top` on the shared `up --nodes 3` with no metrics-server: the API server serves
metrics.k8s.io from the kubelets' /stats/summary. `kubectl top node` lists the three nodes with cpu and
memory; a pod spinning in a shell loop under a cpu limit shows non-zero cpu in `kubectl top pod`, and the
kubelet of its node has it in /stats/summary (with a cpu rate and the pod's eth0 traffic counters) and in
/metrics/resource when asked with the API server's kubelet-client certificate; /metrics has the kubelet's
own metrics.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_kubelet_auth import kubelet_url
from tests.e2e.test_up_down import wait_running

pytestmark = pytest.mark.timeout(120)


def busy_pod(node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "labels": {"app": "busy"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "spin", "image": "slimkube/busybox:1", "command": ["sh", "-c", "while :; do :; done"],
                "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}}}]}}


def millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(text) * 1000


def test_kubectl_top_nodes_and_a_busy_pod(workload_cluster: RunningCluster, cluster_namespace: str,
                                          tmp_path: Path) -> None:
    client, ns = workload_cluster.client, cluster_namespace
    node = workload_cluster.names[-1]  # a node in its own network namespace
    client.create(f"/api/v1/namespaces/{ns}/pods", busy_pod(node))
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/busy", timeout=60)

    # the node's kubelet, asked as the API server asks it
    tls = os.path.join(workload_cluster.data_dir, "tls")
    client_cert = os.path.join(tls, "apiserver-kubelet-client")
    base = kubelet_url(client, node)

    def kubelet_get(path: str) -> requests.Response:
        # verify per request: a Session's verify loses to REQUESTS_CA_BUNDLE from the environment
        answer = requests.get(base + path, verify=os.path.join(tls, "ca.crt"),
                              cert=(f"{client_cert}.crt", f"{client_cert}.key"), timeout=20)
        assert answer.status_code == 200, answer.text
        return answer

    summary = kubelet_get("/stats/summary").json()
    assert summary["node"]["nodeName"] == node
    assert summary["node"]["cpu"]["usageNanoCores"] >= 0 and summary["node"]["memory"]["workingSetBytes"] > 0
    assert summary["node"]["fs"]["capacityBytes"] > 0 and summary["node"]["runtime"]["imageFs"]["capacityBytes"] > 0
    pod = next(p for p in summary["pods"] if p["podRef"]["namespace"] == ns and p["podRef"]["name"] == "busy")
    (container,) = pod["containers"]
    assert container["name"] == "spin" and container["cpu"]["usageNanoCores"] > 20_000_000  # > 20m of 200m
    assert container["memory"]["workingSetBytes"] > 0 and container["memory"]["availableBytes"] <= 64 * 2 ** 20
    assert pod["network"]["name"] == "eth0" and pod["network"]["rxBytes"] >= 0
    resource = kubelet_get("/metrics/resource").text
    series = f'container_cpu_usage_seconds_total{{container="spin",namespace="{ns}",pod="busy"}}'
    assert re.search(re.escape(series) + r" [0-9.e+-]+ \d+", resource), resource
    assert "scrape_error 0.0" in resource and "node_memory_working_set_bytes " in resource
    kubelet_metrics = kubelet_get("/metrics").text
    running = re.search(r"^kubelet_running_pods (\S+)$", kubelet_metrics, re.M)
    assert running is not None and float(running.group(1)) >= 1
    assert "kubelet_pleg_relist_duration_seconds_count" in kubelet_metrics

    nodes = kubectl.run("top", "node").stdout.splitlines()
    assert nodes[0].split()[:2] == ["NAME", "CPU(cores)"], nodes
    rows = {line.split()[0]: line.split() for line in nodes[1:]}
    assert set(rows) == set(workload_cluster.names), nodes
    for row in rows.values():
        assert re.fullmatch(r"\d+m", row[1]) and re.fullmatch(r"\d+Mi", row[3]), row

    deadline, cpu = time.monotonic() + 30, 0
    while time.monotonic() < deadline:
        answer = kubectl.run("top", "pod", "-n", ns, check=False)
        lines = [line.split() for line in answer.stdout.splitlines()[1:] if line.startswith("busy ")]
        if lines:
            cpu = millicores(lines[0][1])
            if cpu > 20:
                break
        time.sleep(2)
    assert cpu > 20, answer.stdout + answer.stderr
    # by label, and one pod by name, through the metrics API itself
    selected = client.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods", params={"labelSelector": "app=busy"})
    assert [p["metadata"]["name"] for p in selected["items"]] == ["busy"]
    assert client.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods", params={"labelSelector": "app=x"})[
        "items"] == []
    one = client.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/busy")
    assert one["kind"] == "PodMetrics" and one["containers"][0]["name"] == "spin" and one["window"].endswith("s")
