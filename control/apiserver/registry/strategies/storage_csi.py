"""VolumeAttachments (upstream pkg/registry/storage/volumeattachment/strategy.go): the status is the
attacher's, written through `/status` and dropped on create; the main resource keeps it on update.
CSIDrivers and CSINodes are plain kinds (their defaults and validation: control.api)."""

from __future__ import annotations

from types import MappingProxyType

from control.apiserver.registry.strategies.base import Strategy


class VolumeAttachmentStrategy(Strategy):
    resets_status_on_create = True
    # VolumeAttachmentStatus.attached has no omitempty upstream
    status_zero_values = MappingProxyType({"attached": False})
