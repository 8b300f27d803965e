"""Reading a request: which resource a path names, the query parameters of list/watch/delete, and the body
(upstream: k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, the ListOptions/DeleteOptions query
decoding, and the body negotiation of handlers/rest.go).

Every malformed input becomes an `APIError` with upstream's code (400, 404, 413, 415) here, before a
handler runs, so handlers only see well-formed requests and the fuzz test can never reach a 500.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from multidict import MultiMapping

from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.codec import fieldvalidation, protobuf
from control.apiserver.fieldmanager import managedfields
from control.apiserver.resources import Resource, ServedResources
from control.apiserver.status import APIError

MAX_BODY_BYTES = 3 * 1024 * 1024  # upstream's maxRequestBodyBytes
# The most values a YAML body may expand to through its aliases: more than a 3 MiB body can spell out
# (each value takes at least two bytes), so only aliasing reaches it (go-yaml bounds its alias ratio too).
MAX_EXPANDED_NODES = MAX_BODY_BYTES // 2
JSON_TYPES = ("application/json", "application/yaml", "application/x-yaml", "text/yaml", "")
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",  # server-side apply; JSON bodies (kubectl's) are YAML too
}
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "application/apply-patch+yaml")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource URL names: a collection (no name) or an object, maybe a subresource of it."""

    resource: Resource
    namespace: str
    name: str = ""
    subresource: str = ""


def parse_target(table: ServedResources, group: str, version: str, tail: str) -> Target:
    """`tail` is the path after `/api/v1/` or `/apis/{group}/{version}/`; `table` is what the server serves."""
    parts = tail.strip("/").split("/") if tail.strip("/") else []
    namespace = ""
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3:
        raise _path_not_found()
    resource = table.by_path(group, version, parts[0])
    if resource is None:
        raise _path_not_found()
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 else ""
    if resource.namespaced and name and not namespace:
        raise _path_not_found()
    if not resource.namespaced and namespace:
        raise _path_not_found()
    if subresource and subresource not in resource.subresources:
        raise _path_not_found()
    if any(segment in ("", ".", "..") for segment in parts) or (namespace in (".", "..")):
        raise _path_not_found()
    return Target(resource, namespace, name, subresource)


def _path_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource",
                    details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})


def query_bool(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "")
    if value.lower() in ("", "0", "false"):
        return False
    if value.lower() in ("1", "true"):
        return True
    raise status.bad_request(f'{name}: Invalid value: "{value}": must be a boolean')


def query_int(query: Mapping[str, str], name: str, *, minimum: int | None = 0) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise status.bad_request(f'{name}: Invalid value: "{value}": must be an integer') from None
    if not -(2**63) <= number < 2**63:  # upstream parses an int64
        raise status.bad_request(f'{name}: Invalid value: "{value}": value out of range')
    if minimum is not None and number < minimum:
        raise status.bad_request(f'{name}: Invalid value: {number}: must be greater than or equal to {minimum}')
    return number


def resource_version(query: Mapping[str, str]) -> str:
    """`resourceVersion` as given ("" and "0" mean "now" and "any"); anything not a revision is a 400."""
    value = query.get("resourceVersion", "")
    if value and (not (value.isascii() and value.isdigit()) or len(value) > 19):  # "²".isdigit() too
        raise status.bad_request(f'resourceVersion: Invalid value: "{value}": must be a non-negative integer')
    return value


def dry_run(query: MultiMapping[str]) -> bool:
    values = [v for v in query.getall("dryRun", []) if v]
    if any(v != "All" for v in values):
        raise status.bad_request(f'dryRun: Unsupported value: "{values[0]}": supported values: "All"')
    return bool(values)


def _parse_json(data: str | bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"invalid character '{constant[0]}' looking for beginning of value")

    return json.loads(data, parse_constant=refuse)


def decode_body(data: bytes, content_type: str) -> Any:
    """A JSON or YAML body; 400 when it does not parse, 415 for a media type we do not read."""
    media = content_type.split(";")[0].strip().lower()
    if media == protobuf.MEDIA_TYPE:
        return _decode_protobuf(data)
    if media not in JSON_TYPES and media not in PATCH_TYPES:
        raise status.unsupported_media_type(media)
    if len(data) > MAX_BODY_BYTES:
        raise status.too_large(MAX_BODY_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise status.bad_request("the body is not valid UTF-8") from None
    try:
        is_yaml = media in _YAML_TYPES
        body = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if is_yaml else _parse_json(text)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        raise status.bad_request(f"couldn't get version/kind; json parse error: {str(exc).splitlines()[0]}") from None
    if is_yaml and expanded_size(body) > MAX_EXPANDED_NODES:
        raise status.bad_request("yaml: document contains excessive aliasing")
    fieldvalidation.note_duplicates(text, yaml_text=is_yaml)
    return body


def expanded_size(root: Any) -> int:
    """How many values `root` holds once every YAML alias is written out. The parser shares an aliased value
    instead of copying it, so a small body of aliases of aliases (a "billion laughs") parses fast but is
    astronomically large to anything that walks it; the count is memoised per shared value, so computing
    it costs one visit per distinct value."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # post-order: a container's size once the sizes of what it holds are known
        node, children_done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if not children_done and id(node) in sizes:
            if sizes[id(node)] == 0:  # still open: it holds itself (`&a [*a]`), infinite written out
                return sys.maxsize
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if children_done:
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
        else:
            sizes[id(node)] = 0  # open until what it holds is counted
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return sizes.get(id(root), 1)


def _decode_protobuf(data: bytes) -> dict[str, Any]:
    if len(data) > MAX_BODY_BYTES:
        raise status.too_large(MAX_BODY_BYTES)
    try:
        obj = protobuf.decode_object(data)
    except protobuf.ProtobufError as exc:
        raise status.bad_request(f"couldn't decode the protobuf body: {exc}") from None
    if obj is None:  # a kind whose schema this server does not know
        raise status.unsupported_media_type(protobuf.MEDIA_TYPE)
    return obj


def decode_object(data: bytes, content_type: str) -> dict[str, Any]:
    body = decode_body(data, content_type)
    if not isinstance(body, dict):
        raise status.bad_request("couldn't get version/kind; json parse error: json: cannot unmarshal "
                                 f"{type(body).__name__} into Go value of type struct")
    return body


def delete_options(query: Mapping[str, str], body: Any) -> dict[str, Any]:
    """DeleteOptions from the body (kubectl sends one) merged with query parameters (the client's)."""
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if body is not None and not isinstance(body, dict):
        raise status.bad_request("DeleteOptions must be an object")
    grace = query_int(query, "gracePeriodSeconds", minimum=None)
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if query.get("propagationPolicy"):
        options["propagationPolicy"] = query["propagationPolicy"]
    if query.get("orphanDependents"):
        options["orphanDependents"] = query_bool(query, "orphanDependents")
    if not isinstance(options.get("gracePeriodSeconds", 0), int) or isinstance(options.get("gracePeriodSeconds"), bool):
        raise status.bad_request("gracePeriodSeconds: must be an integer")
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is not None and policy is not None:
        raise APIError(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                       f'"{policy}": orphanDependents and deletionPropagation cannot be both set',
                       details={"kind": "DeleteOptions", "group": "meta.k8s.io",
                                "causes": [{"reason": "FieldValueInvalid", "field": "propagationPolicy",
                                            "message": f'Invalid value: "{policy}": orphanDependents and '
                                                       'deletionPropagation cannot be both set'}]})
    if options.get("orphanDependents") is not None:  # the deprecated bool: true orphans, false does not
        options["propagationPolicy"] = policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise APIError(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported '
                       f'value: "{policy}": supported values: "Foreground", "Background", "Orphan", "nil"',
                       details={"kind": "DeleteOptions", "group": "meta.k8s.io",
                                "causes": [{"reason": "FieldValueNotSupported", "field": "propagationPolicy",
                                            "message": f'Unsupported value: "{policy}"'}]})
    preconditions = options.get("preconditions")
    if preconditions is not None and not isinstance(preconditions, dict):
        raise status.bad_request("preconditions must be an object")
    return options


def field_manager(query: Mapping[str, str], user_agent: str, options_kind: str, *, apply: bool = False) -> str:
    """The field manager of a write: `fieldManager`, else (not for apply, which requires it) the user agent's
    program name as upstream's managerOrUserAgent derives it. Checked as ValidateFieldManager does, the
    refusal a 422 on the request's options kind (CreateOptions, UpdateOptions, PatchOptions)."""
    manager = query.get("fieldManager", "")
    errors = []
    if apply and not manager:
        errors.append(FieldError.required("fieldManager", "is required for apply patch"))
    if len(manager) > managedfields.MAX_MANAGER_LENGTH:
        errors.append(FieldError.too_long("fieldManager", managedfields.MAX_MANAGER_LENGTH))
    errors += [FieldError.invalid("fieldManager", manager, f"invalid character {_rune(char)} (at position {i})")
               for i, char in enumerate(manager) if not char.isprintable()]
    if not apply and query.get("force") is not None and options_kind == "PatchOptions":
        errors.insert(0, FieldError.forbidden("force", "may not be specified for non-apply patch"))
    if errors:
        raise status.invalid(options_kind, "", errors, group="meta.k8s.io")
    return manager or managedfields.manager_from_user_agent(user_agent)


def _rune(char: str) -> str:
    """Go's %#U for a character that is not printable: `U+0007`."""
    return f"U+{ord(char):04X}"
