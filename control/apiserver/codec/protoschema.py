"""The message tables the protobuf decoder reads, parsed from upstream's own files in `k8s_proto/` (vendored
from kubernetes/api and kubernetes/apimachinery; see k8s_proto/SOURCE.md).

Two sources, because each carries facts the other does not:
- `generated.proto` (go-to-protobuf's output): every message, its field numbers, proto types, `repeated`
  and `map<k, v>`, and the `+protobuf.nullable=true` marker of the one-field list wrappers
  (`ExtraValue`, `Verbs`: a JSON array on the wire of JSON, a message with `items` in protobuf).
- the Go structs in `types.go` the proto was generated from, read only for their struct tags and pointer
  stars: the JSON name (`uID` in proto is `uid` in JSON), whether the field is embedded and so inlined in
  JSON (`Volume.volumeSource`, `Probe.handler`, …), whether it is a pointer and whether it is `omitempty`.
  gogo-protobuf writes every non-pointer field, zero or not, and a pointer field only when set; Go's JSON
  encoder drops zero `omitempty` scalars and never drops a struct. Knowing both lets the decoder rebuild
  the JSON the same client sends when it speaks JSON (`replicas: 0` kept, `paused: false` dropped).

The parser reads only what go-to-protobuf writes (proto2, top-level messages, no enums or oneofs); the
tables are built once, on the first protobuf request.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1] / "k8s_proto"
SCALARS = frozenset({"string", "bytes", "bool", "int32", "int64", "uint32", "uint64"})
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
# The API group of each vendored k8s.io/api package (its doc.go `+groupName`); "" is the core group.
GROUPS = {"core": "", "apps": "apps", "batch": "batch", "autoscaling": "autoscaling", "policy": "policy",
          "networking": "networking.k8s.io", "rbac": "rbac.authorization.k8s.io",
          "scheduling": "scheduling.k8s.io", "discovery": "discovery.k8s.io",
          "coordination": "coordination.k8s.io", "storage": "storage.k8s.io",
          "authentication": "authentication.k8s.io", "certificates": "certificates.k8s.io",
          "node": "node.k8s.io", "admissionregistration": "admissionregistration.k8s.io"}
# Groups vendored from another repository than kubernetes/api: the proto package → the API group.
OTHER_PACKAGES = {"k8s.io.kube_aggregator.pkg.apis.apiregistration": "apiregistration.k8s.io"}


@dataclass(frozen=True)
class Field:
    json: str  # "" for an embedded Go struct, whose fields JSON inlines into the parent
    type: str  # a proto scalar or a fully qualified message name
    label: str  # "optional", "repeated" or "map" (map keys are strings in every Kubernetes type)
    pointer: bool = False
    omitempty: bool = True


@dataclass(frozen=True)
class Schemas:
    messages: dict[str, dict[int, Field]]
    list_wrappers: frozenset[str]  # messages that are a JSON array of their one repeated field
    kinds: dict[tuple[str, str], str]  # (apiVersion, kind) → message name


_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{")
_FIELD = re.compile(r"^\s*(optional|repeated|required)\s+(\S+)\s+(\w+)\s*=\s*(\d+)\s*;")
_MAP = re.compile(r"^\s*map<\s*string\s*,\s*(\S+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")
_PACKAGE = re.compile(r"^package\s+([\w.]+)\s*;", re.M)


def _qualify(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    return type_name[1:] if type_name.startswith(".") else f"{package}.{type_name}"


def parse_proto(text: str) -> tuple[dict[str, dict[int, Field]], set[str]]:
    """Messages of one generated.proto (fully qualified names) and the names marked +protobuf.nullable."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    match = _PACKAGE.search(text)
    if match is None:
        raise ValueError("no package statement")
    package = match.group(1)
    messages: dict[str, dict[int, Field]] = {}
    nullable: set[str] = set()
    current: dict[int, Field] | None = None
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
            current[int(number)] = Field(field_name, _qualify(type_name, package),
                                         "repeated" if label == "repeated" else "optional")
        elif current is not None and (entry := _MAP.match(line)) is not None:
            type_name, field_name, number = entry.groups()
            current[int(number)] = Field(field_name, _qualify(type_name, package), "map")
        elif stripped and current is not None:
            raise ValueError(f"{package}: unexpected line in a message: {stripped!r}")
        comments = []
    return messages, nullable


@dataclass(frozen=True)
class GoField:
    json: str
    pointer: bool
    omitempty: bool


_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\s*$")
_TAGS = re.compile(r"`([^`]*)`\s*(?://.*)?$")


def parse_go_structs(text: str) -> dict[str, dict[int, GoField]]:
    """struct name → protobuf field number → the JSON side of that field, from the struct tags."""
    structs: dict[str, dict[int, GoField]] = {}
    current: dict[int, GoField] | None = None
    for line in text.splitlines():
        if (struct := _STRUCT.match(line)) is not None:
            current = structs[struct.group(1)] = {}
            continue
        if line.startswith("}"):
            current = None
        if current is None or line.strip().startswith("//") or (tags := _TAGS.search(line)) is None:
            continue
        protobuf = re.search(r'protobuf:"(\w+),(\d+)', tags.group(1))
        json_tag = re.search(r'json:"([^"]*)"', tags.group(1))
        if protobuf is None or json_tag is None:
            continue
        json_name, *options = json_tag.group(1).split(",")
        declaration = line[:tags.start()].split()
        current[int(protobuf.group(2))] = GoField(json_name, pointer=declaration[-1].startswith("*"),
                                                  omitempty="omitempty" in options)
    return structs


def _api_version(package: str) -> str | None:
    base, _, version = package.rpartition(".")
    if base in OTHER_PACKAGES:
        return f"{OTHER_PACKAGES[base]}/{version}"
    parts = package.split(".")  # k8s.io.api.<group>.<version>
    if parts[:3] != ["k8s", "io", "api"] or len(parts) != 5 or parts[3] not in GROUPS:
        return None
    group = GROUPS[parts[3]]
    return f"{group}/{parts[4]}" if group else parts[4]


def build(root: Path = ROOT) -> Schemas:
    messages: dict[str, dict[int, Field]] = {}
    wrappers: set[str] = set()
    for proto in sorted(root.rglob("generated.proto")):
        parsed, nullable = parse_proto(proto.read_text())
        go = parse_go_structs(types.read_text()) if (types := proto.with_name("types.go")).exists() else {}
        for name, fields in parsed.items():
            go_fields = go.get(name.rsplit(".", 1)[1], {})
            messages[name] = {number: _with_go_facts(field, go_fields.get(number))
                              for number, field in fields.items()}
        wrappers |= {name for name in nullable if [f.label for f in parsed[name].values()] == ["repeated"]}
    # A field whose message lives in a package not vendored (an alpha group's, such as core/v1 PodSpec's
    # scheduling.k8s.io/v1alpha3 types) is skipped like an unknown field: no served kind uses it.
    for fields in messages.values():
        for number in [n for n, f in fields.items() if f.type not in SCALARS and f.type not in messages]:
            del fields[number]
    kinds: dict[tuple[str, str], str] = {}
    for name, fields in messages.items():
        package, kind = name.rsplit(".", 1)
        api_version = _api_version(package)
        if api_version and any(f.json == "metadata" and f.type == META + "ObjectMeta" for f in fields.values()):
            kinds[(api_version, kind)] = name
    return Schemas(messages, frozenset(wrappers), kinds)


def _with_go_facts(field: Field, go: GoField | None) -> Field:
    if go is None:
        return field
    return Field(go.json, field.type, field.label, pointer=go.pointer, omitempty=go.omitempty)


@functools.cache
def schemas() -> Schemas:
    return build()
