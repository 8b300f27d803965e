"""The authorizer chain and the 403 it answers (upstream: k8s.io/apiserver/pkg/authorization/union,
authorizerfactory.NewPrivilegedGroups, pkg/kubeapiserver/authorizer/config.go for the order,
k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage/Forbidden).

Order: members of `system:masters` are allowed everything first, as upstream's privileged-groups authorizer;
then the node authorizers (the shared node join credential, while it keeps the full access it has always
had, and the Node authorizer for `system:node:<name>` users, node.py); then RBAC. The first
authorizer that allows or denies decides; when none does, the request is forbidden and the reasons of all
of them (joined by newlines) follow upstream's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.decision import Decision, Verdict
from control.apiserver.authorization.rbac import RBACAuthorizer, effective_groups
from control.apiserver.authorization.rules import Rule
from control.apiserver.status import APIError

MASTERS = "system:masters"
FULL_AUTHORITY = (Rule(verbs=("*",), api_groups=("*",), resources=("*",)),
                  Rule(verbs=("*",), non_resource_urls=("*",)))


class Authorizer(Protocol):
    def authorize(self, attributes: Attributes) -> Verdict: ...


class PrivilegedGroups:
    """Allow every member of one of `groups` (upstream: `system:masters`)."""

    def __init__(self, groups: Sequence[str] = (MASTERS,)) -> None:
        self.groups = frozenset(groups)

    def authorize(self, attributes: Attributes) -> Verdict:
        if self.groups.intersection(effective_groups(attributes.user)):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)


class SharedNodeCredential:
    """The place of upstream's Node authorizer. Today every node joins with one shared credential that has
    always been allowed everything; it keeps that until each node has its own identity and the Node
    authorizer takes this place."""

    def __init__(self, username: str) -> None:
        self.username = username

    def authorize(self, attributes: Attributes) -> Verdict:
        return Verdict(Decision.ALLOW if attributes.user.username == self.username else Decision.NO_OPINION)


class Chain:
    """Authorizers in order; also the rule source of SelfSubjectRulesReview (RBAC's rules)."""

    def __init__(self, authorizers: Sequence[Authorizer], rbac: RBACAuthorizer) -> None:
        self.authorizers = tuple(authorizers)
        self.rbac = rbac

    def authorize(self, attributes: Attributes) -> Verdict:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            verdict = authorizer.authorize(attributes)
            if verdict.decision is not Decision.NO_OPINION:
                return verdict
            if verdict.reason:
                reasons.append(verdict.reason)
        return Verdict(Decision.NO_OPINION, "\n".join(reasons))

    def authorize_now(self, attributes: Attributes) -> Verdict | None:
        """`authorize` without blocking (RBAC over its in-memory policy); None when only a blocking look (the
        store, or waiting for the policy to catch up) can tell."""
        reasons: list[str] = []
        for authorizer in self.authorizers:
            verdict = (self.rbac.authorize_now(attributes) if authorizer is self.rbac
                       else authorizer.authorize(attributes))
            if verdict is None:
                return None
            if verdict.decision is not Decision.NO_OPINION:
                return verdict
            if verdict.reason:
                reasons.append(verdict.reason)
        return Verdict(Decision.NO_OPINION, "\n".join(reasons))

    def needs_lookup(self, user: UserInfo) -> bool:
        """False when a store-free authorizer allows the user everything (the common, fast case)."""
        probe = Attributes(user=user, verb="get", path="/")
        return not any(a.authorize(probe).allowed for a in self.authorizers if not isinstance(a, RBACAuthorizer))


def forbidden_message(attributes: Attributes) -> str:
    user = attributes.user.username
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = attributes.resource + (f"/{attributes.subresource}" if attributes.subresource else "")
    where = (f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope")
    return f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group "{attributes.api_group}" {where}'


def forbidden(attributes: Attributes, reason: str = "") -> APIError:
    """The 403 Status upstream's Forbidden writes (apierrors.NewForbidden over the group and resource)."""
    message = forbidden_message(attributes) + (f": {reason}" if reason else "")
    return forbidden_error(attributes.resource, attributes.api_group, attributes.name, message)


def forbidden_error(resource: str, group: str, name: str, message: str) -> APIError:
    """apierrors.NewForbidden: `<resource>[.<group>] ["name"] is forbidden: <message>`."""
    qualified = f"{resource}.{group}" if group else resource
    if not qualified:
        text = f"forbidden: {message}"
    elif not name:
        text = f"{qualified} is forbidden: {message}"
    else:
        text = f'{qualified} "{name}" is forbidden: {message}'
    details: dict[str, str] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    return APIError(403, "Forbidden", text, details=details)
