"""What the DaemonSet controller decides, as pure functions over wire dicts: which nodes should run a daemon
pod, the pod it creates there, what to create and delete per node, the rolling-update steps and the status.

Upstream: pkg/controller/daemon/daemon_controller.go (`NodeShouldRunDaemonPod`, `predicates`, `NewPod`,
`podsShouldBeOnNode`, `updateDaemonSetStatus`, `podByCreationTimestampAndPhase`), daemon/update.go
(`rollingUpdate`, `findUpdatedPodsOnNode`, `updatedDesiredNodeCounts`, `getPatch`, `Match`),
daemon/util/daemonset_util.go (`AddOrUpdateDaemonPodTolerations`, `CreatePodTemplate`,
`ReplaceDaemonSetPodNodeNameNodeAffinity`, `GetTargetNodeName`, `IsPodUpdated`, `SurgeCount`,
`UnavailableCount`, `AllowsSurge`): one pod per eligible node, placed by the default scheduler through
node affinity; rolling update and OnDelete.

A daemon pod tolerates, besides its template's tolerations, the taints the node lifecycle controller and
the kubelet put on a node in trouble: not-ready and unreachable (NoExecute, with no tolerationSeconds, so
the taint eviction controller never evicts it), disk/memory/pid pressure and unschedulable (NoSchedule),
and network-unavailable for host-network pods. A node whose NoSchedule/NoExecute taints the pod does not
tolerate should not get one; a pod already there stays unless a NoExecute taint is not tolerated.

Departures: the deprecated `pod-template-generation` label is neither written nor read (pods are matched
to the current revision by the `controller-revision-hash` label only); nodes are walked in name order
(upstream ranges over a map) so decisions are reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.nodeaffinity import required_matches
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
    matching_toleration,
    taints_of,
)
from control.api.typed import DaemonSet, Pod, TypedObject
from control.apimachinery.meta import deep_copy
from control.controllers.shared.controller_utils import is_pod_available
from control.controllers.shared.helpers import scaled_value
from control.controllers.shared.history import CONTROLLER_REVISION_HASH_LABEL

Obj = Mapping[str, Any]
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"


def _exists(key: str, effect: str) -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": effect}


# AddOrUpdateDaemonPodTolerations, in upstream's order.
DAEMON_TOLERATIONS: tuple[dict[str, Any], ...] = (
    _exists(TAINT_NOT_READY, NO_EXECUTE),
    _exists(TAINT_UNREACHABLE, NO_EXECUTE),
    _exists(TAINT_DISK_PRESSURE, NO_SCHEDULE),
    _exists(TAINT_MEMORY_PRESSURE, NO_SCHEDULE),
    _exists(TAINT_PID_PRESSURE, NO_SCHEDULE),
    _exists(TAINT_UNSCHEDULABLE, NO_SCHEDULE),
)
HOST_NETWORK_TOLERATION = _exists(TAINT_NETWORK_UNAVAILABLE, NO_SCHEDULE)


# -- small accessors --------------------------------------------------------------------------------------


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _template_spec(ds: Obj) -> Mapping[str, Any]:
    return DaemonSet(ds).spec.template.spec.raw


def name_of(obj: Obj) -> str:
    return TypedObject(obj).metadata.name


def min_ready_seconds(ds: Obj) -> int:
    value = _spec(ds).get("minReadySeconds")
    return int(value) if isinstance(value, int) else 0


def strategy_type(ds: Obj) -> str:
    return DaemonSet(ds).spec.update_strategy.type or ROLLING_UPDATE


def revision_history_limit(ds: Obj) -> int:
    value = _spec(ds).get("revisionHistoryLimit")
    return int(value) if isinstance(value, int) else 10


def pod_hash(pod: Obj) -> str:
    return str(Pod(pod).metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) or "")


def is_deleting(obj: Obj) -> bool:
    return bool(TypedObject(obj).metadata.deletion_timestamp)


def is_pod_updated(pod: Obj, hash_: str) -> bool:
    """IsPodUpdated, by the hash label only (module notes)."""
    return bool(hash_) and pod_hash(pod) == hash_


# -- the daemon pod -------------------------------------------------------------------------------------


def _same_toleration(a: Obj, b: Obj) -> bool:
    """Toleration.MatchToleration: same key, operator, value and effect (tolerationSeconds aside)."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_daemon_tolerations(spec: dict[str, Any]) -> None:
    """AddOrUpdateDaemonPodTolerations (in place): each automatic toleration replaces a template one that
    matches it (so a not-ready toleration with tolerationSeconds loses its limit) or is appended."""
    wanted = list(DAEMON_TOLERATIONS) + ([HOST_NETWORK_TOLERATION] if spec.get("hostNetwork") else [])
    tolerations = list(spec.get("tolerations") or [])
    for toleration in wanted:
        for index, existing in enumerate(tolerations):
            if _same_toleration(existing, toleration):
                tolerations[index] = dict(toleration)
                break
        else:
            tolerations.append(dict(toleration))
    spec["tolerations"] = tolerations


def pin_to_node(spec: dict[str, Any], node_name: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity (in place): the required node affinity becomes exactly
    `metadata.name In [node]` (matchFields); preferred terms are kept. The scheduler then places the pod."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {}) or {}
    spec["affinity"] = affinity
    node_affinity = affinity.get("nodeAffinity") or {}
    affinity["nodeAffinity"] = node_affinity
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {**required, "nodeSelectorTerms": [term]}


def target_node_name(pod: Obj) -> str | None:
    """GetTargetNodeName: spec.nodeName, or for a pod not yet scheduled the node its affinity pins it to."""
    spec = _spec(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for expression in term.get("matchFields") or ():
            values = expression.get("values") or []
            if expression.get("key") == "metadata.name" and expression.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None


def pod_template(ds: Obj, hash_: str) -> dict[str, Any]:
    """CreatePodTemplate: the DaemonSet's template with the daemon tolerations and the hash label."""
    template = deep_copy(dict(DaemonSet(ds).spec.template.raw))
    metadata = template.setdefault("metadata", {})
    if hash_:
        metadata["labels"] = {**(metadata.get("labels") or {}), CONTROLLER_REVISION_HASH_LABEL: hash_}
    add_daemon_tolerations(template.setdefault("spec", {}))
    return template


def pod_for_node(template: Obj, node_name: str) -> dict[str, Any]:
    """The template (pod_template's) pinned to one node."""
    copy = deep_copy(dict(template))
    pin_to_node(copy.setdefault("spec", {}), node_name)
    return copy


# -- which nodes -------------------------------------------------------------------------------------


def _untolerated(taints: Iterable[Obj], tolerations: Sequence[Obj], effects: tuple[str, ...]) -> bool:
    return any(taint.get("effect") in effects and matching_toleration(tolerations, taint) is None
               for taint in taints)


def node_should_run(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should run a daemon pod, should keep one already running). A template's
    nodeName, nodeSelector or required node affinity that does not fit the node: neither. Untolerated
    NoSchedule/NoExecute taints: not run, but keep a running pod unless a NoExecute one is untolerated."""
    spec = dict(_template_spec(ds))
    node_name = name_of(node)
    if spec.get("nodeName") and spec["nodeName"] != node_name:
        return False, False
    if not required_matches({"spec": spec}, node):
        return False, False
    add_daemon_tolerations(spec)
    taints = taints_of(node)
    tolerations = spec["tolerations"]
    if _untolerated(taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)):
        return False, not _untolerated(taints, tolerations, (NO_EXECUTE,))
    return True, True


def creation_and_phase_order(pod: Obj) -> tuple[int, str, str]:
    """podByCreationTimestampAndPhase: scheduled pods first, then older, then by name."""
    metadata = pod.get("metadata") or {}
    return (0 if _spec(pod).get("nodeName") else 1, str(metadata.get("creationTimestamp") or ""),
            str(metadata.get("name") or ""))


def group_by_node(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """getNodesToDaemonPods: claimed pods by their target node (pods with none are left out)."""
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        node = target_node_name(pod)
        if node is not None:
            by_node.setdefault(node, []).append(pod)
    return by_node


# -- manage: per node ---------------------------------------------------------------------------------


@dataclass
class NodePlan:
    """podsShouldBeOnNode's answer for one node: create a pod there?, pods to delete, and failed pods
    (deleted too, but through the controller's per-node back-off, with a FailedDaemonPod event)."""

    create: bool = False
    delete: list[Obj] = field(default_factory=list)
    failed: list[Obj] = field(default_factory=list)


def allows_surge(ds: Obj) -> bool:
    """AllowsSurge: a RollingUpdate with a maxSurge that is not 0 / "0%"."""
    if strategy_type(ds) != ROLLING_UPDATE:
        return False
    surge = _rolling(ds).get("maxSurge")
    return surge not in (None, 0, "0%", "0")


def plan_node(node: Obj, pods: Sequence[Obj] | None, ds: Obj, hash_: str, now: datetime) -> NodePlan:
    """podsShouldBeOnNode for one node; `pods` None when no claimed pod targets it at all."""
    should_run, should_continue = node_should_run(node, ds)
    plan = NodePlan()
    if should_run and pods is None:
        plan.create = True
        return plan
    if not should_continue:
        plan.delete = [pod for pod in pods or () if not is_deleting(pod)]
        return plan
    running = []
    for pod in pods or ():
        if is_deleting(pod):
            continue
        phase = Pod(pod).status.phase
        if phase == "Failed":
            plan.failed.append(pod)
        elif phase == "Succeeded":
            plan.delete.append(pod)
        else:
            running.append(pod)
    running.sort(key=creation_and_phase_order)
    if not allows_surge(ds):
        plan.delete.extend(running[1:])  # more than one: keep the oldest
        return plan
    if len(running) <= 1:
        plan.create = not running and should_run
        return plan
    oldest_new = oldest_old = None
    for pod in running:
        if pod_hash(pod) == hash_:
            if oldest_new is None:
                oldest_new = pod
                continue
        elif oldest_old is None:
            oldest_old = pod
            continue
        plan.delete.append(pod)
    if oldest_new is not None and oldest_old is not None and (
            not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready_seconds(ds), now)):
        plan.delete.append(oldest_old)
    return plan


# -- rolling update -----------------------------------------------------------------------------------


def _rolling(ds: Obj) -> Mapping[str, Any]:
    return DaemonSet(ds).spec.update_strategy.rolling_update or {}


def surge_and_unavailable(ds: Obj, desired: int) -> tuple[int, int]:
    """SurgeCount and UnavailableCount (percentages of `desired` rounded up), with updatedDesiredNodeCounts'
    fallback: neither allowed yet pods to run → maxUnavailable 1."""
    if strategy_type(ds) != ROLLING_UPDATE:
        return 0, 0
    rolling = _rolling(ds)
    surge = scaled_value(rolling.get("maxSurge"), desired, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable"), desired, round_up=True)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def updated_pods_on_node(pods: Iterable[Obj], hash_: str) -> tuple[Obj | None, Obj | None, bool]:
    """findUpdatedPodsOnNode: (new pod, old pod, ok); not ok when a node has two of either kind."""
    new = old = None
    for pod in pods:
        if is_deleting(pod):
            continue
        if is_pod_updated(pod, hash_):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


@dataclass(frozen=True)
class RollingStep:
    """One rollingUpdate round: old pods to delete and nodes to create a new pod on (surge)."""

    delete: tuple[str, ...] = ()
    create_on: tuple[str, ...] = ()


def rolling_update(ds: Obj, nodes: Sequence[Obj], by_node: Mapping[str, Sequence[Obj]], hash_: str,
                   now: datetime) -> RollingStep:
    """daemon/update.go rollingUpdate (module notes): without surge, delete old pods while the unavailable
    count stays within maxUnavailable (old unavailable pods always); with surge, create new pods beside
    old ones up to maxSurge and delete an old pod once its node's new one is available."""
    ready_for = min_ready_seconds(ds)
    by_node = {name: list(pods) for name, pods in by_node.items()}
    node_by_name = {name_of(node): node for node in nodes}
    desired = 0
    for node in nodes:
        if node_should_run(node, ds)[0]:
            desired += 1
            by_node.setdefault(name_of(node), [])
    surge, unavailable = surge_and_unavailable(ds, desired)
    if surge == 0:
        unavailable_count = 0
        replacements: list[str] = []
        candidates: list[str] = []
        for name in sorted(by_node):
            new, old, ok = updated_pods_on_node(by_node[name], hash_)
            if not ok or (old is None) == (new is None):
                unavailable_count += 1  # the manage loop creates or prunes here
            elif new is not None:
                if not is_pod_available(new, ready_for, now):
                    unavailable_count += 1
            elif old is not None and not is_pod_available(old, ready_for, now):
                replacements.append(name_of(old))
            elif old is not None and unavailable_count < unavailable:
                candidates.append(name_of(old))
        remaining = max(0, min(unavailable - unavailable_count, len(candidates)))
        return RollingStep(delete=tuple(replacements + candidates[:remaining]))
    to_delete: list[str] = []
    should_not_run: list[str] = []
    candidate_nodes: list[str] = []
    allowed_nodes: list[str] = []
    surge_count = available = 0
    for name in sorted(by_node):
        new, old, ok = updated_pods_on_node(by_node[name], hash_)
        if not ok:
            surge_count += 1
            continue
        counted: Obj | None = old if old is not None else new
        if counted is not None and is_pod_available(counted, ready_for, now):
            available += 1
        if old is None:
            continue
        if new is None:
            target = node_by_name.get(name)
            runs = target is not None and node_should_run(target, ds)[0]
            if not is_pod_available(old, ready_for, now):
                if not runs:
                    to_delete.append(name_of(old))
                else:
                    allowed_nodes.append(name)
            elif not runs:
                should_not_run.append(name_of(old))
            elif surge_count < surge:
                candidate_nodes.append(name)
            continue
        if not is_pod_available(new, ready_for, now):
            surge_count += 1
            continue
        to_delete.append(name_of(old))
    deletable = min(available - desired, len(should_not_run))
    if deletable > 0:
        to_delete.extend(should_not_run[:deletable])
    remaining = max(0, min(surge - surge_count, len(candidate_nodes)))
    return RollingStep(delete=tuple(to_delete), create_on=tuple(allowed_nodes + candidate_nodes[:remaining]))


# -- status -------------------------------------------------------------------------------------------


def calculate_status(ds: Obj, nodes: Iterable[Obj], by_node: Mapping[str, Sequence[Obj]], hash_: str,
                     now: datetime) -> dict[str, int]:
    """updateDaemonSetStatus's counts: per node that should run a pod, its oldest pod decides ready,
    available and updated; a node that should not but has pods is misscheduled."""
    desired = current = ready = available = updated = misscheduled = 0
    for node in nodes:
        should_run = node_should_run(node, ds)[0]
        pods = sorted(by_node.get(name_of(node)) or (), key=creation_and_phase_order)
        if not should_run:
            misscheduled += 1 if pods else 0
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = pods[0]
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready_seconds(ds), now):
                available += 1
        if is_pod_updated(pod, hash_):
            updated += 1
    status = {"desiredNumberScheduled": desired, "currentNumberScheduled": current, "numberReady": ready,
              "numberMisscheduled": misscheduled}
    # omitempty upstream: written only when not zero
    for key, value in (("updatedNumberScheduled", updated), ("numberAvailable", available),
                       ("numberUnavailable", desired - available)):
        if value:
            status[key] = value
    return status


# -- history ------------------------------------------------------------------------------------------


def history_patch(ds: Obj) -> dict[str, Any]:
    """getPatch: the strategic merge patch that puts this template back (`$patch: replace`): the data of
    the DaemonSet's ControllerRevisions, which `kubectl rollout undo` applies as it is."""
    template = deep_copy(dict(DaemonSet(ds).spec.template.raw))
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def matches_history(ds: Obj, revision: Obj) -> bool:
    """Match: the revision's data is this DaemonSet's patch."""
    return revision.get("data") == history_patch(ds)
