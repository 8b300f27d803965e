"""NodeRestriction admission (upstream's cases: plugin/pkg/admission/noderestriction/admission_test.go
Test_nodePlugin_Admit): which writes a node may make, and upstream's refusals."""

from __future__ import annotations

import copy
from contextlib import ExitStack
from typing import Any

import pytest

from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.admission.noderestriction import NodeRestriction, forbidden_labels
from control.apiserver.authentication import tokens as authn
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

PODS = by_path("", "v1", "pods")
NODES = by_path("", "v1", "nodes")
PVCS = by_path("", "v1", "persistentvolumeclaims")
LEASES = by_path("coordination.k8s.io", "v1", "leases")
SECRETS = by_path("", "v1", "secrets")
NODE_UID = "uid-mynode"


class Reader:
    def __init__(self, *objects: tuple[str, str, dict[str, Any]]) -> None:
        self.objects = {(plural, namespace, obj["metadata"]["name"]): obj for plural, namespace, obj in objects}

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((resource.plural, namespace, name))

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]:
        return [o for (p, ns, _), o in self.objects.items() if p == resource.plural and ns == namespace]


def pod(name: str, node: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", **extra.pop("metadata", {})},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **extra}}


def mirror(node: str = "mynode", **spec: Any) -> dict[str, Any]:
    return pod("mirror", node, metadata={
        "annotations": {"kubernetes.io/config.mirror": "x"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": NODE_UID, "controller": True}]},
        **spec)


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": NODE_UID if name == "mynode" else "other", "labels": labels or {}},
            "spec": {"taints": taints or []}}


READER = Reader(("pods", "ns", pod("mine", "mynode")), ("pods", "ns", pod("theirs", "othernode")),
                ("nodes", "", node("mynode")))
MYNODE = authn.UserInfo("system:node:mynode", groups=("system:nodes",))


def admit(attributes: Attributes, user: authn.UserInfo = MYNODE) -> str | None:
    token = authn.current_user.set(user)
    try:
        NodeRestriction(READER).validate(attributes, ExitStack())
    except APIError as exc:
        assert exc.code == 403
        return exc.message
    finally:
        authn.current_user.reset(token)
    return None


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value
    return out


@pytest.mark.parametrize(("attributes", "expected"), [
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror()), None, id="mirror-pod"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "p", pod("p", "mynode")),
                 'pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" '
                 "can only create mirror pods", id="not-mirror"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror("othernode")),
                 'pods "mirror" is forbidden: node "mynode" can only create pods with spec.nodeName set to itself',
                 id="mirror-elsewhere"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", changed(mirror(), "metadata.ownerReferences", [])),
                 'pods "mirror" is forbidden: node "mynode" can only create pods with an owner reference set to itself',
                 id="no-owner"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", changed(mirror(), "metadata.ownerReferences", [
        {"apiVersion": "v1", "kind": "Node", "name": "mynode", "uid": "wrong", "controller": True}])),
                 'pods "mirror" is forbidden: node mynode UID mismatch: expected wrong got uid-mynode', id="uid"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", changed(mirror(), "metadata.ownerReferences", [
        {"apiVersion": "v1", "kind": "Node", "name": "mynode", "uid": NODE_UID}])),
                 'pods "mirror" is forbidden: node "mynode" can only create pods with a controller owner reference set '
                 "to itself", id="not-controller"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror(serviceAccountName="sa")),
                 'pods "mirror" is forbidden: node "mynode" can not create pods that reference a service account',
                 id="mirror-serviceaccount"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror(volumes=[{"name": "v", "secret": {
        "secretName": "s"}}])), 'pods "mirror" is forbidden: node "mynode" can not create pods that reference secrets',
                 id="mirror-secret"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror(volumes=[{"name": "v", "configMap": {
        "name": "c"}}])), 'pods "mirror" is forbidden: node "mynode" can not create pods that reference configmaps',
                 id="mirror-configmap"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mirror", mirror(volumes=[{"name": "v",
                                                                                     "persistentVolumeClaim": {
        "claimName": "c"}}])),
                 'pods "mirror" is forbidden: node "mynode" can not create pods that reference persistentvolumeclaims',
                 id="mirror-pvc"),
    pytest.param(Attributes(Operation.DELETE, PODS, "ns", "mine"), None, id="delete-own-pod"),
    pytest.param(Attributes(Operation.DELETE, PODS, "ns", "theirs"),
                 'pods "theirs" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself',
                 id="delete-other-pod"),
    pytest.param(Attributes(Operation.UPDATE, PODS, "ns", "mine", pod("mine", "mynode"), pod("mine", "mynode")),
                 'pods "mine" is forbidden: unexpected operation "UPDATE", node "mynode" can only create and delete '
                 "mirror pods", id="update-pod"),
    pytest.param(Attributes(Operation.UPDATE, PODS, "ns", "mine", pod("mine", "mynode"), pod("mine", "mynode"),
                            subresource="status"), None, id="own-pod-status"),
    pytest.param(Attributes(Operation.UPDATE, PODS, "ns", "theirs", pod("theirs", "othernode"),
                            pod("theirs", "othernode"), subresource="status"),
                 'pods "theirs" is forbidden: node "mynode" can only update pod status for pods with spec.nodeName set '
                 "to itself", id="other-pod-status"),
    pytest.param(Attributes(Operation.UPDATE, PODS, "ns", "mine",
                            pod("mine", "mynode", metadata={"labels": {"a": "b"}}),
                            pod("mine", "mynode"), subresource="status"),
                 'pods "mine" is forbidden: node "mynode" cannot update labels through pod status', id="status-labels"),
    pytest.param(Attributes(Operation.CREATE, PODS, "ns", "mine", {}, subresource="binding"),
                 'pods "mine" is forbidden: unexpected pod subresource "binding", only \'status\' and \'eviction\' are '
                 "allowed", id="binding"),
    pytest.param(Attributes(Operation.CREATE, NODES, "", "mynode", node("mynode", {"kubernetes.io/hostname": "h"})),
                 None, id="register-self"),
    pytest.param(Attributes(Operation.CREATE, NODES, "", "mynode", node("mynode", {
        "node-role.kubernetes.io/master": "", "foo.node-restriction.kubernetes.io/x": "y"})),
                 'nodes "mynode" is forbidden: node "mynode" is not allowed to set the following labels: '
                 "foo.node-restriction.kubernetes.io/x, node-role.kubernetes.io/master",
                 id="register-forbidden-labels"),
    pytest.param(Attributes(Operation.UPDATE, NODES, "", "othernode", node("othernode"), node("othernode")),
                 'nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"',
                 id="other-node"),
    pytest.param(Attributes(Operation.UPDATE, NODES, "", "othernode", node("othernode"), node("othernode"),
                            subresource="status"),
                 'nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"',
                 id="other-node-status"),
    pytest.param(Attributes(Operation.DELETE, NODES, "", "othernode"),
                 'nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"',
                 id="delete-other-node"),
    pytest.param(Attributes(Operation.UPDATE, NODES, "", "mynode", node("mynode", taints=[
        {"key": "k", "effect": "NoSchedule"}]), node("mynode")),
                 'nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints', id="own-taints"),
    pytest.param(Attributes(Operation.UPDATE, NODES, "", "mynode", node("mynode", {
        "example.com/x": "1", "kubelet.kubernetes.io/x": "1", "topology.kubernetes.io/zone": "z",
        "beta.kubernetes.io/arch": "amd64"}), node("mynode")), None, id="allowed-labels"),
    pytest.param(Attributes(Operation.UPDATE, NODES, "", "mynode", node("mynode"),
                            node("mynode", {"node-role.kubernetes.io/control-plane": ""})),
                 'nodes "mynode" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane',
                 id="remove-forbidden-label"),
    pytest.param(Attributes(Operation.UPDATE, LEASES, "kube-node-lease", "mynode", {}, {}), None, id="own-lease"),
    pytest.param(Attributes(Operation.CREATE, LEASES, "kube-node-lease", "othernode", {}),
                 'leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name '
                 "as the requesting node", id="other-lease"),
    pytest.param(Attributes(Operation.UPDATE, PVCS, "ns", "c", {"metadata": {"name": "c"}, "status": {
        "capacity": {"storage": "2Gi"}}}, {"metadata": {"name": "c"}, "status": {}}, subresource="status"), None,
                 id="pvc-capacity"),
    pytest.param(Attributes(Operation.UPDATE, PVCS, "ns", "c", {"metadata": {"name": "c"}, "status": {
        "phase": "Lost"}}, {"metadata": {"name": "c"}, "status": {}}, subresource="status"),
                 'persistentvolumeclaims "c" is forbidden: node "mynode" is not allowed to update fields other than '
                 "status.capacity and status.conditions: status", id="pvc-phase"),
    pytest.param(Attributes(Operation.UPDATE, PVCS, "ns", "c", {}, {}),
                 'persistentvolumeclaims "c" is forbidden: may only update PVC status', id="pvc-spec"),
    pytest.param(Attributes(Operation.CREATE, SECRETS, "ns", "s", {}), None, id="other-kinds-pass"),
])
def test_node_restriction(attributes: Attributes, expected: str | None) -> None:
    assert admit(attributes) == expected


def test_only_nodes_are_restricted() -> None:
    other_node = Attributes(Operation.UPDATE, NODES, "", "othernode", node("othernode"), node("othernode"))
    assert admit(other_node, authn.UserInfo("system:admin", groups=("system:masters",))) is None
    assert admit(other_node, authn.UserInfo("system:node:mynode")) is None  # not in system:nodes: not a node
    assert admit(other_node, authn.UserInfo("system:node:", groups=("system:nodes",))) == (
        'nodes "othernode" is forbidden: could not determine node from user "system:node:"')


def test_forbidden_labels() -> None:
    assert forbidden_labels({"kubernetes.io/hostname": "a", "k8s.io/x": "1", "sub.k8s.io/y": "1", "plain": "1",
                             "node.kubernetes.io/exclude-from-external-load-balancers": ""}, {}) == [
        "k8s.io/x", "sub.k8s.io/y"]
    assert forbidden_labels({"a.kubernetes.io/x": "1"}, {"a.kubernetes.io/x": "1"}) == []
