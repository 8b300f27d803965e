"""Namespaces (upstream pkg/registry/core/namespace/strategy.go and namespace/storage/storage.go).

- A created namespace is `Active`; its `spec.finalizers: ["kubernetes"]` comes from defaulting
  (control.api.defaults), as upstream's PrepareForCreate sets it.
- Deleting a namespace sets phase `Terminating` with the deletionTimestamp; it stays while
  `spec.finalizers` is not empty (the namespace controller empties its content, then clears the
  `kubernetes` finalizer through `/finalize`), besides the metadata finalizers every kind honours.
- `/finalize` writes only `spec.finalizers`; `/status` only status, as for every kind.
- Every namespace carries the label `kubernetes.io/metadata.name: <name>` (upstream 1.22+), set on create
  and put back on every write of the namespace, `/status` included.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.typed import TypedObject
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.registry.strategies.base import Strategy

NAME_LABEL = "kubernetes.io/metadata.name"


def set_name_label(obj: dict[str, Any]) -> None:
    """Upstream (1.22+, PrepareForCreate/PrepareForUpdate): every namespace carries
    `kubernetes.io/metadata.name: <name>`, put back if a client removes or changes it."""
    metadata = obj.setdefault("metadata", {})
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return  # validation reports the missing name
    labels = metadata.get("labels")
    if labels is None:
        labels = metadata["labels"] = {}
    if isinstance(labels, dict):
        labels[NAME_LABEL] = name


class NamespaceStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        obj["status"] = {"phase": "Active"}
        set_name_label(obj)

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        set_name_label(new)

    def prepare_for_subresource_update(self, subresource: str, new: Mapping[str, Any],
                                       old: Mapping[str, Any]) -> dict[str, Any]:
        if subresource != "finalize":
            result = super().prepare_for_subresource_update(subresource, new, old)
            set_name_label(result)
            return result
        spec = new.get("spec") or {}
        if not isinstance(spec, dict):
            name = TypedObject(old).metadata.name
            raise status.invalid(self.resource.kind, name, [FieldError.invalid("spec", spec, "must be of type object")])
        result = deep_copy(dict(old))
        result.setdefault("spec", {})["finalizers"] = deep_copy(spec.get("finalizers") or [])
        return result

    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def ready_to_remove(self, obj: Mapping[str, Any]) -> bool:
        spec = obj.get("spec")
        if isinstance(spec, Mapping) and spec.get("finalizers"):
            return False
        return super().ready_to_remove(obj)
