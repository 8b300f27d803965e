"""The three PATCH engines: JSON patch, JSON merge patch and strategic merge patch, as pure functions over
objects in wire JSON (plain dicts and lists).

Upstream the handler (k8s.io/apiserver/pkg/endpoints/handlers/patch.go) hands the body to one of:

- evanphx/json-patch for `application/json-patch+json` (RFC 6902) and `application/merge-patch+json`
  (RFC 7386). We follow the RFCs as that library does: a JSON patch applies all-or-nothing, a failed
  `test` or a missing path is 422, an undecodable operation is 400.
- k8s.io/apimachinery/pkg/util/strategicpatch/patch.go for `application/strategic-merge-patch+json`.
  Upstream reads `patchStrategy`/`patchMergeKey` struct tags from the Go types by reflection; we have no Go
  types, so the tags we need are transcribed into `TYPES` (one table per API type, field -> strategy,
  merge key, child type) and `KIND_TYPES` (kind -> root type). A list that is not in a table is atomic
  and a map merges recursively, which is what upstream does for an untagged field. Kinds not listed get
  no schema at all (every list atomic), the behaviour a merge patch gives custom resources.

The strategic merge mirrors mergeMap / mergeSlice / mergeSliceWithSpecialElements / normalizeElementOrder /
mergeSortedSlice, including the ordering rules clients can observe: elements the patch names come in
the patch's order (or `$setElementOrder/<field>`'s), interleaved with the server-only elements kept in
their live order; a new element therefore goes before the untouched ones when no `$setElementOrder`
places it. Two deliberate differences: a value whose key is absent from the live object is still
merged (against an empty value) rather than copied, so no `$...` directive can ever reach storage; and
`$patch: merge` is accepted as the explicit default instead of being rejected.

Every function deep-copies its inputs first, so callers may keep using the live object and the patch.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

PATCH_CONTENT_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
}


class PatchError(ValueError):
    """The patch cannot be applied. `code` is the HTTP status the server answers with: 400 when the patch
    document itself is malformed, 413 when it is over a bound, 422 when it is well formed but does not apply
    to this object."""

    def __init__(self, message: str, *, code: int = 422) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# --- RFC 7386 JSON merge patch ---------------------------------------------------------------------

def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch: objects merge key by key, `null` deletes, anything else replaces.

    A non-object patch replaces the whole target, as the RFC says; the server rejects such a patch for a
    Kubernetes object before calling this (the result would not be an object)."""
    return _merge_patch(copy.deepcopy(target), patch)


def _merge_patch(target: Any, patch: Any) -> Any:
    """MergePatch on `target`, a private copy that is modified in place."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


# --- RFC 6902 JSON patch ---------------------------------------------------------------------------

_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_MISSING = object()


MAX_JSON_PATCH_OPERATIONS = 10_000  # upstream maxJSONPatchOperations
MAX_COPY_BYTES = 3 * 1024 * 1024  # upstream JSONPatchMaxCopyBytes (json-patch's AccumulatedCopySizeLimit)


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: apply `operations` in order to a copy of `target`; any failure leaves nothing applied.
    More than 10,000 operations, or `copy` operations that together copy more than 3 MiB (a few copies of
    a copy double the document each time), are a 413 as upstream's."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise PatchError("a JSON patch must be a list of operation objects", code=400)
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got "
                         f"{len(operations)}", code=413)
    doc = copy.deepcopy(target)
    copied = [0]
    for op in operations:
        doc = _apply_operation(doc, op, copied)
    return doc


def _copy(doc: Any, op: dict[str, Any], copied: list[int]) -> Any:
    value = _get(doc, _pointer(op, "from"))
    copied[0] += len(json.dumps(value, separators=(",", ":")))
    if copied[0] > MAX_COPY_BYTES:
        raise PatchError(f"Unable to complete the copy, the accumulated size increase of copy is {copied[0]}, "
                         f"exceeding the limit {MAX_COPY_BYTES}", code=413)
    return _add(doc, _pointer(op, "path"), copy.deepcopy(value))


def _apply_operation(doc: Any, op: dict[str, Any], copied: list[int]) -> Any:
    name = op.get("op")
    path = _pointer(op, "path")
    if name == "add":
        return _add(doc, path, _value(op))
    if name == "remove":
        return _remove(doc, path)[0]
    if name == "replace":
        return _replace(doc, path, _value(op))
    if name == "move":
        source = _pointer(op, "from")
        if path[:len(source)] == source and len(path) > len(source):
            raise PatchError(f"cannot move {op['from']!r} into its own child {op['path']!r}")
        doc, value = _remove(doc, source)
        return _add(doc, path, value)
    if name == "copy":
        return _copy(doc, op, copied)
    if name == "test":
        if not _json_equal(_get(doc, path), _value(op)):
            raise PatchError(f"testing value {op['path']} failed")
        return doc
    raise PatchError(f"unknown JSON patch operation {name!r}", code=400)


def _pointer(op: dict[str, Any], member: str) -> list[str]:
    """RFC 6901: the tokens of `op[member]`, `~1` and `~0` unescaped in that order (so `~01` is `~1`)."""
    pointer = op.get(member)
    if not isinstance(pointer, str):
        raise PatchError(f"JSON patch operation {op.get('op')!r} needs a string {member!r}", code=400)
    if pointer and not pointer.startswith("/"):
        raise PatchError(f'JSON pointer {pointer!r} must be empty or start with "/"', code=400)
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(f"JSON patch operation {op.get('op')!r} is missing 'value'", code=400)
    return copy.deepcopy(op["value"])


def _index(array: list[Any], token: str, *, insert: bool) -> int:
    """An array index token; `-` (past the end) and `len` itself are only valid where inserting."""
    if insert and token == "-":
        return len(array)
    if not _ARRAY_INDEX.fullmatch(token):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(array) or (index == len(array) and not insert):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _get(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, insert=False)]
        else:
            raise PatchError(f"path /{'/'.join(tokens)} not found")
    return doc


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, insert=True), value)
    else:
        raise PatchError(f"cannot add to /{'/'.join(tokens)}: parent is not an object or array")
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """Remove the value at `tokens`; returns the document and what was removed (for `move`)."""
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, last = _get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, insert=False))
    raise PatchError(f"path /{'/'.join(tokens)} not found")


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    """Replace in place, so an object keeps its key order (remove + add would move the key last)."""
    if not tokens:
        return value
    parent, last = _get(doc, tokens[:-1]), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
    elif isinstance(parent, list):
        parent[_index(parent, last, insert=False)] = value
    else:
        raise PatchError(f"path /{'/'.join(tokens)} not found")
    return doc


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality for `test`: unlike Python's ==, `true` is not `1`; `1` and `1.0` are both the number 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_json_equal, a, b))
    equal: bool = a == b
    return equal


# --- strategic merge patch: schema ---------------------------------------------------------------

class Field(NamedTuple):
    """One field's upstream struct tags: `patchStrategy` ("merge", "retainKeys", comma-joined, or ""
    for atomic), `patchMergeKey`, and the API type of the value (of each element, for a list)."""

    strategy: str = ""
    merge_key: str = ""
    type: str | None = None


def _of(type_name: str) -> Field:
    """A field that only leads to a nested type with its own tags."""
    return Field(type=type_name)


_MERGE_BY_TYPE = Field("merge", "type")
_META = {"metadata": _of("ObjectMeta")}

TYPES: dict[str, dict[str, Field]] = {
    "ObjectMeta": {"finalizers": Field("merge"), "ownerReferences": Field("merge", "uid")},
    "PodTemplateSpec": {**_META, "spec": _of("PodSpec")},
    "PodSpec": {
        "volumes": Field("merge,retainKeys", "name"),
        "initContainers": Field("merge", "name", "Container"),
        "containers": Field("merge", "name", "Container"),
        "ephemeralContainers": Field("merge", "name", "Container"),
        "imagePullSecrets": Field("merge", "name"),
        "hostAliases": Field("merge", "ip"),
        "topologySpreadConstraints": Field("merge", "topologyKey"),
        "schedulingGates": Field("merge", "name"),
        "resourceClaims": Field("merge,retainKeys", "name"),
    },
    "Container": {
        "ports": Field("merge", "containerPort"),
        "env": Field("merge", "name"),
        "volumeMounts": Field("merge", "mountPath"),
        "volumeDevices": Field("merge", "devicePath"),
    },
    "PodStatus": {"conditions": _MERGE_BY_TYPE, "podIPs": Field("merge", "ip"), "hostIPs": Field("merge", "ip")},
    "NodeSpec": {"podCIDRs": Field("merge")},
    "NodeStatus": {"conditions": _MERGE_BY_TYPE, "addresses": _MERGE_BY_TYPE},
    "ServiceSpec": {"ports": Field("merge", "port")},
    "ConditionsStatus": {"conditions": _MERGE_BY_TYPE},
    "DeploymentSpec": {"template": _of("PodTemplateSpec"), "strategy": Field("retainKeys")},
    "TemplateSpec": {"template": _of("PodTemplateSpec")},
    "JobTemplateSpec": {**_META, "spec": _of("TemplateSpec")},
    "CronJobSpec": {"jobTemplate": _of("JobTemplateSpec")},
    # Root types, one per shape of object.
    "Object": _META,
    "Pod": {**_META, "spec": _of("PodSpec"), "status": _of("PodStatus")},
    "PodTemplate": {**_META, "template": _of("PodTemplateSpec")},
    "Deployment": {**_META, "spec": _of("DeploymentSpec"), "status": _of("ConditionsStatus")},
    "Workload": {**_META, "spec": _of("TemplateSpec"), "status": _of("ConditionsStatus")},
    "CronJob": {**_META, "spec": _of("CronJobSpec")},
    "Service": {**_META, "spec": _of("ServiceSpec"), "status": _of("ConditionsStatus")},
    "Node": {**_META, "spec": _of("NodeSpec"), "status": _of("NodeStatus")},
    "Namespace": {**_META, "status": _of("ConditionsStatus")},
    "PersistentVolumeClaim": {**_META, "status": _of("ConditionsStatus")},
    "ServiceAccount": {**_META, "secrets": Field("merge", "name")},
}

# Kinds whose spec holds a pod template at `spec.template` and whose status has `conditions` merged by
# type share "Workload". Endpoints.subsets and Namespace.spec.finalizers are atomic upstream.
KIND_TYPES: dict[str, str] = {
    "Pod": "Pod", "PodTemplate": "PodTemplate", "Deployment": "Deployment", "CronJob": "CronJob",
    "ReplicaSet": "Workload", "DaemonSet": "Workload", "StatefulSet": "Workload",
    "ReplicationController": "Workload", "Job": "Workload",
    "Service": "Service", "Node": "Node", "Namespace": "Namespace", "ServiceAccount": "ServiceAccount",
    "PersistentVolumeClaim": "PersistentVolumeClaim",
    **{kind: "Object" for kind in ("ConfigMap", "Secret", "Endpoints", "Event", "LimitRange", "ResourceQuota",
                                   "PersistentVolume", "Lease", "Role", "ClusterRole", "RoleBinding",
                                   "ClusterRoleBinding", "PriorityClass", "NetworkPolicy", "Ingress",
                                   "EndpointSlice")},
}


def _field(type_name: str | None, key: str) -> Field:
    return TYPES.get(type_name or "", {}).get(key, Field())


# --- strategic merge patch: merging --------------------------------------------------------------

_SET_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target: dict[str, Any], patch: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """Apply a strategic merge patch to `target`, an object of `kind`, the way the API server does."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object", code=400)
    return _merge_map(copy.deepcopy(target), copy.deepcopy(patch), KIND_TYPES.get(kind))


def _merge_map(original: dict[str, Any], patch: dict[str, Any], type_name: str | None) -> dict[str, Any]:
    """mergeMap: both arguments are private copies and are modified; returns the merged map."""
    directive = patch.pop("$patch", "merge")
    if directive == "delete":
        return {}
    if directive == "replace":
        original = {}
    elif directive != "merge":
        raise PatchError(f"unknown patch type: {directive} in map: {_show(patch)}", code=400)
    if "$retainKeys" in patch:
        _retain_keys(original, patch)
    orders = {k[len(_SET_ORDER):]: patch.pop(k) for k in list(patch) if k.startswith(_SET_ORDER)}
    deletions = {k[len(_DELETE_FROM):]: patch.pop(k) for k in list(patch) if k.startswith(_DELETE_FROM)}
    live_lists = {key: original.get(key) for key in orders}
    for key, value in patch.items():
        if key.startswith("$"):
            raise PatchError(f"unknown strategic merge patch directive {key!r}", code=400)
        if value is None:
            original.pop(key, None)
        else:
            original[key] = _merge_value(original.get(key), value, _field(type_name, key))
    for key, order in orders.items():
        if not isinstance(order, list):
            raise PatchError("invalid patch format of setElementOrder list", code=400)
        field = _field(type_name, key)
        if "merge" in field.strategy.split(",") and isinstance(original.get(key), list):
            live_list = live_lists[key]
            live = live_list if isinstance(live_list, list) else []
            original[key] = _normalize_order(original[key], order, live, _element_key(field.merge_key))
    for key, values in deletions.items():
        if not isinstance(values, list):
            raise PatchError("invalid patch format of primitive list", code=400)
        if isinstance(original.get(key), list):
            original[key] = [v for v in original[key] if v not in values]
    return original


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """`$retainKeys`: drop live keys not listed, so switching a volume from emptyDir to configMap does not
    leave both. Every key the patch sets must itself be listed."""
    keep = patch.pop("$retainKeys")
    if not isinstance(keep, list) or any(v is not None and not k.startswith("$") and k not in keep
                                         for k, v in patch.items()):
        raise PatchError("invalid patch format of retainKeys", code=400)
    for key in [k for k in original if k not in keep]:
        del original[key]


def _merge_value(original: Any, patch: Any, field: Field) -> Any:
    """Merge one field's value. A value of another type, or one absent from the live object, is merged
    against an empty value of the patch's type so its directives are processed and stripped."""
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, field.type)
    if not isinstance(patch, list):
        return patch
    if "merge" in field.strategy.split(","):
        return _merge_list(original if isinstance(original, list) else [], patch, field)
    return [_merge_map({}, e, field.type) if isinstance(e, dict) else e for e in patch]


def _merge_list(original: list[Any], patch: list[Any], field: Field) -> list[Any]:
    """mergeSlice for a list with strategy merge: primitives union, maps merge by the merge key."""
    elements = original + patch
    if any(isinstance(e, list) for e in elements):
        raise PatchError("lists of lists are not supported")
    maps = [isinstance(e, dict) for e in elements]
    if any(maps) and not all(maps):
        raise PatchError(f"list element types are not identical: {_show(original)} and {_show(patch)}")
    key = _element_key(field.merge_key)
    if not elements or not maps[0]:
        merged = []
        for value in elements:
            if value not in merged:
                merged.append(value)
        return _normalize_order(merged, patch, original, key)
    if not field.merge_key:
        raise PatchError("cannot merge lists of objects without a merge key")
    original, patch = _special_elements(original, patch, field.merge_key)
    merged = list(original)
    for element in patch:
        if field.merge_key not in element:
            raise PatchError(f"map: {_show(element)} does not contain declared merge key: {field.merge_key}")
        match = next((i for i, e in enumerate(merged) if key(e) == element[field.merge_key]), None)
        if match is None:
            merged.append(_merge_map({}, element, field.type))
        else:
            merged[match] = _merge_map(merged[match], element, field.type)
    return _normalize_order(merged, patch, original, key)


def _special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """mergeSliceWithSpecialElements: `{"$patch": "delete", <key>: v}` removes the live element(s) with
    that key; a `{"$patch": "replace"}` element makes the other patch elements the whole list."""
    plain, replace = [], False
    for element in patch:
        directive = element.get("$patch")
        if directive == "delete":
            if merge_key not in element:
                raise PatchError(f"map: {_show(element)} does not contain declared merge key: {merge_key}")
            original = [e for e in original if e.get(merge_key, _MISSING) != element[merge_key]]
        elif directive == "replace":
            replace = True
        else:
            plain.append(element)
    return ([], plain) if replace else (original, plain)


def _element_key(merge_key: str) -> Callable[[Any], Any]:
    """What identifies a list element: its merge key's value for maps, the value itself for primitives."""
    if not merge_key:
        return lambda element: element
    return lambda element: element.get(merge_key, _MISSING) if isinstance(element, dict) else _MISSING


def _normalize_order(merged: list[Any], patch_order: list[Any], live_order: list[Any],
                     key: Callable[[Any], Any]) -> list[Any]:
    """normalizeElementOrder + mergeSortedSlice: elements named in `patch_order` come in that order,
    the others in their live order, and the two runs interleave by live position, so an element the
    patch only modifies stays where it was."""
    patch_keys = [key(e) for e in patch_order]
    live_keys = [key(e) for e in live_order]

    def position(keys: list[Any], element: Any) -> int:
        k = key(element)
        return keys.index(k) if k in keys else -1

    def sort_key(keys: list[Any]) -> Callable[[Any], int]:
        return lambda element: position(keys, element) if key(element) in keys else len(keys)

    patched = sorted((e for e in merged if key(e) in patch_keys), key=sort_key(patch_keys))
    live_only = sorted((e for e in merged if key(e) not in patch_keys), key=sort_key(live_keys))
    result = []
    while live_only and patched:
        left, right = position(live_keys, live_only[0]), position(live_keys, patched[0])
        result.append(live_only.pop(0) if 0 <= left < right else patched.pop(0))
    return result + live_only + patched


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
