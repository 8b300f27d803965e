"""Secrets (upstream pkg/apis/core/v1/conversion.go `Convert_v1_Secret_To_core_Secret`, applied while a
request body is decoded, so on create, update and every patch): `stringData` is write-only — each key is
base64-encoded into `data`, a key in both keeps the `stringData` value, and `stringData` itself is never
stored. A `stringData` that is not a map of strings is left in place for validation (control.api), which
refuses it with 422 before anything is written.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from control.apiserver.registry.strategies.base import Strategy


def merge_string_data(obj: dict[str, Any]) -> None:
    """Move a well-formed `stringData` into `data` (in place); a malformed one stays for validation."""
    string_data = obj.get("stringData")
    if string_data is None:
        obj.pop("stringData", None)
        return
    if not isinstance(string_data, Mapping) or not all(isinstance(v, str) for v in string_data.values()):
        return
    data = obj.get("data")
    if data is None:
        data = obj["data"] = {}
    if not isinstance(data, dict):
        return  # validation reports `data`
    for key, value in string_data.items():
        data[key] = base64.b64encode(value.encode()).decode()
    del obj["stringData"]


class SecretStrategy(Strategy):
    def defaults(self, obj: dict[str, Any]) -> None:
        super().defaults(obj)
        merge_string_data(obj)
