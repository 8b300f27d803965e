"""The Node authorizer: what a kubelet may do as its own node (upstream: plugin/pkg/auth/authorizer/node/
node_authorizer.go, pkg/auth/nodeidentifier/default.go).

A node is a user named `system:node:<name>` in the group `system:nodes`; anyone else gets no opinion.
For a node:
- secrets and configmaps: get, or list/watch of one object by name (`fieldSelector=metadata.name=…`),
  only of objects a pod bound to the node references (nodegraph.py);
- persistentvolumeclaims, persistentvolumes, resourceclaims, volumeattachments: get, likewise; a claim's
  `status` update/patch likewise;
- serviceaccounts: only `create` of the `token` subresource for an account a pod of the node runs as;
- leases: get/create/update/patch/delete in `kube-node-lease`, by name only its own (create is checked by
  NodeRestriction admission, which sees the name);
- everything else against upstream's static node rules (bootstrappolicy.node_rules: nodes, pods and
  pods/status, events, CSRs, …), whose writes NodeRestriction admission narrows to the node's own objects.
Refusals are "no opinion" with upstream's reason, so RBAC still decides, as upstream's chain does.
"""

from __future__ import annotations

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.bootstrappolicy import node_rules
from control.apiserver.authorization.decision import Decision, Verdict
from control.apiserver.authorization.nodegraph import (
    CONFIGMAP,
    PV,
    PVC,
    RESOURCE_CLAIM,
    SECRET,
    SERVICE_ACCOUNT,
    VOLUME_ATTACHMENT,
    NodeGraph,
    Ref,
)
from control.apiserver.authorization.rules import Rule, rule_allows

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
NODE_LEASE_NAMESPACE = "kube-node-lease"

_ALLOW = Verdict(Decision.ALLOW)
_NO_OPINION = Verdict(Decision.NO_OPINION)


def node_identity(user: UserInfo | None) -> tuple[str, bool]:
    """(node name, is a node) as upstream's default node identifier: the prefix and the group are both
    needed; a name that is only the prefix is a node whose name cannot be told."""
    if user is None or not user.username.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.username[len(NODE_USER_PREFIX):], True


def _refuse(reason: str) -> Verdict:
    return Verdict(Decision.NO_OPINION, reason)


class NodeAuthorizer:
    def __init__(self, graph: NodeGraph) -> None:
        self.graph = graph
        self.rules = tuple(Rule.from_json(r) for r in node_rules())

    def authorize(self, attributes: Attributes) -> Verdict:
        node, is_node = node_identity(attributes.user)
        if not is_node:
            return _NO_OPINION
        if not node:
            return _refuse(f'unknown node for user "{attributes.user.username}"')
        if attributes.resource_request:
            decided = self._subdivided(node, attributes)
            if decided is not None:
                return decided
        if any(rule_allows(attributes, rule) for rule in self.rules):
            return _ALLOW
        return _NO_OPINION

    def _subdivided(self, node: str, attributes: Attributes) -> Verdict | None:
        """The answer for the resources access is subdivided by object; None for the others."""
        group, resource = attributes.api_group, attributes.resource
        if group == "":
            if resource in (SECRET, CONFIGMAP):
                return self._read_namespaced(node, attributes)
            if resource == PVC:
                if attributes.subresource == "status":
                    return self._status_update(node, attributes)
                return self._get(node, attributes)
            if resource == PV:
                return self._get(node, attributes)
            if resource == SERVICE_ACCOUNT:
                return self._create_token(node, attributes)
        elif group == "resource.k8s.io" and resource == RESOURCE_CLAIM:
            return self._get(node, attributes)
        elif group == "storage.k8s.io" and resource == VOLUME_ATTACHMENT:
            return self._get(node, attributes)
        elif group == "coordination.k8s.io" and resource == "leases":
            return self._lease(node, attributes)
        return None

    def _related(self, node: str, attributes: Attributes) -> Verdict:
        if not attributes.name:
            return _refuse("No Object name found")
        if self.graph.has_path(node, Ref(attributes.resource, attributes.namespace, attributes.name)):
            return _ALLOW
        return _refuse(f"no relationship found between node '{node}' and this object")

    def _read_namespaced(self, node: str, attributes: Attributes) -> Verdict:
        if attributes.verb not in ("get", "list", "watch"):
            return _refuse("can only read resources of this type")
        if attributes.subresource:
            return _refuse("cannot read subresource")
        if not attributes.namespace:
            return _refuse("can only read namespaced object of this type")
        return self._related(node, attributes)

    def _get(self, node: str, attributes: Attributes) -> Verdict:
        if attributes.verb != "get":
            return _refuse("can only get individual resources of this type")
        if attributes.subresource:
            return _refuse("cannot get subresource")
        return self._related(node, attributes)

    def _status_update(self, node: str, attributes: Attributes) -> Verdict:
        if attributes.verb not in ("update", "patch"):
            return _refuse("can only get/update/patch this type")
        return self._related(node, attributes)

    def _create_token(self, node: str, attributes: Attributes) -> Verdict:
        if attributes.verb != "create" or not attributes.name:
            return _refuse("can only create tokens for individual service accounts")
        if attributes.subresource != "token":
            return _refuse("can only create token subresource of serviceaccount")
        return self._related(node, attributes)

    def _lease(self, node: str, attributes: Attributes) -> Verdict:
        if attributes.verb not in ("get", "create", "update", "patch", "delete"):
            return _refuse("can only get, create, update, patch, or delete a node lease")
        if attributes.namespace != NODE_LEASE_NAMESPACE:
            return _refuse(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        if attributes.verb != "create" and attributes.name != node:
            return _refuse("can only access node lease with the same name as the requesting node")
        return _ALLOW
