"""What the daemons' config files have in common (upstream: k8s.io/component-base/config): a YAML document
with upstream's field names, Go duration strings, typed fields checked one by one, and flags on top.

nodeagent/config.py (KubeletConfiguration) and proxy/config.py (KubeProxyConfiguration) each keep their own
field table, defaults and validation; the reading, the value checks and the flag overlay are here, so both
refuse the same mistakes with the same messages. Unknown fields are an error, not silently ignored: a typo in
a config file must not leave a node running on defaults the operator did not choose.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import yaml

C = TypeVar("C")

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ConfigError(ValueError):
    """A configuration file or flag that cannot be used; the message names the field."""


def parse_duration(value: Any, *, name: str) -> float:
    """Seconds from a Go duration string ("1m30s"), or from a number of seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{name}: expected a duration such as \"10s\", got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and value and _DURATION_PART.sub("", value) == "":
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))
    elif isinstance(value, str) and value.strip() == "0":
        seconds = 0.0
    else:
        raise ConfigError(f"{name}: expected a duration such as \"10s\", got {value!r}")
    if seconds < 0:
        raise ConfigError(f"{name}: must not be negative")
    return seconds


def convert(name: str, parser: Any, value: Any) -> Any:
    """One field's value checked against its kind: "duration", "strings" (a list), "mapping" (str → str),
    or the Python type bool/int/str; anything else is passed through."""
    if parser == "duration":
        return parse_duration(value, name=name)
    if parser == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{name}: expected a list of strings")
        return tuple(value)
    if parser == "mapping":
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in value.items()):
            raise ConfigError(f"{name}: expected a mapping of strings to strings")
        return dict(value)
    if parser is bool and not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    if parser is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if parser is str and not isinstance(value, str):
        raise ConfigError(f"{name}: expected a string, got {value!r}")
    return value


def read_document(path: str) -> Mapping[str, Any]:
    """The YAML mapping in `path` (an empty file is an empty mapping)."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(document, Mapping):
        raise ConfigError(f"{path}: expected a mapping of fields, got {type(document).__name__}")
    return document


def with_overrides(config: C, overrides: Mapping[str, Any] | None) -> C:
    """`config` (a dataclass) with the flags' values on top; None means "flag not given"."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = set(given) - {f.name for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    if unknown:
        raise ConfigError(f"unknown settings {sorted(unknown)}")
    return dataclasses.replace(config, **given)  # type: ignore[type-var]
