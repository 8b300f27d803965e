"""A minimal `/openapi/v2` document, as gnostic's openapi_v2.Document protobuf and as JSON.

Upstream: k8s.io/kube-openapi/pkg/handler (serves the spec as JSON or as the protobuf of
github.com/google/gnostic openapiv2/OpenAPIv2.proto). Field numbers used here, from that .proto:
`Document { string swagger = 1; Info info = 2; ... Paths paths = 8; ... }` and
`Info { string title = 1; string version = 2; ... }`.

Why serve it at all: kubectl 1.20 fetches `/openapi/v2` as protobuf before every `create`/`apply` to
validate manifests on the client, and fails on a 404 or on a JSON body. A document with no
`definitions` has no schema for any kind, and kubectl skips validation of kinds it has no schema for,
so this document makes client-side validation a no-op; the server validates writes itself. An empty
`paths` is included so the JSON form is valid Swagger 2.0 (paths is required there).

The encoder covers only what the document needs (varints, tags, length-delimited fields), so no protobuf
dependency is pulled in; `decode_fields` is its inverse for one message level, for tests and debugging.
"""

from __future__ import annotations

from typing import Any

from control.util.version import KUBERNETES_VERSION

TITLE = "slimkube"
# What kube-openapi answers for protobuf; kubectl 1.20 also accepts application/octet-stream.
PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_VARINT = 0
_LENGTH_DELIMITED = 2


def encode_varint(value: int) -> bytes:
    """Base-128 varint, least significant group first (protobuf encoding of unsigned integers)."""
    if value < 0:
        raise ValueError("only unsigned varints are needed here")
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def length_delimited(field_number: int, payload: bytes) -> bytes:
    """One wire-type-2 field: tag, length, bytes (strings and embedded messages alike)."""
    return encode_varint(field_number << 3 | _LENGTH_DELIMITED) + encode_varint(len(payload)) + payload


def _decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def decode_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) for each field of one message; varints as int, length-delimited as bytes.

    Nested messages stay bytes: decode them again with this function. Other wire types are refused
    because nothing here writes them.
    """
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _decode_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, pos = _decode_varint(data, pos)
            fields.append((number, value))
        elif wire_type == _LENGTH_DELIMITED:
            length, pos = _decode_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated length-delimited field")
            fields.append((number, data[pos:pos + length]))
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire_type} in field {number}")
    return fields


def openapi_v2_protobuf() -> bytes:
    """The Document: swagger "2.0", info {title, version = the Kubernetes version served}, empty paths."""
    info = length_delimited(1, TITLE.encode()) + length_delimited(2, KUBERNETES_VERSION.encode())
    return length_delimited(1, b"2.0") + length_delimited(2, info) + length_delimited(8, b"")


def openapi_v2_json() -> dict[str, Any]:
    """The same document as JSON, for clients that ask `Accept: application/json`."""
    return {"swagger": "2.0", "info": {"title": TITLE, "version": KUBERNETES_VERSION}, "paths": {}}
