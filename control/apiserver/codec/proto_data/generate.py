"""Generate `schema.json.gz`, the table of Kubernetes API types that control/apiserver/codec/protoschema.py loads
for the protobuf codec (protobuf.py, protoencode.py) and server-side apply's schema (fieldmanager/fieldschema.py).

    python -m control.apiserver.codec.proto_data.generate SOURCES [OUT]

SOURCES is a directory laid out as upstream's import paths, holding each API package's `generated.proto` (the
output of k8s.io/code-generator's go-to-protobuf) beside the `types.go` it was generated from:
`k8s.io/api/{group}/{version}/`, `k8s.io/apimachinery/pkg/...`, `k8s.io/kube-aggregator/pkg/apis/...`, and a
`SOURCE.md` whose table rows name each repository and commit (copied into the output's `source`). SOURCE.md
beside this script says which commits the table in the tree came from.

What is read, and why both files:
- `generated.proto`: every message, its field numbers, names, proto types, `repeated` and `map<string, V>`, and
  the `+protobuf.nullable=true` marker of the one-field list wrappers (`ExtraValue`, `Verbs`: a JSON array in
  JSON, a message with `items` in protobuf). Only what go-to-protobuf writes is understood (proto2, top-level
  messages, no enums or oneofs); anything else is refused rather than guessed.
- the Go structs of `types.go`, for their struct tags and pointer stars: the JSON name (proto `uID` is JSON
  `uid`), an embedded struct (empty JSON name: its fields are inlined in JSON), pointer or not, `omitempty`
  or not; and the comment markers server-side apply reads as upstream's OpenAPI generator does:
  `+listType`, `+listMapKey` (in order), `+mapType=atomic`/`+structType=atomic` on a field,
  `+structType=atomic` on a type, and the `patchStrategy`/`patchMergeKey` tags.

The table (gzip'd compact JSON, sorted keys, so the same input gives the same bytes):
`messages` maps each fully qualified message to `{"fields": [...], "listWrapper": true?, "atomic": true?}`;
a field is `{"number", "name", "type", "label"}` (label "optional", "repeated" or "map"; type a proto scalar
or a fully qualified message), plus `"json", "pointer", "omitempty"` when its Go struct tag was found, plus
`"listType", "listMapKeys", "atomic", "patchStrategy", "patchMergeKey"` when set. A field whose message lives
in a package not in SOURCES (an alpha group's) is left out: the decoder skips it like an unknown field.
`kinds` lists `[apiVersion, kind, message]` for every message with a `metadata` ObjectMeta in a package of an
API group. The generator fails if a field of an API group's message (other than go-to-protobuf's `List` and the
list wrappers, which are no Go structs) has no Go tag: the proto's own names are not always JSON's.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("schema.json.gz")
SCALARS = frozenset({"string", "bytes", "bool", "int32", "int64", "uint32", "uint64"})
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# The API group of each k8s.io/api package (its doc.go `+groupName`); "" is the core group.
GROUPS = {"core": "", "apps": "apps", "batch": "batch", "autoscaling": "autoscaling", "policy": "policy",
          "networking": "networking.k8s.io", "rbac": "rbac.authorization.k8s.io",
          "scheduling": "scheduling.k8s.io", "discovery": "discovery.k8s.io",
          "coordination": "coordination.k8s.io", "storage": "storage.k8s.io",
          "authentication": "authentication.k8s.io", "authorization": "authorization.k8s.io",
          "certificates": "certificates.k8s.io",
          "node": "node.k8s.io", "admissionregistration": "admissionregistration.k8s.io"}
# API groups from another repository than kubernetes/api: the proto package → the API group.
OTHER_PACKAGES = {"k8s.io.kube_aggregator.pkg.apis.apiregistration": "apiregistration.k8s.io"}


@dataclass(frozen=True)
class ProtoField:
    name: str
    type: str  # a proto scalar or a fully qualified message name
    label: str  # "optional", "repeated" or "map" (map keys are strings in every Kubernetes type)


@dataclass(frozen=True)
class GoField:
    json: str  # "" for an embedded struct
    pointer: bool
    omitempty: bool


@dataclass(frozen=True)
class Markers:
    list_type: str = ""
    keys: tuple[str, ...] = ()
    atomic: bool = False
    strategy: str = ""
    merge_key: str = ""


_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{")
_FIELD = re.compile(r"^\s*(optional|repeated|required)\s+(\S+)\s+(\w+)\s*=\s*(\d+)\s*;")
_MAP = re.compile(r"^\s*map<\s*string\s*,\s*(\S+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")
_PACKAGE = re.compile(r"^package\s+([\w.]+)\s*;", re.M)


def _qualify(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    return type_name[1:] if type_name.startswith(".") else f"{package}.{type_name}"


def parse_proto(text: str) -> tuple[str, dict[str, dict[int, ProtoField]], set[str]]:
    """The package of one generated.proto, its messages (fully qualified names), and the names marked
    +protobuf.nullable."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    match = _PACKAGE.search(text)
    if match is None:
        raise ValueError("no package statement")
    package = match.group(1)
    messages: dict[str, dict[int, ProtoField]] = {}
    nullable: set[str] = set()
    current: dict[int, ProtoField] | None = None
    comments: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            comments.append(stripped)
            continue
        if (message := _MESSAGE.match(stripped)) is not None:
            name = f"{package}.{message.group(1)}"
            current = messages[name] = {}
            if "// +protobuf.nullable=true" in comments:
                nullable.add(name)
        elif stripped == "}":
            current = None
        elif current is not None and (field := _FIELD.match(line)) is not None:
            label, type_name, field_name, number = field.groups()
            current[int(number)] = ProtoField(field_name, _qualify(type_name, package),
                                              "repeated" if label == "repeated" else "optional")
        elif current is not None and (entry := _MAP.match(line)) is not None:
            type_name, field_name, number = entry.groups()
            current[int(number)] = ProtoField(field_name, _qualify(type_name, package), "map")
        elif stripped and current is not None:
            raise ValueError(f"{package}: unexpected line in a message: {stripped!r}")
        comments = []
    return package, messages, nullable


_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\s*$")
_TAGS = re.compile(r"`([^`]*)`\s*(?://.*)?$")
_MARKER = re.compile(r"^//\s*\+(listType|listMapKey|mapType|structType)=(\w+)")


@dataclass(frozen=True)
class GoStructs:
    """What one types.go says: struct name → protobuf field number → the JSON side of the field and its
    markers; and the structs marked `+structType=atomic`."""

    fields: dict[str, dict[int, GoField]]
    markers: dict[str, dict[int, Markers]]
    atomic: frozenset[str]


def parse_go_structs(text: str) -> GoStructs:
    """The struct tags, pointer stars and comment markers of every field with a protobuf tag."""
    fields: dict[str, dict[int, GoField]] = {}
    markers: dict[str, dict[int, Markers]] = {}
    atomic: set[str] = set()
    current: str | None = None
    block: list[tuple[str, str]] = []  # the markers of the comment block above the current line
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            if (marker := _MARKER.match(stripped)) is not None:
                block.append((marker.group(1), marker.group(2)))
            continue
        if (struct := _STRUCT.match(line)) is not None:
            current = struct.group(1)
            fields[current], markers[current] = {}, {}
            if ("structType", "atomic") in block:
                atomic.add(current)
        elif line.startswith("}"):
            current = None
        elif current is not None and (tags := _TAGS.search(line)) is not None:
            _read_field(line[:tags.start()], tags.group(1), dict(block), block, fields[current], markers[current])
        block = []
    return GoStructs(fields, markers, frozenset(atomic))


def _read_field(declaration: str, tags: str, values: dict[str, str], block: list[tuple[str, str]],
                fields: dict[int, GoField], markers: dict[int, Markers]) -> None:
    protobuf = re.search(r'protobuf:"(\w+),(\d+)', tags)
    if protobuf is None:
        return
    number = int(protobuf.group(2))
    strategy = re.search(r'patchStrategy:"([^"]*)"', tags)
    merge_key = re.search(r'patchMergeKey:"([^"]*)"', tags)
    markers[number] = Markers(
        list_type=values.get("listType", ""),
        keys=tuple(value for name, value in block if name == "listMapKey"),
        atomic=values.get("mapType") == "atomic" or values.get("structType") == "atomic",
        strategy=strategy.group(1) if strategy else "",
        merge_key=merge_key.group(1) if merge_key else "")
    json_tag = re.search(r'json:"([^"]*)"', tags)
    if json_tag is not None:
        json_name, *options = json_tag.group(1).split(",")
        fields[number] = GoField(json_name, pointer=declaration.split()[-1].startswith("*"),
                                 omitempty="omitempty" in options)


def api_version(package: str) -> str | None:
    """The apiVersion of a proto package's kinds, None for a package of no API group (meta, runtime)."""
    base, _, version = package.rpartition(".")
    if base in OTHER_PACKAGES:
        return f"{OTHER_PACKAGES[base]}/{version}"
    parts = package.split(".")  # k8s.io.api.<group>.<version>
    if parts[:3] != ["k8s", "io", "api"] or len(parts) != 5 or parts[3] not in GROUPS:
        return None
    group = GROUPS[parts[3]]
    return f"{group}/{parts[4]}" if group else parts[4]


def _field_row(number: int, field: ProtoField, go: GoField | None, markers: Markers) -> dict[str, Any]:
    row: dict[str, Any] = {"number": number, "name": field.name, "type": field.type, "label": field.label}
    if go is not None:
        row.update(json=go.json, pointer=go.pointer, omitempty=go.omitempty)
    optional = {"listType": markers.list_type, "listMapKeys": list(markers.keys), "atomic": markers.atomic,
                "patchStrategy": markers.strategy, "patchMergeKey": markers.merge_key}
    row.update({key: value for key, value in optional.items() if value})
    return row


def build(root: Path) -> dict[str, Any]:
    """The table of every message under `root` (see the module docstring)."""
    parsed: dict[str, tuple[dict[int, ProtoField], GoStructs, bool]] = {}
    for proto in sorted(root.rglob("generated.proto")):
        package, messages, nullable = parse_proto(proto.read_text())
        types = proto.with_name("types.go")
        go = parse_go_structs(types.read_text()) if types.exists() else GoStructs({}, {}, frozenset())
        for name, fields in messages.items():
            wrapper = name in nullable and [f.label for f in fields.values()] == ["repeated"]
            parsed[name] = (fields, go, wrapper)
    table: dict[str, Any] = {}
    kinds: list[list[str]] = []
    for name, (fields, go, wrapper) in sorted(parsed.items()):
        package, short = name.rsplit(".", 1)
        go_fields, markers = go.fields.get(short, {}), go.markers.get(short, {})
        version = api_version(package)  # None outside the API groups (meta, runtime)
        rows = []
        for number, field in fields.items():  # in declaration order, as Go declares the struct
            if field.type not in SCALARS and field.type not in parsed:
                continue  # a message of a package not read (an alpha group's): no served kind uses it
            # go-to-protobuf's `List` and the list wrappers (named slice types) are no Go structs
            if version and short != "List" and not wrapper and number not in go_fields:
                raise ValueError(f"{name}.{field.name}: no Go struct tag in types.go")
            rows.append(_field_row(number, field, go_fields.get(number), markers.get(number, Markers())))
        entry: dict[str, Any] = {"fields": rows}
        if wrapper:
            entry["listWrapper"] = True
        if short in go.atomic:
            entry["atomic"] = True
        table[name] = entry
        if version and any(row.get("json") == "metadata" and row["type"] == OBJECT_META for row in rows):
            kinds.append([version, short, name])
    return {"source": read_sources(root / "SOURCE.md"), "messages": table, "kinds": kinds}


_SOURCE_ROW = re.compile(r"^\|\s*(.+?)\s*\|\s*(https://github\.com/\S+)\s*\|\s*([0-9a-f]{40})\s*(\([^)]*\))?\s*\|")


def read_sources(source_md: Path) -> list[dict[str, str]]:
    """The rows of SOURCE.md's table: which files came from which repository at which commit."""
    rows = []
    for line in source_md.read_text().splitlines():
        if (row := _SOURCE_ROW.match(line)) is not None:
            files, repository, commit, date = row.groups()
            rows.append({"files": files, "repository": repository, "commit": commit,
                         "date": (date or "").strip("()")})
    if not rows:
        raise ValueError(f"{source_md}: no repository/commit rows")
    return rows


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    table = build(Path(argv[1]))
    data = json.dumps(table, separators=(",", ":"), sort_keys=True).encode()
    out = Path(argv[2]) if len(argv) == 3 else OUT
    out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{out}: {len(table['messages'])} messages, {len(data)} bytes of JSON, {out.stat().st_size} gzip'd",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
