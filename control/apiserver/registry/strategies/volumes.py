"""PersistentVolumes and PersistentVolumeClaims (upstream pkg/registry/core/persistentvolume/strategy.go and
persistentvolumeclaim/strategy.go).

The status of both is the PV controller's: whatever a client sends on create is dropped. A new volume
starts `Pending` with `lastPhaseTransitionTime` (upstream since PersistentVolumeLastPhaseTransitionTime
went GA) until the controller finds it Available; a new claim starts `Pending`. Both keep their status on
a main-resource update (the base's rule for kinds with a `/status` subresource).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from control.apimachinery.meta import format_timestamp
from control.apiserver.registry.strategies.base import Strategy


class PersistentVolumeStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": format_timestamp(now)}


class PersistentVolumeClaimStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        obj["status"] = {"phase": "Pending"}
