"""The API server's JSON codec: orjson where it gives the same answer as the standard library, the
standard library where it would not.

Why: encoding and decoding JSON is most of what the server does per object (a LIST of 10,000 pods, a
watch event for 100 watchers, every write's stored form); orjson does it several times faster than
`json` (bench/RESULTS.md). What must not change is the answer:
- `dumps` gives compact JSON as `json.dumps(..., separators=(",", ":"), ensure_ascii=False)` would
  (non-ASCII characters as UTF-8, not `\\uXXXX` escapes). Values orjson refuses — integers beyond 64
  bits, non-string keys, lone surrogates — fall back to the standard library.
- `loads` must not round: orjson reads an integer beyond 64 bits as a float, so a document with a run
  of 19 or more digits (int64 has 19) is read by the standard library, as is anything orjson refuses
  (lone surrogates, numbers beyond a double), which then parses or raises as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes of `obj`."""
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer beyond 64 bits, a key that is not a string, a lone surrogate
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        try:
            return text.encode()
        except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8: keep the text escaped
            return json.dumps(obj, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """The value of a JSON document, exact for any integer (see the module docstring)."""
    try:
        raw = data.encode() if isinstance(data, str) else data
    except UnicodeEncodeError:  # a lone surrogate in a str
        return json.loads(data)
    if _LONG_DIGITS.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw)
