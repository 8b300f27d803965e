"""A pod's quality-of-service class (upstream pkg/apis/core/helper/qos), shared by the API server, which
sets `status.qosClass` on create, and the kubelet, which reports it in every status it writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.apimachinery.quantity import Quantity, QuantityError


def qos_class(pod_spec: Mapping[str, Any]) -> str:
    """Upstream pkg/apis/core/helper/qos: Guaranteed when every container has cpu and memory limits equal
    to its requests, BestEffort when no container asks for anything, Burstable otherwise."""
    listed = [pod_spec.get(key) for key in ("initContainers", "containers")]
    # wrong types are validation's 422, not a crash here
    containers = [c for items in listed if isinstance(items, list) for c in items if isinstance(c, Mapping)]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        if not isinstance(resources, Mapping):
            return "BestEffort"
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
            return "BestEffort"
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            limit = limits.get(name)
            request = requests.get(name, limit)
            try:
                equal = limit is not None and Quantity(str(request)) == Quantity(str(limit))
            except QuantityError:
                equal = False
            guaranteed = guaranteed and equal
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
