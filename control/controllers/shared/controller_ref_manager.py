"""Claiming: which of the objects a controller's selector could match it owns, adopting matching orphans
and releasing owned objects that stopped matching.

Upstream: pkg/controller/controller_ref_manager.go (`BaseControllerRefManager.ClaimObject`,
`PodControllerRefManager.ClaimPods`/`AdoptPod`/`ReleasePod`, `RecheckDeletionTimestamp`,
`OwnerRefControllerPatch`, `GenerateDeleteOwnerRefStrategicMergeBytes`). A
controller's children carry an ownerReference with `controller: true` and `blockOwnerDeletion: true`.

`claim_action` decides for one object (pure, table-tested); `ControllerRefManager.claim` carries the
decisions out with strategic-merge patches on the children — adopt adds the controller's reference,
release deletes it by UID (`$patch: delete`), each patch naming the child's UID as upstream's do — and
returns the claimed objects. Before its first adoption it checks with an uncached read that the
controller still exists with the same UID and is not being deleted (canAdopt), so a controller being
deleted never adopts. A child gone meanwhile (404) is neither claimed nor an error; other failures are
collected and the first raised after every object was tried, so one bad child does not stop the rest.

Generic over the children's kind (pods for the ReplicaSet controller, ReplicaSets for a Deployment).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from control.api.typed import TypedObject
from control.apimachinery.labels import Selector
from control.apimachinery.meta import controller_ref, labels_of
from control.client.errors import NotFound
from control.client.paths import resource_path

Obj = Mapping[str, Any]


class OwnerLister(Protocol):
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None: ...


def resolve_controller_ref(owners: OwnerLister, namespace: str, ref: Mapping[str, Any] | None,
                           kind: str) -> dict[str, Any] | None:
    """resolveControllerRef: the owner `ref` names, if it is of `kind` and still the same object (by UID).

    Checking the UID keeps a pod of a deleted controller from counting for a new one of the same name.
    """
    if ref is None or ref.get("kind") != kind:
        return None
    owner = owners.get(namespace, str(ref.get("name") or ""))
    if owner is None or TypedObject(owner).metadata.uid != ref.get("uid"):
        return None
    return owner


class CannotAdopt(Exception):
    """The controller may not adopt now (upstream: "can't adopt Pod ...": gone, replaced, or being deleted)."""


class Claim(enum.Enum):
    CLAIMED = "claimed"  # ours and matching
    IGNORE = "ignore"  # someone else's, or an orphan we must not take, or ours but we are being deleted
    ADOPT = "adopt"  # a matching orphan: add our controller reference
    RELEASE = "release"  # ours but no longer matching: remove our reference


def claim_action(obj: Obj, *, owner: Obj, matches: bool) -> Claim:
    """What ClaimObject does with `obj` for the controller `owner` (`matches`: its selector selects obj)."""
    owner_meta = owner.get("metadata") or {}
    owner_deleting = bool(owner_meta.get("deletionTimestamp"))
    ref = controller_ref(obj)
    if ref is not None:
        if ref.get("uid") != owner_meta.get("uid"):
            return Claim.IGNORE
        if matches:
            return Claim.CLAIMED
        return Claim.IGNORE if owner_deleting else Claim.RELEASE
    metadata = obj.get("metadata") or {}
    if owner_deleting or not matches or metadata.get("deletionTimestamp"):
        return Claim.IGNORE
    if owner_meta.get("namespace") and owner_meta.get("namespace") != metadata.get("namespace"):
        return Claim.IGNORE
    return Claim.ADOPT


def adopt_patch(obj: Obj, reference: Mapping[str, Any]) -> dict[str, Any]:
    """OwnerRefControllerPatch: the strategic merge patch adding the controller reference."""
    return {"metadata": {"ownerReferences": [dict(reference)], "uid": TypedObject(obj).metadata.uid}}


def release_patch(obj: Obj, owner_uid: str) -> dict[str, Any]:
    """GenerateDeleteOwnerRefStrategicMergeBytes: the strategic merge patch deleting the reference by UID."""
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
                         "uid": TypedObject(obj).metadata.uid}}


class PatchClient(Protocol):
    def patch(self, path: str, patch: dict[str, Any] | list[Any], *, patch_type: str = "merge") -> dict[str, Any]: ...


class ControllerRefManager:
    """Claims children of one kind for one controller (module notes)."""

    def __init__(self, client: PatchClient, *, owner: Obj, reference: Mapping[str, Any], selector: Selector,
                 child_api_version: str, child_plural: str, can_adopt: Callable[[], None]) -> None:
        """`reference`: the controller reference to add (meta.new_controller_ref); `can_adopt`: raises when
        the controller may not adopt (gone, another UID, being deleted)."""
        self.client = client
        self.owner = owner
        self.reference = reference
        self.selector = selector
        self.child_api_version = child_api_version
        self.child_plural = child_plural
        self._can_adopt = can_adopt
        self._adopt_checked = False
        self._adopt_error: Exception | None = None  # canAdoptOnce keeps the first answer, error included

    def _path(self, obj: Obj) -> str:
        metadata = obj.get("metadata") or {}
        return resource_path(self.child_api_version, self.child_plural, namespace=metadata.get("namespace"),
                             name=metadata.get("name"))

    def _adopt(self, obj: Obj) -> None:
        if not self._adopt_checked:  # canAdoptOnce: one uncached read per claim, and only if needed
            self._adopt_checked = True
            try:
                self._can_adopt()
            except Exception as exc:  # noqa: BLE001 — every later adoption of this claim fails the same way
                self._adopt_error = CannotAdopt(f"can't adopt {self.child_plural}: {exc}")
        if self._adopt_error is not None:
            raise self._adopt_error
        self.client.patch(self._path(obj), adopt_patch(obj, self.reference), patch_type="strategic")

    def _release(self, obj: Obj) -> None:
        owner_uid = TypedObject(self.owner).metadata.uid
        self.client.patch(self._path(obj), release_patch(obj, owner_uid), patch_type="strategic")

    def claim(self, objects: Iterable[Obj]) -> list[Obj]:
        """The objects the controller owns after adopting and releasing; raises the first failure (after
        trying every object) other than a child that is gone."""
        claimed: list[Obj] = []
        errors: list[Exception] = []
        for obj in objects:
            action = claim_action(obj, owner=self.owner, matches=self.selector.matches(labels_of(obj)))
            try:
                if action is Claim.CLAIMED:
                    claimed.append(obj)
                elif action is Claim.ADOPT:
                    self._adopt(obj)
                    claimed.append(obj)
                elif action is Claim.RELEASE:
                    self._release(obj)
            except NotFound:
                continue
            except Exception as exc:  # noqa: BLE001 — collected and re-raised below, as utilerrors.Aggregate
                errors.append(exc)
        if errors:
            raise errors[0]
        return claimed
