"""Which webhooks a request goes to: pure decisions over the request and one webhook's fields.

Upstream: k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules.go (`Matcher`: operations,
apiGroups, apiVersions, resources with `*`, `res/*`, `*/sub`, scope), predicates/namespace/matcher.go and
predicates/object/matcher.go (the two label selectors), generic/webhook.go (`ShouldCallHook`: the exact
match first, then with `matchPolicy: Equivalent` the same resource in another served version) and
pkg/admission/plugin/webhook/{mutating,validating} `IsExemptAdmissionConfigurationResource` (no webhook sees
the admission configurations themselves, so a bad webhook cannot lock its own repair out).

Departures: equivalence is "the same group and resource in another served version" (upstream's RESTMapper
also knows renamed groups, e.g. extensions/v1beta1 deployments, which slimkube does not serve); a webhook
matched through an equivalent version is told that version in `kind`/`resource` but receives the object as
stored, not converted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.apimachinery.labels import SelectorError, selector_from_label_selector

# The admission configurations no webhook is called for (upstream IsExemptAdmissionConfigurationResource).
EXEMPT = frozenset({("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
                    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings")})


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


@dataclass(frozen=True, slots=True)
class Request:
    """What matching reads of one admission request. `namespace` is "" for cluster-scoped objects, the
    namespace's own name for a Namespace (as upstream's attributes carry it); `obj`/`old` are None where
    the operation has none; `namespace_labels` are the labels of the request's namespace (None: none read)."""

    operation: str
    gvr: GroupVersionResource
    subresource: str
    namespace: str
    obj: Mapping[str, Any] | None = None
    old: Mapping[str, Any] | None = None
    namespace_labels: Mapping[str, str] | None = None


def _split_resource(entry: str) -> tuple[str, str]:
    resource, _, sub = entry.partition("/")
    return resource, sub


def rule_matches(rule: Mapping[str, Any], request: Request, gvr: GroupVersionResource) -> bool:
    """One RuleWithOperations against the request seen as `gvr` (its own or an equivalent)."""
    operations = rule.get("operations") or []
    if "*" not in operations and request.operation not in operations:
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and gvr.group not in groups:
        return False
    if "*" not in versions and gvr.version not in versions:
        return False
    if not any((res in ("*", gvr.resource)) and (sub in ("*", request.subresource))
               for res, sub in map(_split_resource, rule.get("resources") or [])):
        return False
    scope = rule.get("scope") or "*"
    is_namespace = gvr.group == "" and gvr.resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and request.namespace != ""
    if scope == "Cluster":
        return is_namespace or request.namespace == ""
    return True


def matched_resource(webhook: Mapping[str, Any], request: Request,
                     equivalents: Iterable[GroupVersionResource] = ()) -> GroupVersionResource | None:
    """The resource the webhook's rules match the request as: the request's own, else (matchPolicy
    Equivalent, the default) the first equivalent one a rule names; None when no rule matches."""
    rules: Sequence[Mapping[str, Any]] = webhook.get("rules") or []
    if any(rule_matches(rule, request, request.gvr) for rule in rules):
        return request.gvr
    if (webhook.get("matchPolicy") or "Equivalent") != "Equivalent":
        return None
    for gvr in equivalents:
        if gvr != request.gvr and any(rule_matches(rule, request, gvr) for rule in rules):
            return gvr
    return None


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    metadata = obj.get("metadata") if obj is not None else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _selects(selector: Any, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return True  # unset is defaulted to {} (everything)
    try:
        return selector_from_label_selector(selector).matches(labels)
    except SelectorError:
        return False


def namespace_selected(webhook: Mapping[str, Any], request: Request) -> bool:
    """namespaceSelector: a cluster-scoped object other than a Namespace always passes; a Namespace is
    judged by its own labels (the old ones on delete), anything else by its namespace's."""
    selector = webhook.get("namespaceSelector")
    is_namespace = request.gvr.group == "" and request.gvr.resource == "namespaces"
    if is_namespace:
        return _selects(selector, _labels(request.obj if request.obj is not None else request.old))
    if request.namespace == "":
        return True
    return _selects(selector, request.namespace_labels or {})


def object_selected(webhook: Mapping[str, Any], request: Request) -> bool:
    """objectSelector: the new object's labels or the old object's match (an absent object has none)."""
    selector = webhook.get("objectSelector")
    if selector is None or selector == {}:
        return True
    return any(obj is not None and _selects(selector, _labels(obj)) for obj in (request.obj, request.old))


def exempt(gvr: GroupVersionResource) -> bool:
    return (gvr.group, gvr.resource) in EXEMPT
