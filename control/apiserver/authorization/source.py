"""The RBAC objects read straight from the store (the escalation checks read them so, fresh; requests are
judged over the server's in-memory copy, policycache.py), and the authorizer chain the server runs. Keys follow
control/apiserver/resources.py: `/registry/{plural}/[{namespace}/]{name}`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from control.apiserver.authentication.tokens import NODE
from control.apiserver.authorization.authorizer import Chain, PrivilegedGroups, SharedNodeCredential
from control.apiserver.authorization.node import NodeAuthorizer
from control.apiserver.authorization.nodegraph import NodeGraph
from control.apiserver.authorization.policycache import PolicyCache
from control.apiserver.authorization.rbac import RBACAuthorizer
from control.storage.interface import Storage


def _decoded(value: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(value)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


class StoragePolicySource:
    """PolicySource over a Storage."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def _get(self, key: str) -> Mapping[str, Any] | None:
        record = self.storage.get(key)
        return _decoded(record.value) if record is not None else None

    def _list(self, prefix: str) -> Sequence[Mapping[str, Any]]:
        return [obj for record in self.storage.list(prefix).records if (obj := _decoded(record.value)) is not None]

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return self._get(f"/registry/clusterroles/{name}") if name else None

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._get(f"/registry/roles/{namespace}/{name}") if namespace and name else None

    def cluster_role_bindings(self) -> Sequence[Mapping[str, Any]]:
        return self._list("/registry/clusterrolebindings/")

    def role_bindings(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return self._list(f"/registry/rolebindings/{namespace}/") if namespace else []

    def cluster_roles(self) -> Sequence[Mapping[str, Any]]:
        return self._list("/registry/clusterroles/")


def default_chain(storage: Storage, graph: NodeGraph | None = None, policy: PolicyCache | None = None) -> Chain:
    """system:masters, then the node authorizers (the Node authorizer over `graph`, which the server keeps
    current; an empty one where no node asks, as in the escalation checks), then RBAC over `policy` (the
    server's cache) or else straight over `storage`."""
    rbac = (RBACAuthorizer(policy, catch_up=policy.catch_up) if policy is not None
            else RBACAuthorizer(StoragePolicySource(storage)))
    node = NodeAuthorizer(graph if graph is not None else NodeGraph())
    return Chain([PrivilegedGroups(), SharedNodeCredential(NODE.username), node, rbac], rbac)
