"""EndpointSlices and LoadBalancer Services on the shared `up --nodes 3`, with the
real kubectl 1.33.

Two busybox httpd pods (one on each of the namespaced nodes) behind a Service: the EndpointSlice
controller writes one slice with both pods ready, which `kubectl get endpointslices` prints in upstream's
columns. The same pods behind a `type: LoadBalancer` Service: the service-lb-controller gives it the Ready
nodes' addresses, `kubectl get svc` shows them as EXTERNAL-IP, and an HTTP request from this host to one
of those node addresses on the Service's port reaches a pod through the kube-proxy's load-balancer rules
(only node addresses on the test's own node network are contacted).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.e2e.test_up_down import wait_running
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(180)
LABEL = "sktest-slices"
LB_PORT = 18080


def httpd(name: str, node: str, ns: str) -> dict:
    serve = f"mkdir -p /www && echo {name} > /www/index.html && exec httpd -f -p 8080 -h /www"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {LABEL: ns}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "web", "image": "slimkube/busybox:1", "imagePullPolicy": "Never",
                "command": ["sh", "-c", serve],
                "ports": [{"name": "http", "containerPort": 8080}]}]}}


def service(name: str, ns: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {LABEL: ns}, "ports": [{"name": "web", "port": LB_PORT, "targetPort": "http"}],
                     **spec}}


def slices_of(cluster: RunningCluster, ns: str, name: str) -> list[dict]:
    return cluster.client.list(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                               params={"labelSelector": f"kubernetes.io/service-name={name}"})["items"]


def answer(url: str) -> str | None:
    try:
        return requests.get(url, timeout=2).text.strip()
    except requests.RequestException:
        return None


def test_endpointslices_and_load_balancer(workload_cluster: RunningCluster, cluster_namespace: str,
                                          cleanup: Callable, tmp_path: Path) -> None:
    cluster, ns = workload_cluster, cluster_namespace
    kubectl = Kubectl(KUBECTLS["1.33"], cluster.kubeconfig, str(tmp_path))
    pods = f"/api/v1/namespaces/{ns}/pods"
    names = {"web-a": cluster.names[1], "web-b": cluster.names[2]}
    for name, node in names.items():
        cluster.client.create(pods, httpd(name, node, ns))
    cluster.client.create(f"/api/v1/namespaces/{ns}/services", service("web", ns))
    ips = {wait_running(cluster.client, f"{pods}/{name}")["status"]["podIP"] for name in names}

    def ready_slice() -> dict | None:
        found = slices_of(cluster, ns, "web")
        ready = [e for s in found for e in s["endpoints"] if e["conditions"]["ready"]]
        return found[0] if len(found) == 1 and {e["addresses"][0] for e in ready} == ips else None

    slice_ = wait_for(ready_slice, 30, lambda: f"one slice with {ips} ready: {slices_of(cluster, ns, 'web')}")
    assert slice_["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert slice_["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
    assert {e["nodeName"] for e in slice_["endpoints"]} == set(names.values())
    table = kubectl.run("get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=web").stdout
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert row.split()[1:3] == ["IPv4", "8080"] and set(row.split()[3].split(",")) == ips

    cluster.client.create(f"/api/v1/namespaces/{ns}/services", service("lb", ns, type="LoadBalancer"))
    cleanup(lambda: cluster.client.delete(f"/api/v1/namespaces/{ns}/services/lb"))
    node_ips = sorted(address["address"] for node in cluster.client.get("/api/v1/nodes")["items"]
                      if node["metadata"]["name"] in cluster.names
                      for address in node["status"]["addresses"] if address["type"] == "InternalIP")

    def external_ips() -> list[str]:
        lines = kubectl.run("get", "svc", "lb", "-n", ns).stdout.splitlines()
        return sorted(lines[1].split()[3].split(",")) if len(lines) > 1 and "pending" not in lines[1] else []

    external = wait_for(lambda: set(external_ips()) >= set(node_ips) and external_ips(), 30,
                        lambda: f"EXTERNAL-IP {node_ips}: {kubectl.run('get', 'svc', 'lb', '-n', ns).stdout}")
    target = next(ip for ip in external if ip in node_ips)  # an address of this test's own node network
    answers = wait_for(lambda: answer(f"http://{target}:{LB_PORT}/"), 30,
                       f"an HTTP answer from a pod through {target}:{LB_PORT}")
    assert answers in names
