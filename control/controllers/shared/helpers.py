"""What several controllers read and compute the same way, in one place: status conditions, the
template and revision hashes, finalizer names, int-or-percent values. Pure functions over wire dicts.

Upstream: pkg/controller/controller_utils.go (`ComputeHash`), pkg/controller/history/controller_history.go
(`HashControllerRevision`'s fnv32), k8s.io/apimachinery util/rand (`SafeEncodeString`) and util/intstr
(`GetScaledValueFromIntOrPercent`), metav1 (`FinalizerOrphanDependents`, `FinalizerDeleteDependents`),
core/v1 (`FinalizerKubernetes`), pkg/controller/job/util (`FinishedCondition`, `IsJobFinished`).

Departure (the template hash): upstream's ComputeHash feeds the Go struct of the template through a spew
printer into fnv32a; here the bytes are the template's canonical JSON (Go zero values dropped, keys sorted),
then the collisionCount as four little-endian bytes, the sum rendered with the same safe-encode alphabet.
The hashes have upstream's shape (ten-ish characters of "bcdfghjklmnpqrstvwxz2456789") and upstream's
properties (equal templates hash equal, collisionCount changes the hash) but not upstream's values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from control.api.typed import Job, TypedObject
from control.apimachinery.meta import deep_copy, get_condition

Obj = Mapping[str, Any]

# -- finalizers -----------------------------------------------------------------------------------------

ORPHAN_FINALIZER = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
NAMESPACE_FINALIZER = "kubernetes"  # v1.FinalizerKubernetes: the namespace controller's, in spec.finalizers


def finalizers_of(obj: Obj) -> Sequence[str]:
    """metadata.finalizers (empty when absent)."""
    return TypedObject(obj).metadata.finalizers


def has_finalizer(obj: Obj, finalizer: str) -> bool:
    return finalizer in finalizers_of(obj)


# -- conditions -----------------------------------------------------------------------------------------


def status_condition(status: Obj, condition_type: str) -> dict[str, Any] | None:
    """The entry of that type in a status's `conditions` (GetDeploymentCondition, getCondition of the Job
    controller), or None."""
    return next((c for c in status.get("conditions") or () if c.get("type") == condition_type), None)


def condition_true(obj: Obj, condition_type: str) -> bool:
    """The object's condition of that type is there with status "True"."""
    condition = get_condition(obj, condition_type)
    return condition is not None and condition.get("status") == "True"


def job_finished_condition(job: Obj) -> Mapping[str, Any] | None:
    """The Job's Complete or Failed condition when True (FinishedCondition; a Job with one is finished,
    IsJobFinished), else None."""
    return next((c.raw for c in Job(job).status.conditions
                 if c.type in ("Complete", "Failed") and c.status == "True"), None)


# -- hashes ---------------------------------------------------------------------------------------------

DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY = "pod-template-hash"  # apps/v1 DefaultDeploymentUniqueLabelKey
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # util/rand alphanums: no vowels, no 0/1/3, no look-alikes
_FNV32_OFFSET, _FNV32_PRIME = 0x811C9DC5, 0x01000193


def fnv32(data: bytes) -> int:
    """FNV-1 (hash/fnv New32), the hash HashControllerRevision feeds."""
    value = _FNV32_OFFSET
    for byte in data:
        value = (value * _FNV32_PRIME) & 0xFFFFFFFF
        value ^= byte
    return value


def fnv32a(data: bytes) -> int:
    """FNV-1a (hash/fnv New32a), the hash ComputeHash feeds."""
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """util/rand SafeEncodeString: each character mapped into the vowel-free alphabet."""
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def _semantic(value: Any) -> Any:
    """`value` with Go's zero values (None, "", 0, False, {}, []) left out of every mapping, recursively:
    an absent field and a zero one are the same Go struct, and apiequality.Semantic also takes an empty
    map or slice for a nil one. List elements are kept as they are (their positions mean something)."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            normal = _semantic(item)
            if normal in (None, "", 0, {}, []):  # 0 == False == 0.0: every zero number and false
                continue
            result[key] = normal
        return result
    if isinstance(value, list):
        return [_semantic(item) for item in value]
    return value


def template_without_hash(template: Obj | None) -> Any:
    """The pod template as the hash and EqualIgnoreHash see it: its own pod-template-hash label left out,
    Go zero values dropped."""
    copy = deep_copy(dict(template or {}))
    labels = (copy.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    return _semantic(copy)


def compute_hash(template: Obj | None, collision_count: int | None) -> str:
    """The pod-template-hash of `template` (its own hash label ignored) for this collisionCount
    (controller.ComputeHash; the departure on the hashed bytes is in the module notes)."""
    data = json.dumps(template_without_hash(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little")
    return safe_encode(str(fnv32a(data)))


# -- int-or-percent -------------------------------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" of `total` rounded up or down, None as 0.
    Anything else raises ValueError (validation keeps it out of stored objects)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise ValueError(f"invalid value for IntOrString: invalid value {value!r}") from None
        scaled = percent * total
        return math.ceil(scaled / 100) if round_up else scaled // 100
    raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
