"""Taints and tolerations: the well-known node taint keys and whether a toleration tolerates a taint.

Upstream: k8s.io/api/core/v1 well_known_taints.go (the `node.kubernetes.io/*` keys), toleration.go
(`Toleration.ToleratesTaint`) and pkg/apis/core/v1/helper/helpers.go (`GetMatchingTolerations`). Shared by
the node lifecycle controller (which taints), the taint eviction controller (which evicts), the API
server's default tolerations and, later, the scheduler's TaintToleration plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Upstream Toleration.ToleratesTaint: the effect matches (an empty one matches all), the key matches
    (an empty key with operator Exists matches every key), and Exists ignores the value while Equal (the
    default operator) compares it."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def matching_toleration(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first toleration that tolerates `taint` (upstream GetMatchingTolerations takes the first)."""
    return next((toleration for toleration in tolerations if tolerates(toleration, taint)), None)


def taints_of(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((node.get("spec") or {}).get("taints") or ())


def tolerations_of(pod: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return (pod.get("spec") or {}).get("tolerations") or ()
