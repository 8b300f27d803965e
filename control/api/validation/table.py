"""The kind → validator table, assembled from one table per API group, and `validate`, the entry point
the API server's strategies and the kubelet's static pod sources call.

Upstream: each registry strategy calls its group's pkg/apis/<group>/validation; here one table maps a
resource (its plural) to its group's validator, so the API server's generic code knows no kind by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from control.api.validation import (
    admissionregistration,
    apiregistration,
    apps,
    autoscaling,
    batch,
    certificates,
    coordination,
    core,
    discovery,
    networking,
    node,
    policy,
    rbac,
    scheduling,
    storage,
)
from control.api.validation.primitives import Check, NameValidator, Validator, validate_object_meta
from control.apimachinery.validation import FieldError, is_dns1123_subdomain

_T = TypeVar("_T")


def _merged(tables: Iterable[Mapping[str, _T]]) -> Mapping[str, _T]:
    """One read-only table from the groups' tables; a resource claimed by two groups is a programming error."""
    merged: dict[str, _T] = {}
    for table in tables:
        if clash := merged.keys() & table.keys():
            raise ValueError(f"resources validated by two groups: {sorted(clash)}")
        merged.update(table)
    return MappingProxyType(merged)


VALIDATORS: Mapping[str, Validator] = _merged(group.VALIDATORS for group in (
    admissionregistration, apiregistration, apps, autoscaling, batch, certificates, coordination, core,
    discovery, networking, node, policy, rbac, scheduling, storage))

NAME_VALIDATORS: Mapping[str, NameValidator] = _merged(
    group.NAME_VALIDATORS for group in (apiregistration, core, rbac, storage))
"""The kinds whose `metadata.name` is not a DNS-1123 subdomain (the default)."""


def validate(plural: str, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[FieldError]:
    """Every error of a `plural` object about to be stored; `old` is the stored object on update."""
    if not isinstance(obj, dict):
        return [FieldError.invalid("", obj, "must be of type object")]
    c = Check()
    if (metadata := c.obj(obj, "metadata", "metadata")) is not None:
        name_validator = NAME_VALIDATORS.get(plural, is_dns1123_subdomain)
        validate_object_meta(c, metadata, "metadata", name_validator=name_validator)
    if (validator := VALIDATORS.get(plural)) is not None:
        validator(c, obj, old if isinstance(old, dict) else None)
    return c.errors
