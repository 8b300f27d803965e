"""What replica controllers decide about pods, as pure functions: which pods count (active), which are
available, which to delete first when there are too many, how creates are batched, and what a pod made
from a template looks like.

Upstream: pkg/controller/controller_utils.go (`IsPodActive`/`FilterActivePods`, `ActivePodsWithRanks`
and its `Less`, `podReadyTime`, `maxContainerRestarts`, `logarithmicRankDiff`, `getPodsPrefix`,
`GetPodFromTemplate`, `SlowStartInitialBatchSize`), pkg/api/v1/pod (`IsPodAvailable`),
pkg/apis/core/helper (`GetDeletionCostFromPodAnnotations`), and pkg/controller/replicaset/replica_set.go
(`getPodsToDelete`, `getPodsRankedByRelatedPodsOnSameNode`, `slowStartBatch`).

The deletion ranking (`deletion_order`), first rule that tells two pods apart wins; "first" = deleted first:
1. not scheduled (no spec.nodeName) before scheduled;
2. phase Pending before Unknown before Running (any other phase ranks with Pending, as Go's map zero);
3. not Ready before Ready;
4. lower `controller.kubernetes.io/pod-deletion-cost` before higher (PodDeletionCost, on by default);
5. more active related pods on the same node ("doubled up") before fewer;
6. both Ready: Ready for a shorter time before longer (no ready time first);
7. more restarts of its most restarted container before fewer;
8. created more recently before older (no creation time first).
In 6 and 8 the times are compared on a log2 scale of their age at `now` (LogarithmicScaleDown, on by
default), and pods in the same bucket are ordered by UID, a pseudo-random but stable order.

No clock is read here: callers pass `now`. The slow-start runner takes the work as a callable and runs one
batch at a time on a thread pool, as upstream runs one goroutine per call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import Pod, PodTemplateSpec
from control.apimachinery.meta import deep_copy, get_condition, timestamp_or_none

Obj = Mapping[str, Any]

BURST_REPLICAS = 500  # upstream BurstReplicas: creates or deletes of one sync
SLOW_START_INITIAL_BATCH_SIZE = 1  # upstream SlowStartInitialBatchSize
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_MAX_NAME_PREFIX = 58  # a generated name adds 5 characters and must stay a 63-character DNS label


def is_pod_active(pod: Obj) -> bool:
    """Not Succeeded, not Failed, not being deleted (IsPodActive)."""
    phase = Pod(pod).status.phase
    return phase not in ("Succeeded", "Failed") and not Pod(pod).metadata.deletion_timestamp


def filter_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [pod for pod in pods if is_pod_active(pod)]



def pod_ready_time(pod: Obj) -> datetime | None:
    """When the pod last became Ready (podReadyTime): None when it is not Ready or the time is unknown."""
    if not is_pod_ready(pod):
        return None
    condition = get_condition(pod, "Ready") or {}
    return timestamp_or_none(condition.get("lastTransitionTime"))


def is_pod_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least `min_ready_seconds` (podutil.IsPodAvailable)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = pod_ready_time(pod)
    return since is not None and (now - since).total_seconds() > min_ready_seconds


def max_container_restarts(pod: Obj) -> int:
    return max((s.restart_count for s in Pod(pod).status.container_statuses), default=0)


def deletion_cost(pod: Obj) -> int:
    """The pod-deletion-cost annotation; 0 when absent or not an int32 (GetDeletionCostFromPodAnnotations)."""
    text = Pod(pod).metadata.annotations.get(POD_DELETION_COST)
    try:
        value = int(str(text).strip()) if text is not None else 0
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def _log_rank(moment: datetime, now: datetime) -> int:
    """floor(log2(age in nanoseconds)), -1 for an age <= 0 (logarithmicRankDiff's ranks)."""
    nanos = (now - moment).total_seconds() * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _newer_first(t1: datetime | None, t2: datetime | None, uid1: str, uid2: str, now: datetime | None) -> int:
    """-1 if the first time sorts first: a missing time first, then the later time (afterOrZero), on the
    log scale at `now` with UIDs breaking a tie; 0 when equal."""
    if t1 == t2:
        return 0
    if t1 is None or t2 is None:
        return -1 if t1 is None else 1
    if now is None:
        return -1 if t1 > t2 else 1
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return -1 if uid1 < uid2 else (1 if uid1 > uid2 else 0)
    return -1 if diff < 0 else 1


def _compare(a: tuple[Obj, int], b: tuple[Obj, int], now: datetime | None) -> int:
    """ActivePodsWithRanks.Less as a three-way comparison (module notes, rules 1-8)."""
    (p1, rank1), (p2, rank2) = a, b
    v1, v2 = Pod(p1), Pod(p2)
    node1, node2 = v1.spec.node_name, v2.spec.node_name
    if node1 != node2 and (not node1 or not node2):
        return -1 if not node1 else 1
    phase1 = _PHASE_ORDINAL.get(v1.status.phase, 0)
    phase2 = _PHASE_ORDINAL.get(v2.status.phase, 0)
    if phase1 != phase2:
        return -1 if phase1 < phase2 else 1
    ready1, ready2 = is_pod_ready(p1), is_pod_ready(p2)
    if ready1 != ready2:
        return -1 if not ready1 else 1
    cost1, cost2 = deletion_cost(p1), deletion_cost(p2)
    if cost1 != cost2:
        return -1 if cost1 < cost2 else 1
    if rank1 != rank2:
        return -1 if rank1 > rank2 else 1
    uid1, uid2 = v1.metadata.uid, v2.metadata.uid
    if ready1 and ready2:
        order = _newer_first(pod_ready_time(p1), pod_ready_time(p2), uid1, uid2, now)
        if order:
            return order
    restarts1, restarts2 = max_container_restarts(p1), max_container_restarts(p2)
    if restarts1 != restarts2:
        return -1 if restarts1 > restarts2 else 1
    created1 = timestamp_or_none(v1.metadata.creation_timestamp)
    created2 = timestamp_or_none(v2.metadata.creation_timestamp)
    return _newer_first(created1, created2, uid1, uid2, now)


def deletion_order(pods: Sequence[Obj], ranks: Sequence[int], *, now: datetime | None) -> list[Obj]:
    """`pods` sorted so the ones to delete first come first; `ranks[i]` is pod i's "doubled up" rank
    (module notes); `now` None compares times without the log scale."""
    if len(pods) != len(ranks):
        raise ValueError("one rank per pod")
    def compare(a: tuple[Obj, int], b: tuple[Obj, int]) -> int:
        return _compare(a, b, now)

    key = functools.cmp_to_key(compare)
    return [pod for pod, _ in sorted(zip(pods, ranks, strict=True), key=key)]


def ranks_by_related_pods_on_node(pods: Sequence[Obj], related: Iterable[Obj]) -> list[int]:
    """Each pod's rank: how many active `related` pods share its node (getPodsRankedByRelatedPodsOnSameNode)."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = Pod(pod).spec.node_name
            on_node[node] = on_node.get(node, 0) + 1
    return [on_node.get(Pod(pod).spec.node_name, 0) for pod in pods]


def pods_to_delete(pods: Sequence[Obj], related: Iterable[Obj], diff: int, *, now: datetime | None) -> list[Obj]:
    """The `diff` pods a controller with too many deletes (getPodsToDelete): all of them when diff covers
    every pod, else the first `diff` of the deletion order."""
    if diff >= len(pods):
        return list(pods)
    return deletion_order(pods, ranks_by_related_pods_on_node(pods, related), now=now)[:diff]


def slow_start_batches(count: int, initial: int = SLOW_START_INITIAL_BATCH_SIZE) -> list[int]:
    """The batch sizes of `count` calls: initial, then doubling, the last one what is left (1, 2, 4, ...)."""
    sizes: list[int] = []
    size = min(count, initial)
    remaining = count
    while size > 0:
        sizes.append(size)
        remaining -= size
        size = min(2 * size, remaining)
    return sizes


def slow_start_batch(count: int, fn: Callable[[], None], *, initial: int = SLOW_START_INITIAL_BATCH_SIZE,
                     max_workers: int = 64) -> tuple[int, BaseException | None]:
    """Call `fn` `count` times in `slow_start_batches`, each batch concurrently; after a batch with a
    failure the rest are skipped (slowStartBatch). Returns (successful calls, the first error or None)."""
    successes = 0
    batches = slow_start_batches(count, initial)
    if not batches:
        return 0, None
    with ThreadPoolExecutor(max_workers=min(max_workers, max(batches)), thread_name_prefix="slow-start") as pool:
        for size in batches:
            futures = [pool.submit(fn) for _ in range(size)]
            errors = [error for error in (future.exception() for future in futures) if error is not None]
            successes += size - len(errors)
            if errors:
                return successes, errors[0]
    return successes, None


def pods_prefix(controller_name: str) -> str:
    """The generateName of the pods a controller makes: `<name>-` (getPodsPrefix; a name too long to take
    the random suffix is used as it is and the API server shortens it)."""
    prefix = f"{controller_name}-"
    return prefix if len(prefix) <= _MAX_NAME_PREFIX else controller_name


def pod_from_template(template: Obj, *, controller_name: str, controller_ref: Mapping[str, Any]) -> dict[str, Any]:
    """The pod a controller creates from its template (GetPodFromTemplate): the template's labels,
    annotations and finalizers, its spec, the controller's ownerReference, `generateName` `<name>-` (the
    API server appends 5 random characters, as upstream's)."""
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {"generateName": pods_prefix(controller_name),
                                "ownerReferences": [dict(controller_ref)]}
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = deep_copy(template_meta[key])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": deep_copy(dict(PodTemplateSpec(template).spec.raw))}
