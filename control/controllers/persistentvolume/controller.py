"""The PersistentVolume controller ("persistentvolume-binder"): binds claims to volumes, keeps both sides'
phases, asks provisioners for volumes and releases volumes whose claim went away.

Upstream: pkg/controller/volume/persistentvolume/pv_controller_base.go (two queues, `claimWorker` and
`volumeWorker`, fed by the claim and volume informers; a class or node change re-syncs the claims) and
pv_controller.go, whose decisions are in binder.py. One queue here: keys are `claim:<ns>/<name>` or
`volume:<name>`.

A bind writes in upstream's order (`bind`): the volume's claimRef, the volume's status Bound, the claim's
volumeName and annotations, the claim's status Bound with the volume's access modes and capacity; each write
goes through the API with the informer's resourceVersion, so a stale read is a 409 and the key is retried.
Phases change with `lastPhaseTransitionTime` on volumes, as upstream.

Departures: no periodic resync (upstream re-lists every 15 s); the claim's `volume.kubernetes.io/
storage-provisioner` annotation is what a provisioner watches (upstream's external provisioners do the same),
and volume deletion for Delete is the provisioner's; no in-tree deleter or recycler plugins.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from control.api.typed import PersistentVolume, PersistentVolumeClaim, StorageClass
from control.api.typed.core import ObjectReference
from control.api.volumes import ANN_BETA_STORAGE_PROVISIONER, ANN_STORAGE_PROVISIONER, claim_class
from control.apimachinery.meta import format_timestamp, key_of, split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.persistentvolume.binder import (
    ClaimDecision,
    ClaimStep,
    Event,
    VolumeStep,
    bound_claim,
    bound_claim_status,
    bound_volume,
    decide_claim,
    decide_volume,
)
from control.controllers.shared.base import APIClient, Controller

log = logging.getLogger(__name__)

CLAIM = "claim:"
VOLUME = "volume:"


def _now() -> str:
    return format_timestamp(datetime.now(UTC))


class PersistentVolumeController(Controller):
    name = "persistentvolume-binder"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = 1,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        recorder = recorder or EventRecorder(client, component="persistentvolume-controller")
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        volumes = informers.informer("v1", "persistentvolumes")
        claims = informers.informer("v1", "persistentvolumeclaims")
        classes = informers.informer("storage.k8s.io/v1", "storageclasses")
        self.volumes, self.claims = volumes.lister(), claims.lister()
        self.classes, self.nodes = classes.lister(), informers.informer("v1", "nodes").lister()
        volumes.add_event_handler(on_add=self._volume_changed, on_update=lambda old, new: self._volume_changed(new),
                                  on_delete=self._volume_deleted)
        claims.add_event_handler(on_add=self._claim_changed, on_update=lambda old, new: self._claim_changed(new),
                                 on_delete=self._claim_deleted)
        classes.add_event_handler(on_add=self._class_changed, on_update=lambda old, new: self._class_changed(new),
                                  on_delete=lambda obj: None)

    # -- handlers ---------------------------------------------------------------------------------------------

    def _volume_changed(self, volume: Mapping[str, Any]) -> None:
        self.queue.add(VOLUME + key_of(volume))

    def _volume_deleted(self, volume: Mapping[str, Any]) -> None:
        ref = PersistentVolume(volume).spec.claim_ref
        if ref is not None and ref.name:
            self.queue.add(f"{CLAIM}{ref.namespace}/{ref.name}")

    def _claim_changed(self, claim: Mapping[str, Any]) -> None:
        self.queue.add(CLAIM + key_of(claim))

    def _claim_deleted(self, claim: Mapping[str, Any]) -> None:
        name = PersistentVolumeClaim(claim).spec.volume_name
        if name:
            self.queue.add(VOLUME + name)
        for volume in self.volumes.list():  # a volume reserved for the claim without its volumeName yet
            ref = PersistentVolume(volume).spec.claim_ref
            if ref is not None and ref.uid and ref.uid == PersistentVolumeClaim(claim).metadata.uid:
                self.queue.add(VOLUME + key_of(volume))

    def _class_changed(self, storage_class: Mapping[str, Any]) -> None:
        name = StorageClass(storage_class).metadata.name
        for claim in self.claims.list():
            if not PersistentVolumeClaim(claim).spec.volume_name and claim_class(claim) == name:
                self.queue.add(CLAIM + key_of(claim))

    # -- sync ------------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        if key.startswith(CLAIM):
            namespace, name = split_key(key[len(CLAIM):])
            claim = self.claims.get(namespace, name)
            if claim is not None:
                self._sync_claim(claim)
        elif key.startswith(VOLUME):
            volume = self.volumes.get(None, key[len(VOLUME):])
            if volume is not None:
                self._sync_volume(volume)

    def _event(self, obj: Mapping[str, Any], event: Event | None) -> None:
        if event is not None:
            self.recorder.event(obj, event.type, event.reason, event.message)

    def _sync_claim(self, claim: Mapping[str, Any]) -> None:
        class_name = claim_class(claim)
        decision = decide_claim(claim, self.volumes.list(), volume_named=lambda n: self.volumes.get(None, n),
                                storage_class=self.classes.get(None, class_name) if class_name else None,
                                node_named=lambda n: self.nodes.get(None, n))
        self._event(claim, decision.event)
        if decision.step is ClaimStep.BIND:
            assert decision.volume is not None
            self._bind(claim, decision.volume)
        elif decision.step is ClaimStep.PROVISION:
            self._ask_provisioner(claim, decision)
        elif decision.step is ClaimStep.PENDING:
            self._claim_phase(claim, "Pending")
        elif decision.step is ClaimStep.LOST:
            self._claim_phase(claim, "Lost")

    def _claim_path(self, claim: Mapping[str, Any], subresource: str | None = None) -> str:
        meta = claim.get("metadata") or {}
        return resource_path("v1", "persistentvolumeclaims", namespace=meta.get("namespace"), name=meta.get("name"),
                             subresource=subresource)

    @staticmethod
    def _volume_path(volume: Mapping[str, Any], subresource: str | None = None) -> str:
        return resource_path("v1", "persistentvolumes", name=PersistentVolume(volume).metadata.name,
                             subresource=subresource)

    def _claim_phase(self, claim: Mapping[str, Any], phase: str) -> None:
        if PersistentVolumeClaim(claim).status.phase == phase:
            return
        self.client.update(self._claim_path(claim, "status"), {**claim, "status": {
            **PersistentVolumeClaim(claim).status.raw, "phase": phase}})

    def _ask_provisioner(self, claim: Mapping[str, Any], decision: ClaimDecision) -> None:
        annotations = PersistentVolumeClaim(claim).metadata.annotations
        if annotations.get(ANN_STORAGE_PROVISIONER) != decision.provisioner:
            # an update, as upstream's setClaimProvisioner: the binder's role may update claims, not patch them
            meta = PersistentVolumeClaim(claim).metadata.raw
            claim = self.client.update(self._claim_path(claim), {**claim, "metadata": {**meta, "annotations": {
                **annotations, ANN_STORAGE_PROVISIONER: decision.provisioner,
                ANN_BETA_STORAGE_PROVISIONER: decision.provisioner}}})
        self._claim_phase(claim, "Pending")

    def _volume_phase(self, volume: Mapping[str, Any], phase: str, *, reason: str = "",
                      message: str = "") -> dict[str, Any]:
        status = {**PersistentVolume(volume).status.raw, "phase": phase}
        for key, value in (("reason", reason), ("message", message)):
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        if PersistentVolume(volume).status.phase != phase:
            status["lastPhaseTransitionTime"] = _now()
        if status == volume.get("status"):
            return dict(volume)
        return self.client.update(self._volume_path(volume, "status"), {**volume, "status": status})

    def _bind(self, claim: Mapping[str, Any], volume: Mapping[str, Any]) -> None:
        """Upstream bind: volume claimRef, volume Bound, claim volumeName, claim Bound."""
        name = PersistentVolume(volume).metadata.name
        if (new_volume := bound_volume(volume, claim)) is not None:
            volume = self.client.update(self._volume_path(volume), new_volume)
        if PersistentVolume(volume).status.phase != "Bound":
            volume = self._volume_phase(volume, "Bound")
        if (new_claim := bound_claim(claim, volume)) is not None:
            claim = self.client.update(self._claim_path(claim), new_claim)
        if (status := bound_claim_status(claim, volume)) is not None:
            self.client.update(self._claim_path(claim, "status"), {**claim, "status": status})
            log.info("claim %s bound to volume %s", key_of(claim), name)

    def _sync_volume(self, volume: Mapping[str, Any]) -> None:
        decision = decide_volume(volume, claim_named=lambda ns, n: self.claims.get(ns, n))
        self._event(volume, decision.event)
        step = decision.step
        if step is VolumeStep.AVAILABLE:
            self._volume_phase(volume, "Available")
        elif step is VolumeStep.BOUND:
            self._volume_phase(volume, "Bound")
        elif step is VolumeStep.RELEASED:
            self._volume_phase(volume, "Released")
        elif step is VolumeStep.FAILED:
            self._volume_phase(volume, "Failed", reason=decision.reason, message=decision.message)
        elif step is VolumeStep.UNBIND:
            spec = {k: v for k, v in PersistentVolume(volume).spec.raw.items() if k != "claimRef"}
            annotations = {k: v for k, v in PersistentVolume(volume).metadata.annotations.items()
                           if k != "pv.kubernetes.io/bound-by-controller"}
            try:
                updated = self.client.update(self._volume_path(volume), {
                    **volume, "spec": spec,
                    "metadata": {**PersistentVolume(volume).metadata.raw, "annotations": annotations}})
            except NotFound:
                return
            self._volume_phase(updated, "Available")
        elif step is VolumeStep.SYNC_CLAIM:
            ref = PersistentVolume(volume).spec.claim_ref or ObjectReference()
            self.queue.add(f"{CLAIM}{ref.namespace}/{ref.name}")
