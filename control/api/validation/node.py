"""Validation of node.k8s.io/v1 RuntimeClasses.

Upstream: pkg/apis/node/validation/validation.go (ValidateRuntimeClass: `handler` a DNS-1123 label,
immutable on update; `overhead.podFixed` quantities not negative; `scheduling.nodeSelector` labels).

"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import NEGATIVE_MESSAGE, Check, Validator
from control.apimachinery.validation import FieldError, is_dns1123_label, validate_labels


def _runtime_class(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    handler = c.text(obj, "handler", "handler")
    if handler == "":
        c.add([FieldError.required("handler")])
    elif handler is not None:
        c.invalid("handler", handler, is_dns1123_label(handler))
    if (overhead := c.obj(obj, "overhead", "overhead")) is not None:
        for name, value in (c.obj(overhead, "podFixed", "overhead.podFixed") or {}).items():
            quantity = c.quantity(value, f"overhead.podFixed[{name}]")
            if quantity is not None and quantity.as_fraction() < 0:
                c.add([FieldError.invalid(f"overhead.podFixed[{name}]", value, NEGATIVE_MESSAGE)])
    if (scheduling := c.obj(obj, "scheduling", "scheduling")) is not None:
        selector = c.strings(scheduling, "nodeSelector", "scheduling.nodeSelector")
        c.add(validate_labels(selector, path="scheduling.nodeSelector"))
        c.items(scheduling, "tolerations", "scheduling.tolerations")
    if old is not None:
        c.immutable(obj.get("handler"), old.get("handler"), "handler")


VALIDATORS: dict[str, Validator] = {
    "runtimeclasses": _runtime_class,
}
