"""Which dead containers and sandboxes go: upstream pkg/kubelet/kuberuntime/kuberuntime_gc.go
(evictContainers, evictSandboxes) and pkg/kubelet/container/container_gc.go (the policy).
Pure: `select_evictable(records, policy, now, known_pods=...)` returns a plan; the manager
(nodeagent/gc/manager.py) carries it out through the runtime.

Rules, in upstream's order:
  1. only this kubelet's containers are listed at all (the runtime lists by the node label);
  2. evictable = not running and created at least `min_age` ago; evictable containers are grouped in
     evict units keyed by (pod uid, container name), newest first (attempt, then creation time);
  3. unidentified containers (our node label, identity unreadable) go first: no pod can claim them;
  4. when all pod sources are ready (`known_pods` is not None), every evictable container of a pod no
     source knows (deleted) goes, whatever the limits;
  5. `max_per_pod_container` >= 0: each unit keeps its newest that many (default 1: the previous
     instance `kubectl logs --previous` reads and the restart count lives on);
  6. `max_containers` >= 0 and more evictable containers than that: each unit is cut to
     max(1, max_containers // units), then, if still too many, the oldest of all (by creation time, as
     upstream did before; upstream now sorts this round by attempt first, which compares restart counts of
     unrelated containers) go until it fits;
  7. sandboxes: a sandbox is active while it runs or any container not removed by this plan still
     references it; inactive sandboxes of deleted pods go, and a live pod keeps its newest sandbox.
     (Sandboxes have no MinAge, as upstream.)
Containers in an unknown state are stopped before removal (`stop_first`), as upstream does.

Departures: upstream's evictNonDeletedPods (the eviction manager freeing disk for terminated pods) and
the pod log directories are not here (slimkube reads logs from Docker). Unidentified containers do not
wait for the sources, as the dockertools GC before CRI did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from nodeagent.runtime.labels import Kind
from nodeagent.runtime.types import ContainerRecord, ContainerState

DEFAULT_MIN_AGE = 0.0  # --minimum-container-ttl-duration
DEFAULT_MAX_PER_POD_CONTAINER = 1  # --maximum-dead-containers-per-container
DEFAULT_MAX_CONTAINERS = -1  # --maximum-dead-containers


@dataclass(frozen=True)
class ContainerGCPolicy:
    """upstream kubecontainer.GCPolicy: a negative limit means no limit."""

    min_age: float = DEFAULT_MIN_AGE
    max_per_pod_container: int = DEFAULT_MAX_PER_POD_CONTAINER
    max_containers: int = DEFAULT_MAX_CONTAINERS


@dataclass(frozen=True)
class Eviction:
    """One container to remove, and why (for the log)."""

    id: str
    pod_uid: str
    name: str
    reason: str
    stop_first: bool = False  # its state is unknown: it may still run (upstream kills it first)
    grace_period: int = 30


@dataclass(frozen=True)
class ContainerGCPlan:
    containers: tuple[Eviction, ...] = ()  # in removal order
    sandboxes: tuple[str, ...] = ()  # removed after the containers


Unit = tuple[str, str]  # (pod uid, container name)


def _newest_first(records: Iterable[ContainerRecord]) -> list[ContainerRecord]:
    """Within one unit or pod, upstream byAttempt: higher attempt first, then the later creation time."""
    return sorted(records, key=lambda r: (r.attempt, r.created), reverse=True)


def _newest_created_first(records: Iterable[ContainerRecord]) -> list[ContainerRecord]:
    """Across units: by creation time (attempts of different containers do not compare)."""
    return sorted(records, key=lambda r: (r.created, r.attempt), reverse=True)


def _eviction(record: ContainerRecord, reason: str) -> Eviction:
    return Eviction(id=record.id, pod_uid=record.pod_uid, name=record.name, reason=reason,
                    stop_first=record.state is ContainerState.UNKNOWN, grace_period=record.grace_period)


def _unidentified(record: ContainerRecord) -> bool:
    return record.kind is None or not record.pod_uid or (record.kind is Kind.CONTAINER and not record.name)


def _remove_oldest(unit: list[ContainerRecord], to_remove: int, reason: str, out: list[Eviction], *,
                   order: Callable[[Iterable[ContainerRecord]], list[ContainerRecord]] = _newest_first,
                   ) -> list[ContainerRecord]:
    """upstream removeOldestN: the oldest `to_remove` of `unit` go, oldest first; the rest is returned."""
    keep = max(0, len(unit) - to_remove)
    ordered = order(unit)
    out.extend(_eviction(r, reason) for r in reversed(ordered[keep:]))
    return ordered[:keep]


def _enforce_per_unit(units: dict[Unit, list[ContainerRecord]], limit: int, reason: str,
                      out: list[Eviction]) -> None:
    for key in sorted(units):
        if len(units[key]) > limit:
            units[key] = _remove_oldest(units[key], len(units[key]) - limit, reason, out)


def select_evictable(records: Sequence[ContainerRecord], policy: ContainerGCPolicy, now: float, *,
                     known_pods: frozenset[str] | None) -> ContainerGCPlan:
    """The containers and sandboxes to remove now. `known_pods` is the uids some pod source (or a pod
    worker still finishing one) has, or None while the sources are not all ready: then no pod counts as
    deleted. See the module notes for the rules."""
    newest_gc_time = now - policy.min_age
    evictions: list[Eviction] = []
    units: dict[Unit, list[ContainerRecord]] = {}
    unidentified = []
    for record in records:
        if record.kind is Kind.SANDBOX and not _unidentified(record):
            continue
        if record.state is ContainerState.RUNNING or record.created > newest_gc_time:
            continue
        if _unidentified(record):
            unidentified.append(record)
        else:
            units.setdefault((record.pod_uid, record.name), []).append(record)
    evictions.extend(_eviction(r, "unidentified") for r in sorted(unidentified, key=lambda r: r.created))

    if known_pods is not None:
        for key in sorted(units):
            if key[0] not in known_pods:
                unit = units.pop(key)
                _remove_oldest(unit, len(unit), "pod deleted", evictions)

    if policy.max_per_pod_container >= 0:
        _enforce_per_unit(units, policy.max_per_pod_container, "maxPerPodContainer", evictions)

    total = sum(len(unit) for unit in units.values())
    if policy.max_containers >= 0 and total > policy.max_containers:
        share = max(1, policy.max_containers // len(units))
        _enforce_per_unit(units, share, "maxContainers share", evictions)
        total = sum(len(unit) for unit in units.values())
        if total > policy.max_containers:
            flattened = [r for unit in units.values() for r in unit]
            _remove_oldest(flattened, total - policy.max_containers, "maxContainers", evictions,
                           order=_newest_created_first)

    removed = {e.id for e in evictions}
    return ContainerGCPlan(containers=tuple(evictions),
                           sandboxes=tuple(_evictable_sandboxes(records, removed, known_pods)))


def _evictable_sandboxes(records: Sequence[ContainerRecord], removed: set[str],
                         known_pods: frozenset[str] | None) -> list[str]:
    """upstream evictSandboxes, over the containers left once this plan's removals are done."""
    referenced = {r.sandbox_id for r in records if r.kind is Kind.CONTAINER and r.id not in removed and r.sandbox_id}
    by_pod: dict[str, list[ContainerRecord]] = {}
    for record in records:
        if record.kind is Kind.SANDBOX and not _unidentified(record):
            by_pod.setdefault(record.pod_uid, []).append(record)
    selected = []
    for uid in sorted(by_pod):
        sandboxes = _newest_first(by_pod[uid])
        deleted = known_pods is not None and uid not in known_pods
        for sandbox in sandboxes[0 if deleted else 1:]:
            active = sandbox.state is ContainerState.RUNNING or sandbox.id in referenced
            if not active:
                selected.append(sandbox.id)
    return selected
