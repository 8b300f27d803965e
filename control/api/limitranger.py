"""LimitRange decisions (upstream: plugin/pkg/admission/limitranger/admission.go — defaultContainerResource-
Requirements, mergePodResourceRequirements, PodValidateLimitFunc, PersistentVolumeClaimValidateLimitFunc
and the min/max/ratio constraints, whose messages are upstream's word for word).

Pure functions over wire dicts: the admission plugin (control/apiserver/admission/limitranger.py) reads
the namespace's LimitRanges and calls them.

- Defaults: the `default` (limits) and `defaultRequest` (requests) of the Container items fill in what
  each container and init container leaves unset, noted in the pod's `kubernetes.io/limit-ranger`
  annotation.
- Container items bound each container's requests and limits; Pod items bound the pod's totals (the sum
  over containers, or the largest init container when that is more); PersistentVolumeClaim items bound
  the claim's requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from control.apimachinery.quantity import Quantity, QuantityError

ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER, POD, CLAIM = "Container", "Pod", "PersistentVolumeClaim"
ResourceList = dict[str, Quantity]


def _items(limit_ranges: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [item for lr in limit_ranges for item in ((lr.get("spec") or {}).get("limits") or ())
            if isinstance(item, Mapping) and item.get("type") == kind]


def _quantities(raw: Any) -> ResourceList:
    """A ResourceList; a value that does not parse is left out (validation refused it when it was stored)."""
    result: ResourceList = {}
    for name, value in (raw or {}).items() if isinstance(raw, Mapping) else ():
        try:
            result[str(name)] = Quantity(str(value))
        except QuantityError:
            continue
    return result


def container_defaults(limit_ranges: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(requests, limits) a container gets where it sets none: the Container items' defaultRequest and default."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in _items(limit_ranges, CONTAINER):
        requests.update(item.get("defaultRequest") or {})
        limits.update(item.get("default") or {})
    return requests, limits


def apply_defaults(pod: dict[str, Any], requests: Mapping[str, Any], limits: Mapping[str, Any]) -> None:
    """Fill in each container's unset requests and limits, noting what was set in the pod's annotation."""
    if not requests and not limits:
        return
    spec = pod.get("spec") or {}
    notes: list[str] = []
    for key, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            resources = container.setdefault("resources", {})
            if not isinstance(resources, dict):
                continue
            for field, defaults, what in (("requests", requests, "request"), ("limits", limits, "limit")):
                current = resources.get(field)
                if not isinstance(current, dict):
                    current = {}
                added = sorted(k for k in defaults if k not in current)
                if added:
                    resources[field] = {**current, **{k: defaults[k] for k in added}}
                    notes.append(f"{', '.join(added)} {what} for {prefix} {container.get('name', '')}")
    if notes:
        metadata = pod.setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes)}


def _min(kind: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList) -> str | None:
    if name not in request:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if request[name] < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    if name in limit and limit[name] < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit[name]}"
    return None


def _max(kind: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList) -> str | None:
    if name not in limit:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if limit[name] > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit[name]}"
    if name in request and request[name] > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, request: ResourceList) -> str | None:
    if name not in request:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if request[name] > enforced:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request[name]}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, request: ResourceList, limit: ResourceList) -> str | None:
    zero = Quantity(0)
    if name not in request or request[name] == zero:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or "
                "request is 0")
    if name not in limit or limit[name] == zero:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or "
                "limit is 0")
    observed = limit[name].as_fraction() / request[name].as_fraction()
    if observed > enforced.as_fraction():
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {float(observed):f}"
    return None


def _bounds(item: Mapping[str, Any], kind: str, request: ResourceList, limit: ResourceList) -> list[str]:
    found = [_min(kind, name, q, request, limit) for name, q in _quantities(item.get("min")).items()]
    found += [_max(kind, name, q, request, limit) for name, q in _quantities(item.get("max")).items()]
    found += [_ratio(kind, name, q, request, limit)
              for name, q in _quantities(item.get("maxLimitRequestRatio")).items()]
    return [f for f in found if f is not None]


def _resources(container: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    resources = container.get("resources") or {}
    return _quantities(resources.get("requests")), _quantities(resources.get("limits"))


def _pod_totals(spec: Mapping[str, Any]) -> tuple[ResourceList, ResourceList]:
    """The pod's requests and limits: the containers' sum, or the largest init container's where larger."""
    totals: tuple[ResourceList, ResourceList] = ({}, {})
    for container in spec.get("containers") or ():
        for total, own in zip(totals, _resources(container), strict=True):
            for name, quantity in own.items():
                total[name] = total[name] + quantity if name in total else quantity
    for container in spec.get("initContainers") or ():
        for total, own in zip(totals, _resources(container), strict=True):
            for name, quantity in own.items():
                if name not in total or quantity > total[name]:
                    total[name] = quantity
    return totals


def pod_violations(limit_ranges: Iterable[Mapping[str, Any]], pod: Mapping[str, Any]) -> list[str]:
    """What the pod breaks of the Container and Pod items, in their order (upstream PodValidateLimitFunc)."""
    limit_ranges = list(limit_ranges)
    spec = pod.get("spec") or {}
    found: list[str] = []
    for item in _items(limit_ranges, CONTAINER):
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                if isinstance(container, Mapping):
                    found += _bounds(item, CONTAINER, *_resources(container))
    for item in _items(limit_ranges, POD):
        found += _bounds(item, POD, *_pod_totals(spec))
    return found


def claim_violations(limit_ranges: Iterable[Mapping[str, Any]], claim: Mapping[str, Any]) -> list[str]:
    """What the claim's requests break of the PersistentVolumeClaim items (limits are not user input here)."""
    requests = _quantities(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
    found: list[str | None] = []
    for item in _items(limit_ranges, CLAIM):
        found += [_min(CLAIM, name, q, requests, {}) for name, q in _quantities(item.get("min")).items()]
        found += [_max_request(CLAIM, name, q, requests) for name, q in _quantities(item.get("max")).items()]
    return [f for f in found if f is not None]


def aggregate(messages: list[str]) -> str:
    """upstream utilerrors.NewAggregate's text: one message alone, several in brackets."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
