"""Validation of the storage.k8s.io/v1 kinds: StorageClasses, CSIDrivers, CSINodes and VolumeAttachments.

Upstream: pkg/apis/storage/validation/validation.go (ValidateStorageClass, ValidateStorageClassUpdate:
parameters, provisioner and reclaimPolicy are forbidden to change, volumeBindingMode is immutable;
ValidateCSIDriver/Update, ValidateCSINode, ValidateVolumeAttachment/Update, validateCSIDriverName's
`csiDriverNameRexpFmt`). PersistentVolumes and claims are core/v1, in `core.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import IMMUTABLE_MESSAGE, NEGATIVE_MESSAGE, Check, NameValidator, Validator, join
from control.api.volumes import BINDING_MODES
from control.apimachinery.validation import FieldError, is_dns1123_subdomain, regex_error

CSI_DRIVER_NAME_MAX_LENGTH = 63
_CSI_DRIVER_NAME_FMT = "^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,61}[a-zA-Z-0-9]$"
_CSI_DRIVER_NAME = re.compile(_CSI_DRIVER_NAME_FMT)
_CSI_DRIVER_NAME_MSG = ("a CSI driver name must consist of alphanumeric characters, '-', '_' or '.', and must "
                        "start and end with an alphanumeric character")
MAX_NODE_ID_LENGTH = 192
MAX_ATTACHED_VOLUME_METADATA_SIZE = 256 * 1024
MAX_VOLUME_ERROR_MESSAGE_SIZE = 1024
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Ephemeral", "Persistent")


def csi_driver_name_errors(name: str) -> list[str]:
    """validateCSIDriverName (without its Required case, which callers report)."""
    errors = []
    if len(name) > CSI_DRIVER_NAME_MAX_LENGTH:
        errors.append(f"must be no more than {CSI_DRIVER_NAME_MAX_LENGTH} characters")
    if not _CSI_DRIVER_NAME.fullmatch(name):
        errors.append(regex_error(_CSI_DRIVER_NAME_MSG, _CSI_DRIVER_NAME_FMT, "csi.example.com"))
    return errors


def _driver_name(c: Check, name: str | None, path: str) -> None:
    if name == "":
        c.add([FieldError.required(path)])
    elif name is not None:
        c.invalid(path, name, csi_driver_name_errors(name))


def _boolean(c: Check, spec: Mapping[str, Any], key: str, *, required: bool) -> None:
    value = spec.get(key)
    if value is None:
        if required:
            c.add([FieldError.required(f"spec.{key}")])
    elif not isinstance(value, bool):
        c.add([FieldError.invalid(f"spec.{key}", value, "must be of type boolean")])


def _csi_driver(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for key in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"):
        _boolean(c, spec, key, required=key in ("attachRequired", "podInfoOnMount", "requiresRepublish"))
    c.supported(spec, "fsGroupPolicy", "spec.fsGroupPolicy", FS_GROUP_POLICIES)
    for index, mode in enumerate(c.texts(spec, "volumeLifecycleModes", "spec.volumeLifecycleModes")):
        if mode not in LIFECYCLE_MODES:
            c.add([FieldError.not_supported(f"spec.volumeLifecycleModes[{index}]", mode, LIFECYCLE_MODES)])
    audiences: set[str] = set()
    for path, request in c.items(spec, "tokenRequests", "spec.tokenRequests"):
        audience = c.text(request, "audience", join(path, "audience")) or ""
        if audience in audiences:
            c.add([FieldError.duplicate(join(path, "audience"), audience)])
        audiences.add(audience)
        seconds = c.integer(request, "expirationSeconds", join(path, "expirationSeconds"))
        if seconds is not None and seconds < 600:
            c.add([FieldError.invalid(join(path, "expirationSeconds"), seconds,
                                      "may not specify a duration less than 10 minutes")])
    if old is not None:
        old_spec = old.get("spec") or {}
        for key in ("attachRequired", "volumeLifecycleModes"):  # the rest became mutable over the releases
            c.immutable(spec.get(key), old_spec.get(key), f"spec.{key}")


def _csi_node(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    names: set[str] = set()
    for path, driver in c.items(spec, "drivers", "spec.drivers"):
        name = c.text(driver, "name", join(path, "name"))
        _driver_name(c, name, join(path, "name"))
        if name:
            if name in names:
                c.add([FieldError.duplicate(join(path, "name"), name)])
            names.add(name)
        node_id = c.text(driver, "nodeID", join(path, "nodeID"))
        if node_id == "":
            c.add([FieldError.required(join(path, "nodeID"))])
        elif node_id and len(node_id) > MAX_NODE_ID_LENGTH:
            c.add([FieldError.too_long(join(path, "nodeID"), MAX_NODE_ID_LENGTH)])
        if (allocatable := c.obj(driver, "allocatable", join(path, "allocatable"))) is not None:
            count = c.integer(allocatable, "count", join(path, "allocatable.count"))
            if count is not None and count < 0:
                c.add([FieldError.invalid(join(path, "allocatable.count"), count, NEGATIVE_MESSAGE)])
    if old is not None:
        old_drivers = {d.get("name"): d for d in (old.get("spec") or {}).get("drivers") or [] if isinstance(d, dict)}
        for path, driver in c.items(spec, "drivers", "spec.drivers"):
            before = old_drivers.get(driver.get("name"))
            if before is not None:
                for key in ("nodeID", "allocatable"):
                    if driver.get(key) != before.get(key):
                        c.add([FieldError.invalid(join(path, key), driver.get(key), IMMUTABLE_MESSAGE)])


def _volume_error(c: Check, status: Mapping[str, Any], key: str) -> None:
    if (error := c.obj(status, key, f"status.{key}")) is not None:
        message = c.text(error, "message", f"status.{key}.message") or ""
        if len(message) > MAX_VOLUME_ERROR_MESSAGE_SIZE:
            c.add([FieldError.too_long(f"status.{key}.message", MAX_VOLUME_ERROR_MESSAGE_SIZE)])


def _volume_attachment(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        _driver_name(c, c.text(spec, "attacher", "spec.attacher"), "spec.attacher")
        node = c.text(spec, "nodeName", "spec.nodeName")
        if node == "":
            c.add([FieldError.required("spec.nodeName")])
        elif node:
            c.invalid("spec.nodeName", node, is_dns1123_subdomain(node))
        source = c.obj(spec, "source", "spec.source") or {}
        given = [key for key in ("persistentVolumeName", "inlineVolumeSpec") if source.get(key) is not None]
        if len(given) != 1:
            c.add([FieldError.invalid("spec.source", source,
                                      "must specify exactly one of inlineVolumeSpec and persistentVolumeName")])
        elif given == ["persistentVolumeName"]:
            pv = c.text(source, "persistentVolumeName", "spec.source.persistentVolumeName")
            if pv == "":
                c.add([FieldError.required("spec.source.persistentVolumeName")])
    if (status := c.obj(obj, "status", "status")) is not None:
        attached = status.get("attached")
        if attached is not None and not isinstance(attached, bool):
            c.add([FieldError.invalid("status.attached", attached, "must be of type boolean")])
        metadata = c.strings(status, "attachmentMetadata", "status.attachmentMetadata")
        if sum(len(k) + len(v) for k, v in metadata.items()) > MAX_ATTACHED_VOLUME_METADATA_SIZE:
            c.add([FieldError.too_long("status.attachmentMetadata", MAX_ATTACHED_VOLUME_METADATA_SIZE)])
        _volume_error(c, status, "attachError")
        _volume_error(c, status, "detachError")
    if old is not None and obj.get("spec") != old.get("spec"):
        c.add([FieldError.invalid("spec", obj.get("spec"), IMMUTABLE_MESSAGE)])


# upstream ValidateCSIDriver passes ValidateCSIDriverName as the metadata name rule
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


NAME_VALIDATORS: dict[str, NameValidator] = {"csidrivers": csi_driver_name_errors}

VALIDATORS: dict[str, Validator] = {
    "storageclasses": _storage_class,
    "csidrivers": _csi_driver,
    "csinodes": _csi_node,
    "volumeattachments": _volume_attachment,
}
