"""RBAC: the rules a user holds and whether they allow a request (upstream: plugin/pkg/auth/authorizer/rbac/
rbac.go RBACAuthorizer, staging/src/k8s.io/component-helpers/auth/rbac/validation/rule.go
DefaultRuleResolver — VisitRulesFor, GetRoleReferenceRules, appliesTo).

Rules come from every ClusterRoleBinding (cluster-wide), then, for a namespaced request, the RoleBindings of
that namespace; a binding applies when one of its subjects is the user (`User`), one of the user's groups
(`Group`, `system:authenticated` included) or the user as a service account (`ServiceAccount`, its namespace
defaulting to the binding's). A binding naming a missing role is a resolution error: the request is judged on
the rest, and the 403 carries `RBAC: <error>` as upstream's does. RBAC never denies; it allows or has no
opinion, so the next authorizer could still allow.

The objects are read through `PolicySource` (the server's store, or a dict in unit tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from control.apiserver.authentication.tokens import AUTHENTICATED, UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.decision import Decision, Verdict
from control.apiserver.authorization.rules import Rule, rule_allows, rules_of

GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
UNAUTHENTICATED = "system:unauthenticated"


class PolicySource(Protocol):
    """The RBAC objects, read at request time."""

    def cluster_role(self, name: str) -> Mapping[str, Any] | None: ...

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def cluster_role_bindings(self) -> Sequence[Mapping[str, Any]]: ...

    def role_bindings(self, namespace: str) -> Sequence[Mapping[str, Any]]: ...


def effective_groups(user: UserInfo) -> tuple[str, ...]:
    """The user's groups as authorizers see them: `system:authenticated` added, as the authenticator does
    upstream (not for a user impersonated into `system:unauthenticated`)."""
    if AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user.groups
    return (*user.groups, AUTHENTICATED)


def applies_to(user: UserInfo, groups: tuple[str, ...], subject: Mapping[str, Any], namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.username == name
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.username == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def _applying_subject(user: UserInfo, groups: tuple[str, ...], binding: Mapping[str, Any],
                      namespace: str) -> Mapping[str, Any] | None:
    subjects = binding.get("subjects")
    if not isinstance(subjects, list):
        return None
    return next((s for s in subjects if isinstance(s, Mapping) and applies_to(user, groups, s, namespace)), None)


def _describe(binding: Mapping[str, Any], subject: Mapping[str, Any], namespace: str) -> str:
    """Upstream's binding describers: `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`."""
    metadata = binding.get("metadata") or {}
    ref = binding.get("roleRef") or {}
    name = metadata.get("name", "")
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    if namespace:
        name = f"{name}/{namespace}"
    who = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        who = f"{who}/{subject.get('namespace') or namespace}"
    return f'{kind} "{name}" of {ref.get("kind", "")} "{ref.get("name", "")}" to {subject.get("kind", "")} "{who}"'


def role_reference_rules(source: PolicySource, role_ref: Mapping[str, Any], namespace: str) -> tuple[Rule, ...]:
    """The rules a roleRef grants; LookupError (upstream's NotFound text) when the role does not exist."""
    kind, name = role_ref.get("kind"), str(role_ref.get("name", ""))
    if kind == "ClusterRole":
        role = source.cluster_role(name)
        if role is None:
            raise LookupError(f'clusterrole.{GROUP} "{name}" not found')
        return rules_of(role)
    if kind == "Role":
        role = source.role(namespace, name)
        if role is None:
            raise LookupError(f'role.{GROUP} "{name}" not found')
        return rules_of(role)
    raise LookupError(f"unsupported role reference kind: {kind!r}")


Visit = tuple[Rule | None, str | None, str]


def visit_rules(source: PolicySource, user: UserInfo, namespace: str) -> Iterator[Visit]:
    """(rule, None, binding) for each rule the user holds in `namespace` ("" = cluster-wide only), (None,
    error, binding) for each binding whose role cannot be read; cluster role bindings first, as upstream."""
    groups = effective_groups(user)
    scopes: list[tuple[str, Sequence[Mapping[str, Any]]]] = [("", source.cluster_role_bindings())]
    if namespace:
        scopes.append((namespace, source.role_bindings(namespace)))
    for scope, bindings in scopes:
        for binding in bindings:
            subject = _applying_subject(user, groups, binding, scope)
            if subject is None:
                continue
            described = _describe(binding, subject, scope)
            try:
                rules = role_reference_rules(source, binding.get("roleRef") or {}, scope)
            except LookupError as exc:
                yield None, str(exc), described
                continue
            for rule in rules:
                yield rule, None, described


def rules_for(source: PolicySource, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
    """Every rule the user holds in `namespace`, and the resolution errors met."""
    rules: list[Rule] = []
    errors: list[str] = []
    for rule, error, _ in visit_rules(source, user, namespace):
        if rule is not None:
            rules.append(rule)
        elif error is not None:
            errors.append(error)
    return rules, errors


def aggregate_errors(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class RBACAuthorizer:
    """Allow when a rule the user holds allows the request; otherwise no opinion, with the resolution
    errors as the reason."""

    def __init__(self, source: PolicySource) -> None:
        self.source = source

    def authorize(self, attributes: Attributes) -> Verdict:
        errors: list[str] = []
        for rule, error, binding in visit_rules(self.source, attributes.user, attributes.namespace):
            if rule is not None and rule_allows(attributes, rule):
                return Verdict(Decision.ALLOW, f"RBAC: allowed by {binding}")
            if error is not None:
                errors.append(error)
        return Verdict(Decision.NO_OPINION, f"RBAC: {aggregate_errors(errors)}" if errors else "")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        return rules_for(self.source, user, namespace)
