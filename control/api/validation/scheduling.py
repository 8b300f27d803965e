"""Validation of scheduling.k8s.io/v1 PriorityClasses.

Upstream: pkg/apis/scheduling/validation/validation.go (`ValidatePriorityClass`: a name with the `system-`
prefix must be one of the system classes exactly; any other class's value is at most 1e9;
preemptionPolicy one of PreemptLowerPriority, Never — `ValidatePriorityClassUpdate`: value and
preemptionPolicy never change).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.priority import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    PREEMPTION_POLICIES,
    SYSTEM_PRIORITY_CLASS_PREFIX,
    known_system_class_error,
)
from control.api.validation.primitives import IMMUTABLE_MESSAGE, Check, Validator
from control.apimachinery.validation import FieldError


def _priority_class(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    name = (obj.get("metadata") or {}).get("name")
    value = c.integer(obj, "value", "value") or 0
    global_default = obj.get("globalDefault")
    if global_default is not None and not isinstance(global_default, bool):
        c.add([FieldError.invalid("globalDefault", global_default, "must be of type boolean")])
    c.text(obj, "description", "description")
    if isinstance(name, str) and name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        error = known_system_class_error(name, value, global_default is True)
        if error is not None:
            c.add([FieldError.forbidden("metadata.name", f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' "
                                                         f"prefix are reserved for system use only. error: {error}")])
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        c.add([FieldError.forbidden("value", "maximum allowed value of a user defined priority is "
                                             f"{HIGHEST_USER_DEFINABLE_PRIORITY}")])
    if "preemptionPolicy" in obj:
        c.supported(obj, "preemptionPolicy", "preemptionPolicy", PREEMPTION_POLICIES, required=True)
    if old is None:
        return
    if obj.get("value") != old.get("value"):
        c.add([FieldError.forbidden("value", "may not be changed in an update.")])
    if obj.get("preemptionPolicy") != old.get("preemptionPolicy"):
        c.add([FieldError.invalid("preemptionPolicy", obj.get("preemptionPolicy"), IMMUTABLE_MESSAGE)])


VALIDATORS: dict[str, Validator] = {
    "priorityclasses": _priority_class,
}
