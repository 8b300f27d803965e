"""DefaultStorageClass (upstream: plugin/pkg/admission/storage/storageclass/setdefault/admission.go).

A created PersistentVolumeClaim that names no class at all (`storageClassName` absent or null, and no beta
class annotation; `""` means "no class" and is kept) gets the default StorageClass's name, the newest one
if several carry `storageclass.kubernetes.io/is-default-class: "true"`; none: left as it is.
"""

from __future__ import annotations

from typing import Any

from control.api.typed import TypedObject
from control.api.volumes import ANN_BETA_CLASS, default_class
from control.apiserver.admission.chain import Attributes, Operation, Reader
from control.apiserver.resources import by_path

STORAGE_CLASSES = by_path("storage.k8s.io", "v1", "storageclasses")


def set_default_storage_class(reader: Reader, claim: dict[str, Any], spec: dict[str, Any]) -> None:
    """The plugin's decision on one claim, in place."""
    if spec.get("storageClassName") is not None or ANN_BETA_CLASS in TypedObject(claim).metadata.annotations:
        return
    assert STORAGE_CLASSES is not None
    found = default_class(reader.list_all(STORAGE_CLASSES, ""))
    if found is not None:
        spec["storageClassName"] = TypedObject(found).metadata.name


class DefaultStorageClass:
    name = "DefaultStorageClass"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def admit(self, attributes: Attributes) -> None:
        obj = attributes.obj
        if (attributes.operation is not Operation.CREATE or attributes.resource.plural != "persistentvolumeclaims"
                or attributes.subresource or obj is None):
            return
        spec = obj.get("spec")
        if isinstance(spec, dict):
            set_default_storage_class(self._reader, obj, spec)
