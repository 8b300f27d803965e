"""The audit policy: which level each request is logged at (upstream k8s.io/apiserver/pkg/audit/policy/
checker.go `ruleMatches`/`ruleMatchesResource`/`pathMatches`, reader.go's loading, and the API's validation
in pkg/apis/audit/validation).

A `Policy` (audit.k8s.io/v1) is an ordered list of rules; the first rule that matches a request gives its
level (None, Metadata, Request, RequestResponse) and the stages to leave out (the rule's `omitStages` added
to the policy's); no match is level None. A rule matches when every list it sets matches: `users`,
`userGroups` (any of the user's groups), `verbs`, and then either resource terms (`namespaces`, `resources`
with `group`, `resources` — `*`, `pods/log`, `*/status`, `deployments/*` — and `resourceNames`), which only
resource requests meet, or `nonResourceURLs` (exact, `*`, or a `/prefix*`), which only non-resource requests
meet. Cluster-scoped resources have the namespace "".

Departure: only audit.k8s.io/v1 documents are read (v1alpha1/v1beta1 are gone upstream too).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from control.apiserver.authorization.attributes import Attributes

API_VERSION = "audit.k8s.io/v1"

class Level(enum.IntEnum):
    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def wire(self) -> str:
        return _LEVEL_NAMES[self]

_LEVEL_NAMES = {Level.NONE: "None", Level.METADATA: "Metadata", Level.REQUEST: "Request",
                Level.REQUEST_RESPONSE: "RequestResponse"}
_LEVELS = {name: level for level, name in _LEVEL_NAMES.items()}
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")

class PolicyError(ValueError):
    """A policy file that cannot be used (the server refuses to start, as upstream)."""

@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()

@dataclass(frozen=True, slots=True)
class Rule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None

@dataclass(frozen=True, slots=True)
class Evaluation:
    """What the policy decided for one request."""

    level: Level
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, attributes: Attributes) -> Evaluation:
        for rule in self.rules:
            if rule_matches(rule, attributes):
                omit = rule.omit_managed_fields
                return Evaluation(rule.level, self.omit_stages | rule.omit_stages,
                                  self.omit_managed_fields if omit is None else omit)
        return Evaluation(Level.NONE, self.omit_stages, self.omit_managed_fields)

def rule_matches(rule: Rule, attributes: Attributes) -> bool:
    user = attributes.user
    if rule.users and user.username not in rule.users:
        return False
    if rule.user_groups and not any(group in rule.user_groups for group in _groups(user.groups)):
        return False
    if rule.verbs and attributes.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attributes)
    if rule.non_resource_urls:
        return not attributes.resource_request and any(_path_matches(attributes.path, spec)
                                                       for spec in rule.non_resource_urls)
    return True

def _groups(groups: Sequence[str]) -> Sequence[str]:
    """The user's groups as authenticated: every authenticated user is in system:authenticated."""
    return groups if "system:authenticated" in groups or "system:unauthenticated" in groups \
        else (*groups, "system:authenticated")

def _path_matches(path: str, spec: str) -> bool:
    if spec in ("*", path):
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))

def _matches_resource(rule: Rule, attributes: Attributes) -> bool:
    if not attributes.resource_request:
        return False
    if rule.namespaces and attributes.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = attributes.resource, attributes.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for group in rule.resources:
        if group.group != attributes.api_group:
            continue
        if not group.resources:
            return True
        if group.resource_names and attributes.name not in group.resource_names:
            continue
        for wanted in group.resources:
            if wanted in ("*", combined):
                return True
            if subresource and wanted.startswith("*/") and wanted[2:] == subresource:
                return True
            if wanted.endswith("/*") and wanted[:-2] == resource:
                return True
    return False

# -- loading -------------------------------------------------------------------------------------------------

def load(path: str) -> Policy:
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise PolicyError(f"failed to read audit policy file {path}: {exc}") from None
    return parse(document, source=path)

def parse(document: Any, *, source: str = "policy") -> Policy:
    if not isinstance(document, Mapping):
        raise PolicyError(f"{source}: an audit policy must be a mapping (kind: Policy)")
    if document.get("apiVersion") != API_VERSION or document.get("kind") != "Policy":
        raise PolicyError(f"{source}: expected apiVersion {API_VERSION} and kind Policy, "
                          f"got {document.get('apiVersion')!r} {document.get('kind')!r}")
    rules = document.get("rules") or []
    if not isinstance(rules, list):
        raise PolicyError(f"{source}: rules must be a list")
    if not rules:
        raise PolicyError(f"loaded illegal policy with 0 rules from file {source}")
    parsed = tuple(_rule(rule, f"{source}: rules[{index}]") for index, rule in enumerate(rules))
    return Policy(parsed, _stages(document.get("omitStages"), f"{source}: omitStages"),
                  bool(document.get("omitManagedFields", False)))

def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"{where}: must be a list of strings")
    return tuple(value)

def _stages(value: Any, where: str) -> frozenset[str]:
    stages = _strings(value, where)
    for stage in stages:
        if stage not in STAGES:
            raise PolicyError(f'{where}: Unsupported value: "{stage}": supported values: '
                              + ", ".join(f'"{s}"' for s in STAGES))
    return frozenset(stages)

def _rule(rule: Any, where: str) -> Rule:
    if not isinstance(rule, Mapping):
        raise PolicyError(f"{where}: must be a mapping")
    level = _LEVELS.get(rule.get("level", ""))
    if level is None:
        raise PolicyError(f'{where}.level: Unsupported value: "{rule.get("level")}": supported values: '
                          + ", ".join(f'"{name}"' for name in _LEVELS))
    groups = []
    for index, group in enumerate(rule.get("resources") or []):
        if not isinstance(group, Mapping):
            raise PolicyError(f"{where}.resources[{index}]: must be a mapping")
        names = _strings(group.get("resourceNames"), f"{where}.resources[{index}].resourceNames")
        resources = _strings(group.get("resources"), f"{where}.resources[{index}].resources")
        if names and any("*" in resource for resource in resources):
            raise PolicyError(f"{where}.resources[{index}].resourceNames: using resourceNames with wildcard "
                              "resources is not supported")
        groups.append(GroupResources(str(group.get("group") or ""), resources, names))
    urls = _strings(rule.get("nonResourceURLs"), f"{where}.nonResourceURLs")
    namespaces = _strings(rule.get("namespaces"), f"{where}.namespaces")
    if urls and (groups or namespaces):
        raise PolicyError(f"{where}.nonResourceURLs: rules cannot apply to both regular resources and "
                          "non-resource URLs")
    managed = rule.get("omitManagedFields")
    return Rule(level=level, users=_strings(rule.get("users"), f"{where}.users"),
                user_groups=_strings(rule.get("userGroups"), f"{where}.userGroups"),
                verbs=_strings(rule.get("verbs"), f"{where}.verbs"), resources=tuple(groups),
                namespaces=namespaces, non_resource_urls=urls,
                omit_stages=_stages(rule.get("omitStages"), f"{where}.omitStages"),
                omit_managed_fields=None if managed is None else bool(managed))
