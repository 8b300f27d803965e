"""JSON bodies byte for byte as upstream writes them (k8s.io/apimachinery/pkg/runtime/serializer/json:
`json.NewEncoder(w).Encode(obj)`): compact, UTF-8 text instead of `\\u` escapes, Go's HTML-safe escapes of
`<`, `>`, `&` and of U+2028/U+2029, and a trailing newline. Objects are dicts in wire order, so field order
is whatever the object carries (Status bodies are built in Go's declaration order, status.py).

The compact UTF-8 text comes from codec.dumps (orjson); `wire` adds Go's escapes to JSON already in that
form, so stored bytes spliced into a LIST or a watch event (registry.with_revision) come out the same.
"""

from __future__ import annotations

from typing import Any

from control.apiserver.codec import jsoncodec as codec

# What Go's encoding/json escapes inside strings beyond what compact UTF-8 JSON does (HTML-safe `<>&` and
# the two JavaScript line terminators); they only ever occur inside strings (as themselves, never as part
# of another UTF-8 sequence), so replacing them in the bytes is safe.
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def go_escape(data: bytes) -> bytes:
    """Compact UTF-8 JSON (codec.dumps's form) with Go's escapes; `data` itself when there is nothing to
    escape (one-byte searches first: a LIST body is megabytes, and U+2028/9 only need looking for when a
    byte of their first one, 0xE2, occurs at all)."""
    for raw, escaped in _GO_ESCAPES[:3]:
        if raw in data:
            data = data.replace(raw, escaped)
    if b"\xe2" in data:
        for raw, escaped in _GO_ESCAPES[3:]:
            data = data.replace(raw, escaped)
    return data


def wire(data: bytes) -> bytes:
    """Compact UTF-8 JSON (codec.dumps's form) as upstream's serializer writes it: Go's escapes, a newline."""
    return go_escape(data) + b"\n"


def encode_json(body: Any) -> bytes:
    """JSON as upstream's serializer writes it (json.NewEncoder(w).Encode): compact, UTF-8 rather than
    `\\u` escapes, HTML characters escaped, one trailing newline. (A lone surrogate from a `\\ud800` escape
    in a client's body cannot be UTF-8: codec.dumps keeps that body escaped.)"""
    return wire(codec.dumps(body))
