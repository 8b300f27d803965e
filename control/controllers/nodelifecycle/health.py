"""The node lifecycle controller's decisions, pure: when a node's heartbeat was last seen, whether it is past
its grace period and what its conditions become then, and which condition taints it should carry.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go — `tryUpdateNodeHealth` (the
`nodeHealthData` kept per node: `probeTimestamp` moves to *now* whenever the controller observes a new
Ready lastHeartbeatTime or a newer Lease renewTime, so a kubelet's skewed clock does not matter; a node
first seen gets the whole grace period from now, one without a Ready condition from its creation with
nodeStartupGracePeriod; past the period every condition goes Unknown), `doNoExecuteTaintingPass` (Ready
False → not-ready:NoExecute, Unknown → unreachable:NoExecute, each with timeAdded, swapped for one another)
and `doNoScheduleTaintingPass` (`nodeConditionToTaintKeyStatusMap` and spec.unschedulable): a kubelet that
stops posting status gets Ready set to Unknown.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from control.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
    taints_of,
)
from control.api.typed import Lease, Node, Pod
from control.apimachinery.meta import deep_copy, format_timestamp, get_condition, parse_timestamp

# The conditions the kubelet posts and the controller sets Unknown (upstream nodeConditionTypes + Ready).
NODE_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
STATUS_UNKNOWN_REASON = "NodeStatusUnknown"
STATUS_UNKNOWN_MESSAGE = "Kubelet stopped posting node status."
NEVER_UPDATED_REASON = "NodeStatusNeverUpdated"
NEVER_UPDATED_MESSAGE = "Kubelet never posted node status."

# (condition type, status) → the NoSchedule taint key (upstream nodeConditionToTaintKeyStatusMap).
NO_SCHEDULE_TAINTS: Mapping[tuple[str, str], str] = {
    ("Ready", "False"): TAINT_NOT_READY,
    ("Ready", "Unknown"): TAINT_UNREACHABLE,
    ("MemoryPressure", "True"): TAINT_MEMORY_PRESSURE,
    ("DiskPressure", "True"): TAINT_DISK_PRESSURE,
    ("PIDPressure", "True"): TAINT_PID_PRESSURE,
    ("NetworkUnavailable", "True"): TAINT_NETWORK_UNAVAILABLE,
}
NO_EXECUTE_TAINTS: Mapping[str, str] = {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE}
# The (key, effect) pairs this controller owns: it adds and removes exactly these, and keeps every other.
MANAGED_TAINTS = frozenset({(key, NO_SCHEDULE) for key in NO_SCHEDULE_TAINTS.values()}
                           | {(TAINT_UNSCHEDULABLE, NO_SCHEDULE)}
                           | {(key, NO_EXECUTE) for key in NO_EXECUTE_TAINTS.values()})


@dataclass(frozen=True)
class _Seen:
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime as last observed
    renew_time: datetime | None  # the Lease's renewTime as last observed
    observed_at: datetime  # when either last changed, by this controller's clock (upstream probeTimestamp)


class HeartbeatTracker:
    """When each node was last seen alive, by the controller's own clock (upstream nodeHealthMap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}

    def observe(self, node: Mapping[str, Any], lease: Mapping[str, Any] | None, now: datetime) -> datetime:
        """Record what `node` and its Lease show now; return when a heartbeat was last observed."""
        name = node["metadata"]["name"]
        ready = get_condition(node, "Ready")
        heartbeat = ready.get("lastHeartbeatTime") if ready else None
        renew_text = Lease(lease).spec.renew_time if lease is not None else None
        renew_time = parse_timestamp(renew_text) if renew_text else None
        with self._lock:
            saved = self._seen.get(name)
            if saved is None:  # first sight: a node without status counts from its creation
                created = node["metadata"].get("creationTimestamp")
                observed_at = now if ready is not None or not created else parse_timestamp(created)
            elif heartbeat != saved.heartbeat or (
                    renew_time is not None and (saved.renew_time is None or renew_time > saved.renew_time)):
                observed_at = now
            else:
                observed_at = saved.observed_at
            self._seen[name] = _Seen(heartbeat, renew_time, observed_at)
            return observed_at

    def forget(self, name: str) -> None:
        with self._lock:
            self._seen.pop(name, None)


def node_health(node: Mapping[str, Any], last_observed: datetime, now: datetime, *, grace: float,
                startup_grace: float) -> list[dict[str, Any]] | None:
    """The node's status.conditions to write, or None if nothing changes: None while `now` is within the
    grace period after `last_observed` (`startup_grace` for a node that never posted a Ready condition);
    past it, every condition of NODE_CONDITIONS that is not Unknown yet becomes Unknown (reason
    NodeStatusUnknown, its lastHeartbeatTime kept) and a missing one is added as NodeStatusNeverUpdated
    (lastHeartbeatTime = the node's creation), as upstream tryUpdateNodeHealth."""
    period = grace if get_condition(node, "Ready") is not None else startup_grace
    if now <= last_observed + timedelta(seconds=period):
        return None
    stamp = format_timestamp(now)
    conditions = [deep_copy(dict(condition.raw)) for condition in Node(node).status.conditions]
    changed = False
    for kind in NODE_CONDITIONS:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            conditions.append({"type": kind, "status": "Unknown", "reason": NEVER_UPDATED_REASON,
                               "message": NEVER_UPDATED_MESSAGE,
                               "lastHeartbeatTime": node["metadata"].get("creationTimestamp") or stamp,
                               "lastTransitionTime": stamp})
            changed = True
        elif current.get("status") != "Unknown":
            current.update(status="Unknown", reason=STATUS_UNKNOWN_REASON, message=STATUS_UNKNOWN_MESSAGE,
                           lastTransitionTime=stamp)
            changed = True
    return conditions if changed else None


def wanted_taints(node: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (key, effect) pairs of MANAGED_TAINTS the node's conditions and spec call for."""
    wanted: set[tuple[str, str]] = set()
    for condition in Node(node).status.conditions:
        kind, status = condition.type, condition.status
        if (key := NO_SCHEDULE_TAINTS.get((kind, status))) is not None:
            wanted.add((key, NO_SCHEDULE))
        if kind == "Ready" and (key := NO_EXECUTE_TAINTS.get(status)) is not None:
            wanted.add((key, NO_EXECUTE))
    if Node(node).spec.unschedulable:
        wanted.add((TAINT_UNSCHEDULABLE, NO_SCHEDULE))
    return wanted


def desired_taints(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]] | None:
    """The node's spec.taints to write, or None if they are right: taints this controller does not manage
    are kept in place, managed ones no longer called for are dropped, and new ones appended (NoExecute
    ones with timeAdded = now, which the taint eviction controller counts tolerationSeconds from)."""
    current = taints_of(node)
    wanted = wanted_taints(node)
    kept = [t for t in current if (t.get("key"), t.get("effect")) not in MANAGED_TAINTS - wanted]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    for key, effect in sorted(wanted - present):
        taint: dict[str, Any] = {"key": key, "effect": effect}
        if effect == NO_EXECUTE:
            taint["timeAdded"] = format_timestamp(now)
        kept.append(taint)
    return kept if kept != current else None


def pods_to_mark_not_ready(pods: Iterable[Mapping[str, Any]], node_name: str,
                           now: datetime) -> list[dict[str, Any]]:
    """The pods bound to `node_name` whose Ready condition must become False, each returned whole with the
    condition changed (status False, lastTransitionTime `now`, reason and message kept), as upstream
    `MarkPodsNotReady` (pkg/controller/util/node/controller_utils.go): only the Ready condition changes
    (ContainersReady is the kubelet's and stays); a pod without a Ready condition, one already not ready and
    one bound elsewhere are left alone."""
    marked: list[dict[str, Any]] = []
    for pod in pods:
        if Pod(pod).spec.node_name != node_name:
            continue
        ready = get_condition(pod, "Ready")
        if ready is None or ready.get("status") == "False":
            continue
        status = deep_copy(dict(pod.get("status") or {}))
        status["conditions"] = [{**c, "status": "False", "lastTransitionTime": format_timestamp(now)}
                                if c.get("type") == "Ready" else c for c in status.get("conditions") or []]
        marked.append({**pod, "status": status})
    return marked


def new_no_execute(node: Mapping[str, Any], taints: list[dict[str, Any]]) -> bool:
    """Whether `taints` put a not-ready/unreachable NoExecute taint on a node that has neither (an eviction
    start, which the zone's rate limiter gates; swapping one for the other is not one)."""
    def no_execute(items: Iterable[Mapping[str, Any]]) -> bool:
        return any(t.get("effect") == NO_EXECUTE and t.get("key") in NO_EXECUTE_TAINTS.values() for t in items)
    return no_execute(taints) and not no_execute(taints_of(node))


def without_new_no_execute(node: Mapping[str, Any], taints: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """`taints` with the new NoExecute ones held back (the limiter said not yet); None if that is no change."""
    present = {(t.get("key"), t.get("effect")) for t in taints_of(node)}
    held = [t for t in taints if t.get("effect") != NO_EXECUTE or (t.get("key"), t.get("effect")) in present]
    return held if held != taints_of(node) else None
