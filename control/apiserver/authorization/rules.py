"""Policy rules: does a rule allow a request, does one set of rules cover another (upstream:
plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows, pkg/apis/rbac/v1/evaluation_helpers.go VerbMatches …
NonResourceURLMatches, staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go
Covers/ruleCovers, pkg/apis/rbac/v1/helpers.go CompactString, pkg/registry/rbac/validation BreakdownRule).

Rules are kept as the wire dicts (`verbs`, `apiGroups`, `resources`, `resourceNames`, `nonResourceURLs`)
and read through `Rule`, a frozen value the decisions take. `*` matches any verb, group, resource or URL;
`*/scale` matches the `scale` subresource of any resource; a URL ending in `*` matches every path it
prefixes; an empty `resourceNames` matches every name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from control.apiserver.authorization.attributes import Attributes

ALL = "*"


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One PolicyRule."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, rule: Mapping[str, Any]) -> Rule:
        return cls(verbs=_strings(rule.get("verbs")), api_groups=_strings(rule.get("apiGroups")),
                   resources=_strings(rule.get("resources")), resource_names=_strings(rule.get("resourceNames")),
                   non_resource_urls=_strings(rule.get("nonResourceURLs")))

    def to_json(self) -> dict[str, Any]:
        """The PolicyRule as the API prints it (empty lists left out, as `omitempty`)."""
        out: dict[str, Any] = {"verbs": list(self.verbs)}
        for key, values in (("apiGroups", self.api_groups), ("resources", self.resources),
                            ("resourceNames", self.resource_names), ("nonResourceURLs", self.non_resource_urls)):
            if values:
                out[key] = list(values)
        return out

    def compact(self) -> str:
        """Upstream's CompactString: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`."""
        parts = [f"{label}:[{' '.join(_quote(v) for v in values)}]"
                 for label, values in (("APIGroups", self.api_groups), ("Resources", self.resources),
                                       ("NonResourceURLs", self.non_resource_urls),
                                       ("ResourceNames", self.resource_names), ("Verbs", self.verbs)) if values]
        return "{" + ", ".join(parts) + "}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rules_of(role: Mapping[str, Any] | None) -> tuple[Rule, ...]:
    rules = (role or {}).get("rules")
    return tuple(Rule.from_json(r) for r in rules if isinstance(r, Mapping)) if isinstance(rules, list) else ()


def verb_matches(rule: Rule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource in (ALL, combined):
            return True
        if subresource and len(resource) == len(subresource) + 2 and resource.startswith("*/") \
                and resource.endswith(subresource):
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    return any(_url_covers(url, path) for url in rule.non_resource_urls)


def _url_covers(owner: str, path: str) -> bool:
    return owner in (ALL, path) or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_allows(attributes: Attributes, rule: Rule) -> bool:
    if attributes.resource_request:
        combined = f"{attributes.resource}/{attributes.subresource}" if attributes.subresource else attributes.resource
        return (verb_matches(rule, attributes.verb) and api_group_matches(rule, attributes.api_group)
                and resource_matches(rule, combined, attributes.subresource)
                and resource_name_matches(rule, attributes.name))
    return verb_matches(rule, attributes.verb) and non_resource_url_matches(rule, attributes.path)


def breakdown(rule: Rule) -> list[Rule]:
    """One rule per (group, resource, verb[, name]) and per (URL, verb)."""
    out = [Rule(verbs=(verb,), api_groups=(group,), resources=(resource,), resource_names=(name,) if name else ())
           for group in rule.api_groups for resource in rule.resources for verb in rule.verbs
           for name in (rule.resource_names or ("",))]
    out += [Rule(verbs=(verb,), non_resource_urls=(url,)) for url in rule.non_resource_urls for verb in rule.verbs]
    return out


def _resources_cover(owned: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    if ALL in owned or set(wanted) <= set(owned):
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """Does `owner` grant everything `sub` does (upstream ruleCovers)?"""
    verbs = ALL in owner.verbs or set(sub.verbs) <= set(owner.verbs)
    groups = ALL in owner.api_groups or set(sub.api_groups) <= set(owner.api_groups)
    urls = all(any(_url_covers(o, url) for o in owner.non_resource_urls) for url in sub.non_resource_urls)
    if not sub.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or set(sub.resource_names) <= set(owner.resource_names)
    return verbs and groups and _resources_cover(owner.resources, sub.resources) and names and urls


def uncovered(owner_rules: Iterable[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The broken-down pieces of `wanted` no owner rule covers (empty: `wanted` is covered)."""
    owned = tuple(owner_rules)
    return [piece for rule in wanted for piece in breakdown(rule) if not any(rule_covers(o, piece) for o in owned)]


def compact(rules: Iterable[Rule]) -> list[Rule]:
    """Rules differing only in verbs merged into one (upstream CompactRules), order kept."""
    merged: dict[tuple[Any, ...], list[str]] = {}
    for rule in rules:
        key = (rule.api_groups, rule.resources, rule.resource_names, rule.non_resource_urls)
        verbs = merged.setdefault(key, [])
        verbs.extend(v for v in rule.verbs if v not in verbs)
    return [Rule(verbs=tuple(verbs), api_groups=k[0], resources=k[1], resource_names=k[2], non_resource_urls=k[3])
            for k, verbs in merged.items()]
