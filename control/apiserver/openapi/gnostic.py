"""The OpenAPI v2 document as the protobuf of github.com/google/gnostic `openapiv2/OpenAPIv2.proto`
(package openapi.v2), what upstream's kube-openapi handler answers to
`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and what kubectl 1.20 reads for
`explain`, client-side validation, strategic-merge patch facts and `diff`'s dry-run check.

The encoder maps the Swagger 2.0 JSON the server builds (spec.py) onto gnostic's messages, one function
per message, field numbers copied from that .proto (the comments name the message). It covers what
Kubernetes documents and CRD schemas use: Document, Info, Paths/PathItem/Operation, parameters
(body, query, path, header, form data; `$ref`s as JsonReference), Responses, Schema with every Swagger
schema keyword, security requirements and definitions. Vendor extensions (`x-kubernetes-*`) are NamedAny
whose Any carries the value as YAML text, which is how gnostic stores them and how kubectl reads them back
(JSON text is YAML). Keys a message has no field for are left out, as gnostic's own compiler drops them.

No protobuf library is needed: the wire format used is varints, 64-bit doubles and length-delimited fields.
`decode_fields` is the inverse for one message level, for tests and debugging.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from control.apiserver.codec import protobuf

_VARINT = 0
_FIXED64 = 1
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


def decode_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) for each field of one message; varints as int, length-delimited as bytes,
    doubles as their 8 raw bytes. Nested messages stay bytes: decode them again with this function. The
    wire reading is the protobuf body decoder's; a gnostic document has no fixed32 field, so one is refused."""
    fields: list[tuple[int, int | bytes]] = []
    for number, wire_type, value in protobuf.read_fields(data):
        if wire_type not in (_VARINT, _FIXED64, _LENGTH_DELIMITED):
            raise ValueError(f"unsupported wire type {wire_type} in field {number}")
        fields.append((number, value))
    return fields


# -- scalar fields (proto3: a default value is not written) ---------------------------------------------

def _string(number: int, value: Any) -> bytes:
    return length_delimited(number, value.encode()) if isinstance(value, str) and value else b""


def _strings(number: int, values: Any) -> bytes:
    if isinstance(values, str):
        values = [values]
    return b"".join(length_delimited(number, v.encode()) for v in values or () if isinstance(v, str))


def _bool(number: int, value: Any) -> bytes:
    return encode_varint(number << 3 | _VARINT) + b"\x01" if value is True else b""


def _int64(number: int, value: Any) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return b""
    return encode_varint(number << 3 | _VARINT) + encode_varint(value)


def _double(number: int, value: Any) -> bytes:
    if not isinstance(value, int | float) or isinstance(value, bool) or value == 0:
        return b""
    return encode_varint(number << 3 | _FIXED64) + struct.pack("<d", float(value))


def _message(number: int, payload: bytes) -> bytes:
    return length_delimited(number, payload)


def _any(value: Any) -> bytes:
    """Any { google.protobuf.Any value = 1; string yaml = 2; }: the value as YAML (here: JSON) text."""
    return length_delimited(2, json.dumps(value, separators=(",", ":")).encode())


def _vendor_extensions(number: int, node: Mapping[str, Any]) -> bytes:
    """repeated NamedAny { string name = 1; Any value = 2; } for every `x-` key."""
    return b"".join(_message(number, _string(1, key) + _message(2, _any(value)))
                    for key, value in node.items() if key.startswith("x-"))


def _named(number: int, entries: Mapping[str, Any], encode: Callable[[Any], bytes]) -> bytes:
    """A map as gnostic writes one: repeated Named<T> { string name = 1; T value = 2; }."""
    return b"".join(_message(number, _string(1, name) + _message(2, encode(value))) for name, value in entries.items())


# -- messages --------------------------------------------------------------------------------------------

def schema(node: Mapping[str, Any]) -> bytes:
    """Schema (fields 1-31)."""
    out = [_string(1, node.get("$ref")), _string(2, node.get("format")), _string(3, node.get("title")),
           _string(4, node.get("description"))]
    if "default" in node:
        out.append(_message(5, _any(node["default"])))
    out += [_double(6, node.get("multipleOf")), _double(7, node.get("maximum")),
            _bool(8, node.get("exclusiveMaximum")), _double(9, node.get("minimum")),
            _bool(10, node.get("exclusiveMinimum")), _int64(11, node.get("maxLength")),
            _int64(12, node.get("minLength")), _string(13, node.get("pattern")), _int64(14, node.get("maxItems")),
            _int64(15, node.get("minItems")), _bool(16, node.get("uniqueItems")),
            _int64(17, node.get("maxProperties")), _int64(18, node.get("minProperties")),
            _strings(19, node.get("required"))]
    out += [_message(20, _any(value)) for value in node.get("enum") or ()]
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):  # AdditionalPropertiesItem { oneof { Schema schema = 1; bool boolean = 2; } }
        out.append(_message(21, _message(1, schema(additional))))
    elif isinstance(additional, bool):
        out.append(_message(21, encode_varint(2 << 3 | _VARINT) + (b"\x01" if additional else b"\x00")))
    if node.get("type"):  # TypeItem { repeated string value = 1; }
        out.append(_message(22, _strings(1, node["type"])))
    items = node.get("items")
    if isinstance(items, dict | list):  # ItemsItem { repeated Schema schema = 1; }
        out.append(_message(23, b"".join(_message(1, schema(item)) for item in _as_list(items))))
    out += [_message(24, schema(part)) for part in node.get("allOf") or ()]
    if isinstance(node.get("properties"), dict):  # Properties { repeated NamedSchema additional_properties = 1; }
        out.append(_message(25, _named(1, node["properties"], schema)))
    out += [_string(26, node.get("discriminator")), _bool(27, node.get("readOnly"))]
    if "example" in node:
        out.append(_message(30, _any(node["example"])))
    out.append(_vendor_extensions(31, node))
    return b"".join(out)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _primitive_fields(node: Mapping[str, Any], first: int) -> bytes:
    """The run of fields Header/PathParameterSubSchema/... share from `type` on (type, format, items, ...,
    multipleOf), numbered from `first`; items are PrimitivesItems, which has the same run from 1."""
    out = [_string(first, node.get("type")), _string(first + 1, node.get("format"))]
    if isinstance(node.get("items"), dict):
        out.append(_message(first + 2, _primitive_fields(node["items"], 1) + _vendor_extensions(18, node["items"])))
    out.append(_string(first + 3, node.get("collectionFormat")))
    if "default" in node:
        out.append(_message(first + 4, _any(node["default"])))
    out += [_double(first + 5, node.get("maximum")), _bool(first + 6, node.get("exclusiveMaximum")),
            _double(first + 7, node.get("minimum")), _bool(first + 8, node.get("exclusiveMinimum")),
            _int64(first + 9, node.get("maxLength")), _int64(first + 10, node.get("minLength")),
            _string(first + 11, node.get("pattern")), _int64(first + 12, node.get("maxItems")),
            _int64(first + 13, node.get("minItems")), _bool(first + 14, node.get("uniqueItems"))]
    out += [_message(first + 15, _any(value)) for value in node.get("enum") or ()]
    out.append(_double(first + 16, node.get("multipleOf")))
    return b"".join(out)


def parameter(node: Mapping[str, Any]) -> bytes:
    """Parameter { oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; } }."""
    where = node.get("in")
    head = (_bool(1, node.get("required")) + _string(2, where) + _string(3, node.get("description"))
            + _string(4, node.get("name")))
    if where == "body":  # BodyParameter { description 1, name 2, in 3, required 4, schema 5, vendor 6 }
        body = (_string(1, node.get("description")) + _string(2, node.get("name")) + _string(3, where)
                + _bool(4, node.get("required")))
        if isinstance(node.get("schema"), dict):
            body += _message(5, schema(node["schema"]))
        return _message(1, body + _vendor_extensions(6, node))
    if where in ("query", "formData"):  # Query/FormDataParameterSubSchema: allow_empty_value 5, type 6..., vendor 23
        sub = head + _bool(5, node.get("allowEmptyValue")) + _primitive_fields(node, 6) + _vendor_extensions(23, node)
        choice = 3 if where == "query" else 2
    else:  # Path/HeaderParameterSubSchema: type 5 ..., vendor 22
        sub = head + _primitive_fields(node, 5) + _vendor_extensions(22, node)
        choice = 4 if where == "path" else 1
    # NonBodyParameter { oneof { header 1; form_data 2; query 3; path 4; } }
    return _message(2, _message(choice, sub))


def _parameters_item(node: Mapping[str, Any]) -> bytes:
    """ParametersItem { oneof { Parameter parameter = 1; JsonReference json_reference = 2; } }."""
    if "$ref" in node:
        return _message(2, _string(1, node["$ref"]) + _string(2, node.get("description")))
    return _message(1, parameter(node))


def _response(node: Mapping[str, Any]) -> bytes:
    """ResponseValue { oneof { Response response = 1; ... } }; Response { description 1, SchemaItem schema 2 }."""
    body = _string(1, node.get("description"))
    if isinstance(node.get("schema"), dict):  # SchemaItem { oneof { Schema schema = 1; ... } }
        body += _message(2, _message(1, schema(node["schema"])))
    return _message(1, body + _vendor_extensions(5, node))


def operation(node: Mapping[str, Any]) -> bytes:
    """Operation (fields 1-13)."""
    out = [_strings(1, node.get("tags")), _string(2, node.get("summary")), _string(3, node.get("description")),
           _string(5, node.get("operationId")), _strings(6, node.get("produces")), _strings(7, node.get("consumes"))]
    out += [_message(8, _parameters_item(p)) for p in node.get("parameters") or ()]
    responses = node.get("responses")
    if isinstance(responses, dict):  # Responses { repeated NamedResponseValue response_code = 1; vendor 2 }
        out.append(_message(9, _named(1, {k: v for k, v in responses.items() if not k.startswith("x-")}, _response)
                            + _vendor_extensions(2, responses)))
    out += [_strings(10, node.get("schemes")), _bool(11, node.get("deprecated")), _vendor_extensions(13, node)]
    return b"".join(out)


_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def path_item(node: Mapping[str, Any]) -> bytes:
    """PathItem { _ref 1, get 2, put 3, post 4, delete 5, options 6, head 7, patch 8, parameters 9, vendor 10 }."""
    out = [_string(1, node.get("$ref"))]
    out += [_message(number, operation(node[verb])) for verb, number in _OPERATIONS.items() if verb in node]
    out += [_message(9, _parameters_item(p)) for p in node.get("parameters") or ()]
    out.append(_vendor_extensions(10, node))
    return b"".join(out)


def _security_requirements(requirements: Iterable[Mapping[str, Any]]) -> bytes:
    """repeated SecurityRequirement { repeated NamedStringArray additional_properties = 1; } (Document 12)."""
    return b"".join(_message(12, _named(1, requirement, lambda scopes: _strings(1, scopes)))
                    for requirement in requirements)


def _security_definition(node: Mapping[str, Any]) -> bytes:
    """SecurityDefinitionsItem: only api_key_security = 2 { type 1, name 2, in 3, description 4 } (what
    Kubernetes declares: BearerToken in the authorization header); basic = 1 for completeness."""
    if node.get("type") == "basic":
        return _message(1, _string(1, "basic") + _string(2, node.get("description")))
    return _message(2, _string(1, node.get("type")) + _string(2, node.get("name")) + _string(3, node.get("in"))
                    + _string(4, node.get("description")))


def document(doc: Mapping[str, Any]) -> bytes:
    """Document { swagger 1, info 2, paths 8, definitions 9, parameters 10, security 12, security_definitions 13 }."""
    info = doc.get("info") or {}
    out = [_string(1, doc.get("swagger")),
           _message(2, _string(1, info.get("title")) + _string(2, info.get("version"))
                    + _string(3, info.get("description")))]
    # Paths { repeated NamedAny vendor_extension = 1; repeated NamedPathItem path = 2; }: always written,
    # an empty `paths` included, as Swagger 2.0 requires the key.
    out.append(_message(8, _named(2, doc.get("paths") or {}, path_item)))
    if doc.get("definitions"):  # Definitions { repeated NamedSchema additional_properties = 1; }
        out.append(_message(9, _named(1, doc["definitions"], schema)))
    if doc.get("parameters"):  # ParameterDefinitions { repeated NamedParameter additional_properties = 1; }
        out.append(_message(10, _named(1, doc["parameters"], parameter)))
    out.append(_security_requirements(doc.get("security") or ()))
    if doc.get("securityDefinitions"):
        out.append(_message(13, _named(1, doc["securityDefinitions"], _security_definition)))
    return b"".join(out)
