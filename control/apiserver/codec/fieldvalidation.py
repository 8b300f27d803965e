"""`fieldValidation` (Ignore / Warn / Strict) and the pruning of unknown fields of written objects
(upstream: k8s.io/apiserver/pkg/endpoints/handlers — create.go, update.go, patch.go with the strict
decoding of runtime/serializer/json and sigs.k8s.io/json's unknown and duplicate field errors).

Upstream decodes a body into the kind's Go struct: fields the struct has no place for are dropped, and
the decoder names them (`unknown field "spec.containers[0].foo"`), as it names a key given twice
(`duplicate field "metadata.name"`). What happens then is the request's `fieldValidation`:
- Ignore: nothing is said; the unknown fields are gone, the last of duplicate keys wins.
- Warn (the default when none is given): the same, plus one `Warning: 299 - "<error>"` header per error,
  which kubectl prints as `Warning: unknown field "spec.foo"`.
- Strict: 400 BadRequest listing every error: `Pod in version "v1" cannot be handled as a Pod: strict
  decoding error: unknown field "spec.foo", duplicate field "spec.bar"` for create and update, and
  `strict decoding error: ...` for a patch (whose errors are those of the patched object).

Here the Go struct is the kind's OpenAPI definition (openapi/spec.py, the same data upstream generates from
those structs), walked by `prune`: a key an object schema does not list is removed and reported; maps
(`additionalProperties`), opaque objects (no `properties`: RawExtension, FieldsV1) and
`x-kubernetes-preserve-unknown-fields` keep everything under them. A kind without a definition (a custom
resource no one published) is not pruned.

How the pieces meet: a middleware (`middleware`) parses the directive of every POST/PUT/PATCH under
`/api` and `/apis` and puts a `Validation` in a context variable; `request.decode_body` reports duplicate
keys of JSON bodies to it; the registry calls `prune_written` on the object it is about to store (after the
patch is applied, before defaulting), which prunes and reports; the middleware then adds the warnings to
the answer. The context variable follows the request into the worker thread (`asyncio.to_thread` copies
the context), and writes made without a request (bootstrap) are not pruned.

Duplicate keys of a YAML body are reported as upstream's YAML-to-JSON conversion words them
(`yaml: unmarshal errors:` and one `line N: key "name" already set in map` per key, the line 1-based).
Protobuf bodies cannot carry unknown or duplicate fields (their decoder has no name for an unknown field
number, and a repeated field number is the protobuf way of writing a value again), as upstream.
"""

from __future__ import annotations

import contextvars
import enum
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml
from aiohttp import web
from aiohttp.typedefs import Middleware

from control.apimachinery.meta import group_version
from control.apimachinery.validation import FieldError
from control.apiserver import status, warning

DIRECTIVES = ("Ignore", "Strict", "Warn")
_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_DEPTH = 100  # deeper than any built-in schema; a hostile body cannot recurse forever


class Directive(enum.Enum):
    IGNORE = "Ignore"
    WARN = "Warn"
    STRICT = "Strict"


def parse_directive(value: str | None, *, options_kind: str = "CreateOptions") -> Directive:
    """The query parameter; absent or empty is Warn (upstream's default since 1.23), anything else not a
    directive is a 422 on the request's options, as upstream's ValidateCreateOptions answers."""
    if not value:
        return Directive.WARN
    for directive in Directive:
        if directive.value == value:
            return directive
    raise status.invalid(options_kind, "", [FieldError.not_supported("fieldValidation", value, DIRECTIVES)],
                         group="meta.k8s.io")


class Schemas(Protocol):
    """What pruning needs from the OpenAPI documents (openapi.OpenAPIDocuments)."""

    def definitions(self) -> Mapping[str, Any]: ...

    def definition_for(self, group: str, version: str, kind: str) -> str | None: ...


@dataclass
class Validation:
    """One write request's directive and what its decoding and pruning found."""

    directive: Directive
    schemas: Schemas
    patch: bool = False
    decode_errors: list[str] = field(default_factory=list)  # duplicate keys, as the decoder words them
    warnings: dict[str, None] = field(default_factory=dict)  # insertion-ordered set

    def report(self, kind: str, version: str, unknown: list[str]) -> None:
        """Strict: raise the 400; Warn: remember the warnings; Ignore: nothing."""
        errors = self.decode_errors + [f'unknown field "{path}"' for path in unknown]
        if not errors or self.directive is Directive.IGNORE:
            return
        if self.directive is Directive.STRICT:
            message = "strict decoding error: " + ", ".join(errors)
            if not self.patch:
                message = f'{kind} in version "{version}" cannot be handled as a {kind}: {message}'
            raise status.bad_request(message)
        for error in errors:
            self.warnings[error] = None


_current: contextvars.ContextVar[Validation | None] = contextvars.ContextVar("field_validation", default=None)


def current() -> Validation | None:
    return _current.get()


def prune(obj: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any], path: str = "") -> list[str]:
    """Remove from `obj` (in place) every key its schema does not list; the removed keys' paths in the
    decoder's notation (`spec.containers[0].foo`), in document order."""
    found: list[str] = []
    _prune(obj, schema, definitions, path, found, 0)
    return found


def _resolve(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    for _ in range(_MAX_DEPTH):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            schema = definitions.get(ref.rsplit("/", 1)[-1], {})
            continue
        parts = schema.get("allOf")
        if isinstance(parts, list) and len(parts) == 1 and "properties" not in schema:
            schema = parts[0]
            continue
        return schema
    return {}


def _prune(obj: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any], path: str, found: list[str],
           depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    schema = _resolve(schema, definitions)
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return
    if isinstance(obj, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for key in list(obj):
                child = f"{path}.{key}" if path else str(key)
                sub = properties.get(key)
                if sub is None:
                    found.append(child)
                    del obj[key]
                else:
                    _prune(obj[key], sub, definitions, child, found, depth + 1)
        elif isinstance(schema.get("additionalProperties"), dict):
            for key, value in obj.items():
                _prune(value, schema["additionalProperties"], definitions, f"{path}.{key}" if path else str(key),
                       found, depth + 1)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(obj):
            _prune(item, schema["items"], definitions, f"{path}[{index}]", found, depth + 1)


def prune_written(obj: dict[str, Any]) -> None:
    """Prune an object about to be stored by its kind's definition and report what went to the request's
    `Validation` (which raises under Strict). Without a request in progress, nothing is done."""
    validation = _current.get()
    if validation is None:
        return
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    unknown: list[str] = []
    if isinstance(api_version, str) and isinstance(kind, str):
        try:
            group, version = group_version(api_version)
        except ValueError:
            group, version = "", ""
        name = validation.schemas.definition_for(group, version, kind) if version else None
        if name is not None:
            definitions = validation.schemas.definitions()
            unknown = prune(obj, definitions[name], definitions)
    validation.report(str(kind), api_version if isinstance(api_version, str) else "", unknown)
    validation.decode_errors = []  # said once, however many times the object is written (patch retries)


def note_duplicates(data: str, *, yaml_text: bool = False) -> None:
    """Called with a JSON or YAML body that parsed: remember its duplicate keys for the request's Validation."""
    validation = _current.get()
    if validation is None or validation.directive is Directive.IGNORE:
        return
    if yaml_text:
        validation.decode_errors.extend(yaml_duplicate_errors(data))
    else:
        validation.decode_errors.extend(f'duplicate field "{path}"' for path in duplicate_keys(data))


def yaml_duplicate_errors(data: str) -> list[str]:
    """Upstream's error for the duplicate keys of a YAML text (sigs.k8s.io/yaml's strict conversion):
    one `yaml: unmarshal errors:` message with a `line N: key "k" already set in map` line per key."""
    try:
        root = yaml.compose(data, Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return []
    lines: list[str] = []
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            for key, value in node.value:
                identity = (key.tag, str(key.value))
                if identity in keys:
                    shown = json.dumps(key.value) if key.tag.endswith(":str") else str(key.value)
                    lines.append(f"  line {key.start_mark.line + 1}: key {shown} already set in map")
                keys.add(identity)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    if not lines:
        return []
    lines.sort(key=lambda line: int(line.split()[1].rstrip(":")))
    return ["yaml: unmarshal errors:\n" + "\n".join(lines)]


def duplicate_keys(data: str) -> list[str]:
    """The paths of keys given more than once in a JSON text (`metadata.name`), in document order."""
    seen: dict[int, list[str]] = {}

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            keys: set[str] = set()
            repeated = []
            for key, _ in pairs:
                if key in keys:
                    repeated.append(key)
                keys.add(key)
            seen[id(obj)] = repeated
        return obj

    try:
        root = json.loads(data, object_pairs_hook=hook)
    except ValueError:
        return []
    if not seen:
        return []
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, path = stack.pop(0)
        if isinstance(node, dict):
            found.extend(f"{path}.{key}" if path else key for key in dict.fromkeys(seen.get(id(node), [])))
            stack.extend((value, f"{path}.{key}" if path else key) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(node))
    return found


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(schemas: Schemas) -> Middleware:
    """The aiohttp middleware for writes under `/api/` and `/apis/` (see the module docstring)."""

    @web.middleware
    async def field_validation(request: web.Request, handler: Handler) -> web.StreamResponse:
        options_kind = _OPTIONS_KIND.get(request.method)
        if options_kind is None or not request.path.startswith(("/api/", "/apis/")):
            return await handler(request)
        directive = parse_directive(request.query.get("fieldValidation"), options_kind=options_kind)
        validation = Validation(directive, schemas, patch=request.method == "PATCH")
        token = _current.set(validation)
        try:
            response = await handler(request)
        finally:
            _current.reset(token)
        if validation.warnings and not response.prepared:
            for text in validation.warnings:
                response.headers.add("Warning", warning.header(text))
        return response

    return field_validation
