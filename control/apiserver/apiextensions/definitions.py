"""A CustomResourceDefinition itself: its validation, its names and conditions, and what it serves.

Upstream: k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go
(ValidateCustomResourceDefinition and its helpers, messages word for word), pkg/controller/status/naming
(naming_controller.go: acceptedNames and the NamesAccepted condition, per group), establish
(establishing_controller.go: Established), finalizer (crd_finalizer.go: Terminating), and
pkg/apiserver/customresource_handler.go for what a served version looks like in discovery. Versions are
ordered as upstream's `version.CompareKubeAwareVersionStrings` orders them (GA before beta before alpha,
higher first, then the rest alphabetically), which is also the discovery order; the first is preferred.

All pure: the controller (control/apiserver/crd/controller.py) reads the CRDs and writes what these functions decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from control.api.validation.primitives import Check, validate_object_meta
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import FieldError, is_dns1035_label, is_dns1123_subdomain
from control.apiserver.apiextensions import cel, jsonpath
from control.apiserver.apiextensions import schema as structural
from control.apiserver.resources import ALL_VERBS, STATUS_VERBS, Resource, SubResource

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
NAMES_ACCEPTED, ESTABLISHED, TERMINATING = "NamesAccepted", "Established", "Terminating"
_SCALE = SubResource("Scale", STATUS_VERBS, group="autoscaling", version="v1")
_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


@dataclass(frozen=True, slots=True)
class Column:
    """One additionalPrinterColumn."""

    name: str
    type: str
    json_path: str
    description: str = ""
    format: str = ""
    priority: int = 0


AGE_COLUMN = Column("Age", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


@dataclass(frozen=True, slots=True)
class Version:
    """What one served version of a definition needs to serve its objects."""

    resource: Resource
    storage_api_version: str
    schema: Mapping[str, Any] = field(default_factory=dict)  # read-only: shared by every request
    columns: tuple[Column, ...] = (AGE_COLUMN,)
    scale: ScalePaths | None = None
    terminating: bool = False
    list_kind: str = ""
    # spec.conversion.webhook when the strategy is Webhook (clientConfig, conversionReviewVersions)
    conversion_webhook: Mapping[str, Any] | None = None


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key: v2 < v1 < v1beta2 < v1beta1 < v1alpha1 < other names (alphabetically)."""
    match = _KUBE_VERSION.match(name)
    if match is None:
        return (3, 0, 0, name)
    major, stage, minor = int(match[1]), match[2], int(match[3] or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, name)


def _spec(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = crd.get("spec")
    return spec if isinstance(spec, dict) else {}


def names_of(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    names = _spec(crd).get("names")
    return names if isinstance(names, dict) else {}


def defaults(crd: dict[str, Any]) -> None:
    """Upstream SetDefaults_*: singular = lower(kind), listKind = kind + "List", conversion None (the Age
    printer column of a version without columns is added when serving, not stored)."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})


# -- validation ----------------------------------------------------------------------------------------

def metadata_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """ObjectMeta as every kind checks it (names are DNS subdomains)."""
    c = Check()
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        validate_object_meta(c, metadata, "metadata", name_validator=is_dns1123_subdomain)
    return c.errors


def _dns1035(errors: list[FieldError], path: str, value: Any) -> None:
    if isinstance(value, str):
        errors.extend(FieldError.invalid(path, value, message) for message in is_dns1035_label(value))


def _validate_names(names: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    plural, singular, kind, list_kind = (names.get(k) for k in ("plural", "singular", "kind", "listKind"))
    if not plural:
        errors.append(FieldError.required(f"{path}.plural"))
    else:
        _dns1035(errors, f"{path}.plural", plural)
    if singular:
        _dns1035(errors, f"{path}.singular", singular)
    if not kind:
        errors.append(FieldError.required(f"{path}.kind"))
    elif isinstance(kind, str) and is_dns1035_label(kind.lower()):
        errors.append(FieldError.invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise "
                                         "match: " + is_dns1035_label(kind.lower())[0]))
    if not list_kind:
        errors.append(FieldError.required(f"{path}.listKind"))
    elif isinstance(list_kind, str) and is_dns1035_label(list_kind.lower()):
        errors.append(FieldError.invalid(f"{path}.listKind", list_kind, "may have mixed case, but should "
                                         "otherwise match: " + is_dns1035_label(list_kind.lower())[0]))
    if kind and kind == list_kind:
        errors.append(FieldError.invalid(f"{path}.listKind", list_kind, "kind and listKind may not be the "
                                         "same or parsing become ambiguous"))
    for key in ("shortNames", "categories"):
        for index, value in enumerate(names.get(key) or []):
            _dns1035(errors, f"{path}.{key}[{index}]", value)
    return errors


def validate(crd: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """Upstream ValidateCustomResourceDefinition (and ...Update: group, names.plural and scope stay)."""
    errors: list[FieldError] = []
    spec = _spec(crd)
    name = (crd.get("metadata") or {}).get("name", "")
    group, names = spec.get("group"), names_of(crd)
    if not group:
        errors.append(FieldError.required("spec.group"))
    elif isinstance(group, str):
        errors.extend(FieldError.invalid("spec.group", group, m) for m in is_dns1123_subdomain(group))
        if "." not in group:
            errors.append(FieldError.invalid("spec.group", group, "should be a domain with at least one dot"))
    if names.get("plural") and group and name != f"{names['plural']}.{group}":
        errors.append(FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    errors.extend(_validate_names(names, "spec.names"))
    scope = spec.get("scope")
    if not scope:
        errors.append(FieldError.required("spec.scope"))
    elif scope not in SCOPES:
        errors.append(FieldError.not_supported("spec.scope", scope, SCOPES))
    errors.extend(_validate_versions(spec.get("versions"), spec))
    errors.extend(_validate_conversion(spec.get("conversion") or {}))
    if old is not None:
        old_spec = _spec(old)
        if old_spec.get("group") != group:
            errors.append(FieldError.invalid("spec.group", group, "field is immutable"))
        if old_spec.get("scope") != scope:
            errors.append(FieldError.invalid("spec.scope", scope, "field is immutable"))
        if names_of(old).get("plural") != names.get("plural"):
            errors.append(FieldError.invalid("spec.names.plural", names.get("plural"), "field is immutable"))
    return errors


def _validate_versions(versions: Any, spec: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if not isinstance(versions, list) or not versions:
        return [FieldError.invalid("spec.versions", versions, "must have exactly one version marked as storage "
                                   "version")] + [FieldError.required("spec.versions")]
    if sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        errors.append(FieldError.invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                                         "must have exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") for v in versions):
        errors.append(FieldError.invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                                         "must have at least one served version"))
    seen: set[str] = set()
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        if not isinstance(version, dict):
            errors.append(FieldError.invalid(path, version, "must be of type object"))
            continue
        name = version.get("name")
        if not name:
            errors.append(FieldError.required(f"{path}.name"))
        else:
            _dns1035(errors, f"{path}.name", name)
            if name in seen:
                errors.append(FieldError.invalid("spec.versions", name, "must be unique"))
            seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"),
                                                                                    dict) else None
        schema_path = f"{path}.schema.openAPIV3Schema"
        if schema is None:
            errors.append(FieldError.required(schema_path, "schemas are required"))
        else:
            errors.extend(structural.structural_errors(schema, schema_path))
            errors.extend(cel.compile_errors(schema, schema_path))
        errors.extend(_validate_subresources(version.get("subresources"), f"{path}.subresources"))
        for column_index, column in enumerate(version.get("additionalPrinterColumns") or []):
            errors.extend(_validate_column(column, f"{path}.additionalPrinterColumns[{column_index}]"))
    return errors


def _validate_subresources(subresources: Any, path: str) -> list[FieldError]:
    if not isinstance(subresources, dict):
        return []
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return []
    errors: list[FieldError] = []
    for key, prefix in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status."),
                        ("labelSelectorPath", "")):
        value = scale.get(key)
        if value is None or value == "":
            if key != "labelSelectorPath":
                errors.append(FieldError.required(f"{path}.scale.{key}"))
            continue
        try:
            jsonpath.set_value({}, value, 0)
        except ValueError:
            errors.append(FieldError.invalid(f"{path}.scale.{key}", value, "must be a simple json path"))
            continue
        if key == "labelSelectorPath" and not value.startswith((".spec.", ".status.")):
            errors.append(FieldError.invalid(f"{path}.scale.{key}", value, "should be a json path under either "
                                             ".spec or .status"))
        elif prefix and not value.startswith(prefix):
            errors.append(FieldError.invalid(f"{path}.scale.{key}", value, f"should be a json path under "
                                             f"{prefix.rstrip('.')}"))
    return errors


def _validate_column(column: Any, path: str) -> list[FieldError]:
    if not isinstance(column, dict):
        return [FieldError.invalid(path, column, "must be of type object")]
    errors: list[FieldError] = []
    if not column.get("name"):
        errors.append(FieldError.required(f"{path}.name"))
    if not column.get("type"):
        errors.append(FieldError.required(f"{path}.type"))
    elif column["type"] not in COLUMN_TYPES:
        errors.append(FieldError.not_supported(f"{path}.type", column["type"], COLUMN_TYPES))
    if not column.get("jsonPath"):
        errors.append(FieldError.required(f"{path}.jsonPath"))
    else:
        try:
            jsonpath.parse(column["jsonPath"])
        except ValueError as exc:
            errors.append(FieldError.invalid(f"{path}.jsonPath", column["jsonPath"], str(exc)))
    return errors


# -- naming and conditions -------------------------------------------------------------------------------

def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def accepted_names(crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any],
                                                                                         dict[str, str]]:
    """(acceptedNames, NamesAccepted condition) against the other CRDs of the same group (upstream
    naming_controller calculateNamesAndConditions: a name another CRD has accepted is taken)."""
    names = names_of(crd)
    group = _spec(crd).get("group")
    taken: dict[str, set[str]] = {"plural": set(), "singular": set(), "shortNames": set(), "kind": set(),
                                  "listKind": set()}
    for other in others:
        if _spec(other).get("group") != group or (other.get("metadata") or {}).get("name") == (
                crd.get("metadata") or {}).get("name"):
            continue
        accepted = ((other.get("status") or {}).get("acceptedNames")) or {}
        for key in ("plural", "singular", "kind", "listKind"):
            if accepted.get(key):
                taken[key].add(accepted[key])
        taken["shortNames"].update(accepted.get("shortNames") or [])
    problems = []
    for key, reason in (("plural", "PluralConflict"), ("singular", "SingularConflict"), ("kind", "KindConflict"),
                        ("listKind", "ListKindConflict")):
        if names.get(key) and names[key] in taken[key]:
            problems.append((reason, f'"{names[key]}" is already in use'))
    for short in names.get("shortNames") or []:
        if short in taken["shortNames"]:
            problems.append(("ShortNamesConflict", f'"{short}" is already in use'))
    if problems:
        current = ((crd.get("status") or {}).get("acceptedNames")) or {}
        return deep_copy(dict(current)), _condition(NAMES_ACCEPTED, "False", problems[0][0], problems[0][1])
    accepted = {k: deep_copy(names[k]) for k in ("plural", "singular", "shortNames", "kind", "listKind",
                                                  "categories") if names.get(k)}
    return accepted, _condition(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found")


def _set_condition(conditions: list[dict[str, Any]], new: Mapping[str, str], now: str) -> list[dict[str, Any]]:
    """Upstream SetCRDCondition: lastTransitionTime moves only when the status changes."""
    result = []
    replaced = False
    for condition in conditions:
        if condition.get("type") == new["type"]:
            moved = condition.get("status") != new["status"]
            result.append({**new, "lastTransitionTime": now if moved else condition.get("lastTransitionTime", now)})
            replaced = True
        else:
            result.append(condition)
    if not replaced:
        result.append({**new, "lastTransitionTime": now})
    return result


def desired_status(crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]], *, now: str) -> dict[str, Any]:
    """The status the controllers would write: acceptedNames, NamesAccepted, Established (once the
    names were accepted, it stays: upstream never un-establishes), storedVersions."""
    current = deep_copy(dict(crd.get("status") or {}))
    names, names_condition = accepted_names(crd, others)
    conditions = list(current.get("conditions") or [])
    conditions = _set_condition(conditions, names_condition, now)
    was_established = any(c.get("type") == ESTABLISHED and c.get("status") == "True" for c in conditions)
    if names_condition["status"] == "True" or was_established:
        conditions = _set_condition(conditions, _condition(ESTABLISHED, "True", "InitialNamesAccepted",
                                                           "the initial names have been accepted"), now)
    else:
        conditions = _set_condition(conditions, _condition(ESTABLISHED, "False", "NotAccepted",
                                                           "not all names are accepted"), now)
    stored = list(current.get("storedVersions") or [])
    storage = storage_version(crd)
    if storage and storage not in stored:
        stored.append(storage)
    return {**current, "acceptedNames": names, "conditions": conditions, "storedVersions": stored}


def terminating_status(crd: Mapping[str, Any], *, reason: str, message: str, now: str,
                       status: str = "True") -> dict[str, Any]:
    current = deep_copy(dict(crd.get("status") or {}))
    conditions = _set_condition(list(current.get("conditions") or []),
                                _condition(TERMINATING, status, reason, message), now)
    return {**current, "conditions": conditions}


def is_established(crd: Mapping[str, Any]) -> bool:
    return any(c.get("type") == ESTABLISHED and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def storage_version(crd: Mapping[str, Any]) -> str:
    return next((v.get("name", "") for v in _spec(crd).get("versions") or [] if isinstance(v, dict)
                 and v.get("storage")), "")


# -- what a definition serves ----------------------------------------------------------------------------

def served_versions(crd: Mapping[str, Any]) -> list[Version]:
    """One `Version` per served version, in discovery order, named by the *accepted* names (upstream
    serves what the naming controller accepted, not what the spec asks for)."""
    spec = _spec(crd)
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    group = spec.get("group", "")
    storage = f"{group}/{storage_version(crd)}"
    terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
    versions.sort(key=lambda v: version_priority(v.get("name", "")))
    served = []
    for version in versions:
        subresources = version.get("subresources") or {}
        entries: dict[str, SubResource] = {}
        if "status" in subresources:
            entries["status"] = SubResource(accepted.get("kind", ""), STATUS_VERBS)
        scale_spec = subresources.get("scale")
        scale = None
        if isinstance(scale_spec, dict):
            entries["scale"] = _SCALE
            scale = ScalePaths(scale_spec.get("specReplicasPath", ""), scale_spec.get("statusReplicasPath", ""),
                               scale_spec.get("labelSelectorPath") or "")
        resource = Resource(group, version.get("name", ""), accepted.get("plural", ""),
                            accepted.get("singular", ""), accepted.get("kind", ""), spec.get("scope") == "Namespaced",
                            short_names=tuple(accepted.get("shortNames") or ()),
                            categories=tuple(accepted.get("categories") or ()), verbs=ALL_VERBS,
                            subresources=MappingProxyType(entries), custom=True)
        columns = tuple(Column(c.get("name", ""), c.get("type", "string"), c.get("jsonPath", ""),
                               c.get("description", ""), c.get("format", ""), int(c.get("priority") or 0))
                        for c in version.get("additionalPrinterColumns") or [] if isinstance(c, dict))
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        served.append(Version(resource, storage, deep_copy(schema), columns or (AGE_COLUMN,),
                              scale, terminating, accepted.get("listKind", ""), conversion_webhook(crd)))
    return served


CONVERSION_STRATEGIES = ("None", "Webhook")


def _validate_conversion(conversion: Any) -> list[FieldError]:
    """upstream validateCustomResourceConversion: strategy None or Webhook; Webhook needs
    `webhook.clientConfig` (url or service) and `webhook.conversionReviewVersions` with v1 or v1beta1."""
    if not isinstance(conversion, dict):
        return [FieldError.invalid("spec.conversion", conversion, "must be of type object")]
    strategy = conversion.get("strategy", "None")
    if strategy not in CONVERSION_STRATEGIES:
        return [FieldError.not_supported("spec.conversion.strategy", strategy, CONVERSION_STRATEGIES)]
    webhook = conversion.get("webhook")
    if strategy == "None":
        if webhook is not None:
            return [FieldError.forbidden("spec.conversion.webhook", "should not be set when strategy is not set "
                                                                    "to Webhook")]
        return []
    if not isinstance(webhook, dict):
        return [FieldError.required("spec.conversion.webhook", "required when strategy is set to Webhook")]
    errors = []
    config = webhook.get("clientConfig")
    if not isinstance(config, dict) or (bool(config.get("url")) == bool(config.get("service"))):
        errors.append(FieldError.required("spec.conversion.webhook.clientConfig",
                                          "exactly one of url or service is required"))
    versions = webhook.get("conversionReviewVersions")
    if not isinstance(versions, list) or not any(v in ("v1", "v1beta1") for v in versions):
        errors.append(FieldError.invalid("spec.conversion.webhook.conversionReviewVersions", versions,
                                         "must include at least one of v1, v1beta1"))
    return errors


def conversion_webhook(crd: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """spec.conversion.webhook when the definition converts through a webhook."""
    conversion = _spec(crd).get("conversion") or {}
    if isinstance(conversion, dict) and conversion.get("strategy") == "Webhook":
        webhook = conversion.get("webhook")
        return deep_copy(webhook) if isinstance(webhook, dict) else None
    return None
