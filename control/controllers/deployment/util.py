"""What the Deployment controller knows about ReplicaSets, read from wire dicts without I/O: the
pod-template-hash, which ReplicaSet is the new one, revisions and their annotations, int-or-percent
fenceposts, sort orders and replica sums.

Upstream: pkg/controller/deployment/util/deployment_util.go (FindNewReplicaSet, FindOldReplicaSets,
EqualIgnoreHash, MaxRevision, LastRevision, SetNewReplicaSetAnnotations, SetReplicasAnnotations,
ReplicasAnnotationsNeedUpdate, copyDeploymentAnnotationsToReplicaSet, SetDeploymentAnnotationsTo,
ResolveFenceposts, MaxSurge, MaxUnavailable, the Get*ReplicaCountForReplicaSets sums), pkg/controller
(ReplicaSetsByCreationTimestamp, ReplicaSetsBySizeOlder/Newer, FilterActiveReplicaSets). The hash
label keeps the ReplicaSets of one Deployment apart.

The hash itself (ComputeHash) and int-or-percent values are shared/helpers.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from control.api.typed import Deployment, ReplicaSet
from control.apimachinery.meta import annotations_of
from control.controllers.shared.helpers import scaled_value, template_without_hash

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED_CONFIG_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000  # upstream maxRevHistoryLengthInChars
MAX_INT32 = 2**31 - 1  # progressDeadlineSeconds / revisionHistoryLimit of "none" (upstream math.MaxInt32)

# Annotations of a Deployment never copied to its ReplicaSets, nor back on rollback (annotationsToSkip).
ANNOTATIONS_TO_SKIP = frozenset({LAST_APPLIED_CONFIG_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
                                 DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, DEPRECATED_ROLLBACK_TO})

Obj = Mapping[str, Any]
R = TypeVar("R", bound=Mapping[str, Any])


# -- small accessors ------------------------------------------------------------------------------------


def spec_replicas(obj: Obj) -> int:
    """spec.replicas of a Deployment or ReplicaSet (defaulted to 1 by the server; 0 when absent here)."""
    value = ReplicaSet(obj).spec.replicas
    return int(value) if isinstance(value, int) else 0


def status_int(obj: Obj, field: str) -> int:
    value = (obj.get("status") or {}).get(field)
    return int(value) if isinstance(value, int) else 0


def uid_of(obj: Obj) -> str:
    return ReplicaSet(obj).metadata.uid


def name_of(obj: Obj) -> str:
    return ReplicaSet(obj).metadata.name


def is_deleting(obj: Obj) -> bool:
    return bool(ReplicaSet(obj).metadata.deletion_timestamp)


# -- the pod-template-hash ----------------------------------------------------------------------------


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """Whether two pod templates are equal but for the pod-template-hash label (EqualIgnoreHash)."""
    return bool(template_without_hash(template1) == template_without_hash(template2))


# -- new and old ReplicaSets --------------------------------------------------------------------------


def creation_order(rs: Obj) -> tuple[str, str]:
    """ReplicaSetsByCreationTimestamp: older first, then by name (RFC 3339 UTC text sorts as time)."""
    metadata = rs.get("metadata") or {}
    return str(metadata.get("creationTimestamp") or ""), str(metadata.get("name") or "")


def by_creation(rss: Iterable[R]) -> list[R]:
    return sorted(rss, key=creation_order)


def find_new_replica_set(deployment: Obj, rss: Iterable[R]) -> R | None:
    """The oldest ReplicaSet whose template equals the Deployment's but for the hash (FindNewReplicaSet:
    after some upgrades two may match, and the oldest is chosen deterministically)."""
    template = Deployment(deployment).spec.template.raw
    return next((rs for rs in by_creation(rss) if equal_ignore_hash(ReplicaSet(rs).spec.template.raw, template)),
                None)


def find_old_replica_sets(deployment: Obj, rss: Iterable[R]) -> tuple[list[R], list[R]]:
    """(old ones with replicas, all old ones): every ReplicaSet but the new one (FindOldReplicaSets)."""
    items = list(rss)
    new = find_new_replica_set(deployment, items)
    old = [rs for rs in items if new is None or uid_of(rs) != uid_of(new)]
    return [rs for rs in old if spec_replicas(rs) != 0], old


def filter_active(rss: Iterable[R | None]) -> list[R]:
    """ReplicaSets with spec.replicas > 0 (FilterActiveReplicaSets)."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


def replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of spec.replicas (GetReplicaCountForReplicaSets)."""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def actual_replica_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "replicas") for rs in rss if rs is not None)


def ready_replica_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "readyReplicas") for rs in rss if rs is not None)


def available_replica_count(rss: Iterable[Obj | None]) -> int:
    return sum(status_int(rs, "availableReplicas") for rs in rss if rs is not None)


# -- revisions ----------------------------------------------------------------------------------------


def revision(obj: Obj) -> int | None:
    """The revision annotation as a number; None when missing or not a number (Revision's error)."""
    try:
        return int(annotations_of(obj).get(REVISION_ANNOTATION, ""))
    except ValueError:
        return None


def max_revision(rss: Iterable[Obj | None]) -> int:
    return max((v for rs in rss if rs is not None and (v := revision(rs)) is not None), default=0)


def last_revision(rss: Iterable[Obj | None]) -> int:
    """The second highest revision: what `rollbackTo: 0` means (LastRevision)."""
    top = second = 0
    for rs in rss:
        value = revision(rs) if rs is not None else None
        if value is None:
            continue
        if value >= top:
            top, second = value, top
        elif value > second:
            second = value
    return second


def revision_order(rs: Obj) -> tuple[int, str, str]:
    """ReplicaSetsByRevision: lower revision first (unparsable as 0), then by creation."""
    return (revision(rs) or 0, *creation_order(rs))


def copy_deployment_annotations(deployment: Obj, rs: dict[str, Any]) -> bool:
    """Copy the Deployment's annotations (but the skipped ones) onto `rs` in place; True if any changed."""
    changed = False
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    for key, value in annotations_of(deployment).items():
        if key in ANNOTATIONS_TO_SKIP or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    return changed


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    """Write desired-replicas and max-replicas on `rs` in place; True if either changed."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(max_replicas))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    annotations = annotations_of(rs)
    return (annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired)
            or annotations.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas))


def int_annotation(rs: Obj, key: str) -> int | None:
    """An integer annotation (desired-replicas, max-replicas), None when missing or malformed."""
    try:
        return int(annotations_of(rs)[key])
    except (KeyError, ValueError):
        return None


def set_new_replica_set_annotations(deployment: Obj, rs: dict[str, Any], new_revision: str, *, exists: bool,
                                    max_history_chars: int = MAX_REV_HISTORY_LENGTH_IN_CHARS) -> bool:
    """SetNewReplicaSetAnnotations, in place: the Deployment's annotations, the revision raised to
    `new_revision` (the old one kept in revision-history: this ReplicaSet is being rolled back to), and
    for a ReplicaSet about to be created the replicas annotations. True if anything changed."""
    changed = copy_deployment_annotations(deployment, rs)
    annotations = rs["metadata"]["annotations"]
    old_revision = annotations.get(REVISION_ANNOTATION)
    try:
        old_value = int(old_revision) if old_revision is not None else 0
    except ValueError:
        if old_revision != "":
            return False
        old_value = 0
    try:
        new_value = int(new_revision)
    except ValueError:
        return False
    if old_value < new_value:
        annotations[REVISION_ANNOTATION] = new_revision
        changed = True
        if old_revision is not None:
            history = annotations.get(REVISION_HISTORY_ANNOTATION, "")
            old_revisions = history.split(",")
            if not old_revisions[0]:
                annotations[REVISION_HISTORY_ANNOTATION] = old_revision
            else:
                total = len(history) + len(old_revision) + 1
                start = 0
                while total > max_history_chars and start < len(old_revisions):
                    total -= len(old_revisions[start]) + 1
                    start += 1
                if total <= max_history_chars:
                    annotations[REVISION_HISTORY_ANNOTATION] = ",".join([*old_revisions[start:], old_revision])
    if not exists:
        replicas = spec_replicas(deployment)
        changed = set_replicas_annotations(rs, replicas, replicas + max_surge(deployment)) or changed
    return changed


def set_deployment_annotations_to(deployment: dict[str, Any], rs: Obj) -> None:
    """On rollback the Deployment takes the ReplicaSet's annotations, keeping only its own skipped ones
    (SetDeploymentAnnotationsTo), so the change-cause of the revision comes back with its template."""
    metadata = deployment.setdefault("metadata", {})
    kept = {k: v for k, v in (metadata.get("annotations") or {}).items() if k in ANNOTATIONS_TO_SKIP}
    kept.update({k: v for k, v in annotations_of(rs).items() if k not in ANNOTATIONS_TO_SKIP})
    metadata["annotations"] = kept


# -- int-or-percent fenceposts ------------------------------------------------------------------------


def resolve_fenceposts(max_surge_value: int | str | None, max_unavailable_value: int | str | None,
                       desired: int) -> tuple[int, int]:
    """(surge, unavailable): surge rounded up, unavailable down; both 0 would never move, so then
    unavailable is 1 (ResolveFenceposts)."""
    surge = scaled_value(max_surge_value, desired, round_up=True)
    unavailable = scaled_value(max_unavailable_value, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling(deployment: Obj) -> Mapping[str, Any] | None:
    strategy = Deployment(deployment).spec.strategy
    if (strategy.type or "RollingUpdate") != "RollingUpdate":
        return None
    return strategy.rolling_update or {}


def is_rolling_update(deployment: Obj) -> bool:
    return _rolling(deployment) is not None


def _fenceposts(deployment: Obj) -> tuple[int, int]:
    rolling = _rolling(deployment)
    if rolling is None:
        return 0, 0
    try:
        return resolve_fenceposts(rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%"),
                                  spec_replicas(deployment))
    except ValueError:
        return 0, 0  # upstream ignores the error: an invalid value counts as 0


def max_surge(deployment: Obj) -> int:
    """How many pods above spec.replicas a rolling update may run (MaxSurge; 0 for Recreate)."""
    return _fenceposts(deployment)[0]


def max_unavailable(deployment: Obj) -> int:
    """How many of spec.replicas may be unavailable (MaxUnavailable; 0 for Recreate or 0 replicas, never
    more than spec.replicas)."""
    replicas = spec_replicas(deployment)
    if not is_rolling_update(deployment) or replicas == 0:
        return 0
    return min(_fenceposts(deployment)[1], replicas)


def has_progress_deadline(deployment: Obj) -> bool:
    value = Deployment(deployment).spec.progress_deadline_seconds
    return isinstance(value, int) and value != MAX_INT32


def has_revision_history_limit(deployment: Obj) -> bool:
    value = Deployment(deployment).spec.revision_history_limit
    return isinstance(value, int) and value != MAX_INT32


def select_cleanable(deployment: Obj, old_rss: Sequence[R]) -> list[R]:
    """The old ReplicaSets beyond revisionHistoryLimit to delete, lowest revision first, skipping any that
    still has replicas, whose status lags its spec, or that is being deleted (cleanupDeployment)."""
    if not has_revision_history_limit(deployment):
        return []
    alive = [rs for rs in old_rss if not is_deleting(rs)]
    diff = len(alive) - int(deployment["spec"]["revisionHistoryLimit"])
    if diff <= 0:
        return []
    chosen = []
    for rs in sorted(alive, key=revision_order)[:diff]:
        generation = ReplicaSet(rs).metadata.generation
        if (status_int(rs, "replicas") != 0 or spec_replicas(rs) != 0
                or generation > status_int(rs, "observedGeneration")):
            continue
        chosen.append(rs)
    return chosen
