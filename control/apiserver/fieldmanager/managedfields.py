"""metadata.managedFields: who owns which fields, kept on every write, and server-side apply (upstream:
k8s.io/apimachinery/pkg/util/managedfields/internal — fieldmanager.go, structuredmerge.go, stripmeta.go,
managedfieldsupdater.go, buildmanagerinfo.go, skipnonapplied.go, lastappliedmanager.go,
lastappliedupdater.go, conflict.go, managedfields.go — over sigs.k8s.io/structured-merge-diff's merge/update.go).

Pure functions over wire objects; the registry calls them with the clock's `now`.

- An *Update* (create, update, patch, a subresource write) records what the write changed: the fields it added
  or modified (fieldset.compare of the stored object, or of the kind's empty object for a create, with the
  new one) are merged into the entry of that manager, operation Update, apiVersion and subresource, whose time
  moves to now; every other manager loses those fields and the fields the write removed; a manager left
  owning nothing is dropped. An object without managedFields that already exists is not tracked by an Update
  (upstream skipNonAppliedManager): only a create or an apply starts tracking.
- An *Apply* merges the applied configuration over the live object (fieldset.merge); the applier's entry
  becomes exactly the configuration's field set; fields the applier set last time, no longer sets and nobody
  else owns are removed from the object; fields another manager owns and the merge changes are conflicts
  (409, `ApplyConflict`) unless `force`, which moves them to the applier. A first apply to an object without
  managedFields gives everything already there to "before-first-apply". For the manager "kubectl" (what
  `kubectl apply --server-side` sends), conflicts only over fields in the client-side apply annotation
  `kubectl.kubernetes.io/last-applied-configuration` are taken over, and that annotation, when present, is
  rewritten to the new configuration, so switching from client-side to server-side apply never conflicts.
- Fields never owned (stripmeta.go): apiVersion, kind, metadata itself and its name, namespace,
  creationTimestamp, selfLink, uid, clusterName, generation, managedFields, resourceVersion. Reset fields
  (upstream's GetResetFields): status for a kind with a status subresource, spec for its /status.
- Client-sent managedFields on a create/update/patch replace the stored ones when they decode (that is how a
  client edits them); `[]` or `[{}]` clears them; ones that do not decode are ignored for the stored ones.
  An apply configuration must not carry managedFields (400, upstream's message).

Departures: no cap of ten Update managers ("ancient-changes"); entries of another apiVersion of the same kind
are compared without conversion (every served kind has one version).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from control.api.typed import TypedObject
from control.apiserver.fieldmanager import fieldset
from control.apiserver.fieldmanager.fieldschema import Schema, Type
from control.apiserver.fieldmanager.fieldset import FieldSetError, Path

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY = "before-first-apply"
KUBECTL_APPLY = "kubectl"
MAX_MANAGER_LENGTH = 128  # upstream validation.FieldManagerMaxLength
STRIPPED: frozenset[Path] = frozenset({
    ("f:apiVersion",), ("f:kind",), ("f:metadata",),
    *(("f:metadata", "f:" + name) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                               "clusterName", "generation", "managedFields", "resourceVersion")),
})


@dataclass(frozen=True, slots=True, order=True)
class Manager:
    """A manager's identity (upstream BuildManagerIdentifier): an Apply entry is one per manager whatever
    its apiVersion, an Update entry one per manager, apiVersion and subresource."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def identifier(self) -> str:
        """The JSON upstream keys managers by (field order of metav1.ManagedFieldsEntry, empty ones left out)."""
        entry = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
                 "subresource": self.subresource}
        return json.dumps({k: v for k, v in entry.items() if v}, separators=(",", ":"))

    def describe(self) -> str:
        """upstream printManager: `"mgr"`, `"mgr" with subresource "status"`, `... using apps/v1`."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


@dataclass(slots=True)
class Owned:
    fields: set[Path]
    api_version: str
    time: str | None = None


Managed = dict[Manager, Owned]


@dataclass(frozen=True, slots=True)
class Conflict:
    manager: Manager
    path: Path


class ApplyConflict(Exception):
    """An apply would change fields other managers own (upstream merge.Conflicts → NewConflictError)."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        self.conflicts = sorted(conflicts, key=lambda c: (c.manager.identifier(), c.path))
        super().__init__(self.message)

    @property
    def message(self) -> str:
        conflicts = self.conflicts
        if len(conflicts) == 1:
            only = conflicts[0]
            return (f"Apply failed with 1 conflict: conflict with {only.manager.describe()}: "
                    f"{fieldset.path_string(only.path)}")
        lines = []
        for manager in sorted({c.manager for c in conflicts}, key=Manager.identifier):
            lines.append(f"conflicts with {manager.describe()}:")
            lines += [f"- {fieldset.path_string(c.path)}" for c in conflicts if c.manager == manager]
        return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        return [{"reason": "FieldManagerConflict", "message": f"conflict with {c.manager.describe()}",
                 "field": fieldset.path_string(c.path)} for c in self.conflicts]


class ApplyError(ValueError):
    """An apply request the server refuses: `code` 400 for a malformed request, 500 (upstream answers a
    configuration that does not fit the kind's schema with a plain error, which becomes a 500 Status with
    no reason) for "failed to create typed patch object"."""

    def __init__(self, message: str, *, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


# --- encoding -------------------------------------------------------------------------------------

def decode(entries: Any) -> Managed:
    """managedFields as stored; raises ValueError when they do not decode (upstream DecodeManagedFields)."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    managed: Managed = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError("a managedFields entry must be an object")
        if entry.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType: {entry.get('fieldsType')!r}")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise ValueError(f"invalid operation: {operation!r}")
        strings = [entry.get(k, "") for k in ("manager", "apiVersion", "subresource")]
        if not all(isinstance(s, str) for s in strings) or not isinstance(entry.get("time", ""), str | None):
            raise ValueError("managedFields entry fields must be strings")
        name, api_version, subresource = strings
        key = Manager(name, operation, "" if operation == "Apply" else api_version, subresource)
        if key in managed:
            raise ValueError(f"duplicate entries for manager {key.identifier()}")
        managed[key] = Owned(fieldset.from_fields_v1(entry.get("fieldsV1") or {}), api_version, entry.get("time"))
    return managed


def encode(managed: Managed) -> list[dict[str, Any]]:
    """Entries in upstream's order: Apply before Update, then by time, manager, apiVersion, subresource."""
    entries = []
    for key, owned in managed.items():
        entry: dict[str, Any] = {"manager": key.manager, "operation": key.operation, "apiVersion": owned.api_version}
        if owned.time:
            entry["time"] = owned.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = fieldset.to_fields_v1(owned.fields)
        if key.subresource:
            entry["subresource"] = key.subresource
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


def _set_entries(obj: dict[str, Any], managed: Managed) -> None:
    metadata = obj.setdefault("metadata", {})
    entries = encode(managed)
    if entries:
        metadata["managedFields"] = entries
    else:
        metadata.pop("managedFields", None)


def incoming(live: dict[str, Any] | None, new: dict[str, Any], *, subresource: str) -> Managed:
    """upstream decodeLiveOrNew: a subresource write keeps the stored entries; `[]` or `[{}]` sent by the
    client clears them; entries sent that decode are taken, else the stored ones."""
    live_entries = ((live or {}).get("metadata") or {}).get("managedFields")

    def stored() -> Managed:
        try:
            return decode(live_entries)
        except (ValueError, FieldSetError):
            return {}

    if subresource:
        return stored()
    sent = (new.get("metadata") or {}).get("managedFields")
    if sent == [] or sent == [{}]:
        return {}
    try:
        managed = decode(sent)
    except (ValueError, FieldSetError):
        return stored()
    return managed or stored()


# --- the two operations ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Context:
    """What both operations need to know about the object's kind and the request."""

    schema: Schema
    type: Type
    api_version: str
    subresource: str = ""
    reset: frozenset[Path] = field(default_factory=frozenset)


def _without(paths: set[Path], removed: set[Path] | frozenset[Path]) -> set[Path]:
    """upstream RecursiveDifference: drop every path at or below one of `removed`."""
    return {p for p in paths if not fieldset.has_prefix(p, set(removed))}


def _updated_others(managed: Managed, comparison: fieldset.Comparison, ctx: Context, *, me: Manager | None,
                    force: bool) -> Managed:
    """merge/update.go Updater.update: other managers lose the fields this write removed and, forced, the
    fields it changed that they owned; conflicts are raised when not forced. Managers left empty go."""
    changed = _without(comparison.changed(), ctx.reset)
    removed = _without(comparison.removed, ctx.reset)
    conflicts = [Conflict(key, path) for key, owned in managed.items() if key != me
                 for path in sorted(owned.fields & changed)]
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    result: Managed = {}
    for key, owned in managed.items():
        fields = owned.fields if key == me else owned.fields - changed - removed
        if fields:
            result[key] = Owned(fields, owned.api_version, owned.time)
    return result


def update(live: dict[str, Any] | None, new: dict[str, Any], ctx: Context, *, manager: str, now: datetime
           ) -> dict[str, Any]:
    """`new` (about to be stored in place of `live`, None for a create) with its managedFields for an Update
    by `manager`. A value that has no field set under the kind's schema clears them (UpdateNoErrors)."""
    result = copy.copy(new)
    result["metadata"] = dict(new.get("metadata") or {})
    managed = incoming(live, new, subresource=ctx.subresource)
    if not managed and live is not None and TypedObject(live).metadata.uid:
        result["metadata"].pop("managedFields", None)  # skipNonAppliedManager: not tracked until an apply
        return result
    base = live if live is not None else ctx.schema.zero(*_gvk(new, ctx))
    try:
        comparison = fieldset.compare(ctx.schema, ctx.type, _strip(base), _strip(new))
    except FieldSetError:
        result["metadata"].pop("managedFields", None)
        return result
    others = _updated_others(managed, comparison, ctx, me=None, force=True)
    mine = _without(comparison.changed(), ctx.reset) - STRIPPED
    key = Manager(manager or "unknown", "Update", ctx.api_version, ctx.subresource)  # buildmanagerinfo.go
    if mine:
        previous = others.get(key)
        others[key] = Owned(mine | (previous.fields if previous else set()), ctx.api_version, _time(now))
    _set_entries(result, others)
    return result


def apply(live: dict[str, Any] | None, config: dict[str, Any], ctx: Context, *, manager: str, force: bool,
          now: datetime) -> dict[str, Any]:
    """The object an apply of `config` by `manager` makes of `live` (None: the object does not exist yet),
    with its managedFields; `live` itself when nothing changes. Raises ApplyConflict and ApplyError."""
    metadata = config.get("metadata")
    if isinstance(metadata, dict) and metadata.get("managedFields") is not None:
        raise ApplyError("metadata.managedFields must be nil")
    base = live if live is not None else {}
    try:
        managed = decode((base.get("metadata") or {}).get("managedFields"))
    except (ValueError, FieldSetError) as exc:
        raise ApplyError(f"failed to decode managed fields: {exc}") from None
    try:
        if not managed and live is not None:  # skipNonAppliedManager: what is there belongs to someone
            before = fieldset.compare(ctx.schema, ctx.type, _strip(ctx.schema.zero(*_gvk(config, ctx))), _strip(live))
            owned = _without(before.changed(), ctx.reset) - STRIPPED
            if owned:
                managed[Manager(BEFORE_FIRST_APPLY, "Update", ctx.api_version)] = Owned(owned, ctx.api_version,
                                                                                       _time(now))
        try:
            new, result = _apply(base, config, managed, ctx, manager=manager, force=force, now=now)
        except ApplyConflict as conflict:
            allowed = _last_applied_fields(live, ctx) if manager == KUBECTL_APPLY else set()
            left = [c for c in conflict.conflicts if c.path not in allowed]
            if left or not allowed:
                raise ApplyConflict(left) from None
            new, result = _apply(base, config, managed, ctx, manager=manager, force=True, now=now)
    except FieldSetError as exc:
        raise ApplyError(f"failed to create typed patch object ({_gvknn(config, ctx)}): {exc}", code=500) from None
    if manager == KUBECTL_APPLY and live is not None and LAST_APPLIED in TypedObject(live).metadata.annotations:
        new.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = _last_applied_value(config)
    _set_entries(new, result)
    if live is not None and new == live:
        return live
    return new


def _apply(live: dict[str, Any], config: dict[str, Any], managed: Managed, ctx: Context, *, manager: str,
           force: bool, now: datetime) -> tuple[dict[str, Any], Managed]:
    """merge/update.go Updater.Apply plus the manager bookkeeping around it."""
    key = Manager(manager, "Apply", "", ctx.subresource)
    stripped_live = _strip(live)
    applied = _without(fieldset.to_field_set(ctx.schema, ctx.type, _strip(config), strict=True),
                       ctx.reset) - STRIPPED
    merged = fieldset.merge(ctx.schema, ctx.type, stripped_live, _strip(config))
    previous = managed.get(key)
    managers = {k: Owned(set(v.fields), v.api_version, v.time) for k, v in managed.items()}
    managers[key] = Owned(applied, ctx.api_version, previous.time if previous else None)
    if previous is not None:
        merged = _prune(merged, previous.fields - applied, managers, ctx)
    comparison = fieldset.compare(ctx.schema, ctx.type, stripped_live, merged)
    result = _updated_others(managers, comparison, ctx, me=key, force=force)
    if not applied:
        result.pop(key, None)
    elif merged != stripped_live:  # managedfieldsupdater.go: the time moves only when the object changed
        result[key].time = _time(now)
    return _restore(live, merged), result


def _prune(merged: dict[str, Any], dropped: set[Path], managers: Managed, ctx: Context) -> dict[str, Any]:
    """Updater.prune: what the applier set last time and no longer sets goes, unless someone (the applier
    included, through a field below it) still owns it."""
    owned = set().union(*(o.fields for o in managers.values()))
    ancestors = {p[:i] for p in owned for i in range(1, len(p))}
    remove = {p for p in dropped if p not in owned and p not in ancestors}
    if not remove:
        return merged
    pruned: dict[str, Any] = fieldset.remove_items(ctx.schema, ctx.type, merged, remove)
    return pruned


def _last_applied_fields(live: dict[str, Any] | None, ctx: Context) -> set[Path]:
    """The fields of the client-side apply annotation (lastappliedmanager.go); empty without one."""
    annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    try:
        last = json.loads(annotations.get(LAST_APPLIED) or "")
    except ValueError:
        return set()
    if not isinstance(last, dict):
        return set()
    try:
        return fieldset.to_field_set(ctx.schema, ctx.type, _strip(last))
    except FieldSetError:
        return set()


def _last_applied_value(config: dict[str, Any]) -> str:
    """lastappliedupdater.go buildLastApplied: the configuration without the annotation itself."""
    copied = copy.deepcopy(config)
    annotations = (copied.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            copied["metadata"].pop("annotations")
    return json.dumps(copied, separators=(",", ":"))


# --- helpers --------------------------------------------------------------------------------------

def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as field sets see it: managedFields are never compared or merged."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return obj
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def _restore(live: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    result = dict(merged)
    result["metadata"] = dict(merged.get("metadata") or {})
    entries = (live.get("metadata") or {}).get("managedFields")
    if entries is not None:
        result["metadata"]["managedFields"] = entries
    return result


def _gvknn(config: dict[str, Any], ctx: Context) -> str:
    """upstream objectGVKNN: `namespace/name; group/version, Kind=kind` of the configuration."""
    metadata = config.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    group, _, version = ctx.api_version.rpartition("/")
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}; {group}/{version}, Kind={config.get('kind')}"


def _gvk(obj: dict[str, Any], ctx: Context) -> tuple[str, str]:
    return ctx.api_version, str(obj.get("kind") or "")


def _time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def manager_from_user_agent(user_agent: str) -> str:
    """upstream prefixFromUserAgent: the user agent up to its first `/`, printable characters only, at most
    128 bytes (kubectl → "kubectl", the Python client → "OpenAPI-Generator")."""
    out, size = [], 0
    for char in user_agent.split("/")[0]:
        if not char.isprintable():
            continue
        size += len(char.encode())
        if size > MAX_MANAGER_LENGTH:
            break
        out.append(char)
    return "".join(out)
