"""The shape of every built-in kind as server-side apply sees it: which objects are structs (named fields) and
which are maps (free keys), which lists are atomic, sets, or maps keyed by some of their elements' fields, and
which structs and maps are atomic (upstream: the schema sigs.k8s.io/structured-merge-diff reads, converted by
k8s.io/kube-openapi/pkg/schemaconv from the OpenAPI document generated out of the Go types).

The facts come from the table the protobuf codec reads (codec/protoschema.py, generated from upstream's
`generated.proto` and `types.go`): every message's fields, `repeated` and `map<string, V>`, and the markers and
struct tags of the Go types, read as the OpenAPI generator reads them:
- `+listType=atomic|set|map` with `+listMapKey=...` (several keys in order), on the field;
- without a `+listType`, `patchStrategy:"merge"` makes a set, or with `patchMergeKey:"k"` a map keyed by k,
  and an untagged list is atomic (schemaconv's rule for x-kubernetes-patch-strategy);
- `+structType=atomic` on a type, `+mapType=atomic` / `+structType=atomic` on a field.
These are the same `patchStrategy`/`patchMergeKey` tags the strategic merge patch's table in patch.py was
transcribed from; tests/unit/apiserver/test_fieldschema.py checks that the two agree on every list that table
names.

IntOrString, Quantity, Time, MicroTime, Duration, FieldsV1 and RawExtension are scalars (upstream: their
OpenAPI types are strings/untyped). A kind the table does not describe, and a field a struct does not
declare, get the "deduced" type upstream gives schemaless objects: objects are maps of their keys, lists are
atomic.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any

from control.apiserver.codec import protoschema
from control.apiserver.codec.protoschema import Markers

SCALAR_MESSAGES = frozenset({
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString", "k8s.io.apimachinery.pkg.api.resource.Quantity",
    protoschema.META + "Time", protoschema.META + "MicroTime", protoschema.META + "Duration",
    protoschema.META + "FieldsV1", "k8s.io.apimachinery.pkg.runtime.RawExtension",
})
# Defaults of list-map key fields that clients may leave out (upstream: the OpenAPI `default` schemaconv
# hands to structured-merge-diff, so a port without a protocol is keyed as protocol "TCP").
KEY_DEFAULTS = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class Type:
    """One node of the schema: `shape` is "struct" (a message: named fields), "map" (string keys, elements of
    `element`), "list" (elements of `element`), "scalar", or "deduced" (no schema: a map of deduced values).
    `element`/`message` name a message ("" for scalar elements). Lists carry `list_type` ("atomic", "set"
    or "map") and, for "map", the key fields; structs and maps may be `atomic`. `patch_strategy` and
    `patch_merge_key` are the field's strategic merge patch tags, kept to check patch.py's table against."""

    shape: str
    message: str = ""
    element: str = ""
    list_type: str = ""
    keys: tuple[str, ...] = ()
    atomic: bool = False
    patch_strategy: str = ""
    patch_merge_key: str = ""


SCALAR = Type("scalar")
DEDUCED = Type("deduced")
_DEDUCED_LIST = Type("list", list_type="atomic")


@dataclass(frozen=True)
class Schema:
    """Fields of every struct by JSON name (embedded structs inlined), the structs marked atomic, and the root
    message of every kind."""

    structs: dict[str, dict[str, Type]]
    atomic_structs: frozenset[str]
    kinds: dict[tuple[str, str], str]
    zero_fields: dict[str, tuple[tuple[str, str, object], ...]]  # message → (json, nested message, value)

    def zero(self, api_version: str, kind: str) -> dict[str, Any]:
        """The empty object of a kind as Go's JSON encoder writes it: non-pointer structs present, fields
        without `omitempty` present as their zero value (null for lists, maps and pointers). Upstream
        compares a create with this, so only what is new to it (labels, a pointer struct such as
        rollingUpdate) is "added" and gets a `.` marker of its own."""
        message = self.kinds.get((api_version, kind))
        return self._zero(message) if message else {}

    def _zero(self, message: str) -> dict[str, Any]:
        return {name: self._zero(nested) if nested else copy.deepcopy(value)
                for name, nested, value in self.zero_fields.get(message, ())}

    def root(self, api_version: str, kind: str) -> Type:
        message = self.kinds.get((api_version, kind))
        return Type("struct", message=message) if message else DEDUCED

    def field(self, parent: Type, name: str) -> tuple[Type, bool]:
        """The type of `name` inside a struct/map/deduced `parent`, and whether it is a declared struct field
        (upstream inserts undeclared map keys as members of a field set even when they have children)."""
        if parent.shape == "struct":
            declared = self.structs.get(parent.message, {}).get(name)
            return (declared, True) if declared is not None else (DEDUCED, False)
        if parent.shape == "map":
            return self.element(parent), False
        return DEDUCED, False

    def element(self, parent: Type) -> Type:
        """The type of a map's or list's elements."""
        if parent.shape == "deduced":
            return DEDUCED
        if not parent.element:
            return SCALAR
        return Type("struct", message=parent.element, atomic=parent.element in self.atomic_structs)


def deduced_child(value: object) -> Type:
    """The deduced type of a value without a schema."""
    return _DEDUCED_LIST if isinstance(value, list) else DEDUCED


def _field_type(field: protoschema.Field, markers: Markers, atomic_structs: frozenset[str]) -> Type:
    message = "" if field.type in protoschema.SCALARS or field.type in SCALAR_MESSAGES else field.type
    if field.label == "map":
        return Type("map", element=message, atomic=markers.atomic)
    if field.label == "repeated":
        list_type, keys = markers.list_type, markers.keys
        if not list_type:
            merge = "merge" in markers.strategy.split(",")
            list_type = ("map" if markers.merge_key else "set") if merge else "atomic"
            keys = (markers.merge_key,) if markers.merge_key else ()
        if list_type == "map" and not keys:
            list_type = "atomic"
        return Type("list", element=message, list_type=list_type, keys=keys, patch_strategy=markers.strategy,
                    patch_merge_key=markers.merge_key)
    if not message:
        return SCALAR
    return Type("struct", message=message, atomic=markers.atomic or message in atomic_structs)


def build(schemas: protoschema.Schemas) -> Schema:
    """The schema of every message in the tables."""
    structs: dict[str, dict[str, Type]] = {}
    for message, fields in schemas.messages.items():
        own = schemas.markers.get(message, {})
        structs[message] = {field.json: _field_type(field, own.get(number, Markers()), schemas.atomic_structs)
                            for number, field in fields.items()}
    for message in structs:  # inline embedded structs (`json:",inline"`, an empty JSON name)
        _inline(structs, message)
    zero_fields = {message: tuple(zero for f in fields.values() if f.json and (zero := _zero_field(f, structs)))
                   for message, fields in schemas.messages.items()}
    return Schema(structs, schemas.atomic_structs, schemas.kinds, zero_fields)


_SCALAR_ZEROS: dict[str, object] = {"string": "", "bool": False, "int32": 0, "int64": 0, "uint32": 0, "uint64": 0,
                                    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": 0,
                                    "k8s.io.apimachinery.pkg.api.resource.Quantity": "0",
                                    protoschema.META + "Duration": "0s"}


def _zero_field(field: protoschema.Field, structs: dict[str, dict[str, Type]]) -> tuple[str, str, object] | None:
    """How Go's encoder writes one field of an empty struct: (json name, message to recurse into, value),
    None when it leaves the field out."""
    if field.pointer or field.label != "optional" or field.type == "bytes":
        return None if field.omitempty else (field.json, "", None)
    if field.type in structs and field.type not in SCALAR_MESSAGES:
        return field.json, field.type, None  # a struct value is never omitted
    if field.type in SCALAR_MESSAGES:  # structs too: present even with omitempty
        return field.json, "", _SCALAR_ZEROS.get(field.type)
    return None if field.omitempty else (field.json, "", _SCALAR_ZEROS.get(field.type))


def _inline(structs: dict[str, dict[str, Type]], message: str) -> None:
    fields = structs[message]
    while (embedded := fields.pop("", None)) is not None:
        _inline(structs, embedded.message)
        fields.update({k: v for k, v in structs.get(embedded.message, {}).items() if k not in fields})


@functools.cache
def schema() -> Schema:
    return build(protoschema.schemas())
