"""What the PersistentVolume controller does with one claim or one volume: pure decisions over the
informers' objects, carried out by control/controllers/persistentvolume/controller.py.

Upstream: pkg/controller/volume/persistentvolume/pv_controller.go (`syncClaim` → `syncUnboundClaim` /
`syncBoundClaim`, `syncVolume`, `bind`, `reclaimVolume`) with its events and messages, and
k8s.io/component-helpers/storage/volume for the annotations.

Claims:
- unbound, no `volumeName`: bind the volume `find_matching_volume` picks (control/api/volumes.py); none,
  and the class is WaitForFirstConsumer without a selected node yet → wait (event WaitForFirstConsumer);
  none and the class has a provisioner → ask for a volume (the claim gets the
  `volume.kubernetes.io/storage-provisioner` annotations the provisioner looks for, event
  ExternalProvisioning); none else → stay Pending (event FailedBinding);
- unbound with `volumeName` (pre-bound by the user): bind that volume if it is free or already ours;
- bound (`pv.kubernetes.io/bind-completed`): keep both sides Bound; a volume gone or taken → `Lost`.
Volumes:
- no claimRef, or a claimRef without uid (reserved for a claim not yet bound) → `Available`;
- the claim gone (or a new claim of the same name: another uid) → `Released`, then reclaim: Retain keeps
  it; Delete is the provisioner's (the built-in local-path provisioner on the volume's node removes the
  directory and the object), a static volume with Delete or Recycle has no plugin here → `Failed`;
- the claim bound elsewhere: a volume the controller bound is freed again (`Available`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from control.api.typed import PersistentVolume, PersistentVolumeClaim, StorageClass
from control.api.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NOT_PROVISIONED,
    claim_class,
    find_matching_volume,
    is_bound_to_claim,
)

Obj = Mapping[str, Any]


class ClaimStep(enum.Enum):
    NOTHING = "Nothing"
    PENDING = "Pending"  # phase Pending (with the event, if any)
    BIND = "Bind"
    PROVISION = "Provision"  # annotate for the provisioner, phase Pending
    LOST = "Lost"


class VolumeStep(enum.Enum):
    NOTHING = "Nothing"
    AVAILABLE = "Available"
    BOUND = "Bound"
    RELEASED = "Released"  # then reclaim
    FAILED = "Failed"
    UNBIND = "Unbind"  # claimRef removed, phase Available
    SYNC_CLAIM = "SyncClaim"  # the claim's sync decides


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class ClaimDecision:
    step: ClaimStep
    volume: Obj | None = None
    provisioner: str = ""
    event: Event | None = None


@dataclass(frozen=True)
class VolumeDecision:
    step: VolumeStep
    event: Event | None = None
    reason: str = ""  # status.reason of a Failed volume
    message: str = ""


WAIT_FOR_FIRST_CONSUMER = Event("Normal", "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
NO_VOLUMES = Event("Normal", "FailedBinding", "no persistent volumes available for this claim and no storage class "
                                              "is set")
LOST_REFERENCE = Event("Warning", "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the "
                                               "volume is lost!")
LOST_VOLUME = Event("Warning", "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
MISBOUND = Event("Warning", "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly")


def external_provisioning(provisioner: str) -> Event:
    return Event("Normal", "ExternalProvisioning",
                 f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
                 "manually by the system administrator. If volume creation is delayed, please verify that the "
                 "provisioner is running and correctly registered.")


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def decide_claim(claim: Obj, volumes: Iterable[Obj], *, volume_named: Callable[[str], Obj | None],
                 storage_class: Obj | None, node_named: Callable[[str], Obj | None]) -> ClaimDecision:
    """The claim's next step (module notes). `storage_class` is the claim's class (None: no class, or one
    that does not exist); `volume_named` and `node_named` read the informers."""
    if _meta(claim).get("deletionTimestamp"):
        return ClaimDecision(ClaimStep.NOTHING)
    annotations = _meta(claim).get("annotations") or {}
    volume_name = str(_spec(claim).get("volumeName") or "")
    if ANN_BIND_COMPLETED in annotations:
        if not volume_name:
            return ClaimDecision(ClaimStep.LOST, event=LOST_REFERENCE)
        volume = volume_named(volume_name)
        if volume is None:
            return ClaimDecision(ClaimStep.LOST, event=LOST_VOLUME)
        if _spec(volume).get("claimRef") is None or is_bound_to_claim(volume, claim):
            return ClaimDecision(ClaimStep.BIND, volume=volume)
        return ClaimDecision(ClaimStep.LOST, event=MISBOUND)
    if volume_name:
        volume = volume_named(volume_name)
        if volume is None:
            return ClaimDecision(ClaimStep.PENDING, event=Event("Normal", "FailedBinding",
                                                                f'volume "{volume_name}" not found'))
        if _spec(volume).get("claimRef") is None or is_bound_to_claim(volume, claim):
            return ClaimDecision(ClaimStep.BIND, volume=volume)
        return ClaimDecision(ClaimStep.PENDING, event=Event(
            "Warning", "FailedBinding", f'volume "{volume_name}" already bound to a different claim.'))
    delay = storage_class is not None and storage_class.get("volumeBindingMode") == BINDING_WAIT_FOR_FIRST_CONSUMER
    selected = str(annotations.get(ANN_SELECTED_NODE) or "")
    node = node_named(selected) if delay and selected else None
    volume = find_matching_volume(claim, volumes, node=node, delay_binding=delay)
    if volume is not None:
        return ClaimDecision(ClaimStep.BIND, volume=volume)
    if delay and not selected:
        return ClaimDecision(ClaimStep.PENDING, event=WAIT_FOR_FIRST_CONSUMER)
    provisioner = StorageClass(storage_class).provisioner if storage_class is not None else ""
    if provisioner and provisioner != NOT_PROVISIONED:
        return ClaimDecision(ClaimStep.PROVISION, provisioner=provisioner, event=external_provisioning(provisioner))
    if claim_class(claim) and storage_class is None:
        return ClaimDecision(ClaimStep.PENDING, event=Event(
            "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{claim_class(claim)}" not found'))
    return ClaimDecision(ClaimStep.PENDING, event=NO_VOLUMES)


def decide_volume(volume: Obj, *, claim_named: Callable[[str, str], Obj | None]) -> VolumeDecision:
    """The volume's next step (module notes); `claim_named(namespace, name)` reads the claim informer."""
    if _meta(volume).get("deletionTimestamp"):
        return VolumeDecision(VolumeStep.NOTHING)
    spec = _spec(volume)
    ref = spec.get("claimRef")
    phase = PersistentVolume(volume).status.phase
    if not isinstance(ref, Mapping) or not ref.get("uid"):
        return VolumeDecision(VolumeStep.NOTHING if phase == "Available" else VolumeStep.AVAILABLE)
    claim = claim_named(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
    if claim is not None and _meta(claim).get("uid") != ref.get("uid"):
        claim = None
    if claim is None:
        return _reclaim(volume, phase)
    claim_volume = str(_spec(claim).get("volumeName") or "")
    if not claim_volume:
        return VolumeDecision(VolumeStep.SYNC_CLAIM)
    if claim_volume == _meta(volume).get("name"):
        return VolumeDecision(VolumeStep.NOTHING if phase == "Bound" else VolumeStep.BOUND)
    if PersistentVolume(volume).metadata.annotations.get(ANN_BOUND_BY_CONTROLLER):
        return VolumeDecision(VolumeStep.UNBIND)
    return VolumeDecision(VolumeStep.SYNC_CLAIM)


def _reclaim(volume: Obj, phase: str) -> VolumeDecision:
    """The claim is gone (upstream reclaimVolume): Released first, then the policy."""
    if phase not in ("Released", "Failed"):
        return VolumeDecision(VolumeStep.RELEASED)
    if phase == "Failed":
        return VolumeDecision(VolumeStep.NOTHING)
    policy = _spec(volume).get("persistentVolumeReclaimPolicy") or "Retain"
    name = _meta(volume).get("name", "")
    if policy == "Retain":
        return VolumeDecision(VolumeStep.NOTHING)
    if policy == "Delete":
        if PersistentVolume(volume).metadata.annotations.get(ANN_PROVISIONED_BY):
            return VolumeDecision(VolumeStep.NOTHING)  # its provisioner deletes it
        message = f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched'
        return VolumeDecision(VolumeStep.FAILED, event=Event("Warning", "VolumeFailedDelete", message),
                              reason="VolumeFailedDelete", message=message)
    message = "No recycler plugin found for the volume!"
    return VolumeDecision(VolumeStep.FAILED, event=Event("Warning", "VolumeFailedRecycle", message),
                          reason="VolumeFailedRecycle", message=message)


def claim_ref(claim: Obj) -> dict[str, Any]:
    """The ObjectReference a bound volume keeps of its claim (upstream GetReference)."""
    meta = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", ""), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")}


def bound_volume(volume: Obj, claim: Obj) -> dict[str, Any] | None:
    """The volume with its claimRef on `claim` (upstream getBindVolumeToClaim), or None if already so.
    A claimRef the controller writes (none was there) is marked with `pv.kubernetes.io/bound-by-controller`."""
    ref = _spec(volume).get("claimRef")
    if isinstance(ref, Mapping) and is_bound_to_claim(volume, claim) and ref.get("uid"):
        return None
    result = {**volume, "metadata": dict(_meta(volume)), "spec": dict(_spec(volume))}
    if ref is None:
        result["metadata"]["annotations"] = {**PersistentVolume(volume).metadata.annotations,
                                             ANN_BOUND_BY_CONTROLLER: "yes"}
    result["spec"]["claimRef"] = claim_ref(claim)
    return result


def bound_claim(claim: Obj, volume: Obj) -> dict[str, Any] | None:
    """The claim naming `volume`, marked bind-completed (upstream getBindClaimToVolume), or None if already so."""
    annotations = dict(PersistentVolumeClaim(claim).metadata.annotations)
    name = _meta(volume).get("name", "")
    if _spec(claim).get("volumeName") == name and ANN_BIND_COMPLETED in annotations:
        return None
    if not _spec(claim).get("volumeName"):
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    annotations[ANN_BIND_COMPLETED] = "yes"
    return {**claim, "metadata": {**_meta(claim), "annotations": annotations},
            "spec": {**_spec(claim), "volumeName": name}}


def bound_claim_status(claim: Obj, volume: Obj) -> dict[str, Any] | None:
    """The claim's status once bound: phase Bound, the volume's access modes and capacity; None if so already."""
    status = dict(PersistentVolumeClaim(claim).status.raw)
    spec = PersistentVolume(volume).spec
    wanted = {**status, "phase": "Bound", "accessModes": list(spec.access_modes), "capacity": dict(spec.capacity)}
    return None if wanted == status else wanted
