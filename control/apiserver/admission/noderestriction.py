"""NodeRestriction (upstream: plugin/pkg/admission/noderestriction/admission.go and the kubelet label
rules of k8s.io/kubelet/pkg/apis/well_known_labels.go): what a node (`system:node:<name>` in
`system:nodes`, control/apiserver/authorization/node.py) may write, beside what the Node authorizer lets it
reach. Other users pass untouched.

- pods: create only mirror pods bound to itself, owned by its own Node (controller, no
  blockOwnerDeletion, the Node's uid) and referencing no service account, secret, configmap, cluster trust
  bundle or claim; delete only pods bound to itself; no other pod write;
- pods/status: only of pods bound to itself, labels unchanged, resource claim statuses unchanged;
- nodes (and their status): only its own; on create no `configSource` and no forbidden label; on update
  the taints unchanged, `configSource` not changed to a new value, no forbidden label added, changed or
  removed. Forbidden: `node-restriction.kubernetes.io/` labels, and labels under kubernetes.io or k8s.io
  (or a subdomain) other than the kubelet's own (`kubelet.kubernetes.io/`, `node.kubernetes.io/`, the
  hostname, topology, instance-type, os and arch labels);
- persistentvolumeclaims: only `status`, and in it only capacity, conditions and the allocated resources;
- leases: only in `kube-node-lease` and only the one named after itself; csinodes: only its own.
The decisions are pure functions of (node, attributes, stored objects); the refusals are upstream's
Forbidden messages.

Departures: the user is read from the request's context (`authn.current_user`) as the RBAC strategy does;
an eviction is judged as the pod deletion it causes (the eviction storage deletes through the same
chain), so a node evicting another node's pod gets the deletion's refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any

from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization.node import NODE_LEASE_NAMESPACE, node_identity
from control.apiserver.authorization.nodegraph import CONFIGMAP, SECRET, pod_references
from control.apiserver.resources import Resource, by_path

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io"
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type", "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "kubernetes.io/os",
    "kubernetes.io/arch"})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
_PVC_STATUS_FIELDS = ("capacity", "conditions", "allocatedResources", "allocatedResourceStatuses")

PODS = by_path("", "v1", "pods")
NODES = by_path("", "v1", "nodes")


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _dict((obj or {}).get("metadata"))


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _dict((obj or {}).get("spec"))


def _namespace_of(label: str) -> str:
    prefix, slash, _ = label.partition("/")
    return prefix if slash else ""


def _within(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(label: str) -> bool:
    """A label the kubelet may set on its own Node (well_known_labels.go IsKubeletLabel)."""
    return label in KUBELET_LABELS or any(_within(_namespace_of(label), ns) for ns in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[str]:
    """The added, changed or removed label keys a node may not touch, sorted (upstream's sets.List)."""
    changed = {k for k in new.keys() | old.keys() if k not in new or k not in old or new[k] != old[k]}
    out = set()
    for label in changed:
        namespace = _namespace_of(label)
        if _within(namespace, NODE_RESTRICTION_NAMESPACE):
            out.add(label)
        if (_within(namespace, "kubernetes.io") or _within(namespace, "k8s.io")) and not is_kubelet_label(label):
            out.add(label)
    return sorted(out)


def _references_objects(node: str, spec: Mapping[str, Any]) -> str | None:
    """Why a mirror pod may not be created because of what it references (None: it references nothing)."""
    if spec.get("serviceAccountName"):
        return f'node "{node}" can not create pods that reference a service account'
    kinds = {ref.resource for ref in pod_references({"metadata": {"name": "_"}, "spec": spec})}
    if SECRET in kinds:
        return f'node "{node}" can not create pods that reference secrets'
    if CONFIGMAP in kinds:
        return f'node "{node}" can not create pods that reference configmaps'
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, Mapping)]
    if any("clusterTrustBundle" in _dict(s) for v in volumes for s in _dict(v.get("projected")).get("sources") or []):
        return f'node "{node}" can not create pods that reference clustertrustbundles'
    if any("persistentVolumeClaim" in v for v in volumes):
        return f'node "{node}" can not create pods that reference persistentvolumeclaims'
    return None


def pod_create_refusal(node: str, pod: Mapping[str, Any], node_object: Mapping[str, Any] | None) -> str | None:
    """admitPodCreate: None when `node` may create `pod`; `node_object` is its stored Node."""
    meta = _meta(pod)
    if MIRROR_POD_ANNOTATION not in _dict(meta.get("annotations")):
        return f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can only create mirror pods'
    if _spec(pod).get("nodeName") != node:
        return f'node "{node}" can only create pods with spec.nodeName set to itself'
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
    if len(owners) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    if not owners:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    owner = owners[0]
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if owner.get("controller") is not True:
        return f'node "{node}" can only create pods with a controller owner reference set to itself'
    if owner.get("blockOwnerDeletion") is True:
        return f'node "{node}" must not set blockOwnerDeletion on an owner reference'
    uid = _meta(node_object).get("uid", "")
    if owner.get("uid") != uid:
        return f"node {node} UID mismatch: expected {owner.get('uid', '')} got {uid}"
    return _references_objects(node, _spec(pod))


def pod_status_refusal(node: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> str | None:
    if _spec(old).get("nodeName") != node:
        return f'node "{node}" can only update pod status for pods with spec.nodeName set to itself'
    if (_meta(new).get("labels") or {}) != (_meta(old).get("labels") or {}):
        return f'node "{node}" cannot update labels through pod status'

    def claims(pod: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        statuses = _dict(pod.get("status")).get("resourceClaimStatuses") or []
        return [(_dict(s).get("name"), _dict(s).get("resourceClaimName")) for s in statuses]

    if claims(new) != claims(old):
        return f'node "{node}" cannot update resource claim statues'
    return None


def node_refusal(node: str, attributes: Attributes) -> str | None:
    """admitNode, for creates and updates of the Node and its status."""
    if attributes.name != node:
        return f'node "{node}" is not allowed to modify node "{attributes.name}"'
    new, old = attributes.obj or {}, attributes.old
    new_labels = _dict(_meta(new).get("labels"))
    if attributes.operation is Operation.CREATE:
        if _spec(new).get("configSource") is not None:
            return f'node "{node}" is not allowed to create pods with a non-nil configSource'
        labels = forbidden_labels(new_labels, {})
        if labels:
            return f'node "{node}" is not allowed to set the following labels: {", ".join(labels)}'
    elif attributes.operation is Operation.UPDATE and old is not None:
        source = _spec(new).get("configSource")
        if source is not None and source != _spec(old).get("configSource"):
            return f'node "{node}" is not allowed to update configSource to a new non-nil configSource'
        if (_spec(new).get("taints") or []) != (_spec(old).get("taints") or []):
            return f'node "{node}" is not allowed to modify taints'
        labels = forbidden_labels(new_labels, _dict(_meta(old).get("labels")))
        if labels:
            return f"is not allowed to modify labels: {', '.join(labels)}"
    return None


def pvc_status_refusal(node: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> str | None:
    def comparable(pvc: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in _meta(pvc).items() if k not in ("resourceVersion", "managedFields")}
        status = {k: v for k, v in _dict(pvc.get("status")).items() if k not in _PVC_STATUS_FIELDS}
        return {**pvc, "metadata": meta, "status": status}

    before, after = comparable(old), comparable(new)
    if before != after:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return (f'node "{node}" is not allowed to update fields other than status.capacity and '
                f"status.conditions: {', '.join(changed)}")
    return None


def lease_refusal(node: str, attributes: Attributes) -> str | None:
    if attributes.namespace != NODE_LEASE_NAMESPACE:
        return f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
    if attributes.name != node:
        return "can only access node lease with the same name as the requesting node"
    return None


class NodeRestriction:
    """The validating plugin (upstream's is a mutating one that changes nothing; validating here, so it
    judges the object after every mutation and the strategy's preparation)."""

    name = "NodeRestriction"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        user = authn.current_user.get()
        node, is_node = node_identity(user)
        if user is None or not is_node:
            return
        refusal = self._refusal(node, attributes) if node else f'could not determine node from user "{user.username}"'
        if refusal is not None:
            raise forbidden(attributes.resource, attributes.name or attributes.generate_name, refusal)

    def _stored(self, resource: Resource | None, namespace: str, name: str) -> dict[str, Any] | None:
        return self._reader.get(resource, namespace, name) if resource is not None else None

    def _refusal(self, node: str, attributes: Attributes) -> str | None:
        resource, operation = attributes.resource, attributes.operation
        group, plural, sub = resource.group, resource.plural, attributes.subresource
        if group == "" and plural == "pods":
            if sub == "status":
                if operation is not Operation.UPDATE or attributes.old is None or attributes.obj is None:
                    return f'unexpected operation "{operation.value}"'
                return pod_status_refusal(node, attributes.obj, attributes.old)
            if sub:
                return f"unexpected pod subresource \"{sub}\", only 'status' and 'eviction' are allowed"
            if operation is Operation.CREATE and attributes.obj is not None:
                return pod_create_refusal(node, attributes.obj, self._stored(NODES, "", node))
            if operation is Operation.DELETE:
                pod = self._stored(PODS, attributes.namespace, attributes.name)
                if pod is not None and _spec(pod).get("nodeName") != node:
                    return f'node "{node}" can only delete pods with spec.nodeName set to itself'
                return None
            return f'unexpected operation "{operation.value}", node "{node}" can only create and delete mirror pods'
        if group == "" and plural == "nodes":
            return node_refusal(node, attributes)
        if group == "" and plural == "persistentvolumeclaims":
            if sub != "status":
                return "may only update PVC status"
            if operation is not Operation.UPDATE or attributes.old is None or attributes.obj is None:
                return f'unexpected operation "{operation.value}"'
            return pvc_status_refusal(node, attributes.obj, attributes.old)
        if group == "coordination.k8s.io" and plural == "leases":
            return lease_refusal(node, attributes)
        if group == "storage.k8s.io" and plural == "csinodes" and attributes.name != node:
            return "can only access CSINode with the same name as the requesting node"
        return None
