"""Escalation prevention: a Role, ClusterRole or binding is written only by whom already holds every
permission it grants, or may `escalate` (roles) / `bind` (the referenced role) (upstream:
pkg/registry/rbac/role/policybased/storage.go and its clusterrole/rolebinding/clusterrolebinding siblings,
pkg/registry/rbac/escalation_check.go, staging/src/k8s.io/component-helpers/auth/rbac/validation/rule.go
ConfirmNoEscalation).

Members of `system:masters` skip the check, as upstream's EscalationAllowed; so do writes with no requester
(the server's own bootstrap reconcile). A ClusterRole with an `aggregationRule` may gather anything, so it
needs full authority (`*` on everything and every URL). The permissions held are the requester's rules in
the object's namespace (cluster-wide ones for cluster-scoped objects). The refusal is upstream's 403:
`… is forbidden: user "u" (groups=["g"]) is attempting to grant RBAC permissions not currently held:` and one
line per missing (group, resource, name) with its verbs.

Departure: upstream lets an update that changes only ownerReferences/finalizers through unchecked; here
every update is checked (the garbage collector writes as system:masters, so it never meets the check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.authorizer import FULL_AUTHORITY, MASTERS, Authorizer, forbidden_error
from control.apiserver.authorization.rbac import GROUP, PolicySource, effective_groups, role_reference_rules, rules_for
from control.apiserver.authorization.rules import Rule, compact, rules_of, uncovered


def _go_strings(values: Sequence[str]) -> str:
    """Go's `%q` of a []string: `["a" "b"]`."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def escalation_error(source: PolicySource, user: UserInfo, namespace: str, wanted: Sequence[Rule]) -> str | None:
    """None when the user's rules in `namespace` cover `wanted`; otherwise upstream's message."""
    held, errors = rules_for(source, user, namespace)
    missing = uncovered(held, wanted)
    if not missing:
        return None
    lines = sorted({rule.compact() for rule in compact(missing)})
    message = (f'user "{user.username}" (groups={_go_strings(effective_groups(user))}) is attempting to grant '
               "RBAC permissions not currently held:\n" + "\n".join(lines))
    if errors:
        message += f"; resolution errors: [{' '.join(errors)}]"
    return message


def _exempt(user: UserInfo | None) -> bool:
    return user is None or MASTERS in user.groups


def check_role(source: PolicySource, authorizer: Authorizer, user: UserInfo | None, resource: str,
               obj: Mapping[str, Any]) -> None:
    """Raise the 403 when `user` may not write this Role (`resource` "roles") or ClusterRole ("clusterroles")."""
    if _exempt(user):
        return
    assert user is not None
    metadata = obj.get("metadata") or {}
    name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", "") or "")
    if resource == "clusterroles":
        namespace = ""
    escalate = Attributes(user=user, verb="escalate", resource_request=True, namespace=namespace, api_group=GROUP,
                          api_version="v1", resource=resource, name=name)
    if authorizer.authorize(escalate).allowed:
        return
    wanted = FULL_AUTHORITY if resource == "clusterroles" and obj.get("aggregationRule") else rules_of(obj)
    if (message := escalation_error(source, user, namespace, wanted)) is not None:
        raise forbidden_error(resource, GROUP, name, message)


def check_binding(source: PolicySource, authorizer: Authorizer, user: UserInfo | None, resource: str,
                  obj: Mapping[str, Any]) -> None:
    """Raise the 403 when `user` may not write this RoleBinding ("rolebindings") or ClusterRoleBinding."""
    if _exempt(user):
        return
    assert user is not None
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name", ""))
    namespace = "" if resource == "clusterrolebindings" else str(metadata.get("namespace", "") or "")
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), Mapping) else {}
    assert isinstance(ref, Mapping)
    bind = Attributes(user=user, verb="bind", resource_request=True, namespace=namespace, api_group=GROUP,
                      api_version="v1", resource="clusterroles" if ref.get("kind") == "ClusterRole" else "roles",
                      name=str(ref.get("name", "")))
    if authorizer.authorize(bind).allowed:
        return
    try:
        wanted = role_reference_rules(source, ref, namespace)
    except LookupError as exc:
        raise forbidden_error(resource, GROUP, name, str(exc)) from None
    if (message := escalation_error(source, user, namespace, wanted)) is not None:
        raise forbidden_error(resource, GROUP, name, message)

