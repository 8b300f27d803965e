"""The autoscaling/v1 Scale view of a built-in workload (upstream: the `scale` REST of the apps and core
registries, e.g. pkg/registry/apps/deployment/storage/storage.go `scaleFromDeployment`,
`scaleUpdatedObjectInfo`): `spec.replicas`, `status.replicas` and the selector as a string. Pure; the
strategy's `scale_of`/`apply_scale` answer with these for every kind that has no scale of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed import TypedObject
from control.apimachinery.labels import SelectorError, selector_from_label_selector, selector_from_set
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import FieldError
from control.apiserver import status


def _scale_selector(obj: Mapping[str, Any]) -> str:
    selector = (obj.get("spec") or {}).get("selector")
    try:
        if obj.get("kind") == "ReplicationController":
            return str(selector_from_set(selector or {}))
        return str(selector_from_label_selector(selector))
    except (SelectorError, AttributeError, TypeError):
        return ""


def scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a workload."""
    metadata = obj.get("metadata") or {}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in metadata},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": _scale_selector(obj)},
    }


def apply_scale(obj: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    """The workload with the Scale's `spec.replicas` (422 for a negative or non-integer count)."""
    replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale.get("spec"), dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise status.invalid("Scale", TypedObject(obj).metadata.name, [FieldError.invalid(
            "spec.replicas", replicas, "must be greater than or equal to 0")], group="autoscaling")
    new = deep_copy(obj)
    new.setdefault("spec", {})["replicas"] = replicas
    return new
