"""The namespace controller's decisions, apart from its I/O: how long to wait for pods' grace periods, what
a resource's leftovers mean, and the five status conditions of a Terminating namespace.

Upstream: pkg/controller/namespace/deletion/namespaced_resources_deleter.go (`estimateGracefulTermination
ForPods`, `deleteAllContentForGroupVersionResource`'s verdict on what is left, `finalizerEstimateSeconds`)
and namespace_condition_updater.go (condition types, the ok reasons and messages, the failure reasons and
message formats, `updateConditions`: lastTransitionTime changes only with the status).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from control.api.typed import Pod, TypedObject
from control.apimachinery.meta import format_timestamp

FINALIZER_ESTIMATE_SECONDS = 15  # upstream finalizerEstimateSeconds: wait for other finalizers this long
DELETION_GRACE_PERIOD = 5.0  # upstream namespaceDeletionGracePeriod: let caches settle before deleting

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GROUP_VERSION_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

CONDITION_TYPES = (DISCOVERY_FAILURE, GROUP_VERSION_PARSING_FAILURE, CONTENT_FAILURE, CONTENT_REMAINING,
                   FINALIZERS_REMAINING)
OK_REASONS = {
    DISCOVERY_FAILURE: "ResourcesDiscovered",
    GROUP_VERSION_PARSING_FAILURE: "ParsedGroupVersions",
    CONTENT_FAILURE: "ContentDeleted",
    CONTENT_REMAINING: "ContentRemoved",
    FINALIZERS_REMAINING: "ContentHasNoFinalizers",
}
OK_MESSAGES = {
    DISCOVERY_FAILURE: "All resources successfully discovered",
    GROUP_VERSION_PARSING_FAILURE: "All legacy kube types successfully parsed",
    CONTENT_FAILURE: "All content successfully deleted, may be waiting on finalization",
    CONTENT_REMAINING: "All content successfully removed",
    FINALIZERS_REMAINING: "All content-preserving finalizers finished",
}


def pods_grace_estimate(pods: Iterable[Mapping[str, Any]], *, deleted_at: datetime, now: datetime) -> int:
    """Seconds to wait for the namespace's pods: the longest terminationGracePeriodSeconds of a pod not yet
    Succeeded/Failed, or 0 once that long has passed since the namespace's deletionTimestamp."""
    estimate = 0
    for pod in pods:
        if Pod(pod).status.phase in ("Succeeded", "Failed"):
            continue
        grace = Pod(pod).spec.termination_grace_period_seconds
        if isinstance(grace, int) and grace > estimate:
            estimate = grace
    return 0 if (now - deleted_at).total_seconds() >= estimate else estimate


@dataclass(frozen=True)
class Leftovers:
    """What one resource still holds after its delete: upstream gvrDeletionMetadata, plus whether the
    leftovers are unexplained (no grace estimate, no finalizer: an error)."""

    estimate: int
    remaining: int = 0
    finalizers: Mapping[str, int] = field(default_factory=dict)
    unexpected: bool = False


def leftovers(items: Sequence[Mapping[str, Any]], *, estimate: int) -> Leftovers:
    """Upstream's verdict on the items listed after the delete."""
    if not items:
        return Leftovers(estimate)
    counts: dict[str, int] = {}
    for item in items:
        for finalizer in TypedObject(item).metadata.finalizers:
            counts[finalizer] = counts.get(finalizer, 0) + 1
    if estimate:
        return Leftovers(estimate, len(items), counts)
    if counts:
        return Leftovers(FINALIZER_ESTIMATE_SECONDS, len(items), counts)
    return Leftovers(estimate, len(items), unexpected=True)


def requeue_seconds(estimate: int) -> int:
    """When to look again at a namespace whose content is still going (upstream: estimate/2 + 1)."""
    return estimate // 2 + 1


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


def failure_conditions(*, discovery_error: str | None, content_errors: Sequence[str],
                       remaining: Mapping[tuple[str, str], int],
                       finalizers: Mapping[str, int]) -> list[Condition]:
    """The True conditions one pass found (upstream namespaceConditionUpdater.Process*); `remaining` is
    keyed by (group, plural)."""
    found = []
    if discovery_error is not None:
        found.append(Condition(DISCOVERY_FAILURE, "True", "DiscoveryFailed", discovery_error))
    if content_errors:
        found.append(Condition(CONTENT_FAILURE, "True", "ContentDeletionFailed",
                               f"Failed to delete all resource types, {len(content_errors)} remaining: "
                               + ", ".join(sorted(content_errors))))
    counts = sorted(f"{plural}.{group} has {n} resource instances" for (group, plural), n in remaining.items() if n)
    if counts:
        found.append(Condition(CONTENT_REMAINING, "True", "SomeResourcesRemain",
                               "Some resources are remaining: " + ", ".join(counts)))
    held = sorted(f"{finalizer} in {n} resource instances" for finalizer, n in finalizers.items() if n)
    if held:
        found.append(Condition(FINALIZERS_REMAINING, "True", "SomeFinalizersRemain",
                               "Some content in the namespace has finalizers remaining: " + ", ".join(held)))
    return found


def updated_conditions(current: Sequence[Mapping[str, Any]], found: Sequence[Condition], *,
                       now: datetime) -> list[dict[str, Any]] | None:
    """The namespace's status.conditions with every type of CONDITION_TYPES set (the ok variant where
    nothing failed), or None when nothing changed (upstream updateConditions). Other conditions stay."""
    by_type = {c.type: c for c in found}
    result = [dict(c) for c in current]
    changed = False
    stamp = format_timestamp(now)
    for condition_type in CONDITION_TYPES:
        new = by_type.get(condition_type) or Condition(condition_type, "False", OK_REASONS[condition_type],
                                                       OK_MESSAGES[condition_type])
        old = next((c for c in result if c.get("type") == condition_type), None)
        if old is None:
            result.append({"type": new.type, "status": new.status, "lastTransitionTime": stamp,
                           "reason": new.reason, "message": new.message})
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (new.status, new.reason, new.message):
            if old.get("status") != new.status:
                old["lastTransitionTime"] = stamp
            old.update(status=new.status, reason=new.reason, message=new.message)
            changed = True
    return result if changed else None
