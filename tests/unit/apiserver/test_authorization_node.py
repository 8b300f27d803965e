"""The node graph, its populator and the Node authorizer (upstream's cases: plugin/pkg/auth/authorizer/node/
node_authorizer_test.go TestAuthorizer, graph_test.go)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization import follower
from control.apiserver.authorization.attributes import Attributes, request_attributes
from control.apiserver.authorization.node import NodeAuthorizer, node_identity
from control.apiserver.authorization.nodegraph import NodeGraph, Ref, pod_references, pv_references
from control.apiserver.authorization.source import default_chain
from control.storage.sqlite import SQLiteStorage


def node_user(name: str) -> UserInfo:
    return UserInfo(f"system:node:{name}", groups=("system:nodes",))


def pod(name: str, node: str, namespace: str = "ns0", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": node, **spec}}


FULL_POD_SPEC: dict[str, Any] = {
    "serviceAccountName": "sa0",
    "imagePullSecrets": [{"name": "pull"}],
    "containers": [{"name": "c", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}},
                                         {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm",
                                                                                          "key": "k"}}}],
                    "envFrom": [{"secretRef": {"name": "from-s"}}, {"configMapRef": {"name": "from-cm"}}]}],
    "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-s"}}]}],
    "ephemeralContainers": [{"name": "e", "envFrom": [{"configMapRef": {"name": "eph-cm"}}]}],
    "volumes": [{"name": "v1", "secret": {"secretName": "vol-s"}},
                {"name": "v2", "configMap": {"name": "vol-cm"}},
                {"name": "v3", "projected": {"sources": [{"secret": {"name": "proj-s"}},
                                                         {"configMap": {"name": "proj-cm"}}]}},
                {"name": "v4", "persistentVolumeClaim": {"claimName": "claim"}},
                {"name": "v5", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "v6", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-s"}}},
                {"name": "v7", "rbd": {"secretRef": {"name": "rbd-s"}}}],
    "resourceClaims": [{"name": "rc", "resourceClaimName": "claim-a"}],
}


def test_pod_references_cover_every_source() -> None:
    refs = pod_references(pod("p", "n", **FULL_POD_SPEC))
    by_kind: dict[str, set[str]] = {}
    for ref in refs:
        assert ref.namespace == "ns0"
        by_kind.setdefault(ref.resource, set()).add(ref.name)
    assert by_kind == {
        "secrets": {"pull", "env-s", "from-s", "init-s", "vol-s", "proj-s", "csi-s", "rbd-s"},
        "configmaps": {"env-cm", "from-cm", "eph-cm", "vol-cm", "proj-cm"},
        "persistentvolumeclaims": {"claim", "p-v5"},
        "serviceaccounts": {"sa0"},
        "resourceclaims": {"claim-a"},
    }


def test_pv_references() -> None:
    claim, secrets = pv_references({"spec": {
        "claimRef": {"namespace": "ns0", "name": "claim"},
        "csi": {"driver": "d", "nodeStageSecretRef": {"name": "stage", "namespace": "ns1"}},
        "rbd": {"secretRef": {"name": "rbd"}}}})
    assert claim == Ref("persistentvolumeclaims", "ns0", "claim")
    assert secrets == {Ref("secrets", "ns1", "stage"), Ref("secrets", "ns0", "rbd")}
    assert pv_references({"spec": {}}) == (None, frozenset())


@pytest.mark.parametrize(("user", "expected"), [
    pytest.param(node_user("a"), ("a", True), id="node"),
    pytest.param(UserInfo("system:node:a"), ("", False), id="no-group"),
    pytest.param(UserInfo("system:node-token", groups=("system:nodes",)), ("", False), id="shared-credential"),
    pytest.param(UserInfo("system:node:", groups=("system:nodes",)), ("", True), id="unknown-node"),
    pytest.param(None, ("", False), id="nobody"),
])
def test_node_identity(user: UserInfo | None, expected: tuple[str, bool]) -> None:
    assert node_identity(user) == expected


def graph_with_pods() -> NodeGraph:
    graph = NodeGraph()
    graph.set_pod("ns0", "p0", pod("p0", "node0", serviceAccountName="svcacct0-node0",
                                   volumes=[{"name": "s", "secret": {"secretName": "secret0-pod0-node0"}},
                                            {"name": "c", "configMap": {"name": "configmap0-pod0-node0"}},
                                            {"name": "v", "persistentVolumeClaim": {"claimName": "pvc0-pod0-node0"}}],
                                   resourceClaims=[{"name": "r", "resourceClaimName": "claim0-pod0-node0"}]))
    graph.set_pod("ns0", "p1", pod("p1", "node1", volumes=[{"name": "s",
                                                           "secret": {"secretName": "secret0-pod0-node1"}}]))
    graph.set_pod("ns0", "unbound", pod("unbound", "", volumes=[{"name": "s", "secret": {"secretName": "unbound-s"}}]))
    graph.set_pv("pv0-pod0-node0", {"spec": {"claimRef": {"namespace": "ns0", "name": "pvc0-pod0-node0"},
                                             "csi": {"driver": "d", "nodePublishSecretRef":
                                                     {"namespace": "ns0", "name": "secret-pv0-pod0-node0"}}}})
    graph.set_attachment("attachment0-node0", {"spec": {"nodeName": "node0"}})
    return graph


def ask(verb: str, path: str, user: UserInfo | None = None, **query: str) -> Attributes:
    return request_attributes(user or node_user("node0"), verb, path, query)


# upstream TestAuthorizer, as HTTP requests
@pytest.mark.parametrize(("method", "path", "query", "allowed", "reason"), [
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node0", {}, True, "", id="allowed-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns0/configmaps/configmap0-pod0-node0", {}, True, "",
                 id="allowed-configmap"),
    pytest.param("GET", "/api/v1/namespaces/ns0/persistentvolumeclaims/pvc0-pod0-node0", {}, True, "",
                 id="allowed-pvc"),
    pytest.param("GET", "/api/v1/persistentvolumes/pv0-pod0-node0", {}, True, "", id="allowed-pv"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets/secret-pv0-pod0-node0", {}, True, "", id="allowed-pv-secret"),
    pytest.param("GET", "/apis/resource.k8s.io/v1/namespaces/ns0/resourceclaims/claim0-pod0-node0", {}, True, "",
                 id="allowed-resourceclaim"),
    pytest.param("GET", "/apis/storage.k8s.io/v1/volumeattachments/attachment0-node0", {}, True, "",
                 id="allowed-attachment"),
    pytest.param("POST", "/api/v1/namespaces/ns0/serviceaccounts/svcacct0-node0/token", {}, True, "",
                 id="allowed-token"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets", {"fieldSelector": "metadata.name=secret0-pod0-node0"}, True,
                 "", id="list-one-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets", {"watch": "1",
                 "fieldSelector": "metadata.name=secret0-pod0-node0"}, True, "", id="watch-one-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node1", {}, False,
                 "no relationship found between node 'node0' and this object", id="other-nodes-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets/unbound-s", {}, False,
                 "no relationship found between node 'node0' and this object", id="unbound-pods-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns1/secrets/secret0-pod0-node0", {}, False,
                 "no relationship found between node 'node0' and this object", id="other-namespace"),
    pytest.param("GET", "/api/v1/namespaces/ns0/secrets", {}, False, "No Object name found", id="list-secrets"),
    pytest.param("GET", "/api/v1/secrets", {}, False, "can only read namespaced object of this type",
                 id="list-all-secrets"),
    pytest.param("PUT", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node0", {}, False,
                 "can only read resources of this type", id="update-secret"),
    pytest.param("GET", "/api/v1/namespaces/ns0/persistentvolumeclaims", {}, False,
                 "can only get individual resources of this type", id="list-pvcs"),
    pytest.param("GET", "/api/v1/persistentvolumes/pv0-pod0-node0/status", {}, False, "cannot get subresource",
                 id="pv-subresource"),
    pytest.param("GET", "/api/v1/namespaces/ns0/serviceaccounts/svcacct0-node0", {}, False,
                 "can only create tokens for individual service accounts", id="get-serviceaccount"),
    pytest.param("PUT", "/api/v1/namespaces/ns0/persistentvolumeclaims/pvc0-pod0-node0/status", {}, True, "",
                 id="pvc-status"),
    pytest.param("GET", "/api/v1/namespaces/ns0/persistentvolumeclaims/pvc0-pod0-node0/status", {}, False,
                 "can only get/update/patch this type", id="pvc-status-get"),
    pytest.param("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node0", {}, True, "",
                 id="own-lease"),
    pytest.param("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {}, True, "",
                 id="create-lease"),
    pytest.param("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1", {}, False,
                 "can only access node lease with the same name as the requesting node", id="other-lease"),
    pytest.param("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {}, False,
                 "can only get, create, update, patch, or delete a node lease", id="list-leases"),
    pytest.param("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/node0", {}, False,
                 'can only access leases in the "kube-node-lease" system namespace', id="lease-elsewhere"),
    pytest.param("GET", "/api/v1/pods", {"fieldSelector": "spec.nodeName=node0"}, True, "", id="list-pods"),
    pytest.param("PATCH", "/api/v1/nodes/node1", {}, True, "", id="patch-node-left-to-admission"),
    pytest.param("PUT", "/api/v1/namespaces/ns0/pods/p0/status", {}, True, "", id="pod-status"),
    pytest.param("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", {}, True, "", id="create-csr"),
    pytest.param("GET", "/api/v1/services", {}, True, "", id="services"),
    pytest.param("PUT", "/api/v1/namespaces/ns0/pods/p0", {}, False, "", id="pod-update"),
    pytest.param("DELETE", "/api/v1/namespaces/ns0/configmaps/configmap0-pod0-node0", {}, False,
                 "can only read resources of this type", id="delete-configmap"),
    pytest.param("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {}, False, "", id="rbac"),
    pytest.param("GET", "/metrics", {}, False, "", id="non-resource"),
])
def test_node_authorizer(method: str, path: str, query: dict[str, str], allowed: bool, reason: str) -> None:
    verdict = NodeAuthorizer(graph_with_pods()).authorize(ask(method, path, **query))
    assert (verdict.allowed, verdict.reason) == (allowed, reason)


def test_other_users_get_no_opinion() -> None:
    authorizer = NodeAuthorizer(graph_with_pods())
    for user in (UserInfo("alice"), UserInfo("system:node:node0")):
        verdict = authorizer.authorize(ask("GET", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node0", user))
        assert not verdict.allowed and verdict.reason == ""
    unknown = authorizer.authorize(ask("GET", "/api/v1/nodes", UserInfo("system:node:", groups=("system:nodes",))))
    assert (unknown.allowed, unknown.reason) == (False, 'unknown node for user "system:node:"')


def test_graph_follows_changes() -> None:
    graph = graph_with_pods()
    secret = Ref("secrets", "ns0", "secret0-pod0-node0")
    graph.set_pod("ns0", "p2", pod("p2", "node0", volumes=[{"name": "s", "secret": {"secretName": secret.name}}]))
    graph.set_pod("ns0", "p0", pod("p0", "node0"))  # p0 no longer uses it; p2 still does
    assert graph.has_path("node0", secret)
    assert not graph.has_path("node0", Ref("configmaps", "ns0", "configmap0-pod0-node0"))
    assert not graph.has_path("node0", Ref("persistentvolumes", "", "pv0-pod0-node0"))  # its claim went with p0
    graph.set_pod("ns0", "p2", None)
    assert not graph.has_path("node0", secret)
    graph.set_pod("ns0", "p1", pod("p1", "node0", volumes=[{"name": "s",
                                                           "secret": {"secretName": "secret0-pod0-node1"}}]))
    assert graph.has_path("node0", Ref("secrets", "ns0", "secret0-pod0-node1"))  # moved (recreated) to node0
    assert not graph.has_path("node1", Ref("secrets", "ns0", "secret0-pod0-node1"))
    graph.set_pv("pv0-pod0-node0", None)
    graph.set_attachment("attachment0-node0", None)
    assert not graph.has_path("node0", Ref("volumeattachments", "", "attachment0-node0"))
    assert not graph.has_path("node0", Ref("secrets", "ns0", "secret-pv0-pod0-node0"))


def test_populator_loads_and_applies_events(tmp_path: Path) -> None:
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    storage.create("/registry/pods/ns0/p0", json.dumps(pod("p0", "node0", volumes=[
        {"name": "s", "secret": {"secretName": "s0"}}])).encode())
    storage.create("/registry/configmaps/ns0/ignored", b"{}")
    graph = NodeGraph()
    revision = follower.load([graph], storage)
    assert revision == storage.revision()
    assert graph.has_path("node0", Ref("secrets", "ns0", "s0"))
    graph.apply("/registry/pods/ns0/p0", None)
    assert not graph.has_path("node0", Ref("secrets", "ns0", "s0"))


def test_chain_places_the_node_authorizer_before_rbac(tmp_path: Path) -> None:
    graph = graph_with_pods()
    chain = default_chain(SQLiteStorage(str(tmp_path / "state.db")), graph)
    allowed = chain.authorize(ask("GET", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node0"))
    refused = chain.authorize(ask("GET", "/api/v1/namespaces/ns0/secrets/secret0-pod0-node1"))
    assert allowed.allowed
    assert not refused.allowed and refused.reason == "no relationship found between node 'node0' and this object"


def test_reset_replaces_the_whole_graph() -> None:
    graph = graph_with_pods()
    graph.reset([("/registry/pods/ns0/p9", pod("p9", "node1", volumes=[{"name": "s", "secret": {"secretName": "n"}}])),
                 ("/registry/configmaps/ns0/ignored", {})])
    assert graph.has_path("node1", Ref("secrets", "ns0", "n"))
    assert not graph.has_path("node0", Ref("secrets", "ns0", "secret0-pod0-node0"))
    assert not graph.has_path("node0", Ref("volumeattachments", "", "attachment0-node0"))
