"""The kubelets' HTTPS API on the shared `up --nodes 3`: on every node — node 1 in the
host namespace, whose kubelet.yaml says `address: 127.0.0.1` although it advertises the node network
address, and nodes 2..3 in their namespaces — the kubelet answers at the InternalIP and daemonEndpoints port
the Node reports, with a certificate the cluster CA signed for that address; without credentials or with a
wrong token it answers 401 and lists nothing, with a token the API server vouches for it answers; and the
real kubectl 1.33 reads a pod's logs on every node through the API server's proxy (its kubelet-client
certificate). Authenticated is not authorized: RBAC decides `kubectl exec` through the API server and,
through SubjectAccessReviews, what a caller may do on a kubelet directly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from control.client.rest import RESTClient
from control.util import openssl
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


def cluster_client_cert(data_dir: str, directory: Path, user: str) -> tuple[str, str]:
    """A client certificate for `user` from the cluster CA: a caller every kubelet authenticates."""
    tls = os.path.join(data_dir, "tls")
    key, csr, crt = (str(directory / f"{user}.{ext}") for ext in ("key", "csr", "crt"))
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr, "-subj", f"/CN={user}")
    (directory / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    openssl.run("x509", "-req", "-in", csr, "-CA", os.path.join(tls, "ca.crt"), "-CAkey", os.path.join(tls, "ca.key"),
                "-CAcreateserial", "-out", crt, "-days", "1", "-extfile", str(directory / "client.ext"))
    return crt, key


def test_kubelet_api_and_pod_subresources_are_authorized(workload_cluster: RunningCluster, cluster_namespace: str,
                                                         run_id: str, tmp_path: Path) -> None:
    """With only `view`, `kubectl logs` works and `kubectl exec` is refused; a Role with `pods/exec` opens it.
    Straight to a kubelet, an authenticated caller without `nodes/proxy` gets the kubelet's 403; with it, the
    kubelet answers."""
    client, ns = workload_cluster.client, cluster_namespace
    node = workload_cluster.names[-1]
    client.create(f"/api/v1/namespaces/{ns}/pods", echo_pod("authz", node))
    wait_running(client, f"/api/v1/namespaces/{ns}/pods/authz", timeout=60)
    viewer = f"viewer-{run_id}"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    client.create(f"{rbac}/namespaces/{ns}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": viewer}]})
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(cache))
    logs = kubectl.run("--as", viewer, "logs", "-n", ns, "authz")
    assert logs.stdout == f"hello-from-{node}\nsecond-line\n", logs.stderr
    refused = kubectl.run("--as", viewer, "exec", "-n", ns, "authz", "--", "echo", "in-pod", check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr
    assert f'User "{viewer}" cannot create resource "pods/exec"' in refused.stderr or \
        f'User "{viewer}" cannot get resource "pods/exec"' in refused.stderr, refused.stderr
    client.create(f"{rbac}/namespaces/{ns}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "exec"},
        "rules": [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"]}]})
    client.create(f"{rbac}/namespaces/{ns}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "exec"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": viewer}]})
    allowed = kubectl.run("--as", viewer, "exec", "-n", ns, "authz", "--", "echo", "in-pod")
    assert allowed.stdout == "in-pod\n"

    base, ca = kubelet_url(client, node), os.path.join(workload_cluster.data_dir, "tls", "ca.crt")
    outsider = cluster_client_cert(workload_cluster.data_dir, tmp_path, f"outsider-{run_id}")
    for path in ("/pods", f"/containerLogs/{ns}/authz/echo"):
        answer = requests.get(base + path, cert=outsider, verify=ca, timeout=10)
        assert answer.status_code == 403 and answer.text.startswith(f"Forbidden (user=outsider-{run_id}, verb=get, "
                                                                    "resource=nodes, subresource="), answer.text
    proxier = f"proxier-{run_id}"
    client.create(f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": proxier},
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]})
    try:
        client.create(f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": proxier},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": proxier},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": proxier}]})
        cert = cluster_client_cert(workload_cluster.data_dir, tmp_path, proxier)
        logs_direct = requests.get(f"{base}/containerLogs/{ns}/authz/echo", cert=cert, verify=ca, timeout=10)
        assert logs_direct.status_code == 200 and logs_direct.text.startswith(f"hello-from-{node}")
        assert requests.get(f"{base}/stats/summary", cert=cert, verify=ca, timeout=10).status_code == 403
    finally:
        client.delete(f"{rbac}/clusterrolebindings/{proxier}")
        client.delete(f"{rbac}/clusterroles/{proxier}")
