"""rbac.authorization.k8s.io validation (upstream: pkg/apis/rbac/validation/validation.go).

Names are path segments (ValidateRBACName: `system:controller:x` is a valid role name). Every rule names
verbs; a resource rule names apiGroups and resources; nonResourceURLs only in cluster roles and never beside
resources. A binding's roleRef is rbac.authorization.k8s.io's Role or ClusterRole (ClusterRole only for a
ClusterRoleBinding), named, and never changed by an update; subjects are ServiceAccount (apiGroup ""), User
or Group (apiGroup rbac.authorization.k8s.io), each named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, NameValidator, Validator
from control.apimachinery.validation import FieldError

GROUP = "rbac.authorization.k8s.io"


def path_segment_name_errors(name: str) -> list[str]:
    """IsValidPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _rule_errors(rule: Any, path: str, *, namespaced: bool) -> list[FieldError]:
    if not isinstance(rule, Mapping):
        return [FieldError.invalid(path, rule, "must be an object")]
    errors = []
    if not rule.get("verbs"):
        errors.append(FieldError.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs")
    if urls:
        if namespaced:
            errors.append(FieldError.invalid(f"{path}.nonResourceURLs", urls,
                                             "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources"):
            errors.append(FieldError.invalid(f"{path}.nonResourceURLs", urls,
                                             "rules cannot apply to both regular resources and non-resource URLs"))
        return errors
    if not rule.get("apiGroups"):
        errors.append(FieldError.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errors.append(FieldError.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errors


def _subject_errors(subject: Any, path: str) -> list[FieldError]:
    if not isinstance(subject, Mapping):
        return [FieldError.invalid(path, subject, "must be an object")]
    errors = []
    if not subject.get("name"):
        errors.append(FieldError.required(f"{path}.name", ""))
    kind, group = subject.get("kind"), subject.get("apiGroup", "")
    if kind == "ServiceAccount":
        if group:
            errors.append(FieldError.not_supported(f"{path}.apiGroup", group, [""]))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errors.append(FieldError.not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        errors.append(FieldError.not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return errors


def _role(namespaced: bool) -> Validator:
    def validate(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        rules = obj.get("rules") or []
        if not isinstance(rules, list):
            c.add([FieldError.invalid("rules", rules, "must be a list")])
            return
        c.add([e for i, rule in enumerate(rules) for e in _rule_errors(rule, f"rules[{i}]", namespaced=namespaced)])
    return validate


def _binding(namespaced: bool) -> Validator:
    def validate(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        ref = obj.get("roleRef")
        if not isinstance(ref, Mapping):
            c.add([FieldError.required("roleRef", "")])
            return
        errors: list[FieldError] = []
        if ref.get("apiGroup") != GROUP:
            errors.append(FieldError.not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), [GROUP]))
        kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
        if ref.get("kind") not in kinds:
            errors.append(FieldError.not_supported("roleRef.kind", ref.get("kind", ""), kinds))
        if not ref.get("name"):
            errors.append(FieldError.required("roleRef.name", ""))
        subjects = obj.get("subjects") or []
        if isinstance(subjects, list):
            errors += [e for i, s in enumerate(subjects) for e in _subject_errors(s, f"subjects[{i}]")]
        if old is not None and old.get("roleRef") != ref:
            errors.append(FieldError.invalid("roleRef", ref, "cannot change roleRef"))
        c.add(errors)
    return validate


NAME_VALIDATORS: dict[str, NameValidator] = {plural: path_segment_name_errors for plural in
                                             ("roles", "clusterroles", "rolebindings", "clusterrolebindings")}

VALIDATORS: dict[str, Validator] = {
    "roles": _role(True), "clusterroles": _role(False),
    "rolebindings": _binding(True), "clusterrolebindings": _binding(False),
}
