"""The Node authorizer and NodeRestriction against a real API server on 127.0.0.1, as an attacker holding one
node's identity would try them, with each of two credentials: the node's own client certificate (CN
`system:node:<name>`, O `system:nodes`, from the cluster CA, as a joined node holds), and the admin
impersonating the node (`kubectl --as system:node:a --as-group system:nodes`). Node A reads the Secret its
pod uses — and not once the pod is gone — but no other; it may not patch node B, change its own taints or
restricted labels, update B's pod status, delete B's pod, create a pod that is not its own mirror pod, or
touch B's Lease."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from control.util import openssl
from tests.support.apiserver import Endpoint, running_server
from tests.support.polling import wait_until

A, B = "node-a", "node-b"


def node_certificate(data: Path, name: str) -> tuple[str, str]:
    tls = data / "tls"
    key, csr, crt = (str(data / f"{name}.{ext}") for ext in ("key", "csr", "crt"))
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr,
                "-subj", f"/O=system:nodes/CN=system:node:{name}")
    (data / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    openssl.run("x509", "-req", "-in", csr, "-CA", str(tls / "ca.crt"), "-CAkey", str(tls / "ca.key"),
                "-CAcreateserial", "-out", crt, "-days", "1", "-extfile", str(data / "client.ext"))
    return crt, key


class Cluster:
    """The server, and how to send a request as a node with the credential under test."""

    def __init__(self, endpoint: Endpoint, certs: dict[str, tuple[str, str]]) -> None:
        self.endpoint, self.certs = endpoint, certs
        self.credential = "certificate"

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.endpoint.request(method, path, **kwargs)

    def as_node(self, name: str, method: str, path: str, headers: dict[str, str] | None = None,
                **kwargs: Any) -> requests.Response:
        if self.credential == "impersonation":
            headers = {**(headers or {}), "Impersonate-User": f"system:node:{name}",
                       "Impersonate-Group": "system:nodes"}
            return self.endpoint.request(method, path, headers=headers, **kwargs)
        return requests.request(method, self.endpoint.url + path, headers=headers, cert=self.certs[name],
                                verify=self.endpoint.verify, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data = tmp_path_factory.mktemp("nodeauthz")
    with running_server(str(data)) as endpoint:
        for name in (A, B):
            assert endpoint.request("POST", "/api/v1/nodes", json={
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"tier": "x"}}}).ok
        yield Cluster(endpoint, {name: node_certificate(data, name) for name in (A, B)})


@pytest.fixture(params=["certificate", "impersonation"])
def api(cluster: Cluster, request: pytest.FixtureRequest) -> Cluster:
    cluster.credential = request.param
    return cluster


def create(api: Cluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = api.request("POST", path, json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def message(answer: Any) -> str:
    assert answer.status_code == 403, answer.text
    return answer.json()["message"]


@pytest.fixture
def ns(api: Cluster) -> str:
    name = f"nodeauthz-{uuid.uuid4().hex[:6]}"
    create(api, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def pod_on(api: Cluster, ns: str, name: str, node: str, secret: str) -> None:
    create(api, f"/api/v1/namespaces/{ns}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                                  "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "slimkube/busybox:1"}],
        "volumes": [{"name": "s", "secret": {"secretName": secret}}]}})


def test_a_node_reads_only_the_secrets_of_its_pods(api: Cluster, ns: str) -> None:
    for secret in ("used-by-a", "used-by-b", "unused"):
        create(api, f"/api/v1/namespaces/{ns}/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                         "metadata": {"name": secret}, "stringData": {"k": "v"}})
    pod_on(api, ns, "pa", A, "used-by-a")
    pod_on(api, ns, "pb", B, "used-by-b")
    secrets = f"/api/v1/namespaces/{ns}/secrets"
    wait_until(lambda: api.as_node(A, "GET", f"{secrets}/used-by-a").status_code == 200, timeout=10)
    assert api.as_node(A, "GET", secrets,
                       params={"fieldSelector": "metadata.name=used-by-a"}).status_code == 200
    for secret in ("used-by-b", "unused"):
        assert message(api.as_node(A, "GET", f"{secrets}/{secret}")) == (
            f'secrets "{secret}" is forbidden: User "system:node:{A}" cannot get resource "secrets" in API group "" in '
            f"the namespace \"{ns}\": no relationship found between node '{A}' and this object")
    assert message(api.as_node(A, "GET", secrets)).endswith(": No Object name found")
    assert api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/pa", params={"gracePeriodSeconds": "0"}).ok
    wait_until(lambda: api.as_node(A, "GET", f"{secrets}/used-by-a").status_code == 403, timeout=10)


def test_a_node_writes_only_its_own_node(api: Cluster) -> None:
    merge = {"Content-Type": "application/merge-patch+json"}
    patched = api.as_node(A, "PATCH", f"/api/v1/nodes/{B}", headers=merge,
                          data='{"metadata": {"labels": {"tier": "stolen"}}}')
    assert message(patched) == f'nodes "{B}" is forbidden: node "{A}" is not allowed to modify node "{B}"'
    status = api.as_node(A, "PATCH", f"/api/v1/nodes/{B}/status", headers=merge,
                         data='{"status": {"conditions": []}}')
    assert message(status) == f'nodes "{B}" is forbidden: node "{A}" is not allowed to modify node "{B}"'
    assert message(api.as_node(A, "DELETE", f"/api/v1/nodes/{B}")) == (  # no node deletes nodes
        f'nodes "{B}" is forbidden: User "system:node:{A}" cannot delete resource "nodes" in API group "" at the '
        "cluster scope")
    taints = api.as_node(A, "PATCH", f"/api/v1/nodes/{A}", headers=merge,
                         data='{"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}')
    assert message(taints) == f'nodes "{A}" is forbidden: node "{A}" is not allowed to modify taints'
    role = api.as_node(A, "PATCH", f"/api/v1/nodes/{A}", headers=merge,
                       data='{"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}')
    assert message(role) == (f'nodes "{A}" is forbidden: is not allowed to modify labels: '
                             "node-role.kubernetes.io/control-plane")
    own = api.as_node(A, "PATCH", f"/api/v1/nodes/{A}", headers=merge,
                      data='{"metadata": {"labels": {"tier": "mine", "topology.kubernetes.io/zone": "z1"}}}')
    assert own.status_code == 200, own.text
    assert api.as_node(A, "GET", f"/api/v1/nodes/{B}").status_code == 200  # reading is fine


def test_a_node_writes_only_its_own_pods(api: Cluster, ns: str) -> None:
    pod_on(api, ns, "pb", B, "none")
    pod = api.request("GET", f"/api/v1/namespaces/{ns}/pods/pb").json()
    pod["status"] = {"phase": "Failed", "message": "forged"}
    answer = api.as_node(A, "PUT", f"/api/v1/namespaces/{ns}/pods/pb/status", json=pod)
    assert message(answer) == (f'pods "pb" is forbidden: node "{A}" can only update pod status for pods with '
                               "spec.nodeName set to itself")
    assert message(api.as_node(A, "DELETE", f"/api/v1/namespaces/{ns}/pods/pb")) == (
        f'pods "pb" is forbidden: node "{A}" can only delete pods with spec.nodeName set to itself')
    updated = api.as_node(B, "PUT", f"/api/v1/namespaces/{ns}/pods/pb/status", json=pod)
    assert updated.status_code == 200 and updated.json()["status"]["message"] == "forged"
    created = api.as_node(A, "POST", f"/api/v1/namespaces/{ns}/pods", json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
        "spec": {"nodeName": A, "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    assert message(created) == (f'pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" '
                                f'annotation, node "{A}" can only create mirror pods')


def test_a_node_uses_only_its_own_lease(api: Cluster) -> None:
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": A}}
    assert api.as_node(A, "POST", leases, json={**body, "metadata": {"name": A}}).status_code == 201
    assert message(api.as_node(A, "POST", leases, json={**body, "metadata": {"name": B}})) == (
        f'leases.coordination.k8s.io "{B}" is forbidden: can only access node lease with the same name as the '
        "requesting node")
    assert message(api.as_node(A, "GET", f"{leases}/{B}")).endswith(
        ": can only access node lease with the same name as the requesting node")
    assert api.as_node(A, "DELETE", f"{leases}/{A}").status_code == 200
