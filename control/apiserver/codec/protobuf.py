"""Reading `application/vnd.kubernetes.protobuf` request bodies (upstream: k8s.io/apimachinery/pkg/runtime/
serializer/protobuf, and the generated.proto of each API type).

kubectl 1.32+ sends its typed commands' bodies as protobuf, with no JSON fallback when the server answers
415 — measured with kubectl 1.33 at -v=9: `create deployment|service|job|cronjob|serviceaccount|quota|
secret|configmap|namespace|priorityclass|poddisruptionbudget|rolebinding|ingress|token`
and the evictions of `kubectl drain`. (`expose`, `run`, `autoscale`, `create job --from`, `apply`,
`scale`, `label`, `delete` work on unstructured objects and send JSON.) Those clients send
`Accept: application/vnd.kubernetes.protobuf,application/json`, so answers stay JSON.

The wire format is the envelope `k8s\\x00` + a `runtime.Unknown` message {typeMeta {apiVersion, kind},
raw, contentEncoding, contentType}, where `raw` is the object's own message. Every kind of the API
groups in the type table decodes (control/apiserver/codec/protoschema.py: upstream's generated.proto facts and Go
struct tags); a kind outside them is None (the caller answers 415). The result is the JSON the same
client writes when it speaks JSON: zero `omitempty` scalars gogo-protobuf wrote are dropped, pointer
fields (`replicas: 0`, `ready: false`) and non-pointer structs (`strategy: {}`) kept, embedded structs
inlined, bytes as base64, Quantity as its string, IntOrString as a number or a string, Time and
MicroTime as RFC 3339 (a zero time, JSON's `null`, is left out), RawExtension and FieldsV1 as the JSON
they carry (no kind in the table has a metav1.Duration field). Unknown field numbers are skipped, as
upstream's decoder does.
"""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

from control.apiserver.codec.protoschema import META, SCALARS, Field, schemas

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
_OMIT = object()  # a value Go's JSON encoder writes as null (a zero metav1.Time): left out


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def read_fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message level; length-delimited and fixed-size values stay
    bytes (the OpenAPI protobuf's tests read gnostic documents with it too)."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated length-delimited field")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ProtobufError("truncated fixed-size field")
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("string is not UTF-8") from None


def decode_message(data: bytes, message: str) -> dict[str, Any]:
    """One message as Kubernetes JSON, following the field table of `message` (a fully qualified name)."""
    table = schemas().messages[message]
    obj: dict[str, Any] = {}
    for number, wire, value in read_fields(data):
        field = table.get(number)
        if field is None:
            continue
        if field.label == "map":
            key, item = _map_entry(value, field)
            obj.setdefault(field.json, {})[key] = item
        elif field.label == "repeated":
            obj.setdefault(field.json, []).extend(_repeated(field, wire, value))
        else:
            decoded = _value(field, wire, value)
            if not field.json:  # an embedded Go struct: JSON inlines its fields
                obj.update(decoded)
            elif decoded is not _OMIT and (field.pointer or not field.omitempty or not _is_zero(field, decoded)):
                obj[field.json] = decoded
    return obj


def _is_zero(field: Field, value: Any) -> bool:
    """Go's omitempty: zero scalars and empty strings go, structs never do."""
    return field.type in SCALARS and value in ("", 0)


def _repeated(field: Field, wire: int, value: Any) -> list[Any]:
    if wire == 2 and field.type in ("bool", "int32", "int64", "uint32", "uint64"):  # a packed run of varints
        items, pos = [], 0
        while pos < len(value):
            item, pos = _varint(value, pos)
            items.append(_scalar(field.type, item))
        return items
    return [_value(field, wire, value)]


def _scalar(type_name: str, value: int) -> Any:
    if type_name == "bool":
        return bool(value)
    if type_name in ("int32", "int64") and value >= 1 << 63:  # negative: two's complement in 64 bits
        return value - (1 << 64)
    return value


def _value(field: Field, wire: int, value: Any) -> Any:
    type_name = field.type
    if type_name in ("bool", "int32", "int64", "uint32", "uint64"):
        return _scalar(type_name, value) if wire == 0 else _fail(field.json)
    if wire != 2:
        return _fail(field.json)
    if type_name == "string":
        return _text(value)
    if type_name == "bytes":
        return base64.b64encode(value).decode()
    special = _SPECIAL.get(type_name)
    if special is not None:
        return special(value)
    if type_name in schemas().list_wrappers:
        return next(iter(decode_message(value, type_name).values()), [])
    return decode_message(value, type_name)  # every message a field names is in the table


def _map_entry(value: Any, field: Field) -> tuple[str, Any]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, item = "", None
    entry_value = Field(field.json, field.type, "optional")
    for number, wire, part in read_fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2:
            item = _value(entry_value, wire, part)
    if item is None:  # an entry whose value is the zero value: protobuf leaves it out
        item = {"string": "", "bytes": ""}.get(field.type, 0 if field.type in ("int32", "int64") else {})
    return key, None if item is _OMIT else item


def _parts(value: bytes, *, varints: tuple[int, ...] = (), lengths: tuple[int, ...] = ()) -> dict[int, Any]:
    """The fields of a small well-known message, each checked for the wire type its proto gives it."""
    parts: dict[int, Any] = {}
    for number, wire, part in read_fields(value):
        if (number in varints and wire != 0) or (number in lengths and wire != 2):
            raise ProtobufError(f"field {number}: unexpected wire type")
        parts[number] = part
    return parts


def _time(value: bytes, *, micro: bool = False) -> Any:
    """metav1.Time / MicroTime {seconds, nanos} → RFC 3339 in UTC (MicroTime with six fraction digits)."""
    parts = _parts(value, varints=(1, 2))
    seconds, nanos = _scalar("int64", parts.get(1, 0)), parts.get(2, 0)
    if not seconds and not nanos:
        return _OMIT
    try:
        moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError(f"time out of range: {seconds}") from None
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{nanos // 1000 % 1_000_000:06d}Z" if micro else f"{text}Z"


def _quantity(value: bytes) -> str:
    return _text(_parts(value, lengths=(1,)).get(1, b""))


def _int_or_string(value: bytes) -> int | str:
    """intstr.IntOrString {type: 0 int / 1 string, intVal, strVal}."""
    parts = _parts(value, varints=(1, 2), lengths=(3,))
    return _text(parts.get(3, b"")) if parts.get(1) == 1 else _scalar("int32", parts.get(2, 0))


def _embedded_json(value: bytes) -> Any:
    """runtime.RawExtension / metav1.FieldsV1 {raw}: the raw bytes are the JSON document."""
    raw = _parts(value, lengths=(1,)).get(1, b"")
    if not raw:
        return _OMIT
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ProtobufError("an embedded object is not JSON") from None


_SPECIAL = {
    META + "Time": _time,
    META + "MicroTime": lambda value: _time(value, micro=True),
    META + "FieldsV1": _embedded_json,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _embedded_json,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
}


def _fail(name: str) -> Any:
    raise ProtobufError(f"{name}: unexpected wire type")


def decode_object(data: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf-encoded object, or None for a kind this server does not decode.
    Raises ProtobufError for a body that is not a Kubernetes protobuf envelope."""
    if not data.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected prefix "
                            f"{list(MAGIC)}")
    unknown = decode_message(data[len(MAGIC):], UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = schemas().kinds.get((api_version, kind))
    if message is None:
        return None
    raw = base64.b64decode(unknown.get("raw", ""))
    return {"kind": kind, "apiVersion": api_version, **decode_message(raw, message)}
