"""NodeResourcesFit (filter: the pod's requests fit in what the node has left; score: LeastAllocated) and
NodeResourcesBalancedAllocation (score: cpu and memory used in like proportion).

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go (`fitsRequest`: "Too many pods", then
"Insufficient <resource>" for every resource that does not fit; requests, not usage), least_allocated.go
(per resource `(allocatable - requested) · 100 / allocatable`, weighted mean over the configured
resources, default cpu 1 and memory 1; counted with NonZero requests, so pods that request nothing still
spread), balanced_allocation.go (`(1 - std) · 100` of the requested fractions, with real requests; for
two resources std is |f1 - f2| / 2) and resource_allocation.go (an extended resource the pod does not
request is left out of the score). Seed 000: PodFitsResources, LeastRequestedPriority (its
`(capacity - requested) · 10 / capacity` on upstream's 0-100 scale) and BalancedResourceAllocation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


def least_allocated(node: NodeInfo, pod_requests_: Resource, resources: Sequence[ResourceSpec]) -> int:
    score = weights = 0
    for spec in resources:
        allocatable, requested = _allocatable_and_requested(node, spec.name, pod_requests_.get(spec.name),
                                                            use_requested=False)
        if allocatable == 0:
            continue
        score += least_requested_score(requested, allocatable) * spec.weight
        weights += spec.weight
    return score // weights if weights else 0


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


def _pod_requests(state: CycleState, pod: Pod) -> _Requests:
    try:
        return state.read("NodeResourcesFit")
    except KeyError:
        return _Requests(pod_requests(pod), pod_requests(pod, non_zero=True))


class Fit:
    name = "NodeResourcesFit"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        strategy = (args or {}).get("scoringStrategy") or {}
        if strategy.get("type", "LeastAllocated") != "LeastAllocated":
            raise ValueError(f"scoringStrategy.type: Unsupported value: {strategy['type']!r}: "
                             "supported values: \"LeastAllocated\"")
        self.resources = _resources_from_args(strategy)

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        state.write(self.name, _Requests(pod_requests(pod), pod_requests(pod, non_zero=True)))
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        reasons = insufficient_resources(_pod_requests(state, pod).requests, node)
        return unschedulable(*reasons) if reasons else SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return least_allocated(node, _pod_requests(state, pod).non_zero, self.resources)

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
