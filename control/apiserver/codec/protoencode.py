"""Writing answers as `application/vnd.kubernetes.protobuf` (upstream: k8s.io/apimachinery/pkg/runtime/
serializer/protobuf and the gogo-protobuf marshallers go-to-protobuf generates), for a client that accepts
protobuf and not JSON. The inverse of control/apiserver/codec/protobuf.py, from the same tables (protoschema.py).

What gogo-protobuf writes, mirrored so the bytes equal a Go client's (the kubectl 1.33 captures re-encode
byte for byte): fields in field-number order; every non-pointer field, zero or not (a missing string is
written empty, a missing struct as an empty message, a zero Time as an empty message); a pointer field only
when set; repeated scalars unpacked (proto2); map entries sorted by key, key and value both written;
negative integers as 64-bit two's complement; Time/MicroTime as {seconds, nanos}, Quantity as {string},
IntOrString as {type, intVal, strVal}, RawExtension/FieldsV1 as {raw} holding the JSON text, bytes from
their base64. An embedded Go struct (JSON inlines it) is written as its own message from the same object.

Besides the kinds with ObjectMeta, each `<Kind>List` (metadata ListMeta = 1, items = 2) and meta.k8s.io
Status (typeMeta apiVersion `v1`, as upstream) have a protobuf form; anything else (a Table, a kind outside
the table's groups, a watch stream) has none, and a client that accepts only protobuf gets 406.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from control.apiserver.codec import protobuf
from control.apiserver.codec.protoschema import META, SCALARS, Field, schemas

MEDIA_TYPE = protobuf.MEDIA_TYPE
# The media types that are JSON answers, which win when the client lists them too (kubectl always does).
_JSON_TYPES = frozenset({"application/json", "*/*", "application/*"})


def negotiate(accept: str | None) -> str:
    """"json" when the Accept header lists a type JSON answers (kubectl always does) or no protobuf type
    (as before: JSON is this server's answer), "protobuf" when it lists the Kubernetes protobuf type and no
    JSON, "none" when its only protobuf ranges ask for a transformation (`as=Table`, `as=PartialObject…`),
    which has no protobuf form here (406)."""
    ranges = []
    for part in (accept or "").split(","):
        media, *params = (piece.strip().lower() for piece in part.split(";"))
        ranges.append((media, {param.partition("=")[0].strip() for param in params}))
    if any(media in _JSON_TYPES for media, _ in ranges):
        return "json"
    protobuf_ranges = [params for media, params in ranges if media == MEDIA_TYPE]
    if not protobuf_ranges:
        return "json"
    return "protobuf" if any("as" not in params for params in protobuf_ranges) else "none"


@functools.cache
def _message_kinds() -> dict[tuple[str, str], str]:
    """(apiVersion, kind) → message: the object kinds, their Lists, and Status."""
    tables = schemas()
    kinds = dict(tables.kinds)
    for (api_version, kind), message in tables.kinds.items():
        listed = tables.messages.get(f"{message}List")
        if listed is not None and listed.get(1, Field("", "", "")).type == META + "ListMeta":
            kinds[(api_version, f"{kind}List")] = f"{message}List"
    kinds[("v1", "Status")] = META + "Status"
    return kinds


def message_for(api_version: str, kind: str) -> str | None:
    return _message_kinds().get((api_version, kind))


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64: ten bytes of two's complement, as gogo writes them
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _delimited(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def encode_message(obj: Mapping[str, Any], message: str) -> bytes:
    """The message `message` (fully qualified) holding the JSON object `obj`; keys not in its table are
    ignored (kind and apiVersion ride in the envelope)."""
    out = bytearray()
    for number, field in sorted(schemas().messages[message].items()):
        if not field.json:  # an embedded Go struct: its fields are the parent's in JSON
            out += _delimited(number, encode_message(obj, field.type))
            continue
        value = obj.get(field.json)
        if field.label == "map":
            entries: Mapping[str, Any] = value or {}
            for key in sorted(entries):
                entry = _delimited(1, key.encode()) + _encoded(2, field, entries[key])
                out += _delimited(number, entry)
        elif field.label == "repeated":
            for item in value or []:
                out += _encoded(number, field, item)
        elif value is not None:
            out += _encoded(number, field, value)
        elif not field.pointer and field.type != "bytes":
            out += _zero(number, field)
    return bytes(out)


def _zero(number: int, field: Field) -> bytes:
    """A missing non-pointer field as gogo writes the Go zero value."""
    if field.type in SCALARS:
        return _delimited(number, b"") if field.type == "string" else _key(number, 0) + _varint(0)
    if field.type in schemas().list_wrappers:
        return _delimited(number, b"")
    zero: dict[str, Any] = {}
    return _delimited(number, _SPECIAL_ZERO.get(field.type, lambda: encode_message(zero, field.type))())


def _encoded(number: int, field: Field, value: Any) -> bytes:
    type_name = field.type
    if type_name == "bool":
        return _key(number, 0) + _varint(1 if value else 0)
    if type_name in ("int32", "int64", "uint32", "uint64"):
        return _key(number, 0) + _varint(int(value))
    if type_name == "string":
        return _delimited(number, str(value).encode())
    if type_name == "bytes":
        return _delimited(number, base64.b64decode(value))
    special = _SPECIAL.get(type_name)
    if special is not None:
        return _delimited(number, special(value))
    if type_name in schemas().list_wrappers:
        (items_field,) = schemas().messages[type_name].values()
        return _delimited(number, encode_message({items_field.json: value}, type_name))
    return _delimited(number, encode_message(value, type_name))


def _uint(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _time(value: str) -> bytes:
    """RFC 3339 (Time: seconds; MicroTime: with a fraction) → {seconds, nanos}."""
    text = value.replace("Z", "+00:00").replace("z", "+00:00")
    fraction = 0
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        fraction = int(rest[:digits].ljust(9, "0")[:9]) if digits else 0
        text = head + rest[digits:]
    moment = datetime.datetime.fromisoformat(text)
    return _uint(1, int(moment.timestamp())) + _uint(2, fraction)


def _quantity(value: Any) -> bytes:
    return _delimited(1, str(value).encode())


def _int_or_string(value: int | str) -> bytes:
    if isinstance(value, str):
        return _uint(1, 1) + _uint(2, 0) + _delimited(3, value.encode())
    return _uint(1, 0) + _uint(2, value) + _delimited(3, b"")


def _embedded_json(value: Any) -> bytes:
    return _delimited(1, json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


_SPECIAL: dict[str, Callable[[Any], bytes]] = {
    META + "Time": _time,
    META + "MicroTime": _time,
    META + "FieldsV1": _embedded_json,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _embedded_json,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
}
# Go zero values of the special messages: a zero Time writes nothing inside; a zero Quantity is "0".
_SPECIAL_ZERO: dict[str, Callable[[], bytes]] = {
    META + "Time": bytes,
    META + "MicroTime": bytes,
    META + "FieldsV1": bytes,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": bytes,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda: _quantity("0"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": lambda: _int_or_string(0),
}


def encode_object(obj: Mapping[str, Any]) -> bytes | None:
    """The envelope `k8s\\0` + runtime.Unknown{typeMeta, raw, contentEncoding, contentType} of a JSON
    object, or None when its kind has no protobuf form here."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    message = message_for(api_version, kind)
    if message is None:
        return None
    type_meta = _delimited(1, api_version.encode()) + _delimited(2, kind.encode())
    unknown = _delimited(1, type_meta) + _delimited(2, encode_message(obj, message)) + _delimited(
        3, b"") + _delimited(4, b"")
    return protobuf.MAGIC + unknown


def decode_object(data: bytes) -> dict[str, Any] | None:
    """protobuf.decode_object for every kind this module writes (Lists and Status too)."""
    if not data.startswith(protobuf.MAGIC):
        raise protobuf.ProtobufError("not a Kubernetes protobuf envelope")
    unknown = protobuf.decode_message(data[len(protobuf.MAGIC):], protobuf.UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = message_for(api_version, kind)
    if message is None:
        return None
    raw = base64.b64decode(unknown.get("raw", ""))
    return {"kind": kind, "apiVersion": api_version, **protobuf.decode_message(raw, message)}
