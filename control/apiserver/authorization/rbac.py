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

import abc
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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


class IndexedPolicy(abc.ABC):
    """A PolicySource that hands out only the bindings that may name a user, and roles' rules already read
    (policycache.py); visit_rules asks it instead of scanning every binding."""

    @abc.abstractmethod
    def bindings_naming(self, scope: str, user: UserInfo, groups: Iterable[str]) -> Sequence[Mapping[str, Any]]:
        """The bindings of `scope` ("" = cluster role bindings) that may name the user or one of `groups`."""

    @abc.abstractmethod
    def role_rules(self, scope: str, name: str) -> tuple[Rule, ...] | None:
        """The rules of the Role `scope`/`name` (scope "": the ClusterRole `name`); None when it is missing."""


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
    if isinstance(source, IndexedPolicy) and kind in ("ClusterRole", "Role"):
        rules = source.role_rules("" if kind == "ClusterRole" else namespace, name) if kind == "ClusterRole" or \
            namespace else None
        if rules is None:
            raise LookupError(f'{str(kind).lower()}.{GROUP} "{name}" not found')
        return rules
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


Visit = tuple[Rule | None, str | None, Callable[[], str]]


def _bindings(source: PolicySource, scope: str, user: UserInfo, groups: tuple[str, ...]) -> Sequence[Mapping[str, Any]]:
    """The bindings of `scope` ("" = cluster-wide) to look at: those the index names, else all."""
    if isinstance(source, IndexedPolicy):
        return source.bindings_naming(scope, user, groups)
    return source.role_bindings(scope) if scope else source.cluster_role_bindings()


def visit_rules(source: PolicySource, user: UserInfo, namespace: str) -> Iterator[Visit]:
    """(rule, None, binding) for each rule the user holds in `namespace` ("" = cluster-wide only), (None,
    error, binding) for each binding whose role cannot be read; cluster role bindings first, as upstream.
    `binding` describes the binding when called (only an allowing one is ever described)."""
    groups = effective_groups(user)
    for scope in ("", namespace) if namespace else ("",):
        for binding in _bindings(source, scope, user, groups):
            subject = _applying_subject(user, groups, binding, scope)
            if subject is None:
                continue
            described = functools.partial(_describe, binding, subject, scope)
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
    errors as the reason. `catch_up` (a cached source's) is called before refusing: when it says the
    source moved, the request is judged once more."""

    def __init__(self, source: PolicySource, *, catch_up: Callable[[], bool] | None = None) -> None:
        self.source = source
        self.catch_up = catch_up

    def authorize(self, attributes: Attributes) -> Verdict:
        verdict = self._authorize(attributes)
        if not verdict.allowed and self.catch_up is not None and self.catch_up():
            return self._authorize(attributes)
        return verdict

    def authorize_now(self, attributes: Attributes) -> Verdict | None:
        """The verdict from memory alone, never waiting (the caller may be the event loop): None when the
        source is the store, or when only a caught-up source could still allow."""
        if not isinstance(self.source, IndexedPolicy):
            return None
        verdict = self._authorize(attributes)
        return verdict if verdict.allowed or self.catch_up is None else None

    def _authorize(self, attributes: Attributes) -> Verdict:
        errors: list[str] = []
        for rule, error, binding in visit_rules(self.source, attributes.user, attributes.namespace):
            if rule is not None and rule_allows(attributes, rule):
                return Verdict(Decision.ALLOW, f"RBAC: allowed by {binding()}")
            if error is not None:
                errors.append(error)
        return Verdict(Decision.NO_OPINION, f"RBAC: {aggregate_errors(errors)}" if errors else "")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        return rules_for(self.source, user, namespace)
