"""Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (upstream: pkg/registry/rbac/*/strategy.go and
the policy-based storage wrappers pkg/registry/rbac/*/policybased/storage.go that refuse escalation).

Before the kind's validation (control/api/validation/rbac.py) the requester (authentication's
`current_user`) must hold what the object grants, or may `escalate`/`bind`
(control/apiserver/authorization/escalation.py), so a refusal is a 403 whatever else is wrong, as upstream.
"""

from __future__ import annotations

from typing import Any

from control.apimachinery.validation import FieldError
from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization import escalation
from control.apiserver.authorization.source import StoragePolicySource, default_chain
from control.apiserver.registry.strategies.base import Strategy
from control.apiserver.resources import Resource
from control.storage.interface import Storage


class RBACStrategy(Strategy):
    """The four RBAC kinds: escalation checked against the store's policy, then the kind's validation."""

    def __init__(self, resource: Resource, storage: Storage) -> None:
        super().__init__(resource)
        self.source = StoragePolicySource(storage)
        self.authorizer = default_chain(storage)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        plural, user = self.resource.plural, authn.current_user.get()
        if plural in ("roles", "clusterroles"):
            escalation.check_role(self.source, self.authorizer, user, plural, obj)
        else:
            escalation.check_binding(self.source, self.authorizer, user, plural, obj)
        return super().validate(obj, old)
