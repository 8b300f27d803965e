"""LimitRanger, a mutating and a validating plugin (upstream: plugin/pkg/admission/limitranger/admission.go).

- Mutating: a created pod's containers get the namespace's Container defaults where they set no request or
  limit (pods cannot change their containers' resources afterwards, so updates are left alone, as upstream).
- Validating: created pods, and created or updated PersistentVolumeClaims, are refused with a 403 when they
  break a LimitRange's min, max or maxLimitRequestRatio: `pods "x" is forbidden: maximum cpu usage per
  Container is 1, but limit is 2`.
The decisions are control.api.limitranger's; here the namespace's LimitRanges are read and the answer raised.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from control.api import limitranger
from control.apiserver.admission.chain import Attributes, Operation, Reader, forbidden
from control.apiserver.resources import by_path

LIMIT_RANGES = by_path("", "v1", "limitranges")


def _applies(attributes: Attributes) -> bool:
    """Pods on create and claims on create or update, no subresource (upstream SupportsAttributes)."""
    if attributes.subresource or attributes.resource.group or attributes.obj is None:
        return False
    plural, operation = attributes.resource.plural, attributes.operation
    return (plural == "pods" and operation is Operation.CREATE) or (
        plural == "persistentvolumeclaims" and operation in (Operation.CREATE, Operation.UPDATE))


class _Ranges:
    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def limit_ranges(self, namespace: str) -> list[dict[str, Any]]:
        assert LIMIT_RANGES is not None
        return self._reader.list_all(LIMIT_RANGES, namespace)


class LimitRangerDefaults(_Ranges):
    """The mutating half: container defaults."""

    name = "LimitRanger"

    def admit(self, attributes: Attributes) -> None:
        if not _applies(attributes) or attributes.resource.plural != "pods" or attributes.obj is None:
            return
        ranges = self.limit_ranges(attributes.namespace)
        if ranges:
            limitranger.apply_defaults(attributes.obj, *limitranger.container_defaults(ranges))


class LimitRangerBounds(_Ranges):
    """The validating half: min, max and ratio."""

    name = "LimitRanger"

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        obj = attributes.obj
        if not _applies(attributes) or obj is None:
            return
        ranges = self.limit_ranges(attributes.namespace)
        if not ranges:
            return
        found = limitranger.pod_violations(ranges, obj) if attributes.resource.plural == "pods" \
            else limitranger.claim_violations(ranges, obj)
        if found:
            raise forbidden(attributes.resource, attributes.name, limitranger.aggregate(found))
