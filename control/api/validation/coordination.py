"""Validation of coordination.k8s.io/v1 Leases (the kubelet's heartbeat and leader election).

Upstream: pkg/apis/coordination/validation/validation.go (ValidateLeaseSpec: a positive
leaseDurationSeconds, leaseTransitions not negative).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, Validator
from control.apimachinery.validation import FieldError


def _lease(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    c.text(spec, "holderIdentity", "spec.holderIdentity")
    duration = c.integer(spec, "leaseDurationSeconds", "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        c.add([FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")])
    c.nonnegative(spec, "leaseTransitions", "spec.leaseTransitions")


VALIDATORS: dict[str, Validator] = {
    "leases": _lease,
}
