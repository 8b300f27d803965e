"""What a pod holds of a resource while it runs: the one rule the scheduler (control/scheduler/resources.py,
requests as Resource amounts) and ResourceQuota (control/api/quota.py, requests and limits as Quantities)
both count by.

Upstream: k8s.io/component-helpers/resource (`PodRequests`, `PodLimits`): the app containers run together,
so their amounts add up; init containers run one at a time before them, so each only has to fit alone and
the pod holds the larger of the app containers' sum and its largest init container. What one container
asks for, how amounts add and compare, and whether `spec.overhead` is added are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The containers under `key` ("containers", "initContainers"); entries that are not objects are
    validation's business and skipped here."""
    found = spec.get(key)
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def pod_total(spec: Mapping[str, Any], amount: Callable[[Mapping[str, Any]], T], *, zero: T,
              add: Callable[[T, T], T], larger: Callable[[T, T], T]) -> T:
    """max(sum of `amount` over the app containers, `amount` of each init container) (module notes)."""
    total = zero
    for container in containers(spec, "containers"):
        total = add(total, amount(container))
    for container in containers(spec, "initContainers"):
        total = larger(total, amount(container))
    return total
