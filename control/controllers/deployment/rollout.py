"""The rollout steps of the Deployment controller, decided from plain records: how far to scale the new
ReplicaSet up, the old ones down, and how to share a scaling of the Deployment among several ReplicaSets
while a rollout is under way. controller.py reads the ReplicaSets into these records, applies the steps
in order (one update and one ScalingReplicaSet event each) and writes status.

Upstream: pkg/controller/deployment/rolling.go (reconcileNewReplicaSet, reconcileOldReplicaSets,
cleanupUnhealthyReplicas, scaleDownOldReplicaSetsForRollingUpdate), sync.go (scale, isScalingEvent),
util/deployment_util.go (NewRSNewReplicas, IsSaturated, FindActiveOrLatest, GetProportion,
getReplicaSetFraction). A rolling update: the new set grows by at most maxSurge above
spec.replicas, old sets shrink while at least spec.replicas − maxUnavailable pods stay available).

The invariant the tables in tests/unit/controllers/test_deployment_rollout.py check: a step never lets
the total of spec.replicas exceed replicas + maxSurge (scaling up), and never scales old ReplicaSets
down below what keeps replicas − maxUnavailable pods available (counting the new set's unavailable
pods as lost, as upstream does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RS:
    """What a rollout step needs of one ReplicaSet."""

    name: str
    replicas: int  # spec.replicas
    available: int = 0  # status.availableReplicas
    created: str = ""  # creationTimestamp (RFC 3339 UTC; sorts as time)
    desired_annotation: int | None = None  # deployment.kubernetes.io/desired-replicas
    max_annotation: int | None = None  # deployment.kubernetes.io/max-replicas

    @property
    def age_order(self) -> tuple[str, str]:
        """ReplicaSetsByCreationTimestamp: older first, then by name."""
        return self.created, self.name


@dataclass(frozen=True)
class Deployment:
    """What a rollout step needs of the Deployment (surge and unavailable already resolved)."""

    replicas: int  # spec.replicas
    max_surge: int = 0
    max_unavailable: int = 0
    rolling: bool = True  # RollingUpdate (False: Recreate)
    status_replicas: int = 0  # status.replicas, what getReplicaSetFraction falls back to


@dataclass(frozen=True)
class Step:
    """Scale ReplicaSet `name` to `replicas`. `annotate` (the proportional scaling of sync.go's `scale`):
    the desired/max-replicas annotations are brought up to date even when the size stays; otherwise an
    unchanged size is no write at all (scaleReplicaSetAndRecordEvent)."""

    name: str
    replicas: int
    annotate: bool = False


def _total(rss: Sequence[RS]) -> int:
    return sum(rs.replicas for rs in rss)


def new_rs_new_replicas(d: Deployment, all_rss: Sequence[RS], new: RS) -> int:
    """The size the new ReplicaSet may grow to now (NewRSNewReplicas): Recreate goes straight to
    spec.replicas; a rolling update adds what keeps the total within replicas + maxSurge, and never more
    than spec.replicas for the new set."""
    if not d.rolling:
        return d.replicas
    current = _total(all_rss)
    max_total = d.replicas + d.max_surge
    if current >= max_total:
        return new.replicas
    scale_up = min(max_total - current, d.replicas - new.replicas)
    return new.replicas + scale_up


def reconcile_new(d: Deployment, all_rss: Sequence[RS], new: RS) -> Step | None:
    """reconcileNewReplicaSet: nothing when the new set has spec.replicas, down to spec.replicas when it
    has more, else up by what new_rs_new_replicas allows."""
    if new.replicas == d.replicas:
        return None
    if new.replicas > d.replicas:
        return Step(new.name, d.replicas)
    target = new_rs_new_replicas(d, all_rss, new)
    return Step(new.name, target) if target != new.replicas else None


def reconcile_old(d: Deployment, all_rss: Sequence[RS], old_rss: Sequence[RS], new: RS | None) -> list[Step]:
    """reconcileOldReplicaSets: how far old ReplicaSets shrink now.

    maxScaledDown = all pods − minAvailable − the new set's unavailable pods. First the unhealthy old
    replicas go (cleanupUnhealthyReplicas, oldest set first, never more than maxScaledDown), then
    available old replicas down to minAvailable (scaleDownOldReplicaSetsForRollingUpdate).
    """
    if _total(old_rss) == 0:
        return []
    min_available = d.replicas - d.max_unavailable
    new_unavailable = (new.replicas - new.available) if new is not None else 0
    max_scaled_down = _total(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return []
    steps: list[Step] = []
    sizes = {rs.name: rs.replicas for rs in old_rss}
    cleaned = 0
    for rs in sorted(old_rss, key=lambda r: r.age_order):
        if cleaned >= max_scaled_down:
            break
        if rs.replicas == 0 or rs.replicas == rs.available:
            continue
        count = min(max_scaled_down - cleaned, rs.replicas - rs.available)
        sizes[rs.name] = rs.replicas - count
        steps.append(Step(rs.name, sizes[rs.name]))
        cleaned += count
    available = sum(rs.available for rs in old_rss) + (new.available if new is not None else 0)
    if available <= min_available:
        return steps
    to_scale_down = available - min_available
    scaled = 0
    for rs in sorted(old_rss, key=lambda r: r.age_order):
        if scaled >= to_scale_down:
            break
        size = sizes[rs.name]
        if size == 0:
            continue
        count = min(size, to_scale_down - scaled)
        sizes[rs.name] = size - count
        steps.append(Step(rs.name, sizes[rs.name]))
        scaled += count
    return steps


def find_active_or_latest(new: RS | None, old_rss: Sequence[RS]) -> RS | None:
    """The one ReplicaSet with replicas, or with none active the new one (else the newest old one); None
    when several have replicas (FindActiveOrLatest)."""
    if new is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=lambda r: r.age_order, reverse=True)
    active = [rs for rs in ([*newest_first, new] if new is not None else newest_first) if rs.replicas > 0]
    if not active:
        return new if new is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def is_saturated(d: Deployment, new: RS | None) -> bool:
    """The new ReplicaSet runs all the Deployment's replicas, available, and was sized for this very
    spec.replicas (IsSaturated)."""
    if new is None or new.desired_annotation is None:
        return False
    return new.replicas == d.replicas and new.desired_annotation == d.replicas and new.available == d.replicas


def _round(value: float) -> int:
    """integer.RoundToInt32: half away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def replica_set_fraction(rs: RS, d: Deployment) -> int:
    """How many replicas `rs` gains (or loses) when the Deployment is scaled: its share of the new
    replicas + maxSurge in the proportion it had of the old max-replicas annotation (getReplicaSetFraction).
    Without the annotation the Deployment's status.replicas is the old total; when that is 0 too there is
    no proportion and the set keeps its size (upstream would divide by zero)."""
    if d.replicas == 0:
        return -rs.replicas
    deployment_replicas = d.replicas + d.max_surge
    annotated = rs.max_annotation if rs.max_annotation is not None else d.status_replicas
    if annotated == 0:
        return 0
    return _round(rs.replicas * deployment_replicas / annotated) - rs.replicas


def proportion(rs: RS, d: Deployment, to_add: int, added: int) -> int:
    """GetProportion: `rs`'s fraction, capped by what is left to add (or remove)."""
    if rs.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def scale(d: Deployment, new: RS | None, old_rss: Sequence[RS]) -> list[Step]:
    """sync.go `scale`: the steps of a scaling event (or of a paused Deployment).

    One active ReplicaSet (or none): it gets spec.replicas. A saturated new set: the old active ones go
    to 0. Otherwise, for a rolling update, replicas + maxSurge minus what the active sets have is shared
    among them in proportion to their size (largest first; when adding, newer first among equals; when
    removing, older first), the rounding leftover going to the first, never below 0.
    """
    latest = find_active_or_latest(new, old_rss)
    if latest is not None:
        return [] if latest.replicas == d.replicas else [Step(latest.name, d.replicas)]
    if is_saturated(d, new):
        return [Step(rs.name, 0) for rs in old_rss if rs.replicas > 0]
    if not d.rolling:
        return []
    active = [rs for rs in [*old_rss, *([new] if new is not None else [])] if rs.replicas > 0]
    allowed = d.replicas + d.max_surge if d.replicas > 0 else 0
    to_add = allowed - _total(active)
    if to_add > 0:  # ReplicaSetsBySizeNewer
        active.sort(key=lambda r: r.age_order, reverse=True)
        active.sort(key=lambda r: r.replicas, reverse=True)
    elif to_add < 0:  # ReplicaSetsBySizeOlder
        active.sort(key=lambda r: r.age_order)
        active.sort(key=lambda r: r.replicas, reverse=True)
    sizes: dict[str, int] = {}
    added = 0
    for rs in active:
        if to_add != 0:
            share = proportion(rs, d, to_add, added)
            sizes[rs.name] = rs.replicas + share
            added += share
        else:
            sizes[rs.name] = rs.replicas
    steps = []
    for index, rs in enumerate(active):
        if index == 0 and to_add != 0:
            sizes[rs.name] = max(sizes[rs.name] + to_add - added, 0)
        steps.append(Step(rs.name, sizes[rs.name], annotate=True))
    return steps


def is_scaling_event(d: Deployment, rss: Sequence[RS]) -> bool:
    """spec.replicas differs from what an active ReplicaSet was last sized for (isScalingEvent): a
    `kubectl scale`, not a template change."""
    return any(rs.desired_annotation is not None and rs.desired_annotation != d.replicas
               for rs in rss if rs.replicas > 0)


def recreate_scale_down(old_rss: Sequence[RS]) -> list[Step]:
    """Recreate: every active old ReplicaSet to 0 at once (scaleDownOldReplicaSetsForRecreate)."""
    return [Step(rs.name, 0) for rs in old_rss if rs.replicas > 0]
