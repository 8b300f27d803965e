"""The built-in local-path provisioner, run by each kubelet for its own node: it makes a hostPath
PersistentVolume (and its directory) for a claim the scheduler placed on this node, and removes both when
the claim is gone and the class said `reclaimPolicy: Delete`.

Shape: k3s's local-path-provisioner (rancher/local-path-provisioner: a `local-path` class,
WaitForFirstConsumer, volumes named `pvc-<claim uid>` in a directory `pvc-<uid>_<namespace>_<name>` under
the node's storage dir, `hostPath` with type DirectoryOrCreate and required node affinity on
`kubernetes.io/hostname`, reclaim per the class) driven the way kubernetes-csi/external-provisioner's
distributed mode (`--node-deployment`) drives a node-local driver: every node runs its own provisioner, which
only takes the claims whose `volume.kubernetes.io/selected-node` annotation names it. So the directory is
always made and removed on the machine that holds it — a netns node of `up --nodes N` and a Vagrant
worker VM alike — with no helper pods (k3s starts a busybox pod on the node for each create and delete).

The provisioner name is `slimkube.io/local-path`, not k3s's `rancher.io/local-path`: manifests name the
class (`local-path`), not the provisioner, and a real rancher provisioner installed beside ours must not
race it for the same claims.

Claims: the PV controller marks a claim it wants provisioned with `volume.kubernetes.io/storage-provisioner`;
the claim must also carry the selected-node annotation for this node and have no volume yet. Volumes: one
provisioned here for this node, `Released` and `Delete` → directory removed, object deleted (upstream's
provisioner does the same after the PV controller releases the volume). Pure decisions (`plan_volume`,
`should_delete`, `owned_directory`) are apart from the I/O in `LocalPathProvisioner`.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from control.api.typed.core import PersistentVolume
from control.api.volumes import (
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    LOCAL_PATH_PROVISIONER,
    claim_class,
    node_affinity_admits,
    volume_path,
)
from control.apimachinery.meta import key_of, split_key
from control.client.errors import Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue, run_workers

log = logging.getLogger(__name__)

HOSTNAME_LABEL = "kubernetes.io/hostname"
SYNC_WAIT_SECONDS = 0.5

Obj = Mapping[str, Any]


class Client(Protocol):
    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict[str, Any] | None = None) -> dict[str, Any]: ...


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {HOSTNAME_LABEL: name}}}


def wants_volume(claim: Obj, node_name: str) -> bool:
    """A claim of ours to provision on this node (module notes)."""
    annotations = _meta(claim).get("annotations") or {}
    return (annotations.get(ANN_STORAGE_PROVISIONER) == LOCAL_PATH_PROVISIONER
            and annotations.get(ANN_SELECTED_NODE) == node_name
            and not _spec(claim).get("volumeName") and not _meta(claim).get("deletionTimestamp"))


def volume_name(claim: Obj) -> str:
    return f"pvc-{_meta(claim).get('uid', '')}"


def directory_name(claim: Obj) -> str:
    meta = _meta(claim)
    return f"pvc-{meta.get('uid', '')}_{meta.get('namespace', '')}_{meta.get('name', '')}"


def plan_volume(claim: Obj, storage_class: Obj, *, node_name: str, base_dir: str) -> dict[str, Any]:
    """The PersistentVolume for `claim` on this node (k3s's shape, module notes)."""
    meta = _meta(claim)
    spec = _spec(claim)
    requests = (spec.get("resources") or {}).get("requests") or {}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name(claim), "annotations": {ANN_PROVISIONED_BY: LOCAL_PATH_PROVISIONER}},
        "spec": {
            "capacity": {"storage": requests.get("storage", "0")},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": claim_class(claim),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta.get("namespace", ""),
                         "name": meta.get("name", ""), "uid": meta.get("uid", ""),
                         "resourceVersion": meta.get("resourceVersion", "")},
            "hostPath": {"path": str(Path(base_dir) / directory_name(claim)), "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": HOSTNAME_LABEL, "operator": "In", "values": [node_name]}]}]}},
        },
    }


def is_ours_here(volume: Obj, node_name: str) -> bool:
    """A volume this provisioner made, for this node."""
    annotations = _meta(volume).get("annotations") or {}
    return (annotations.get(ANN_PROVISIONED_BY) == LOCAL_PATH_PROVISIONER
            and node_affinity_admits(volume, _node(node_name)))


def should_delete(volume: Obj, node_name: str) -> bool:
    """Released, reclaim Delete, ours, on this node: directory and object go."""
    return (is_ours_here(volume, node_name) and PersistentVolume(volume).status.phase == "Released"
            and _spec(volume).get("persistentVolumeReclaimPolicy") == "Delete"
            and not _meta(volume).get("deletionTimestamp"))


def owned_directory(volume: Obj, base_dir: str) -> str | None:
    """The volume's directory if it is one this provisioner makes: directly under `base_dir`, named
    `pvc-…`; anything else (a path an admin edited in) is never removed."""
    path = volume_path(volume)
    if not path:
        return None
    base = os.path.realpath(base_dir)
    resolved = os.path.realpath(path)
    if os.path.dirname(resolved) != base or not os.path.basename(resolved).startswith("pvc-"):
        return None
    return resolved


class LocalPathProvisioner:
    """Watches claims, volumes and classes through the kubelet's informer factory; one worker."""

    name = "local-path-provisioner"

    def __init__(self, client: Client, informers: InformerFactory, *, node_name: str, base_dir: str,
                 recorder: EventRecorder) -> None:
        self.client = client
        self.informers = informers
        self.node_name = node_name
        self.base_dir = base_dir
        self.recorder = recorder
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=self.name)
        claims = informers.informer("v1", "persistentvolumeclaims")
        volumes = informers.informer("v1", "persistentvolumes")
        self.classes = informers.informer("storage.k8s.io/v1", "storageclasses").lister()
        self.claims, self.volumes = claims.lister(), volumes.lister()
        claims.add_event_handler(on_add=self._claim, on_update=lambda old, new: self._claim(new),
                                 on_delete=lambda obj: None)
        volumes.add_event_handler(on_add=self._volume, on_update=lambda old, new: self._volume(new),
                                  on_delete=lambda obj: None)

    def _claim(self, claim: Obj) -> None:
        if wants_volume(claim, self.node_name):
            self.queue.add("claim:" + key_of(claim))

    def _volume(self, volume: Obj) -> None:
        if should_delete(volume, self.node_name):
            self.queue.add("volume:" + key_of(volume))

    def run(self, stop: threading.Event) -> None:
        while not self.informers.wait_for_sync(SYNC_WAIT_SECONDS):
            if stop.is_set():
                return
        run_workers(self.queue, self.sync, workers=1, stop=stop, name=self.name)

    def sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "claim":
            namespace, name = split_key(rest)
            claim = self.claims.get(namespace, name)
            if claim is not None and wants_volume(claim, self.node_name):
                self.provision(claim)
        else:
            volume = self.volumes.get(None, rest)
            if volume is not None and should_delete(volume, self.node_name):
                self.delete(volume)

    def provision(self, claim: Obj) -> None:
        if self.volumes.get(None, volume_name(claim)) is not None:
            return
        storage_class = self.classes.get(None, claim_class(claim))
        if storage_class is None:
            raise RuntimeError(f"storage class {claim_class(claim)!r} of claim {key_of(claim)} not found")
        volume = plan_volume(claim, storage_class, node_name=self.node_name, base_dir=self.base_dir)
        directory = volume["spec"]["hostPath"]["path"]
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o777)  # as k3s: any container user may write its volume
        try:
            self.client.create(resource_path("v1", "persistentvolumes"), volume)
        except Conflict:  # AlreadyExists: an earlier round made it
            return
        self.recorder.event(claim, "Normal", "ProvisioningSucceeded",
                            f"Successfully provisioned volume {volume_name(claim)}")
        log.info("local-path: provisioned %s for %s at %s", volume_name(claim), key_of(claim), directory)

    def delete(self, volume: Obj) -> None:
        directory = owned_directory(volume, self.base_dir)
        if directory is not None and os.path.lexists(directory):
            shutil.rmtree(directory)
        try:
            self.client.delete(resource_path("v1", "persistentvolumes", name=_meta(volume).get("name")))
        except NotFound:
            pass
        log.info("local-path: deleted %s (%s)", _meta(volume).get("name"), directory)
