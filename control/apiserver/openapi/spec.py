"""`/openapi/v2` (JSON and gnostic protobuf) and `/openapi/v3` (the index and one document per
group-version), built from the resource table at request time (upstream: k8s.io/kube-openapi/pkg/handler
and handler3, fed by each group's generated OpenAPI definitions; the aggregator merges CRDs' in).

Where the facts come from: `openapi_data/swagger.json.gz`, upstream's published v1.30 spec cut down to
the groups this server serves or is about to (openapi_data/SOURCE.md, generate.py). Nothing here types a
schema by hand: a resource appears in the documents as soon as it is in resources.RESOURCES and its
definition is in the data file; a resource served without one (none today) is left out, not invented.

What the documents are made of:
- v2: upstream's paths whose URL names a served resource (or one of its served subresources), with their
  `x-kubernetes-group-version-kind` and `x-kubernetes-action`; the shared `parameters`; every definition
  those paths and the served kinds reach. Clients read: kubectl 1.20 `explain` and client-side validation
  (definitions by group-version-kind), its `apply` (the `x-kubernetes-patch-*` keys for strategic merge),
  its `diff` (a served kind's PATCH operation must list a `dryRun` query parameter, else "doesn't support
  dry-run"), and newer kubectl's check that the server takes `fieldValidation`.
- v3: `/openapi/v3` lists `api/v1`, `apis/{group}/{version}` with a `serverRelativeURL` carrying
  `?hash=` (the SHA-512 of the document, upper-case hex, as kube-openapi's handler3; clients cache by it);
  each document is that group-version's paths and the schemas they reach, converted as kube-openapi does:
  `#/definitions/` refs become `#/components/schemas/`, a `$ref` with siblings (a description) becomes
  `allOf: [{$ref}]` beside them, body parameters become `requestBody`, responses get `content` per media
  type, shared parameters are written inline.
- Custom resources (CRDs): `add_custom` publishes one kind's schema with generated paths (the CRD helper
  calls it when a CRD is Established and `remove_custom` when it goes); see /work/notes/openapi-hook.md.
  Their documents are built the same way, so `explain`, `diff` and fieldValidation treat them alike.

The documents are rebuilt only when the served set or the custom schemas change (a cheap key is compared
per request), so serving them costs a dictionary lookup.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from control.apiserver import resources
from control.apiserver.openapi import gnostic
from control.apiserver.resources import Resource
from control.util.version import KUBERNETES_VERSION

TITLE = "Kubernetes"
DATA_FILE = Path(__file__).with_name("data") / "swagger.json.gz"
# What kube-openapi answers for protobuf; kubectl 1.20 also accepts application/octet-stream.
PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_DEFINITIONS = "#/definitions/"
_SCHEMAS = "#/components/schemas/"
_PARAMETERS = "#/parameters/"
_ALL_MEDIA = "*/*"


@functools.cache
def upstream_spec() -> dict[str, Any]:
    """The data file, read once per process (about 1.7 MB of JSON)."""
    spec: dict[str, Any] = json.loads(gzip.decompress(DATA_FILE.read_bytes()))
    return spec


@dataclass(frozen=True, slots=True)
class ResourcePath:
    """What one upstream path names: a group-version, maybe a resource of it and maybe a subresource."""

    group: str
    version: str
    plural: str = ""
    subresource: str = ""


def parse_path(path: str) -> ResourcePath | None:
    """`/api/v1/namespaces/{namespace}/pods/{name}/status` → ("", "v1", "pods", "status"); discovery paths
    (`/apis/apps/v1/`) have no plural; None for paths outside a group-version (`/version/`, `/apis/`)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    if len(rest) > 2 and rest[:2] == ["namespaces", "{namespace}"]:
        rest = rest[2:]
    if not rest:
        return ResourcePath(group, version)
    return ResourcePath(group, version, rest[0], rest[2] if len(rest) > 2 else "")


def definition_name(group: str, version: str, kind: str) -> str:
    """The definition name upstream gives a custom resource: the group's DNS labels reversed
    (`stable.example.com`, v1, CronTab → `com.example.stable.v1.CronTab`)."""
    return ".".join([*reversed(group.split(".")), version, kind])


@dataclass(frozen=True)
class CustomSchema:
    """One custom kind published through `OpenAPIDocuments.add_custom`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    schema: Mapping[str, Any]
    list_kind: str = ""

    @property
    def gvk(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, "version": self.version}


@dataclass
class _Built:
    v2: dict[str, Any]
    kinds: dict[tuple[str, str, str], str]  # (group, version, kind) → its definition's name
    v2_json: bytes | None = None
    v2_protobuf: bytes | None = None
    v3: dict[str, bytes] = field(default_factory=dict)  # "api/v1" → document JSON


class OpenAPIDocuments:
    """The documents the server serves; `served` returns the resource table (resources.RESOURCES unless a
    test or the CRD helper passes another source), read at every request."""

    def __init__(self, served: Callable[[], Iterable[Resource]] = lambda: resources.RESOURCES,
                 spec: Mapping[str, Any] | None = None) -> None:
        self._served = served
        self._spec = spec
        self._custom: dict[tuple[str, str, str], CustomSchema] = {}
        self._generation = 0
        self._lock = threading.Lock()
        self._built: tuple[Any, _Built] | None = None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self._spec if self._spec is not None else upstream_spec()

    # -- the hook for custom resources --------------------------------------------------------------

    def add_custom(self, group: str, version: str, kind: str, schema: Mapping[str, Any], *, plural: str,
                   namespaced: bool, list_kind: str = "") -> None:
        """Publish (or replace) the OpenAPI v3 schema of a custom kind (a CRD version's
        `schema.openAPIV3Schema`); its paths, the List kind and the standard fields are added here."""
        custom = CustomSchema(group, version, kind, plural, namespaced, copy.deepcopy(dict(schema)),
                              list_kind or f"{kind}List")
        with self._lock:
            self._custom[(group, version, kind)] = custom
            self._generation += 1

    def remove_custom(self, group: str, version: str, kind: str) -> None:
        with self._lock:
            if self._custom.pop((group, version, kind), None) is not None:
                self._generation += 1

    # -- what is served ------------------------------------------------------------------------------

    def v2(self) -> dict[str, Any]:
        """The Swagger 2.0 document (do not modify it: it is shared until the served set changes)."""
        return self._current().v2

    def v2_json(self) -> bytes:
        built = self._current()
        if built.v2_json is None:
            built.v2_json = json.dumps(built.v2, separators=(",", ":")).encode()
        return built.v2_json

    def v2_protobuf(self) -> bytes:
        built = self._current()
        if built.v2_protobuf is None:
            built.v2_protobuf = gnostic.document(built.v2)
        return built.v2_protobuf

    def v3_index(self) -> dict[str, Any]:
        """`/openapi/v3`: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}."""
        built = self._current()
        return {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(self._v3_bytes(built, gv))}"}
                          for gv in self._v3_group_versions(built)}}

    def v3(self, group_version_path: str) -> tuple[bytes, str] | None:
        """(document JSON, hash) for `api/v1` or `apis/{group}/{version}`; None when not served."""
        built = self._current()
        if group_version_path not in self._v3_group_versions(built):
            return None
        data = self._v3_bytes(built, group_version_path)
        return data, _hash(data)

    def definitions(self) -> Mapping[str, Any]:
        """Every definition of the v2 document by name (field validation walks these)."""
        definitions: Mapping[str, Any] = self._current().v2["definitions"]
        return definitions

    def definition_for(self, group: str, version: str, kind: str) -> str | None:
        """The name of the definition of a served kind (None when the server has none for it)."""
        return self._current().kinds.get((group, version, kind))

    # -- building -----------------------------------------------------------------------------------

    def _current(self) -> _Built:
        served = list(self._served())
        with self._lock:
            key = (tuple((r.group, r.version, r.plural, r.kind, tuple(r.subresources)) for r in served),
                   self._generation)
            if self._built is None or self._built[0] != key:
                self._built = (key, _Built(*self._build_v2(served, list(self._custom.values()))))
            return self._built[1]

    def _build_v2(self, served: list[Resource], custom: list[CustomSchema],
                  ) -> tuple[dict[str, Any], dict[tuple[str, str, str], str]]:
        spec = self.spec
        by_path = {(r.group, r.version, r.plural): r for r in served}
        group_versions = {(r.group, r.version) for r in served}
        paths: dict[str, Any] = {}
        for path, item in spec["paths"].items():
            target = parse_path(path)
            if target is None or (target.group, target.version) not in group_versions:
                continue
            if target.plural:
                resource = by_path.get((target.group, target.version, target.plural))
                if resource is None or (target.subresource and target.subresource not in resource.subresources):
                    continue
            paths[path] = item
        all_definitions = spec["definitions"]
        kinds: dict[tuple[str, str, str], str] = {}
        served_kinds = {(r.group, r.version, r.kind) for r in served}
        for name, schema in all_definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind", ()):
                key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                if key in served_kinds:
                    kinds.setdefault(key, name)
        referenced = {ref.removeprefix(_PARAMETERS) for ref in refs_below(paths) if ref.startswith(_PARAMETERS)}
        parameters = {name: spec["parameters"][name] for name in sorted(referenced)}
        roots = set(kinds.values()) | _definition_refs([paths, parameters])
        definitions = {name: all_definitions[name] for name in sorted(_closure(roots, all_definitions))}
        for item in custom:
            name = definition_name(item.group, item.version, item.kind)
            definitions[name] = _custom_definition(item)
            definitions[name + "List"] = _custom_list_definition(item, name)
            kinds[(item.group, item.version, item.kind)] = name
            paths.update(_custom_paths(item, name))
        for name in sorted(_closure(_definition_refs(definitions), all_definitions) - set(definitions)):
            definitions[name] = all_definitions[name]
        return {
            "swagger": "2.0", "info": {"title": TITLE, "version": KUBERNETES_VERSION}, "paths": paths,
            "definitions": definitions,
            "parameters": parameters,
            "security": spec.get("security", []), "securityDefinitions": spec.get("securityDefinitions", {}),
        }, kinds

    @staticmethod
    def _v3_group_versions(built: _Built) -> list[str]:
        found = []
        for path in built.v2["paths"]:
            target = parse_path(path)
            if target is not None:
                found.append(f"apis/{target.group}/{target.version}" if target.group else "api/v1")
        return list(dict.fromkeys(found))

    def _v3_bytes(self, built: _Built, gv_path: str) -> bytes:
        data = built.v3.get(gv_path)
        if data is None:
            data = json.dumps(_v3_document(built.v2, gv_path), separators=(",", ":")).encode()
            built.v3[gv_path] = data
        return data


def _hash(data: bytes) -> str:
    return hashlib.sha512(data).hexdigest().upper()


def refs_below(node: Any) -> set[str]:
    """Every `$ref` below `node`, as given (`#/definitions/X`, `#/parameters/Y`); the generator uses it too."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _definition_refs(node: Any) -> set[str]:
    return {ref.removeprefix(_DEFINITIONS) for ref in refs_below(node) if ref.startswith(_DEFINITIONS)}


def _closure(roots: Iterable[str], definitions: Mapping[str, Any]) -> set[str]:
    kept: set[str] = set()
    todo = [name for name in roots if name in definitions]
    while todo:
        name = todo.pop()
        if name not in kept:
            kept.add(name)
            todo.extend(ref for ref in _definition_refs(definitions[name]) if ref in definitions)
    return kept


# -- custom resources -----------------------------------------------------------------------------------

_OBJECT_META = _DEFINITIONS + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = _DEFINITIONS + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_API_VERSION = {"description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string"}
_KIND = {"description": "Kind is a string value representing the REST resource this object represents.",
         "type": "string"}


def _custom_definition(item: CustomSchema) -> dict[str, Any]:
    """The CRD's schema with apiVersion, kind and metadata filled in and its group-version-kind, as
    upstream's CRD OpenAPI builder (apiextensions-apiserver pkg/controller/openapi/builder) does."""
    schema = copy.deepcopy(dict(item.schema))
    properties = schema.setdefault("properties", {})
    properties.setdefault("apiVersion", dict(_API_VERSION))
    properties.setdefault("kind", dict(_KIND))
    properties["metadata"] = {"$ref": _OBJECT_META, "description": "Standard object's metadata."}
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [item.gvk]
    return schema


def _custom_list_definition(item: CustomSchema, name: str) -> dict[str, Any]:
    return {"description": f"{item.list_kind} is a list of {item.kind}", "type": "object", "required": ["items"],
            "properties": {"apiVersion": dict(_API_VERSION), "kind": dict(_KIND),
                           "items": {"type": "array", "items": {"$ref": _DEFINITIONS + name}},
                           "metadata": {"$ref": _LIST_META}},
            "x-kubernetes-group-version-kind": [{**item.gvk, "kind": item.list_kind}]}


def _query(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "in": "query", "name": name, "type": "string", "uniqueItems": True}


_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be persisted.")
_FIELD_VALIDATION = _query("fieldValidation", "fieldValidation instructs the server on how to handle objects "
                           "in the request (POST/PUT/PATCH) containing unknown or duplicate fields.")
_FIELD_MANAGER = _query("fieldManager", "fieldManager is a name associated with the actor or entity that is "
                        "making these changes.")


def _custom_paths(item: CustomSchema, name: str) -> dict[str, Any]:
    """Collection and object paths for a custom kind, with the operations and query parameters clients
    look for (upstream generates the same shape for every CRD)."""
    base = f"/apis/{item.group}/{item.version}"
    scope = f"{base}/namespaces/{{namespace}}/{item.plural}" if item.namespaced else f"{base}/{item.plural}"
    ref = {"$ref": _DEFINITIONS + name}
    list_ref = {"$ref": _DEFINITIONS + name + "List"}
    body = {"in": "body", "name": "body", "required": True, "schema": ref}
    tag = [f"{item.group}_{item.version}"]

    def op(action: str, verb: str, parameters: list[dict[str, Any]], response: dict[str, Any],
           consumes: list[str] | None = None) -> dict[str, Any]:
        operation = {"description": f"{action} {item.kind}", "operationId": f"{verb}{item.kind}",
                     "parameters": parameters, "produces": ["application/json", "application/yaml"],
                     "responses": {"200": {"description": "OK", "schema": response},
                                   "401": {"description": "Unauthorized"}},
                     "schemes": ["https"], "tags": tag, "x-kubernetes-action": action,
                     "x-kubernetes-group-version-kind": item.gvk}
        if consumes:
            operation["consumes"] = consumes
        return operation

    writes = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    patch_body = {"in": "body", "name": "body", "required": True, "schema": {"type": "object"}}
    return {
        scope: {"get": op("list", "list", [], list_ref), "post": op("post", "create", [body, *writes], ref),
                "delete": op("deletecollection", "deletecollection", [_DRY_RUN], {"type": "object"})},
        scope + "/{name}": {
            "get": op("get", "read", [], ref), "put": op("put", "replace", [body, *writes], ref),
            "patch": op("patch", "patch", [patch_body, *writes], ref, consumes=[
                "application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]),
            "delete": op("delete", "delete", [_DRY_RUN], {"type": "object"})},
    }


# -- v3 -------------------------------------------------------------------------------------------------

def _v3_schema(node: Any) -> Any:
    """A v2 schema as kube-openapi writes it in v3: refs renamed, a `$ref` with siblings wrapped in allOf."""
    if isinstance(node, list):
        return [_v3_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _v3_schema(value) if key not in ("enum", "default", "example", "properties") else value
                 for key, value in node.items() if key != "$ref"}
    if isinstance(node.get("properties"), dict):  # its keys are field names (JSONSchemaProps has a `$ref`)
        converted["properties"] = {name: _v3_schema(value) for name, value in node["properties"].items()}
    if not isinstance(node.get("$ref"), str):
        return converted
    ref = {"$ref": _SCHEMAS + node["$ref"].removeprefix(_DEFINITIONS)}
    return {"allOf": [ref], **converted} if converted else ref


def _v3_parameter(parameter: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: parameter[k] for k in ("name", "in", "description", "required") if k in parameter}
    out["schema"] = {k: parameter[k] for k in ("type", "format", "uniqueItems", "items", "enum", "default")
                     if k in parameter}
    return out


def _v3_operation(operation: Mapping[str, Any], shared: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in operation.items()
                           if k not in ("parameters", "responses", "consumes", "produces", "schemes")}
    parameters = []
    for parameter in operation.get("parameters") or ():
        if "$ref" in parameter:
            parameter = shared.get(parameter["$ref"].removeprefix(_PARAMETERS), {})
        if parameter.get("in") == "body":
            schema = _v3_schema(parameter.get("schema") or {})
            out["requestBody"] = {"content": {media: {"schema": schema}
                                              for media in operation.get("consumes") or [_ALL_MEDIA]},
                                  "required": bool(parameter.get("required"))}
        elif parameter:
            parameters.append(_v3_parameter(parameter))
    if parameters:
        out["parameters"] = parameters
    responses = {}
    for code, response in (operation.get("responses") or {}).items():
        converted: dict[str, Any] = {"description": response.get("description", "")}
        if "schema" in response:
            schema = _v3_schema(response["schema"])
            converted["content"] = {media: {"schema": schema} for media in operation.get("produces") or [_ALL_MEDIA]}
        responses[code] = converted
    out["responses"] = responses
    return out


def _v3_document(v2: Mapping[str, Any], gv_path: str) -> dict[str, Any]:
    shared = v2.get("parameters") or {}
    paths: dict[str, Any] = {}
    for path, item in v2["paths"].items():
        target = parse_path(path)
        if target is None or (f"apis/{target.group}/{target.version}" if target.group else "api/v1") != gv_path:
            continue
        converted: dict[str, Any] = {}
        for key, value in item.items():
            if key == "parameters":
                converted["parameters"] = [
                    _v3_parameter(shared.get(p["$ref"].removeprefix(_PARAMETERS), {}) if "$ref" in p else p)
                    for p in value]
            else:
                converted[key] = _v3_operation(value, shared)
        paths[path] = converted
    definitions = v2["definitions"]
    names = _closure(_definition_refs([v2["paths"][p] for p in paths]) | _definition_refs(
        [shared[p] for p in shared]), definitions)
    schemas = {name: _v3_schema(definitions[name]) for name in sorted(names)}
    security = v2.get("securityDefinitions") or {}
    return {"openapi": "3.0.0", "info": {"title": TITLE, "version": KUBERNETES_VERSION}, "paths": paths,
            "components": {"schemas": schemas, "securitySchemes": {
                name: {k: v for k, v in scheme.items() if k in ("type", "name", "in", "description")}
                for name, scheme in security.items()}}}
