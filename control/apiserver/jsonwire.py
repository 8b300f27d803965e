"""JSON bodies byte for byte as upstream writes them (k8s.io/apimachinery/pkg/runtime/serializer/json:
`json.NewEncoder(w).Encode(obj)`): compact, UTF-8 text instead of `\\u` escapes, Go's HTML-safe escapes of
`<`, `>`, `&` and of U+2028/U+2029, and a trailing newline. Objects are dicts in wire order, so field order
is whatever the object carries (Status bodies are built in Go's declaration order, status.py).
"""

from __future__ import annotations

import json
from typing import Any

# What Go's encoding/json escapes inside strings beyond what Python's does (HTML-safe `<>&` and the two
# JavaScript line terminators); they only ever occur inside strings, so replacing them in the text is safe.
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                             "\u2029": "\\u2029"})


def encode_json(body: Any) -> bytes:
    """JSON as upstream's serializer writes it (json.NewEncoder(w).Encode): compact, UTF-8 rather than
    `\\u` escapes, HTML characters escaped, one trailing newline."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate from a `\\ud800` escape in a client's body: keep it escaped
        return json.dumps(body, separators=(",", ":")).translate(_GO_ESCAPES).encode() + b"\n"
