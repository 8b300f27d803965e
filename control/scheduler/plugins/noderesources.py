"""NodeResourcesFit (filter: the pod's requests fit in what the node has left; score: by its
scoringStrategy, LeastAllocated by default, MostAllocated or RequestedToCapacityRatio) and
NodeResourcesBalancedAllocation (score: cpu and memory used in like proportion).

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go (`fitsRequest`: "Too many pods", then
"Insufficient <resource>" for every resource that does not fit; requests, not usage), least_allocated.go
(per resource `(allocatable - requested) · 100 / allocatable`, weighted mean over the configured
resources, default cpu 1 and memory 1; counted with NonZero requests, so pods that request nothing still
spread), most_allocated.go (`min(requested, allocatable) · 100 / allocatable`, same mean),
requested_to_capacity_ratio.go (utilization `requested · 100 / allocatable` through the broken-line
`shape` of (utilization, score 0-10) points, scores scaled ×10; the weighted mean counts only resources
scoring above 0 and is rounded; validation as upstream's validateFunctionShape), balanced_allocation.go
(`(1 - std) · 100` of the requested fractions, with real requests; for two resources std is |f1 - f2| / 2)
and resource_allocation.go (an extended resource the pod does not request is left out of the score).
Formerly PodFitsResources, LeastRequestedPriority (its `(capacity - requested) · 10 / capacity` on
upstream's 0-100 scale) and BalancedResourceAllocation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.scheduler.cache import Snapshot
from control.scheduler.framework import MAX_NODE_SCORE, SKIP, SUCCESS, CycleState, Pod, Status, unschedulable
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.resources import CPU, MEMORY, Resource, is_scalar_resource, pod_requests

TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True)
class ResourceSpec:
    """A resource a score counts, and its weight (upstream config.ResourceSpec)."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


@dataclass(frozen=True)
class _Requests:
    requests: Resource
    non_zero: Resource


def _resources_from_args(args: Mapping[str, Any]) -> tuple[ResourceSpec, ...]:
    """`scoringStrategy.resources` of NodeResourcesFitArgs (or `resources` of BalancedAllocationArgs)."""
    specs = args.get("resources")
    if specs is None:
        return DEFAULT_RESOURCES
    resources = tuple(ResourceSpec(spec["name"], int(spec.get("weight", 1))) for spec in specs)
    for index, spec in enumerate(resources):
        if not 1 <= spec.weight <= MAX_NODE_SCORE:
            raise ValueError(f"scoringStrategy.resources[{index}].weight: Invalid value: {spec.weight}: "
                             f"resource weight of {spec.name} should be in the range [1, {MAX_NODE_SCORE}]")
    return resources


def insufficient_resources(requests: Resource, node: NodeInfo) -> list[str]:
    """Upstream fitsRequest's reasons, in its order."""
    reasons = []
    if len(node.pods) + 1 > node.allocatable.allowed_pod_number:
        reasons.append(TOO_MANY_PODS)
    left = node.allocatable
    used = node.requested
    if 0 < requests.milli_cpu > left.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
    if 0 < requests.memory > left.memory - used.memory:
        reasons.append("Insufficient memory")
    if 0 < requests.ephemeral_storage > left.ephemeral_storage - used.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
    for name, amount in sorted(requests.scalar.items()):
        if 0 < amount > left.scalar.get(name, 0) - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def _allocatable_and_requested(node: NodeInfo, resource: str, pod_amount: int, *,
                               use_requested: bool) -> tuple[int, int]:
    """Upstream calculateResourceAllocatableRequest: (0, 0) for an extended resource the pod does not ask for."""
    if pod_amount == 0 and is_scalar_resource(resource):
        return 0, 0
    used = node.requested if use_requested else node.non_zero_requested
    return node.allocatable.get(resource), used.get(resource) + pod_amount


def least_requested_score(requested: int, allocatable: int) -> int:
    if allocatable == 0 or requested > allocatable:
        return 0
    return (allocatable - requested) * MAX_NODE_SCORE // allocatable


def _weighted_mean(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec],
                   score: Callable[[int, int], int]) -> int:
    """The resources' `score(requested, allocatable)` weighted and averaged in integers, resources the node
    has none of left out (upstream's resourceAllocationScorer for LeastAllocated and MostAllocated)."""
    total = weights = 0
    for spec in resources:
        allocatable, requested = _allocatable_and_requested(node, spec.name, pod_requests_.get(spec.name),
                                                            use_requested=False)
        if allocatable == 0:
            continue
        total += score(requested, allocatable) * spec.weight
        weights += spec.weight
    return total // weights if weights else 0


def least_allocated(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec]) -> int:
    return _weighted_mean(node, pod_requests_, resources, least_requested_score)


def balanced_allocation(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec]) -> int:
    fractions = []
    for spec in resources:
        allocatable, requested = _allocatable_and_requested(node, spec.name, pod_requests_.get(spec.name),
                                                            use_requested=True)
        if allocatable == 0:
            continue
        fractions.append(min(1.0, requested / allocatable))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def most_requested_score(requested: int, allocatable: int) -> int:
    if allocatable == 0:
        return 0
    return min(requested, allocatable) * MAX_NODE_SCORE // allocatable


def most_allocated(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec]) -> int:
    return _weighted_mean(node, pod_requests_, resources, most_requested_score)


MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True)
class ShapePoint:
    """A point of RequestedToCapacityRatio's scoring function (upstream UtilizationShapePoint)."""

    utilization: int
    score: int


def _shape_from_args(args: Mapping[str, Any]) -> tuple[ShapePoint, ...]:
    """`requestedToCapacityRatio.shape`, checked as upstream validateFunctionShape."""
    where = "scoringStrategy.requestedToCapacityRatio.shape"
    points = (args.get("requestedToCapacityRatio") or {}).get("shape") or []
    if not points:
        raise ValueError(f"{where}: Required value: at least one point must be specified")
    shape = tuple(ShapePoint(int(point["utilization"]), int(point["score"])) for point in points)
    for index, point in enumerate(shape):
        if index and shape[index - 1].utilization >= point.utilization:
            raise ValueError(f"{where}[{index}].utilization: Invalid value: {point.utilization}: utilization "
                             "values must be sorted in increasing order")
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            raise ValueError(f"{where}[{index}].utilization: Invalid value: {point.utilization}: not in valid "
                             f"range [0-{MAX_UTILIZATION}]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ValueError(f"{where}[{index}].score: Invalid value: {point.score}: not in valid range "
                             f"[0-{MAX_CUSTOM_PRIORITY_SCORE}]")
    return tuple(ShapePoint(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape)


def broken_linear(shape: Sequence[ShapePoint], utilization: int) -> int:
    """Upstream helper.BuildBrokenLinearFunction: the shape's score at `utilization`, linear between points,
    flat before the first and after the last (integer arithmetic as upstream's int64)."""
    for index, point in enumerate(shape):
        if utilization <= point.utilization:
            if index == 0:
                return point.score
            before = shape[index - 1]
            return before.score + int((point.score - before.score) * (utilization - before.utilization)
                                      / (point.utilization - before.utilization))
    return shape[-1].score


def requested_to_capacity_ratio(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec],
                                shape: Sequence[ShapePoint]) -> int:
    score = weights = 0
    for spec in resources:
        allocatable, requested = _allocatable_and_requested(node, spec.name, pod_requests_.get(spec.name),
                                                            use_requested=False)
        if allocatable == 0:
            continue
        utilization = MAX_UTILIZATION if requested > allocatable else requested * MAX_UTILIZATION // allocatable
        resource_score = broken_linear(shape, utilization)
        if resource_score > 0:
            score += resource_score * spec.weight
            weights += spec.weight
    return (2 * score + weights) // (2 * weights) if weights else 0  # Go's math.Round: halves away from 0


LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


def _pod_requests(state: CycleState, pod: Pod) -> _Requests:
    try:
        requests: _Requests = state.read("NodeResourcesFit")
    except KeyError:
        return _Requests(pod_requests(pod), pod_requests(pod, non_zero=True))
    return requests


class Fit:
    name = "NodeResourcesFit"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        strategy = (args or {}).get("scoringStrategy") or {}
        self.strategy = strategy.get("type") or LEAST_ALLOCATED
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ValueError(f"scoringStrategy.type: Unsupported value: {self.strategy!r}: supported values: "
                             f"\"{LEAST_ALLOCATED}\", \"{MOST_ALLOCATED}\", \"{REQUESTED_TO_CAPACITY_RATIO}\"")
        self.resources = _resources_from_args(strategy)
        self.shape = _shape_from_args(strategy) if self.strategy == REQUESTED_TO_CAPACITY_RATIO else ()

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        state.write(self.name, _Requests(pod_requests(pod), pod_requests(pod, non_zero=True)))
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        reasons = insufficient_resources(_pod_requests(state, pod).requests, node)
        return unschedulable(*reasons) if reasons else SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        requests = _pod_requests(state, pod).non_zero
        if self.strategy == MOST_ALLOCATED:
            return most_allocated(node, requests, self.resources)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return requested_to_capacity_ratio(node, requests, self.resources, self.shape)
        return least_allocated(node, requests, self.resources)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        return None


class BalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.resources = _resources_from_args(args or {})

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        """Skip a pod that requests none of the scored resources (best effort): nothing to balance."""
        requests = _pod_requests(state, pod).requests
        return SUCCESS if any(requests.get(spec.name) for spec in self.resources) else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return balanced_allocation(node, _pod_requests(state, pod).requests, self.resources)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        return None
