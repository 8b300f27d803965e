"""The tables of the Kubernetes API types the protobuf codec (protobuf.py, protoencode.py) and server-side apply's
schema (fieldmanager/fieldschema.py) read, loaded from `proto_data/schema.json.gz` (upstream: each API package's
`generated.proto` and the Go structs of its `types.go`, from which proto_data/generate.py made the table once;
proto_data/SOURCE.md names the upstream commits).

Per message, the facts of both upstream files:
- from `generated.proto`: field numbers, proto types, `repeated` and `map<string, V>`, and the one-field list
  wrappers marked `+protobuf.nullable=true` (`ExtraValue`, `Verbs`: a JSON array on the wire of JSON, a message
  with `items` in protobuf);
- from the Go struct tags and pointer stars: the JSON name (`uID` in proto is `uid` in JSON), whether the field
  is embedded and so inlined in JSON (`Volume.volumeSource`, `Probe.handler`: JSON name ""), whether it is a
  pointer and whether it is `omitempty`. gogo-protobuf writes every non-pointer field, zero or not, and a
  pointer field only when set; Go's JSON encoder drops zero `omitempty` scalars and never drops a struct.
  Knowing both lets the decoder rebuild the JSON the same client sends when it speaks JSON (`replicas: 0`
  kept, `paused: false` dropped). A field without a Go tag (meta's and runtime's own messages) keeps its proto
  name, as a non-pointer `omitempty` field;
- the markers server-side apply reads (`Markers`), and the structs marked `+structType=atomic`.
The table is loaded once, on first use.
"""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("proto_data") / "schema.json.gz"
SCALARS = frozenset({"string", "bytes", "bool", "int32", "int64", "uint32", "uint64"})
META = "k8s.io.apimachinery.pkg.apis.meta.v1."


@dataclass(frozen=True)
class Field:
    json: str  # "" for an embedded Go struct, whose fields JSON inlines into the parent
    type: str  # a proto scalar or a fully qualified message name
    label: str  # "optional", "repeated" or "map" (map keys are strings in every Kubernetes type)
    pointer: bool = False
    omitempty: bool = True


@dataclass(frozen=True, slots=True)
class Markers:
    """A field's list and map semantics for server-side apply: `+listType` (atomic, set, map) with its
    `+listMapKey`s in order, `+mapType=atomic`/`+structType=atomic` on the field, and its strategic merge
    patch tags `patchStrategy`/`patchMergeKey`."""

    list_type: str = ""
    keys: tuple[str, ...] = ()
    atomic: bool = False
    strategy: str = ""
    merge_key: str = ""


@dataclass(frozen=True)
class Schemas:
    messages: dict[str, dict[int, Field]]
    list_wrappers: frozenset[str]  # messages that are a JSON array of their one repeated field
    kinds: dict[tuple[str, str], str]  # (apiVersion, kind) → message name
    markers: dict[str, dict[int, Markers]]  # message → field number → markers (fields that have some)
    atomic_structs: frozenset[str]  # messages marked +structType=atomic


def _field(row: dict[str, Any]) -> Field:
    if "json" not in row:  # no Go struct tag: the proto name, as a non-pointer omitempty field
        return Field(row["name"], row["type"], row["label"])
    return Field(row["json"], row["type"], row["label"], pointer=row["pointer"], omitempty=row["omitempty"])


def _markers(row: dict[str, Any]) -> Markers:
    return Markers(list_type=row.get("listType", ""), keys=tuple(row.get("listMapKeys", ())),
                   atomic=row.get("atomic", False), strategy=row.get("patchStrategy", ""),
                   merge_key=row.get("patchMergeKey", ""))


_MARKER_KEYS = frozenset({"listType", "listMapKeys", "atomic", "patchStrategy", "patchMergeKey"})


def load(path: Path = TABLE) -> Schemas:
    """The tables of the generated file at `path` (its format: proto_data/generate.py)."""
    table = json.loads(gzip.decompress(path.read_bytes()))
    messages = {name: {row["number"]: _field(row) for row in entry["fields"]}
                for name, entry in table["messages"].items()}
    markers = {name: {row["number"]: _markers(row) for row in entry["fields"] if _MARKER_KEYS & row.keys()}
               for name, entry in table["messages"].items()}
    return Schemas(
        messages,
        frozenset(name for name, entry in table["messages"].items() if entry.get("listWrapper")),
        {(api_version, kind): message for api_version, kind, message in table["kinds"]},
        {name: fields for name, fields in markers.items() if fields},
        frozenset(name for name, entry in table["messages"].items() if entry.get("atomic")))


@functools.cache
def schemas() -> Schemas:
    return load()
