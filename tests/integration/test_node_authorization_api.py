"""The Node authorizer and NodeRestriction against a real API server on 127.0.0.1, as an attacker holding one
node's identity would try them (`Impersonate-User: system:node:<name>`, `Impersonate-Group: system:nodes`,
what `kubectl --as system:node:a --as-group system:nodes` sends): node A reads the Secret its pod uses — and
not once the pod is gone — but no other; it may not patch node B, change its own taints or restricted
labels, update B's pod status, delete B's pod, create a pod that is not its own mirror pod, or touch B's
Lease."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apiserver import Endpoint, running_server
from tests.support.polling import wait_until

A, B = "node-a", "node-b"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("nodeauthz"))) as endpoint:
        for name in (A, B):
            assert endpoint.request("POST", "/api/v1/nodes", json={
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"tier": "x"}}}).ok
        yield endpoint


def as_node(name: str) -> dict[str, str]:
    return {"Impersonate-User": f"system:node:{name}", "Impersonate-Group": "system:nodes"}


def create(api: Endpoint, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = api.request("POST", path, json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def message(answer: Any) -> str:
    assert answer.status_code == 403, answer.text
    return answer.json()["message"]


@pytest.fixture
def ns(api: Endpoint) -> str:
    name = f"nodeauthz-{uuid.uuid4().hex[:6]}"
    create(api, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def pod_on(api: Endpoint, ns: str, name: str, node: str, secret: str) -> None:
    create(api, f"/api/v1/namespaces/{ns}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                                  "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "slimkube/busybox:1"}],
        "volumes": [{"name": "s", "secret": {"secretName": secret}}]}})


def test_a_node_reads_only_the_secrets_of_its_pods(api: Endpoint, ns: str) -> None:
    for secret in ("used-by-a", "used-by-b", "unused"):
        create(api, f"/api/v1/namespaces/{ns}/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                         "metadata": {"name": secret}, "stringData": {"k": "v"}})
    pod_on(api, ns, "pa", A, "used-by-a")
    pod_on(api, ns, "pb", B, "used-by-b")
    secrets = f"/api/v1/namespaces/{ns}/secrets"
    wait_until(lambda: api.request("GET", f"{secrets}/used-by-a", headers=as_node(A)).status_code == 200, timeout=10)
    assert api.request("GET", secrets, headers=as_node(A),
                       params={"fieldSelector": "metadata.name=used-by-a"}).status_code == 200
    for secret in ("used-by-b", "unused"):
        assert message(api.request("GET", f"{secrets}/{secret}", headers=as_node(A))) == (
            f'secrets "{secret}" is forbidden: User "system:node:{A}" cannot get resource "secrets" in API group "" in '
            f"the namespace \"{ns}\": no relationship found between node '{A}' and this object")
    assert message(api.request("GET", secrets, headers=as_node(A))).endswith(": No Object name found")
    assert api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/pa", params={"gracePeriodSeconds": "0"}).ok
    wait_until(lambda: api.request("GET", f"{secrets}/used-by-a", headers=as_node(A)).status_code == 403, timeout=10)


def test_a_node_writes_only_its_own_node(api: Endpoint) -> None:
    merge = {"Content-Type": "application/merge-patch+json"}
    patched = api.request("PATCH", f"/api/v1/nodes/{B}", headers={**as_node(A), **merge},
                          data='{"metadata": {"labels": {"tier": "stolen"}}}')
    assert message(patched) == f'nodes "{B}" is forbidden: node "{A}" is not allowed to modify node "{B}"'
    status = api.request("PATCH", f"/api/v1/nodes/{B}/status", headers={**as_node(A), **merge},
                         data='{"status": {"conditions": []}}')
    assert message(status) == f'nodes "{B}" is forbidden: node "{A}" is not allowed to modify node "{B}"'
    assert message(api.request("DELETE", f"/api/v1/nodes/{B}", headers=as_node(A))) == (  # no node deletes nodes
        f'nodes "{B}" is forbidden: User "system:node:{A}" cannot delete resource "nodes" in API group "" at the '
        "cluster scope")
    taints = api.request("PATCH", f"/api/v1/nodes/{A}", headers={**as_node(A), **merge},
                         data='{"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}')
    assert message(taints) == f'nodes "{A}" is forbidden: node "{A}" is not allowed to modify taints'
    role = api.request("PATCH", f"/api/v1/nodes/{A}", headers={**as_node(A), **merge},
                       data='{"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}')
    assert message(role) == (f'nodes "{A}" is forbidden: is not allowed to modify labels: '
                             "node-role.kubernetes.io/control-plane")
    own = api.request("PATCH", f"/api/v1/nodes/{A}", headers={**as_node(A), **merge},
                      data='{"metadata": {"labels": {"tier": "mine", "topology.kubernetes.io/zone": "z1"}}}')
    assert own.status_code == 200, own.text
    assert api.request("GET", f"/api/v1/nodes/{B}", headers=as_node(A)).status_code == 200  # reading is fine


def test_a_node_writes_only_its_own_pods(api: Endpoint, ns: str) -> None:
    pod_on(api, ns, "pb", B, "none")
    pod = api.request("GET", f"/api/v1/namespaces/{ns}/pods/pb").json()
    pod["status"] = {"phase": "Failed", "message": "forged"}
    answer = api.request("PUT", f"/api/v1/namespaces/{ns}/pods/pb/status", headers=as_node(A), json=pod)
    assert message(answer) == (f'pods "pb" is forbidden: node "{A}" can only update pod status for pods with '
                               "spec.nodeName set to itself")
    assert message(api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/pb", headers=as_node(A))) == (
        f'pods "pb" is forbidden: node "{A}" can only delete pods with spec.nodeName set to itself')
    updated = api.request("PUT", f"/api/v1/namespaces/{ns}/pods/pb/status", headers=as_node(B), json=pod)
    assert updated.status_code == 200 and updated.json()["status"]["message"] == "forged"
    created = api.request("POST", f"/api/v1/namespaces/{ns}/pods", headers=as_node(A), json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
        "spec": {"nodeName": A, "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    assert message(created) == (f'pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" '
                                f'annotation, node "{A}" can only create mirror pods')


def test_a_node_uses_only_its_own_lease(api: Endpoint) -> None:
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": A}}
    assert api.request("POST", leases, headers=as_node(A), json={**body, "metadata": {"name": A}}).status_code == 201
    assert message(api.request("POST", leases, headers=as_node(A), json={**body, "metadata": {"name": B}})) == (
        f'leases.coordination.k8s.io "{B}" is forbidden: can only access node lease with the same name as the '
        "requesting node")
    assert message(api.request("GET", f"{leases}/{B}", headers=as_node(A))).endswith(
        ": can only access node lease with the same name as the requesting node")
