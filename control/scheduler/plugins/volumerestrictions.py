"""VolumeRestrictions: a pod may not go where another pod already uses the same disk in a way that disk
cannot be shared.

Upstream: pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go (`isVolumeConflict`,
`haveOverlap`, `needsRestrictionsCheck`, ErrReasonDiskConflict); formerly the NoDiskConflict predicate.
- gcePersistentDisk: the same `pdName` conflicts unless both mounts are `readOnly`;
- awsElasticBlockStore: the same `volumeID` always conflicts;
- iscsi: the same `iqn` conflicts unless both are `readOnly`;
- rbd: a shared Ceph monitor with the same `pool` (default "rbd") and `image` conflicts unless both are
  `readOnly`.

slimkube's API keeps these volume sources as given (validation does not look inside volume sources) and its
kubelet mounts none of them, so the rule guards what a manifest asks for. Departure: upstream's
ReadWriteOncePod check is not done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed.core import Pod as PodView
from control.scheduler.cache import Snapshot
from control.scheduler.framework import SKIP, SUCCESS, CycleState, Pod, Status, unschedulable
from control.scheduler.nodeinfo import NodeInfo

NAME = "VolumeRestrictions"
DISK_CONFLICT_REASON = "node(s) had no available disk"
_CHECKED = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")
DEFAULT_RBD_POOL = "rbd"  # the API server's default for rbd.pool

Volume = Mapping[str, Any]


def _volumes(pod: Pod) -> list[Volume]:
    return [v.raw for v in PodView(pod).spec.volumes if isinstance(v.raw, Mapping)]


def _source(volume: Volume, kind: str) -> Mapping[str, Any] | None:
    source = volume.get(kind)
    return source if isinstance(source, Mapping) else None


def volumes_conflict(volume: Volume, existing: Volume) -> bool:
    """Upstream isVolumeConflict for one pair of volumes (module notes)."""
    if (disk := _source(volume, "gcePersistentDisk")) and (other := _source(existing, "gcePersistentDisk")):
        if disk.get("pdName") == other.get("pdName") and not (disk.get("readOnly") and other.get("readOnly")):
            return True
    if (ebs := _source(volume, "awsElasticBlockStore")) and (other := _source(existing, "awsElasticBlockStore")):
        if ebs.get("volumeID") == other.get("volumeID"):
            return True
    if (iscsi := _source(volume, "iscsi")) and (other := _source(existing, "iscsi")):
        if iscsi.get("iqn") == other.get("iqn") and not (iscsi.get("readOnly") and other.get("readOnly")):
            return True
    if (rbd := _source(volume, "rbd")) and (other := _source(existing, "rbd")):
        shared_monitor = bool(set(rbd.get("monitors") or []) & set(other.get("monitors") or []))
        same_pool = (rbd.get("pool") or DEFAULT_RBD_POOL) == (other.get("pool") or DEFAULT_RBD_POOL)
        if (shared_monitor and same_pool and rbd.get("image") == other.get("image")
                and not (rbd.get("readOnly") and other.get("readOnly"))):
            return True
    return False


def needs_restrictions_check(pod: Pod) -> bool:
    return any(_source(volume, kind) is not None for volume in _volumes(pod) for kind in _CHECKED)


class VolumeRestrictions:
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        return SUCCESS if needs_restrictions_check(pod) else SKIP

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        for volume in _volumes(pod):
            if not any(_source(volume, kind) is not None for kind in _CHECKED):
                continue
            for existing in node.pods.values():
                if any(volumes_conflict(volume, other) for other in _volumes(existing.pod)):
                    return unschedulable(DISK_CONFLICT_REASON)
        return SUCCESS
