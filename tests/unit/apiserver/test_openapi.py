"""The /openapi/v2 protobuf decodes to a gnostic Document with swagger 2.0 and our info."""

from __future__ import annotations

import pytest

from control.apiserver import openapi
from control.util.version import KUBERNETES_VERSION


@pytest.mark.parametrize(
    ("value", "encoded"),
    [pytest.param(0, b"\x00", id="zero"), pytest.param(1, b"\x01", id="one"),
     pytest.param(127, b"\x7f", id="one-byte-max"), pytest.param(128, b"\x80\x01", id="two-bytes"),
     pytest.param(300, b"\xac\x02", id="protobuf-docs-example"),
     pytest.param(2**32, b"\x80\x80\x80\x80\x10", id="five-bytes")],
)
def test_varint(value, encoded):
    assert openapi.encode_varint(value) == encoded
    assert openapi.decode_fields(b"\x08" + encoded) == [(1, value)]  # field 1, wire type 0


def test_document_fields():
    document = dict(openapi.decode_fields(openapi.openapi_v2_protobuf()))
    assert document[1] == b"2.0"  # Document.swagger
    assert dict(openapi.decode_fields(document[2])) == {  # Document.info: Info.title, Info.version
        1: b"slimkube", 2: KUBERNETES_VERSION.encode()}
    assert document[8] == b""  # Document.paths, empty
    assert 9 not in document  # no definitions, hence no client-side validation


def test_exact_bytes_start():
    assert openapi.openapi_v2_protobuf().startswith(b"\x0a\x032.0\x12")


def test_json_matches_protobuf():
    assert openapi.openapi_v2_json() == {"swagger": "2.0", "info": {"title": "slimkube",
                                                                     "version": KUBERNETES_VERSION}, "paths": {}}


@pytest.mark.parametrize(
    "data",
    [pytest.param(b"\x0a\x05ab", id="truncated-string"), pytest.param(b"\x08\x80", id="truncated-varint"),
     pytest.param(b"\x0d\x00\x00\x00\x00", id="fixed32-unsupported")],
)
def test_decoder_refuses_malformed_input(data):
    with pytest.raises(ValueError):
        openapi.decode_fields(data)


def test_negative_varint_refused():
    with pytest.raises(ValueError):
        openapi.encode_varint(-1)
