"""The generic REST store between the HTTP handlers and `Storage` (upstream: k8s.io/apiserver/pkg/registry/
generic/registry/store.go — Create, Update with `GuaranteedUpdate`, Delete with graceful deletion and
finalizers). It knows no kind by name: what differs per kind is asked of the resource's strategy
(strategies/, in the order strategies/base.py documents); every write enters the admission chain
(control/apiserver/admission/) once, with the strategy's prepare step between its mutating and validating
plugins and the strategy's validation as the first validating one.

Design notes
- Blocking and thread-safe, like `Storage`: the aiohttp handlers call it through `asyncio.to_thread`, so
  one slow SQLite fsync never stalls the event loop serving watches.
- Objects are stored as compact JSON without `metadata.resourceVersion`; reads put the record's
  `mod_revision` there. One global revision is therefore the resourceVersion of everything.
- Every write is compare-and-swap on the revision that was read. An update naming a stale
  resourceVersion gets 409; a patch without one is retried on a lost race (upstream GuaranteedUpdate),
  so `kubectl scale` and `kubectl apply` never fail because a controller wrote status meanwhile.
- A write that changes nothing is not written (upstream skips no-op updates), so watchers see no event.
- Deletion: an object gets deletionTimestamp + the grace its strategy gives (pods on a node: until the
  kubelet deletes them with grace 0) and stays while finalizers are left; `propagationPolicy` Orphan and
  Foreground (or, without one, the kind's default: orphan for v1 ReplicationControllers and batch/v1
  Jobs) are recorded as the `orphan`/`foregroundDeletion` finalizers the garbage collector acts on, also
  on an object already being deleted (strategies/base.py `gc_finalizers`, upstream store.go).
- Field ownership (fieldmanager/managedfields.py): a write that names its field manager (every request
  through the handlers does; the server's own bootstrap writes do not) records it in metadata.managedFields
  right after defaulting, before admission and the strategy, as upstream's handlers call the field manager;
  an apply (`apply`) merges its configuration over the stored object the same way a patch does, retried on
  a lost race.
- Quota admission, last in the chain, serialises only the creates a ResourceQuota of their namespace
  counts, per namespace (admission/quota.py), holding its lock until the write is done; every other write
  runs in parallel, down to storage's compare-and-swap.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import functools
import json
import secrets
import uuid
from collections.abc import Callable, Collection, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from control.api.typed import TypedObject
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.admission import plugins as admission
from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.admission.config import AdmissionConfig
from control.apiserver.codec import fieldvalidation
from control.apiserver.codec import jsoncodec as codec
from control.apiserver.fieldmanager import fieldschema, managedfields, patch
from control.apiserver.registry import strategies
from control.apiserver.registry.strategies.base import Rollback, Strategy, gc_finalizers, mark_deleting, nothing_to_undo
from control.apiserver.resources import Resource, ServedResources, storage_key, storage_prefix
from control.apiserver.status import APIError
from control.apiserver.storage.selection import Filter
from control.storage.interface import Compacted, Conflict, KeyExists, KeyNotFound, Record, Storage

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphabet: no vowels, no 0/1/3
_GENERATE_ATTEMPTS = 8
_PATCH_ATTEMPTS = 5
_MAX_PAGE = 10_000  # records read from storage at once; a larger `limit` (up to 2^63-1) reads several
_CONTINUE_VERSION = "meta.k8s.io/v1"
_HEAD = ("apiVersion", "kind", "metadata")  # the fields `encode` writes first
MAX_STORED_BYTES = 1536 * 1024  # etcd's default --max-request-bytes, the most one object may take in storage


def encode(obj: Mapping[str, Any]) -> bytes:
    """Stored form: compact JSON without resourceVersion (the record's revision is the truth), with
    apiVersion, kind and metadata first, so `with_revision` can splice a read's resourceVersion into the
    stored bytes without decoding them."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    head = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    return codec.dumps({**head, "metadata": metadata, **{k: v for k, v in obj.items() if k not in _HEAD}})


def encode_bounded(obj: Mapping[str, Any]) -> bytes:
    """`encode` for a write: an object over MAX_STORED_BYTES is a 413 before anything is stored. Upstream
    leaves this bound to etcd (its request limit, 1.5 MiB by default), which answers a 500; a patch or an
    apply can grow an object past it though each request body is under 3 MiB."""
    value = encode(obj)
    if len(value) > MAX_STORED_BYTES:
        raise status.entity_too_large(f"the object would be {len(value)} bytes when stored, over the limit of "
                                      f"{MAX_STORED_BYTES} bytes")
    return value


def decode(value: bytes, revision: int) -> dict[str, Any]:
    obj: dict[str, Any] = codec.loads(value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def with_revision(resource: Resource, value: bytes, revision: int) -> bytes:
    """The JSON a read returns for a stored value, `decode` + encode without the decoding: the stored
    bytes with `"resourceVersion"` spliced in as metadata's first field. A value not in `encode`'s shape
    (stored by an older version, or written past the registry) is decoded and encoded instead. (One
    stored by the standard library with non-ASCII characters as `\\uXXXX` escapes is handed out with
    them — the same JSON value as the UTF-8 upstream writes — until its next write: looking for them
    in every item cost a sixth of a LIST.)"""
    head = _stored_head(resource.api_version, resource.kind)
    if value.startswith(head):
        rest = value[len(head):]
        return b'%b"resourceVersion":"%d"%b%b' % (head, revision, b"" if rest[:1] == b"}" else b",", rest)
    return codec.dumps(decode(value, revision))


@functools.lru_cache(maxsize=1024)
def _stored_head(api_version: str, kind: str) -> bytes:
    """How `encode` begins an object of this kind, up to the inside of its metadata."""
    return codec.dumps({"apiVersion": api_version, "kind": kind, "metadata": {}})[:-2]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list. `raw`, when set (a `list(..., raw=True)` that needed no decoding), holds each
    item's JSON bytes instead of `items`."""

    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str = ""
    raw: list[bytes] | None = None


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None
    dry_run: bool = False


def _not_found(resource: Resource, name: str) -> APIError:
    return status.not_found(resource.plural, name, group=resource.group)


def _check_metadata_shape(obj: Mapping[str, Any]) -> None:
    """What upstream's typed decoder refuses before any validation runs (a 400, not a 422)."""
    metadata = obj.get("metadata")
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise status.bad_request("metadata: expected an object")
    for key in ("labels", "annotations"):
        value = metadata.get(key)
        if value is not None and (not isinstance(value, dict)
                                  or not all(isinstance(v, str) for v in value.values())):
            raise status.bad_request(f"metadata.{key}: expected a map of strings")
    for key in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if metadata.get(key) is not None and not isinstance(metadata[key], str):
            raise status.bad_request(f"metadata.{key}: expected a string")
    for key in ("finalizers", "ownerReferences"):
        value = metadata.get(key)
        if value is not None and not isinstance(value, list):
            raise status.bad_request(f"metadata.{key}: expected a list")
    if not all(isinstance(f, str) for f in metadata.get("finalizers") or []):
        raise status.bad_request("metadata.finalizers: expected a list of strings")
    if not all(isinstance(r, dict) for r in metadata.get("ownerReferences") or []):
        raise status.bad_request("metadata.ownerReferences: expected a list of objects")


def encode_continue(revision: int, start_after: str) -> str:
    body = json.dumps({"v": _CONTINUE_VERSION, "rv": revision, "start": start_after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        body = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        if body.get("v") != _CONTINUE_VERSION or not isinstance(body.get("rv"), int) or not isinstance(
                body.get("start"), str) or body["rv"] <= 0:
            raise ValueError
        return body["rv"], body["start"]
    except (ValueError, binascii.Error, UnicodeDecodeError, AttributeError):
        raise status.bad_request(f"continue key is not valid: {token[:64]}") from None


class StrategyValidation:
    """The kind's own validation as the first validating plugin of the admission chain: the strategy's
    `validate` (upstream's rest.BeforeCreate/BeforeUpdate), a 422 with its field errors."""

    name = "Validation"

    def __init__(self, strategy_of: Callable[[Resource], Strategy]) -> None:
        self._strategy_of = strategy_of

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        obj = attributes.obj
        if obj is None:
            return
        strategy = self._strategy_of(attributes.resource)
        errors = strategy.validate(obj, attributes.old)
        resource = strategy.resource
        if errors:
            raise status.invalid(resource.kind, TypedObject(obj).metadata.name, errors,
                                 group=resource.group)


class Registry:
    """CRUD for every resource one server serves over one `Storage`: the built-in table and the custom
    resources installed with `serve_custom` (`resources`, this server's own table), each write admitted by
    `admission`, the one chain of control/apiserver/admission/plugins.py.

    `service_cidr` and `node_port_range` configure the services strategy's allocators; `clock` gives the
    creation and deletion timestamps (injected for tests), also to the REST storages beside this one
    (binding.py); `endpoint_routing` sends admission webhooks to a Service's endpoints rather than its
    ClusterIP (`--enable-aggregator-routing`); `admission_config` is the server's admission configuration
    file's content; `disabled_admission` names admission plugins left out of the chain.
    """

    def __init__(self, storage: Storage, *, service_cidr: str = "10.96.0.0/12",
                 node_port_range: tuple[int, int] = (30000, 32767),
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC), endpoint_routing: bool = True,
                 admission_config: AdmissionConfig | None = None,
                 disabled_admission: Collection[str] = ()) -> None:
        self.storage = storage
        self.endpoint_routing = endpoint_routing
        self._strategies = strategies.build(storage, service_cidr=service_cidr, node_port_range=node_port_range)
        self.clock = clock
        self.admission = admission.chain(self, validation=StrategyValidation(self.strategy),
                                         endpoint_routing=endpoint_routing, served=lambda: self.resources.served(),
                                         config=admission_config, disabled=disabled_admission)
        # What this server serves: the static table and the custom resources `serve_custom` installs.
        self.resources = ServedResources()
        self._custom: dict[tuple[str, str, str], Strategy] = {}
        self._custom_by_definition: dict[str, tuple[tuple[str, str, str], ...]] = {}

    def strategy(self, resource: Resource) -> Strategy:
        """The strategy of a served resource (strategies.build made one per entry of the resource table;
        `serve_custom` one per served version of a CRD). A custom resource whose CRD went away meanwhile
        is a 404."""
        if resource.custom:
            custom = self._custom.get((resource.group, resource.version, resource.plural))
            if custom is None:
                raise status.not_found(resource.plural, "", group=resource.group)
            return custom
        return self._strategies[resource.plural]

    def serve_custom(self, definition: str, served: builtins.list[Strategy]) -> None:
        """Serve (or serve anew) the versions of one CRD, each through its strategy: routing and discovery
        see them from now on (`self.resources`), writes go through the strategies."""
        keys = tuple((s.resource.group, s.resource.version, s.resource.plural) for s in served)
        for key in self._custom_by_definition.get(definition, ()):
            if key not in keys:
                self._custom.pop(key, None)
        for key, strategy in zip(keys, served, strict=True):
            self._custom[key] = strategy
        self._custom_by_definition[definition] = keys
        self.resources.install(definition, [s.resource for s in served])

    def stop_serving_custom(self, definition: str | None = None) -> None:
        """Stop serving one CRD's resources, or (None) every one this registry serves."""
        self.resources.remove(definition)
        for name in [definition] if definition is not None else list(self._custom_by_definition):
            for key in self._custom_by_definition.pop(name, ()):
                self._custom.pop(key, None)

    # -- reading ------------------------------------------------------------------------------------

    def _record(self, resource: Resource, namespace: str, name: str) -> Record | None:
        try:
            key = storage_key(resource, namespace, name)
        except ValueError:
            return None
        return self.storage.get(key)

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        record = self._record(resource, namespace, name)
        if record is None:
            return None
        obj = decode(record.value, record.mod_revision)
        self.strategy(resource).decorate(obj)
        return obj

    def must_get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any]:
        obj = self.get(resource, namespace, name)
        if obj is None:
            raise _not_found(resource, name)
        return obj

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]:
        return self.list(resource, namespace, None).items

    def list(self, resource: Resource, namespace: str, flt: Filter | None, *, limit: int = 0,
             continue_token: str = "", resource_version: str = "", raw: bool = False) -> Page:
        """One page of matching objects, read at one revision; a continue token resumes at that revision
        (410 once it is compacted away), as upstream's paged lists do.

        `raw`: the caller only encodes the items, so when nothing needs the decoded object (no selector,
        no decoration) the page carries each stored value with its resourceVersion spliced in
        (`with_revision`) and decodes nothing — a LIST of 10,000 pods is then mostly reading the store."""
        base = storage_prefix(resource)
        prefix = f"{base}{namespace}/" if namespace and resource.namespaced else base
        revision, start_after = 0, ""
        if continue_token:
            revision, relative = decode_continue(continue_token)
            if revision > self.storage.revision():  # forged: no list was ever served at that revision
                raise status.bad_request(f"continue key is not valid: {continue_token[:64]}")
            start_after = base + relative
            if not start_after.startswith(prefix):
                raise status.bad_request("continue key is not valid: it belongs to another list")
        elif resource_version not in ("", "0"):
            if int(resource_version) > self.storage.revision():
                raise APIError(504, "Timeout", f"Too large resource version: {resource_version}, "
                               f"current: {self.storage.revision()}",
                               details={"causes": [{"reason": "ResourceVersionTooLarge",
                                                    "message": "Too large resource version"}], "retryAfterSeconds": 1})
        items: list[dict[str, Any]] = []
        strategy = self.strategy(resource)
        decorate = strategy.decorate
        raws: list[bytes] | None = [] if raw and (flt is None or flt.everything) and not strategy.decorates else None
        while True:
            try:
                page = self.storage.list(prefix, start_after=start_after, limit=min(limit, _MAX_PAGE),
                                         revision=revision)
            except Compacted:
                raise status.gone("The provided continue parameter is too old to display a consistent list "
                                  "result. You can start a new list without the continue parameter.") from None
            revision = page.revision
            for index, record in enumerate(page.records):
                start_after = record.key
                if raws is not None:
                    raws.append(with_revision(resource, record.value, record.mod_revision))
                else:
                    obj = decode(record.value, record.mod_revision)
                    decorate(obj)
                    if flt is None or flt.matches(obj):
                        items.append(obj)
                if limit and len(items) + len(raws or ()) >= limit:
                    more = index < len(page.records) - 1 or page.more
                    token = encode_continue(revision, start_after[len(base):]) if more else ""
                    return Page(items, str(revision), token, raws)
            if not page.more or not limit:
                return Page(items, str(revision), raw=raws)

    # -- creating -----------------------------------------------------------------------------------

    def _check_identity(self, resource: Resource, namespace: str, obj: dict[str, Any],
                        *, name: str | None = None) -> None:
        """apiVersion/kind must be this resource's (filled in when absent); the body's namespace and
        name must agree with the URL's (upstream answers 400 for both)."""
        if not isinstance(obj, dict):
            raise status.bad_request("the body must be a JSON object")
        _check_metadata_shape(obj)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version not in (None, resource.api_version):
            raise status.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                     f"API version ({resource.api_version})")
        if kind not in (None, resource.kind):
            raise status.bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                                     f"({resource.kind})")
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        if obj.get("metadata") is None:  # `"metadata": null` decodes to empty metadata upstream
            obj["metadata"] = {}
        metadata = obj["metadata"]
        if resource.namespaced:
            if metadata.get("namespace", namespace) != namespace:
                raise status.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        if name is not None and metadata.get("name", name) != name:
            raise status.bad_request(f"the name of the object ({metadata.get('name')}) does not match the name "
                                     f"on the URL ({name})")
        if name is not None:
            metadata["name"] = name

    def create(self, resource: Resource, namespace: str, body: Any, *, dry_run: bool = False,
               manager: str | None = None) -> dict[str, Any]:
        """POST, in the order strategies/base.py documents; a failed write gives back what the strategy's
        `begin_write` reserved. `manager` names the field manager of an Update (None: not tracked)."""
        obj: dict[str, Any] = deep_copy(body)
        self._check_identity(resource, namespace, obj)
        fieldvalidation.prune_written(obj)
        metadata = obj["metadata"]
        generate = metadata.get("generateName") if not metadata.get("name") else None
        if generate:
            metadata["name"] = generate + "".join(secrets.choice(_GENERATE_CHARS) for _ in range(5))
        name = metadata.get("name") or ""
        strategy = self.strategy(resource)
        strategy.defaults(obj)
        if manager is not None:
            obj = managedfields.update(None, obj, self._fields(resource), manager=manager, now=self.clock())
            metadata = obj["metadata"]
        attributes = Attributes(Operation.CREATE, resource, namespace, name, obj, generate_name=generate or "",
                                dry_run=dry_run)
        rollback: Rollback = nothing_to_undo
        try:
            with self.admission.admit(attributes, prepare=lambda: strategy.prepare_for_create(
                    obj, now=self.clock(), uid=str(uuid.uuid4()))):
                if dry_run:
                    if self._record(resource, namespace, name):
                        raise status.already_exists(resource.plural, name, group=resource.group)
                    strategy.decorate(obj)
                    return obj
                rollback = strategy.begin_write(obj, None)
                for attempt in range(_GENERATE_ATTEMPTS if generate else 1):
                    try:
                        record = self.storage.create(storage_key(resource, namespace, name), encode_bounded(obj))
                        created = decode(record.value, record.mod_revision)
                        strategy.decorate(created)
                        return created
                    except KeyExists:
                        if not generate or attempt == _GENERATE_ATTEMPTS - 1:
                            raise status.already_exists(resource.plural, name, group=resource.group) from None
                        name = obj["metadata"]["name"] = generate + "".join(
                            secrets.choice(_GENERATE_CHARS) for _ in range(5))
        except BaseException:
            rollback()
            raise
        raise AssertionError("unreachable")

    # -- updating -----------------------------------------------------------------------------------

    def update(self, resource: Resource, namespace: str, name: str, body: Any, *, subresource: str = "",
               dry_run: bool = False, manager: str | None = None) -> tuple[dict[str, Any], bool]:
        """PUT: returns (object, created). A body resourceVersion other than the stored one is a 409."""
        obj = deep_copy(body)
        self._check_identity(resource, namespace, obj, name=name)
        record = self._record(resource, namespace, name)
        if record is None:
            if subresource or not self.strategy(resource).allow_create_on_update:
                raise _not_found(resource, name)
            return self.create(resource, namespace, obj, dry_run=dry_run, manager=manager), True
        wanted = obj["metadata"].get("resourceVersion")
        if wanted and wanted != str(record.mod_revision):
            raise status.conflict(resource.plural, name, status.STALE_OBJECT, group=resource.group)
        return self._write(resource, namespace, record, obj, subresource=subresource, dry_run=dry_run,
                           manager=manager), False

    def patch(self, resource: Resource, namespace: str, name: str, patch_type: str, document: Any, *,
              subresource: str = "", dry_run: bool = False,
              transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
              apply_back: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
              manager: str | None = None, fields_subresource: str = "",
              ) -> dict[str, Any]:
        """PATCH with retries on a lost race unless the patch itself names a resourceVersion.

        `transform`/`apply_back` let a subresource such as `/scale` patch a view of the object (a Scale)
        and map the result back onto the object; `fields_subresource` is then the subresource its
        managedFields entry names.
        """
        if patch_type != "json" and not isinstance(document, dict):
            # RFC 7386 allows any JSON value as a merge patch, but one that is not an object would
            # replace the whole object; upstream refuses it as malformed.
            raise status.bad_request("the patch must be a JSON object")
        for attempt in range(_PATCH_ATTEMPTS):
            record = self._record(resource, namespace, name)
            if record is None:
                raise _not_found(resource, name)
            current = decode(record.value, record.mod_revision)
            self.strategy(resource).decorate(current)
            view = transform(current) if transform else current
            try:
                if patch_type == "json":
                    patched = patch.json_patch(view, document)
                elif patch_type == "merge":
                    patched = patch.json_merge_patch(view, document)
                else:
                    patched = patch.strategic_merge_patch(view, document, kind=view.get("kind", resource.kind))
            except patch.PatchError as exc:
                if exc.code == 400:
                    raise status.bad_request(str(exc)) from None
                if exc.code == 413:
                    raise status.entity_too_large(str(exc)) from None
                raise status.invalid(view.get("kind", resource.kind), name,
                                     [FieldError.invalid("patch", "", str(exc))], group=resource.group) from None
            if not isinstance(patched, dict):
                raise status.bad_request("the patch did not produce an object")
            wanted = (patched.get("metadata") or {}).get("resourceVersion") if isinstance(
                patched.get("metadata"), dict) else None
            if wanted and wanted != str(record.mod_revision):
                raise status.conflict(resource.plural, name, status.STALE_OBJECT, group=resource.group)
            new = apply_back(current, patched) if apply_back else patched
            self._check_identity(resource, namespace, new, name=name)
            try:
                return self._write(resource, namespace, record, new, subresource=subresource, dry_run=dry_run,
                                   manager=manager, fields_subresource=fields_subresource)
            except APIError as exc:
                pinned = isinstance(document, dict) and (document.get("metadata") or {}).get("resourceVersion")
                if exc.code != 409 or exc.reason != "Conflict" or pinned or attempt == _PATCH_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def apply(self, resource: Resource, namespace: str, name: str, config: Any, *, manager: str, force: bool,
              subresource: str = "", dry_run: bool = False) -> tuple[dict[str, Any], bool]:
        """Server-side apply of `config` (upstream's applyPatcher): returns (object, created). An object that
        does not exist is created from the configuration; a lost race is retried like a patch."""
        if not isinstance(config, dict):
            raise status.bad_request("the apply configuration must be an object")
        _check_metadata_shape(config)
        api_version, kind = config.get("apiVersion"), config.get("kind")
        if (api_version, kind) != (resource.api_version, resource.kind):
            group_version = api_version if isinstance(api_version, str) and "/" in api_version else (
                f"/{api_version or ''}")
            raise status.bad_request(f"invalid object type: {group_version}, Kind={kind or ''}")
        ctx = self._fields(resource, subresource)
        for attempt in range(_PATCH_ATTEMPTS):
            record = self._record(resource, namespace, name)
            current = decode(record.value, record.mod_revision) if record is not None else None
            if current is None and subresource:
                raise _not_found(resource, name)
            if current is not None and resource.custom:  # at the version asked for, with its defaults
                self.strategy(resource).decorate(current)
            try:
                new = managedfields.apply(current, config, ctx, manager=manager, force=force, now=self.clock())
            except managedfields.ApplyConflict as exc:
                raise APIError(409, "Conflict", exc.message, details={"causes": exc.causes()}) from None
            except managedfields.ApplyError as exc:
                if exc.code == 400:
                    raise status.bad_request(str(exc)) from None
                raise APIError(exc.code, "", str(exc)) from None
            if record is None:
                try:
                    return self.create(resource, namespace, {**new, "metadata": {**new["metadata"], "name": name}},
                                       dry_run=dry_run), True
                except APIError as exc:
                    if exc.code != 409 or exc.reason != "AlreadyExists" or attempt == _PATCH_ATTEMPTS - 1:
                        raise
                    continue
            wanted = (config.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != str(record.mod_revision):
                raise status.conflict(resource.plural, name, status.STALE_OBJECT, group=resource.group)
            self._check_identity(resource, namespace, new, name=name)
            try:
                return self._write(resource, namespace, record, new, subresource=subresource, dry_run=dry_run), False
            except APIError as exc:
                if exc.code != 409 or exc.reason != "Conflict" or wanted or attempt == _PATCH_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _fields(resource: Resource, subresource: str = "") -> managedfields.Context:
        """What field ownership needs of a resource: its schema and the fields its strategy resets (upstream
        GetResetFields: status on the main resource of a kind with /status, spec on /status)."""
        schema = fieldschema.schema()
        reset: frozenset[tuple[str, ...]] = frozenset()
        if subresource == "status":
            reset = frozenset({("f:spec",)})
        elif not subresource and "status" in resource.subresources:
            reset = frozenset({("f:status",)})
        return managedfields.Context(schema, schema.root(resource.api_version, resource.kind), resource.api_version,
                                     subresource, reset)

    def _write(self, resource: Resource, namespace: str, record: Record, obj: dict[str, Any], *,
               subresource: str, dry_run: bool, manager: str | None = None,
               fields_subresource: str = "") -> dict[str, Any]:
        """Turn a full new object into a compare-and-swap update of `record`; `manager` (None: the object
        carries its managedFields already, or the write is not tracked) is recorded as an Update."""
        fieldvalidation.prune_written(obj)
        old = decode(record.value, record.mod_revision)
        name = old["metadata"]["name"]
        strategy = self.strategy(resource)
        if subresource:
            new = strategy.prepare_for_subresource_update(subresource, obj, old)
            applied = (obj.get("metadata") or {}).get("managedFields")
            if manager is None and applied is not None:  # an apply to the subresource computed them
                new["metadata"]["managedFields"] = applied
            elif manager is not None:
                new = managedfields.update(old, new, self._fields(resource, subresource), manager=manager,
                                           now=self.clock())
        else:
            new = obj
            strategy.defaults(new)
            if manager is not None:
                new = managedfields.update(old, new, self._fields(resource, fields_subresource),
                                           manager=manager, now=self.clock())
        attributes = Attributes(Operation.UPDATE, resource, namespace, name, new, old, subresource=subresource,
                                dry_run=dry_run)
        with self.admission.admit(attributes, prepare=None if subresource else (
                lambda: strategy.prepare_for_update(new, old))):
            return self._write_admitted(resource, namespace, record, strategy, new, old, subresource=subresource,
                                        dry_run=dry_run)

    def _write_admitted(self, resource: Resource, namespace: str, record: Record, strategy: Strategy,
                        new: dict[str, Any], old: dict[str, Any], *, subresource: str,
                        dry_run: bool) -> dict[str, Any]:
        """The storage write of an admitted update."""
        name = old["metadata"]["name"]
        if encode(new) == encode(old) and not record.stale:  # a stale value is re-encrypted even so
            strategy.decorate(old)
            return old
        rollback: Rollback = nothing_to_undo
        if not subresource and not dry_run:
            rollback = strategy.begin_write(new, old)
        if dry_run:
            new["metadata"]["resourceVersion"] = str(record.mod_revision)
            strategy.decorate(new)
            return new
        key = storage_key(resource, namespace, name)
        removed_now = strategy.ready_to_remove(new)
        try:
            if removed_now:
                removed = self.storage.delete(key, expected_revision=record.mod_revision)
                result = decode(removed.value, removed.mod_revision)
            else:
                updated = self.storage.update(key, encode_bounded(new), expected_revision=record.mod_revision)
                result = decode(updated.value, updated.mod_revision)
        except (Conflict, KeyNotFound):
            rollback()
            raise status.conflict(resource.plural, name, status.STALE_OBJECT, group=resource.group) from None
        except BaseException:
            rollback()
            raise
        strategy.after_write(old, None if removed_now else new)
        strategy.decorate(result)
        return result

    # -- deleting -----------------------------------------------------------------------------------

    def delete(self, resource: Resource, namespace: str, name: str,
               options: DeleteOptions) -> tuple[dict[str, Any], bool]:
        """Returns (object, removed now). Not removed now means marked deleting: graceful pod, finalizers,
        or a namespace waiting for its controller."""
        with self.admission.admit(Attributes(Operation.DELETE, resource, namespace, name, dry_run=options.dry_run)):
            return self._delete_admitted(resource, namespace, name, options)

    def _delete_admitted(self, resource: Resource, namespace: str, name: str,
                         options: DeleteOptions) -> tuple[dict[str, Any], bool]:
        for _ in range(_PATCH_ATTEMPTS):
            record = self._record(resource, namespace, name)
            if record is None:
                raise _not_found(resource, name)
            obj = decode(record.value, record.mod_revision)
            metadata = obj["metadata"]
            if options.precondition_uid and options.precondition_uid != metadata.get("uid"):
                raise status.conflict(resource.plural, name, f"Precondition failed: UID in precondition: "
                                      f"{options.precondition_uid}, UID in object meta: {metadata.get('uid')}",
                                      group=resource.group)
            if options.precondition_resource_version and options.precondition_resource_version != str(
                    record.mod_revision):
                raise status.conflict(resource.plural, name, f"Precondition failed: ResourceVersion in "
                                      f"precondition: {options.precondition_resource_version}, ResourceVersion in "
                                      f"object meta: {record.mod_revision}", group=resource.group)
            try:
                return self._delete_once(resource, namespace, record, obj, options)
            except (Conflict, KeyNotFound):
                continue  # someone wrote meanwhile: decide again on the new state
        raise status.conflict(resource.plural, name, status.STALE_OBJECT, group=resource.group)

    def _delete_once(self, resource: Resource, namespace: str, record: Record, obj: dict[str, Any],
                     options: DeleteOptions) -> tuple[dict[str, Any], bool]:
        metadata = obj["metadata"]
        key = storage_key(resource, namespace, metadata["name"])
        new = deep_copy(obj)
        strategy = self.strategy(resource)
        finalizers = gc_finalizers(metadata.get("finalizers") or [], policy=options.propagation_policy,
                                   default_orphan=strategy.orphans_by_default)
        if finalizers:
            new["metadata"]["finalizers"] = list(finalizers)
        else:
            new["metadata"].pop("finalizers", None)
        grace = strategy.delete_grace_seconds(obj, options.grace_period_seconds)
        strategy.prepare_for_delete(new)
        mark_deleting(new, now=self.clock(), grace_seconds=grace)
        unchanged = encode(new) == encode(obj)
        strategy.decorate(obj)
        if not strategy.ready_to_remove(new):
            if options.dry_run or unchanged:
                return obj, False
            updated = self.storage.update(key, encode_bounded(new), expected_revision=record.mod_revision)
            marked = decode(updated.value, updated.mod_revision)
            strategy.decorate(marked)
            return marked, False
        if options.dry_run:
            return obj, True
        removed = self.storage.delete(key, expected_revision=record.mod_revision)
        strategy.after_write(obj, None)
        gone = decode(removed.value, removed.mod_revision)
        strategy.decorate(gone)
        return gone, True

    def delete_collection(self, resource: Resource, namespace: str, flt: Filter,
                          options: DeleteOptions) -> builtins.list[dict[str, Any]]:
        deleted = []
        for obj in self.list(resource, namespace, flt).items:
            try:
                deleted.append(self.delete(resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"],
                                           options)[0])
            except APIError as exc:
                if exc.code != 404:
                    raise
        return deleted
