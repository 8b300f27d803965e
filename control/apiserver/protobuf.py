"""Reading `application/vnd.kubernetes.protobuf` request bodies for the few kinds kubectl writes that way
(upstream: k8s.io/apimachinery/pkg/runtime/serializer/protobuf and the generated.proto of each API type).

kubectl 1.33's typed clients (`kubectl create namespace`, `create configmap`, `create secret`, `create
priorityclass`, `create poddisruptionbudget`, the evictions of `kubectl drain`) send
protobuf, with no JSON fallback when the server answers 415, so a server that only reads JSON cannot
serve those commands. Answers stay JSON: those clients accept `application/json` too.

The wire format is the envelope `k8s\\x00` + a `runtime.Unknown` message {typeMeta {apiVersion, kind},
raw, contentEncoding, contentType}, where `raw` is the object's own message. Only the kinds in `KINDS`
are decoded (anything else stays a 415); fields are read into the same JSON a client would have sent,
dropping empty values as the JSON encoder's `omitempty` does. Timestamps and managedFields are skipped:
the server owns them on create anyway.
"""

from __future__ import annotations

import base64
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


# A schema maps field number → (JSON name, type, nested schema for messages).
Schema = dict[int, tuple[str, str, Any]]

TYPE_META: Schema = {1: ("apiVersion", "string", None), 2: ("kind", "string", None)}
UNKNOWN: Schema = {1: ("typeMeta", "message", TYPE_META), 2: ("raw", "raw", None),
                   3: ("contentEncoding", "string", None), 4: ("contentType", "string", None)}
OWNER_REFERENCE: Schema = {1: ("kind", "string", None), 3: ("name", "string", None), 4: ("uid", "string", None),
                           5: ("apiVersion", "string", None), 6: ("controller", "bool", None),
                           7: ("blockOwnerDeletion", "bool", None)}
OBJECT_META: Schema = {
    1: ("name", "string", None), 2: ("generateName", "string", None), 3: ("namespace", "string", None),
    5: ("uid", "string", None), 6: ("resourceVersion", "string", None), 7: ("generation", "int", None),
    11: ("labels", "map_string", None), 12: ("annotations", "map_string", None),
    13: ("ownerReferences", "repeated_message", OWNER_REFERENCE), 14: ("finalizers", "repeated_string", None),
}
INT_OR_STRING: Schema = {1: ("type", "int", None), 2: ("intVal", "int", None), 3: ("strVal", "string", None)}
LABEL_SELECTOR: Schema = {
    1: ("matchLabels", "map_string", None),
    2: ("matchExpressions", "repeated_message", {1: ("key", "string", None), 2: ("operator", "string", None),
                                                 3: ("values", "repeated_string", None)}),
}
# metav1.DeleteOptions; a gracePeriodSeconds of 0 is meaningful (delete now), so it is kept.
DELETE_OPTIONS: Schema = {
    1: ("gracePeriodSeconds", "int_present", None),
    2: ("preconditions", "message", {1: ("uid", "string", None), 2: ("resourceVersion", "string", None)}),
    3: ("orphanDependents", "bool", None), 4: ("propagationPolicy", "string", None),
    5: ("dryRun", "repeated_string", None),
}
EVICTION: Schema = {1: ("metadata", "message", OBJECT_META), 2: ("deleteOptions", "message", DELETE_OPTIONS)}
OBJECT_REFERENCE: Schema = {1: ("kind", "string", None), 2: ("namespace", "string", None), 3: ("name", "string", None),
                            4: ("uid", "string", None), 5: ("apiVersion", "string", None),
                            6: ("resourceVersion", "string", None), 7: ("fieldPath", "string", None)}
# discovery/v1 generated.proto: Endpoint, EndpointConditions (optional bools: a false is sent and kept),
# EndpointPort; hints and deprecatedTopology are not read.
ENDPOINT: Schema = {1: ("addresses", "repeated_string", None),
                    2: ("conditions", "message", {1: ("ready", "bool", None), 2: ("serving", "bool", None),
                                                  3: ("terminating", "bool", None)}),
                    3: ("hostname", "string", None), 4: ("targetRef", "message", OBJECT_REFERENCE),
                    6: ("nodeName", "string", None), 7: ("zone", "string", None)}
ENDPOINT_PORT: Schema = {1: ("name", "string", None), 2: ("protocol", "string", None), 3: ("port", "int", None),
                         4: ("appProtocol", "string", None)}
KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {1: ("metadata", "message", OBJECT_META),
                          2: ("spec", "message", {1: ("finalizers", "repeated_string", None)}),
                          3: ("status", "message", {1: ("phase", "string", None)})},
    ("v1", "ConfigMap"): {1: ("metadata", "message", OBJECT_META), 2: ("data", "map_string", None),
                          3: ("binaryData", "map_bytes", None), 4: ("immutable", "bool", None)},
    ("v1", "Secret"): {1: ("metadata", "message", OBJECT_META), 2: ("data", "map_bytes", None),
                       3: ("type", "string", None), 4: ("stringData", "map_string", None),
                       5: ("immutable", "bool", None)},
    ("scheduling.k8s.io/v1", "PriorityClass"): {1: ("metadata", "message", OBJECT_META), 2: ("value", "int", None),
                                                3: ("globalDefault", "bool", None),
                                                4: ("description", "string", None),
                                                5: ("preemptionPolicy", "string", None)},
    # `kubectl create poddisruptionbudget`, and the Eviction `kubectl drain` posts (policy/v1 since 1.22).
    ("policy/v1", "PodDisruptionBudget"): {
        1: ("metadata", "message", OBJECT_META),
        2: ("spec", "message", {1: ("minAvailable", "int_or_string", None), 2: ("selector", "message", LABEL_SELECTOR),
                                3: ("maxUnavailable", "int_or_string", None),
                                4: ("unhealthyPodEvictionPolicy", "string", None)})},
    ("policy/v1", "Eviction"): EVICTION,
    ("discovery.k8s.io/v1", "EndpointSlice"): {1: ("metadata", "message", OBJECT_META),
                                               4: ("addressType", "string", None),
                                               2: ("endpoints", "repeated_message", ENDPOINT),
                                               3: ("ports", "repeated_message", ENDPOINT_PORT)},
    ("policy/v1beta1", "Eviction"): EVICTION,
}


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


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message level; length-delimited values stay bytes."""
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


def _map_entry(value: Any, *, binary: bool) -> tuple[str, Any]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, item = "", b""
    for number, _, part in _fields(value):
        if number == 1:
            key = _text(part)
        elif number == 2:
            item = part
    return key, base64.b64encode(item).decode() if binary else _text(item)


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        if number not in schema:
            continue
        name, kind, sub = schema[number]
        if kind == "string":
            if _text(value):
                obj[name] = _text(value)
        elif kind == "raw":
            obj[name] = value
        elif kind == "bool":
            obj[name] = bool(value) if wire == 0 else _fail(name)
        elif kind in ("int", "int_present"):
            number_value = value if wire == 0 else _fail(name)
            number_value = number_value - (1 << 64) if number_value >= 1 << 63 else number_value
            if number_value or kind == "int_present":
                obj[name] = number_value
        elif kind == "int_or_string":  # intstr.IntOrString {type: 0 int / 1 string, intVal, strVal}
            parts = decode_message(value if isinstance(value, bytes) else _fail(name), INT_OR_STRING)
            obj[name] = parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
        elif kind == "message":
            nested = decode_message(value if isinstance(value, bytes) else _fail(name), sub)
            if nested:
                obj[name] = nested
        elif kind == "repeated_string":
            obj.setdefault(name, []).append(_text(value))
        elif kind == "repeated_message":
            obj.setdefault(name, []).append(decode_message(value if isinstance(value, bytes) else _fail(name), sub))
        elif kind in ("map_string", "map_bytes"):
            key, item = _map_entry(value, binary=kind == "map_bytes")
            obj.setdefault(name, {})[key] = item
    return obj


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
    schema = KINDS.get((api_version, kind))
    if schema is None:
        return None
    return {"apiVersion": api_version, "kind": kind, **decode_message(unknown.get("raw", b""), schema)}
