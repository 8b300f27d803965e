"""Typed views of storage.k8s.io/v1: StorageClass.

Upstream: k8s.io/api/storage/v1/types.go. A StorageClass has no spec: its fields sit beside `metadata`;
`volumeBindingMode` and `reclaimPolicy` read as None when absent (the API server defaults them).
"""

from __future__ import annotations

from control.api.typed.base import optional_bool, optional_string, raw_list, string, string_list, string_map
from control.api.typed.meta import TypedObject


class StorageClass(TypedObject):
    __slots__ = ()
    provisioner = string("provisioner")
    parameters = string_map("parameters")
    reclaim_policy = optional_string("reclaimPolicy")
    mount_options = string_list("mountOptions")
    allow_volume_expansion = optional_bool("allowVolumeExpansion")
    volume_binding_mode = optional_string("volumeBindingMode")
    allowed_topologies = raw_list("allowedTopologies")
