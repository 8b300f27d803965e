"""Object metadata helpers for wire dicts (Kubernetes JSON, camelCase).

Upstream: k8s.io/apimachinery/pkg/apis/meta/v1 (`GetControllerOf`, `IsControlledBy`, `NewControllerRef`,
`Time`/`MicroTime` formatting), pkg/api/meta (`SetStatusCondition`, `FindStatusCondition`),
pkg/runtime/schema (`ParseGroupVersion`) and client-go's tools/cache (`MetaNamespaceKeyFunc`,
`SplitMetaNamespaceKey`).

Objects stay plain dicts end to end, so these read them tolerantly: a missing `metadata`, `labels` or
`ownerReferences` reads as empty, exactly as Go's zero values do after decoding.

Nothing here reads a clock: whoever needs "now" passes it in, so controllers stay deterministic under
test. Timestamps are RFC 3339 in UTC with second precision (`2024-01-02T03:04:05Z`, metav1.Time) or
microsecond precision (`2024-01-02T03:04:05.000000Z`, metav1.MicroTime, used by Leases and Events).
A naive datetime is refused rather than guessed to be UTC or local time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableSequence
from datetime import UTC, datetime
from typing import Any, TypeVar

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))", re.ASCII
)

_J = TypeVar("_J")  # a JSON-shaped value


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def name_of(obj: Mapping[str, Any]) -> str:
    return _metadata(obj).get("name") or ""


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The namespace, or "" for cluster-scoped objects."""
    return _metadata(obj).get("namespace") or ""


def key_of(obj: Mapping[str, Any]) -> str:
    """The cache and work-queue key: `namespace/name`, or `name` if cluster-scoped (MetaNamespaceKeyFunc)."""
    namespace = namespace_of(obj)
    return f"{namespace}/{name_of(obj)}" if namespace else name_of(obj)


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a `key_of` key; ValueError for more than one '/' (SplitMetaNamespaceKey)."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """The object's own labels mapping (not a copy), or an empty one."""
    return _metadata(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """The object's own annotations mapping (not a copy), or an empty one."""
    return _metadata(obj).get("annotations") or {}


def owner_references(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(_metadata(obj).get("ownerReferences") or ())


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference marked `controller: true`; validation allows at most one (GetControllerOf)."""
    return next((ref for ref in owner_references(obj) if ref.get("controller") is True), None)


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether `owner` is `obj`'s controller, by UID: an owner deleted and recreated under the same name
    is a different object and does not control what its predecessor created."""
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == _metadata(owner).get("uid")


def new_controller_ref(owner: Mapping[str, Any], *, api_version: str, kind: str) -> dict[str, Any]:
    """The ownerReference a controller puts on what it creates (NewControllerRef).

    `blockOwnerDeletion` makes foreground deletion of the owner wait for the dependant. The owner's
    apiVersion and kind are arguments because objects read from a typed list may lack them.
    """
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": _metadata(owner).get("uid") or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def get_condition(obj: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    """The `status.conditions` entry of that type, if any (FindStatusCondition)."""
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return next((condition for condition in conditions if condition.get("type") == condition_type), None)


def set_condition(
    conditions: MutableSequence[dict[str, Any]], condition: Mapping[str, Any], *, now: str | datetime
) -> bool:
    """Add or update `condition` in place by its type; True if anything changed (SetStatusCondition).

    `lastTransitionTime` moves only when `status` changes, so it tells how long the condition has held:
    it is `now` then (or the time the new condition carries), and kept as it was otherwise. Every other
    field (reason, message, observedGeneration, lastProbeTime, ...) is taken from `condition`.
    """
    transition_now = format_timestamp(now) if isinstance(now, datetime) else now
    for index, existing in enumerate(conditions):
        if existing.get("type") != condition.get("type"):
            continue
        updated = dict(condition)
        if existing.get("status") == condition.get("status"):
            updated["lastTransitionTime"] = existing.get("lastTransitionTime") or transition_now
        else:
            updated["lastTransitionTime"] = condition.get("lastTransitionTime") or transition_now
        if updated == existing:
            return False
        conditions[index] = updated
        return True
    added = {**condition, "lastTransitionTime": condition.get("lastTransitionTime") or transition_now}
    conditions.append(added)
    return True


def format_timestamp(moment: datetime, *, micro: bool = False) -> str:
    """RFC 3339 in UTC as metav1.Time (`...T03:04:05Z`) or, `micro`, as MicroTime (`...05.000000Z`)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a timestamp needs a timezone-aware datetime; naive ones are ambiguous")
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def timestamp_or_none(value: Any) -> datetime | None:
    """`parse_timestamp` for a field that may be missing, empty or malformed: None instead of an error
    (a controller ranks or measures what it can and treats an unreadable time as absent)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


def parse_timestamp(text: str) -> datetime:
    """An aware UTC datetime from RFC 3339 text with any offset; digits beyond microseconds are cut off."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day, hour, minute, second, fraction, sign, offset_h, offset_m = match.groups()
    offset = "+00:00" if sign is None else f"{sign}{offset_h}:{offset_m}"
    micros = (fraction or "").ljust(6, "0")[:6]
    iso = f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micros}{offset}"
    try:
        return datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:  # e.g. month 13 or second 60
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}") from None


def deep_copy(obj: _J) -> _J:
    """A copy of a JSON-shaped value (dicts, lists, scalars); much faster than copy.deepcopy for them."""
    if isinstance(obj, dict):
        return {key: deep_copy(value) for key, value in obj.items()}  # type: ignore[return-value]
    if isinstance(obj, list):
        return [deep_copy(item) for item in obj]  # type: ignore[return-value]
    return obj


def group_version(api_version: str) -> tuple[str, str]:
    """("apps", "v1") for "apps/v1", ("", "v1") for the core group (ParseGroupVersion)."""
    if api_version in ("", "/"):
        return "", ""
    group, slash, version = api_version.partition("/")
    if not slash:
        return "", api_version
    if "/" in version:
        raise ValueError(f"unexpected GroupVersion string: {api_version}")
    return group, version
