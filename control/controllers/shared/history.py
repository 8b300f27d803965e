"""ControllerRevisions: the history of a DaemonSet's or StatefulSet's template, one immutable snapshot per
revision, so a rollout knows which pods are current and `kubectl rollout undo` can go back.

Upstream: pkg/controller/history/controller_history.go (`ControllerRevisionHashLabel`,
`ControllerRevisionName`, `NewControllerRevision`, `HashControllerRevision`, `SortControllerRevisions`,
`EqualRevision`, `FindEqualRevisions`, `realHistory.ListControllerRevisions` / `CreateControllerRevision`
(the hash-collision loop) / `UpdateControllerRevision` / `DeleteControllerRevision` /
`AdoptControllerRevision` / `ReleaseControllerRevision`), and the history truncation both controllers do
(daemon/update.go `cleanupHistory`, stateful_set_control.go `truncateHistory`): keep every revision a live
pod (or the current/update revision) still uses, and of the others only the `revisionHistoryLimit` newest.
StatefulSets and DaemonSets record their rolling updates and rollbacks as ControllerRevisions.

Pure functions decide (names, hashes, orders, what to truncate); `History` does the I/O through the API
client and reads the shared ControllerRevision informer's lister.

A revision's `data` is a RawExtension: JSON on the wire, a dict here. Its bytes (for the hash and for
equality) are the compact, key-sorted JSON Go's encoding/json writes for a map, so two revisions whose
data are equal dicts are equal, as upstream compares `Data.Raw` byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from control.api.typed import ControllerRevision, TypedObject
from control.apimachinery.labels import Selector
from control.apimachinery.meta import controller_ref, deep_copy, new_controller_ref
from control.client.errors import ApiError
from control.client.paths import resource_path
from control.controllers.shared.base import APIClient
from control.controllers.shared.controller_ref_manager import adopt_patch, release_patch
from control.controllers.shared.helpers import fnv32, safe_encode

API_VERSION = "apps/v1"
PLURAL = "controllerrevisions"
KIND = "ControllerRevision"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"  # apps.ControllerRevisionHashLabelKey
MAX_PREFIX = 223  # upstream: a 253-character name leaves room for "-" and the hash

Obj = Mapping[str, Any]


def data_bytes(data: Any) -> bytes:
    """The revision data as Go's json.Marshal of a map writes it (compact, keys sorted)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def hash_revision(data: Any, collision_count: int | None) -> str:
    """HashControllerRevision: fnv32 of the data bytes, then the collision count's decimal text."""
    raw = data_bytes(data)
    if collision_count is not None:
        raw += str(collision_count).encode()
    return safe_encode(str(fnv32(raw)))


def revision_name(prefix: str, hash_: str) -> str:
    """ControllerRevisionName: `<parent name>-<hash>`, the prefix cut to 223 characters."""
    return f"{prefix[:MAX_PREFIX]}-{hash_}"


def revision_number(revision: Obj) -> int:
    value = revision.get("revision")
    return int(value) if isinstance(value, int) else 0


def new_controller_revision(parent: Obj, *, api_version: str, kind: str, template_labels: Mapping[str, str],
                            data: Any, revision: int, collision_count: int | None) -> dict[str, Any]:
    """NewControllerRevision: the template's labels plus the hash label, the parent's controller
    reference, the data and the revision number; named `<parent>-<hash>`."""
    hash_ = hash_revision(data, collision_count)
    metadata = parent.get("metadata") or {}
    return {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": revision_name(str(metadata.get("name") or ""), hash_),
                     "namespace": metadata.get("namespace"),
                     "labels": {**template_labels, CONTROLLER_REVISION_HASH_LABEL: hash_},
                     "ownerReferences": [new_controller_ref(parent, api_version=api_version, kind=kind)]},
        "data": deep_copy(data),
        "revision": revision,
    }


def sort_revisions(revisions: Iterable[Obj]) -> list[Obj]:
    """SortControllerRevisions: by revision, then creation time, then name (oldest first)."""
    def order(revision: Obj) -> tuple[int, str, str]:
        metadata = revision.get("metadata") or {}
        return (revision_number(revision), str(metadata.get("creationTimestamp") or ""),
                str(metadata.get("name") or ""))
    return sorted(revisions, key=order)


def equal_revision(a: Obj | None, b: Obj | None) -> bool:
    """EqualRevision: equal hash labels (when both have one) and equal data."""
    if a is None or b is None:
        return a is b
    hash_a = ControllerRevision(a).metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
    hash_b = ControllerRevision(b).metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
    if hash_a and hash_b and hash_a != hash_b:
        return False
    return data_bytes(a.get("data")) == data_bytes(b.get("data"))


def find_equal_revisions(revisions: Iterable[Obj], needle: Obj) -> list[Obj]:
    """FindEqualRevisions: the revisions equal to `needle`, in the order given."""
    return [revision for revision in revisions if equal_revision(revision, needle)]


def max_revision(revisions: Iterable[Obj]) -> int:
    """The highest revision number (0 for none): the next snapshot is this + 1."""
    return max((revision_number(revision) for revision in revisions), default=0)


def revisions_to_truncate(revisions: Sequence[Obj], *, live: Iterable[str], limit: int) -> list[Obj]:
    """Which revisions to delete: of those whose name is not `live` (used by a pod or current), all but
    the `limit` newest (cleanupHistory / truncateHistory). Returned oldest first."""
    kept = set(live)
    dead = [revision for revision in sort_revisions(revisions)
            if ControllerRevision(revision).metadata.name not in kept]
    excess = len(dead) - max(0, limit)
    return dead[:excess] if excess > 0 else []


def revision_path(namespace: str, name: str | None = None) -> str:
    return resource_path(API_VERSION, PLURAL, namespace=namespace, name=name)


class History:
    """realHistory: ControllerRevision reads from the shared informer, writes through the API."""

    def __init__(self, client: APIClient, lister: Any) -> None:
        self.client = client
        self.lister = lister

    def list_controller_revisions(self, parent: Obj, selector: Selector) -> list[dict[str, Any]]:
        """The revisions in the parent's namespace matching `selector` that it controls, and the orphans
        (to be adopted by the caller)."""
        metadata = parent.get("metadata") or {}
        uid = metadata.get("uid")
        found = []
        for revision in self.lister.list(metadata.get("namespace"), selector):
            ref = controller_ref(revision)
            if ref is None or ref.get("uid") == uid:
                found.append(revision)
        return found

    def create_controller_revision(self, parent: Obj, revision: Obj,
                                   collision_count: int) -> tuple[dict[str, Any], int]:
        """Create `revision`, renaming it with a new hash for each name already taken by other data
        (CreateControllerRevision); returns the stored revision and the collision count it took."""
        namespace = TypedObject(parent).metadata.namespace
        prefix = TypedObject(parent).metadata.name
        count = collision_count
        while True:
            hash_ = hash_revision(revision.get("data"), count)
            clone = deep_copy(dict(revision))
            clone["metadata"]["name"] = revision_name(prefix, hash_)
            clone["metadata"].setdefault("labels", {})[CONTROLLER_REVISION_HASH_LABEL] = hash_
            try:
                return self.client.create(revision_path(namespace), clone), count
            except ApiError as exc:
                if exc.reason != "AlreadyExists":
                    raise
                exists = self.client.get(revision_path(namespace, clone["metadata"]["name"]))
                if data_bytes(exists.get("data")) == data_bytes(clone.get("data")):
                    return exists, count
                count += 1

    def update_revision_number(self, revision: Obj, number: int) -> dict[str, Any]:
        """UpdateControllerRevision: only the revision number changes (data is immutable)."""
        metadata = revision.get("metadata") or {}
        return self.client.patch(revision_path(str(metadata.get("namespace")), str(metadata.get("name"))),
                                 {"revision": number})

    def delete_controller_revision(self, revision: Obj) -> None:
        metadata = revision.get("metadata") or {}
        try:
            self.client.delete(revision_path(str(metadata.get("namespace")), str(metadata.get("name"))))
        except ApiError as exc:
            if exc.code != 404:
                raise

    def adopt_controller_revision(self, parent: Obj, *, api_version: str, kind: str, revision: Obj) -> dict[str, Any]:
        metadata = revision.get("metadata") or {}
        reference = new_controller_ref(parent, api_version=api_version, kind=kind)
        return self.client.patch(revision_path(str(metadata.get("namespace")), str(metadata.get("name"))),
                                 adopt_patch(revision, reference), patch_type="strategic")

    def release_controller_revision(self, parent: Obj, revision: Obj) -> None:
        metadata = revision.get("metadata") or {}
        owner_uid = TypedObject(parent).metadata.uid
        try:
            self.client.patch(revision_path(str(metadata.get("namespace")), str(metadata.get("name"))),
                              release_patch(revision, owner_uid), patch_type="strategic")
        except ApiError as exc:
            if exc.code != 404:
                raise

    def truncate(self, revisions: Sequence[Obj], *, live: Iterable[str], limit: int) -> list[Obj]:
        """Delete what `revisions_to_truncate` selects; returns the deleted ones."""
        doomed = revisions_to_truncate(revisions, live=live, limit=limit)
        for revision in doomed:
            self.delete_controller_revision(revision)
        return doomed
