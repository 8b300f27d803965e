"""Which pods the pod garbage collector deletes, decided apart from the I/O (controller.py does that).

Upstream: pkg/controller/podgc/gc_controller.go — `isPodTerminated` (any phase but Pending, Running and
Unknown), `gcTerminated` (only the pods beyond --terminated-pod-gc-threshold, in
`byEvictionAndCreationTimestamp` order: evicted pods (Failed with reason Evicted) first, then oldest
creationTimestamp, then name), `gcOrphaned` (pods bound to a node that is gone once the node has been
missing for the quarantine time, 40 s), `gcUnscheduledTerminating` (pods being deleted that never got a
node), `gcTerminating` (pods being deleted on a NotReady node tainted node.kubernetes.io/out-of-service).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from control.api.typed import Node
from control.api.typed import Pod as PodView

TERMINATED_POD_GC_THRESHOLD = 12500  # upstream --terminated-pod-gc-threshold
QUARANTINE_SECONDS = 40.0  # upstream quarantineTime
GC_CHECK_PERIOD = 20.0  # upstream gcCheckPeriod
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"

Pod = Mapping[str, Any]


def _phase(pod: Pod) -> str:
    return PodView(pod).status.phase


def _node_name(pod: Pod) -> str:
    return PodView(pod).spec.node_name


def _deleting(pod: Pod) -> bool:
    return bool(PodView(pod).metadata.deletion_timestamp)


def is_terminated(pod: Pod) -> bool:
    return _phase(pod) not in ("Pending", "Running", "Unknown")


def is_evicted(pod: Pod) -> bool:
    return _phase(pod) == "Failed" and PodView(pod).status.reason == "Evicted"


def eviction_and_age_order(pod: Pod) -> tuple[bool, str, str]:
    """Upstream byEvictionAndCreationTimestamp (RFC 3339 UTC timestamps sort as text)."""
    metadata = pod.get("metadata") or {}
    return (not is_evicted(pod), metadata.get("creationTimestamp") or "", metadata.get("name") or "")


def select_terminated(pods: Iterable[Pod], *, threshold: int) -> list[Pod]:
    """The terminated pods above `threshold`, in deletion order; none when `threshold` is 0 (disabled)."""
    if threshold <= 0:
        return []
    terminated = [pod for pod in pods if is_terminated(pod)]
    excess = len(terminated) - threshold
    if excess <= 0:
        return []
    return sorted(terminated, key=eviction_and_age_order)[:excess]


def missing_nodes(pods: Iterable[Pod], existing: Collection[str]) -> set[str]:
    """Node names pods are bound to that the node cache does not hold (candidates for quarantine)."""
    return {name for pod in pods if (name := _node_name(pod)) and name not in existing}


def select_orphaned(pods: Iterable[Pod], deleted_nodes: Collection[str]) -> list[Pod]:
    return [pod for pod in pods if _node_name(pod) in deleted_nodes]


def select_unscheduled_terminating(pods: Iterable[Pod]) -> list[Pod]:
    return sorted((pod for pod in pods if _deleting(pod) and not _node_name(pod)), key=eviction_and_age_order)


def _out_of_service(node: Mapping[str, Any]) -> bool:
    view = Node(node)
    ready = view.status.condition("Ready")
    return (ready is None or ready.status != "True") and any(t.key == OUT_OF_SERVICE_TAINT for t in view.spec.taints)


def select_terminating_out_of_service(pods: Iterable[Pod], nodes: Sequence[Mapping[str, Any]]) -> list[Pod]:
    down = {node["metadata"]["name"] for node in nodes if _out_of_service(node)}
    return sorted((pod for pod in pods if _deleting(pod) and _node_name(pod) in down), key=eviction_and_age_order)
