"""Validation of core/v1 PersistentVolumes and PersistentVolumeClaims and storage.k8s.io/v1 StorageClasses.

Upstream: pkg/apis/core/validation/validation.go (`ValidatePersistentVolumeSpec`: at least one access mode,
a `storage` capacity and nothing else, exactly one volume source, a local volume needs node affinity;
`ValidatePersistentVolumeUpdate`: the volume source and volumeMode never change;
`ValidatePersistentVolumeClaimSpec`: at least one access mode, a positive `storage` request, a valid
selector; `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for resources.requests, and
volumeName / storageClassName may be set once while empty) and pkg/apis/storage/validation
(`ValidateStorageClass`, `ValidateStorageClassUpdate`: parameters, provisioner and reclaimPolicy are
forbidden to change, volumeBindingMode is immutable). Dispatched from `validation.validate`.

Left out: the details inside volume sources other than hostPath and local, mount options, dataSource,
volumeAttributesClassName and the status checks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from control.api.validation import IMMUTABLE_MESSAGE, Check
from control.api.volumes import ACCESS_MODES, BINDING_MODES, RECLAIM_POLICIES, VOLUME_MODES
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.validation import FieldError, is_dns1123_subdomain

# The persistent volume sources of PersistentVolumeSpec (upstream's list; only hostPath and local mount here).
VOLUME_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
                  "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
                  "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")
CLAIM_UPDATE_MESSAGE = ("spec is immutable after creation except resources.requests and "
                        "volumeAttributesClassName for bound claims")


def _access_modes(c: Check, spec: Mapping[str, Any], path: str, missing: str) -> None:
    modes = c.texts(spec, "accessModes", path)
    if not modes and not spec.get("accessModes"):
        c.add([FieldError.required(path, missing)])
    for mode in modes:
        if mode not in ACCESS_MODES:
            c.add([FieldError.not_supported(path, mode, ACCESS_MODES)])
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        c.add([FieldError.forbidden(path, "may not use ReadWriteOncePod with other access modes")])


def _class_name(c: Check, spec: Mapping[str, Any], path: str) -> None:
    if name := c.text(spec, "storageClassName", path):
        c.invalid(path, name, is_dns1123_subdomain(name))


def _storage(c: Check, resources: Mapping[str, Any], path: str, *, only_storage: bool) -> None:
    if "storage" not in resources:
        c.add([FieldError.required(f"{path}[storage]")])
    for name, value in resources.items():
        if only_storage and name != "storage":
            c.add([FieldError.not_supported(path, name, ["storage"])])
            continue
        quantity = c.quantity(value, f"{path}[{name}]")
        if quantity is not None and name == "storage" and quantity.as_fraction() <= 0:
            c.add([FieldError.invalid(f"{path}[{name}]", value, "must be greater than zero")])


def _persistent_volume(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    _access_modes(c, spec, "spec.accessModes", "must specify at least 1 access mode")
    if (capacity := c.obj(spec, "capacity", "spec.capacity")) is not None:
        if not capacity:
            c.add([FieldError.required("spec.capacity")])
        else:
            _storage(c, capacity, "spec.capacity", only_storage=True)
    c.supported(spec, "persistentVolumeReclaimPolicy", "spec.persistentVolumeReclaimPolicy", RECLAIM_POLICIES)
    c.supported(spec, "volumeMode", "spec.volumeMode", VOLUME_MODES)
    _class_name(c, spec, "spec.storageClassName")
    sources = [name for name in VOLUME_SOURCES if spec.get(name) is not None]
    if not sources:
        c.add([FieldError.required("spec", "must specify a volume type")])
    elif len(sources) > 1:
        c.add([FieldError.forbidden(f"spec.{sources[1]}", "may not specify more than 1 volume type")])
    for source in ("hostPath", "local"):
        if source in sources and (found := c.obj(spec, source, f"spec.{source}")) is not None:
            if not c.text(found, "path", f"spec.{source}.path"):
                c.add([FieldError.required(f"spec.{source}.path")])
    if "local" in sources and not (spec.get("nodeAffinity") or {}).get("required"):
        c.add([FieldError.required("spec.nodeAffinity", "Local volume requires node affinity")])
    c.obj(spec, "claimRef", "spec.claimRef")
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, Mapping):
        if {k: spec.get(k) for k in VOLUME_SOURCES} != {k: old_spec.get(k) for k in VOLUME_SOURCES}:
            c.add([FieldError.forbidden("spec.persistentvolumesource",
                                        "spec.persistentvolumesource is immutable after creation")])
        c.immutable(spec.get("volumeMode"), old_spec.get("volumeMode"), "spec.volumeMode")
        if old_spec.get("nodeAffinity") is not None:
            c.immutable(spec.get("nodeAffinity"), old_spec.get("nodeAffinity"), "spec.nodeAffinity")


def _claim_spec_without_mutable(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec as far as an update may not change it: requests, and volumeName / storageClassName set
    while they were empty, are taken from `spec` into the old one before comparing."""
    result = copy.deepcopy(dict(old_spec))
    new_resources = spec.get("resources")
    if isinstance(new_resources, Mapping) and isinstance(result.get("resources"), Mapping):
        resources = dict(result["resources"])
        if "requests" in new_resources:
            resources["requests"] = new_resources["requests"]
        else:
            resources.pop("requests", None)
        result["resources"] = resources
    for key in ("volumeName", "storageClassName"):
        if not old_spec.get(key):
            if key in spec:
                result[key] = spec[key]
            else:
                result.pop(key, None)
    return result


def _persistent_volume_claim(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    _access_modes(c, spec, "spec.accessModes", "at least 1 access mode is required")
    resources = c.obj(spec, "resources", "spec.resources")
    requests = c.obj(resources, "requests", "spec.resources.requests") if resources is not None else None
    if requests is not None:
        _storage(c, requests, "spec.resources", only_storage=False)
    c.supported(spec, "volumeMode", "spec.volumeMode", VOLUME_MODES)
    _class_name(c, spec, "spec.storageClassName")
    c.text(spec, "volumeName", "spec.volumeName")
    if spec.get("selector") is not None and (selector := c.obj(spec, "selector", "spec.selector")) is not None:
        try:
            selector_from_label_selector(selector)
        except (SelectorError, AttributeError, TypeError) as exc:
            c.add([FieldError.invalid("spec.selector", selector, str(exc))])
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, Mapping) and _claim_spec_without_mutable(spec, old_spec) != dict(spec):
        c.add([FieldError.forbidden("spec", CLAIM_UPDATE_MESSAGE)])


def _storage_class(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    provisioner = c.text(obj, "provisioner", "provisioner")
    if provisioner == "":
        c.add([FieldError.required("provisioner")])
    c.strings(obj, "parameters", "parameters")
    c.supported(obj, "reclaimPolicy", "reclaimPolicy", ("Delete", "Retain"))
    c.supported(obj, "volumeBindingMode", "volumeBindingMode", BINDING_MODES)
    allow = obj.get("allowVolumeExpansion")
    if allow is not None and not isinstance(allow, bool):
        c.add([FieldError.invalid("allowVolumeExpansion", allow, "must be of type boolean")])
    if old is None:
        return
    for key in ("parameters", "provisioner", "reclaimPolicy"):
        if obj.get(key) != old.get(key):
            c.add([FieldError.forbidden(key, f"updates to {key} are forbidden.")])
    if obj.get("volumeBindingMode") != old.get("volumeBindingMode"):
        c.add([FieldError.invalid("volumeBindingMode", obj.get("volumeBindingMode"), IMMUTABLE_MESSAGE)])


STORAGE_VALIDATORS: dict[str, Callable[[Check, Mapping[str, Any], Mapping[str, Any] | None], None]] = {
    "persistentvolumes": _persistent_volume,
    "persistentvolumeclaims": _persistent_volume_claim,
    "storageclasses": _storage_class,
}
