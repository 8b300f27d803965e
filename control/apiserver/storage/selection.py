"""Which objects a list or watch returns: `labelSelector` and `fieldSelector` per resource (upstream: each
registry's `GetAttrs`/`ToSelectableFields`, e.g. pkg/registry/core/pod/strategy.go `PodToSelectableFields`).

Upstream answers 400 `field label not supported: x` for a field the resource does not index, rather than
matching nothing; clients depend on the fields listed here (the kubelet on `spec.nodeName`, `kubectl
describe` on `involvedObject.*`, `kubectl delete` on `metadata.name`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from control.apimachinery import fields, labels
from control.apimachinery.fields import FieldSelector
from control.apimachinery.labels import Selector, SelectorError
from control.apiserver.resources import Resource

_METADATA = ("metadata.name", "metadata.namespace")

SELECTABLE: Mapping[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "replicasets": ("status.replicas",),
    "replicationcontrollers": ("status.replicas",),
    "jobs": ("status.successful",),
}

# Fields whose absence upstream reads as a value rather than "".
_DEFAULTS = {"spec.hostNetwork": "false", "spec.unschedulable": "false"}


def _event_source(obj: Mapping[str, Any]) -> str:
    return str((obj.get("source") or {}).get("component", "")) if isinstance(obj.get("source"), Mapping) else ""


@dataclass(frozen=True, slots=True)
class Filter:
    """A parsed label and field selector for one resource."""

    label_selector: Selector
    field_selector: FieldSelector

    @property
    def everything(self) -> bool:
        return self.label_selector.empty and self.field_selector.empty

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        if not self.label_selector.empty and not self.label_selector.matches(metadata.get("labels") or {}):
            return False
        if self.field_selector.empty:
            return True
        values = {}
        for requirement in self.field_selector.requirements:
            path = requirement.field
            if path == "source":
                values[path] = _event_source(obj)
            else:
                values[path] = fields.get_field(obj, path, default=_DEFAULTS.get(path, ""))
        return self.field_selector.matches(values)


def parse_filter(resource: Resource, label_selector: str | None, field_selector: str | None) -> Filter:
    """Raises SelectorError (a 400) for bad syntax or a field the resource cannot select on."""
    label_sel = labels.parse_selector(label_selector) if label_selector else labels.EVERYTHING
    field_sel = fields.parse_selector(field_selector) if field_selector else fields.EVERYTHING
    allowed = set(_METADATA) | set(SELECTABLE.get(resource.plural, ()))
    for requirement in field_sel.requirements:
        if requirement.field not in allowed:
            raise SelectorError(f'field label not supported: {requirement.field}')
    return Filter(label_sel, field_sel)
