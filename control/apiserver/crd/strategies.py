"""The strategy of custom objects (the CRD's own is registry/strategies/customresourcedefinitions.py).

Upstream: k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go, status_strategy.go
and the scale REST in etcd.go.

Custom objects, per served version (`CustomResourceStrategy`):
- create and update: unknown fields pruned, then defaults applied (`defaults`, before validation, as the
  decoder does upstream); metadata checked as every kind's; the object validated against the version's
  structural schema, then its `x-kubernetes-validations`.
- With a status subresource the main resource ignores `status` (and drops it on create), `/status`
  ignores everything but status; `metadata.generation` grows on every change of anything but metadata
  and status (with no status subresource, status changes count too).
- Conversion strategy None: objects are stored at the storage version (`apiVersion` rewritten) and read
  at the version asked for, with that version's defaults applied on the way out (upstream defaults on
  read too). Strategy Webhook (crd/conversion.py): the object is validated in the version it was sent in
  and converted by the webhook just before it is stored (`begin_write`; a status write at its prepare
  step), and converted again for every read in another version.
- The `scale` subresource reads and writes the replicas at the definition's JSON paths.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from control.api.typed import TypedObject
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import ErrorType, FieldError
from control.apiserver import status
from control.apiserver.apiextensions import cel, definitions, jsonpath
from control.apiserver.apiextensions import schema as structural
from control.apiserver.registry.strategies.base import (
    PrinterColumn,
    Rollback,
    Strategy,
    nothing_to_undo,
    prepare_for_status_update,
    spec_of,
)
from control.apiserver.status import APIError


class Converter(Protocol):
    """What changes a custom object's version through the definition's webhook (crd/conversion.py)."""

    def convert(self, obj: dict[str, Any], desired: str, webhook: Mapping[str, Any]) -> None: ...


class CustomResourceStrategy(Strategy):
    """Custom objects of one served version of one definition (`definitions.Version`)."""

    tracks_generation = True

    def __init__(self, version: definitions.Version, *, converter: Converter | None = None) -> None:
        super().__init__(version.resource)
        self.version = version
        self.has_status = "status" in version.resource.subresources
        self._converter = converter if version.conversion_webhook is not None else None

    def _to_storage(self, obj: dict[str, Any], *, now: bool = False) -> None:
        """The storage version: rewritten (strategy None), or converted by the webhook — `now`, or later in
        `begin_write`, after validation in the version sent."""
        storage = self.version.storage_api_version
        if self._converter is None or obj.get("apiVersion") == storage:
            obj["apiVersion"] = storage
        elif now:
            assert self.version.conversion_webhook is not None
            self._converter.convert(obj, storage, self.version.conversion_webhook)

    def begin_write(self, new: dict[str, Any], old: Mapping[str, Any] | None) -> Rollback:
        self._to_storage(new, now=True)
        return nothing_to_undo

    def _schema_defaults(self, obj: dict[str, Any]) -> None:
        schema = self.version.schema
        if schema:
            structural.prune(obj, schema)
            structural.apply_defaults(obj, schema)

    def defaults(self, obj: dict[str, Any]) -> None:
        self._schema_defaults(obj)

    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        if self.version.terminating:  # upstream crdHandler: new objects refused while the CRD goes away
            raise APIError(405, "MethodNotAllowed", "create not allowed while custom resource definition is "
                           "terminating")
        super().prepare_for_create(obj, now=now, uid=uid)
        if self.has_status:
            obj.pop("status", None)
        self._to_storage(obj)

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        old_metadata = old.get("metadata") or {}
        if not self.has_status and new.get("status") != old.get("status") and spec_of(new) == spec_of(old):
            new["metadata"]["generation"] = int(old_metadata.get("generation") or 0) + 1
        self._to_storage(new)

    def prepare_for_subresource_update(self, subresource: str, new: Mapping[str, Any],
                                       old: Mapping[str, Any]) -> dict[str, Any]:
        if subresource != "status":
            raise status.bad_request(f"{self.resource.plural}/{subresource} cannot be written")
        result = prepare_for_status_update(new, old)
        self._schema_defaults(result)
        self._to_storage(result, now=True)
        return result

    def decorate(self, obj: dict[str, Any]) -> None:
        if self._converter is not None and obj.get("apiVersion") != self.resource.api_version:
            assert self.version.conversion_webhook is not None
            self._converter.convert(obj, self.resource.api_version, self.version.conversion_webhook)
        obj["apiVersion"] = self.resource.api_version
        self._schema_defaults(obj)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errors = definitions.metadata_errors(obj)
        schema = self.version.schema
        if not schema:
            return errors
        schema_errors = structural.validate(obj, schema, "", root=True)
        errors += schema_errors
        if cel.has_rules(schema) and not any(_blocks_cel(e) for e in schema_errors):
            errors += cel.validate_object(obj, old, schema)
        return errors

    @property
    def list_kind(self) -> str:
        return self.version.list_kind or super().list_kind

    def printer_columns(self) -> tuple[PrinterColumn, ...]:
        """NAME is the table's; then the definition's additionalPrinterColumns (Age alone when it names none)."""
        return tuple(PrinterColumn(c.name, c.type, c.description, functools.partial(_find, c.json_path),
                                   c.priority, c.format) for c in self.version.columns)

    # -- the scale subresource ----------------------------------------------------------------------

    def scale_of(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The autoscaling/v1 Scale view (upstream customresource scaleFromCustomResource)."""
        paths = self.version.scale
        assert paths is not None
        metadata = obj.get("metadata") or {}
        spec_replicas = jsonpath.find(obj, paths.spec_replicas)
        status_replicas = jsonpath.find(obj, paths.status_replicas)
        selector = jsonpath.find(obj, paths.label_selector) if paths.label_selector else []
        scale: dict[str, Any] = {
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in metadata},
            "spec": {"replicas": _integer(spec_replicas)},
            "status": {"replicas": _integer(status_replicas)},
        }
        if selector and isinstance(selector[0], str):
            scale["status"]["selector"] = selector[0]
        return scale

    def apply_scale(self, obj: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
        paths = self.version.scale
        assert paths is not None
        replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale.get("spec"), dict) else None
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise status.invalid("Scale", TypedObject(obj).metadata.name, [FieldError.invalid(
                "spec.replicas", replicas, "must be greater than or equal to 0")], group="autoscaling")
        new = deep_copy(obj)
        jsonpath.set_value(new, paths.spec_replicas, replicas)
        return new


def _blocks_cel(error: FieldError) -> bool:
    """Upstream hasBlockingErr: a value of the wrong type or outside its enum stops the CEL rules, which
    would only fail on it again with a less helpful message."""
    return error.type is ErrorType.NOT_SUPPORTED or (
        error.type is ErrorType.INVALID and " in body must be of type " in error.detail)


def _find(path: str, obj: Mapping[str, Any]) -> list[Any]:
    """What a printer column's JSONPath finds in `obj` (nothing for a path it cannot follow)."""
    try:
        return jsonpath.find(obj, path)
    except ValueError:
        return []


def _integer(found: list[Any]) -> int:
    value = found[0] if found else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
