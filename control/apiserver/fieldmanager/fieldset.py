"""Field sets over objects in wire JSON, as server-side apply computes them (upstream: sigs.k8s.io/
structured-merge-diff — fieldpath/ for paths, sets and their FieldsV1 encoding, typed/tofieldset.go,
typed/compare.go, typed/merge.go and typed/remove.go for what a value's fields are, how two values differ,
how an applied configuration merges over the live object and how fields are removed).

A path is a tuple of path elements kept in their FieldsV1 spelling, so a set is a plain Python set and its
encoding is a walk: `f:<field>` (a struct field or map key), `k:<json>` (an element of a list keyed by some of
its fields: the key fields and their values, compact JSON with sorted keys), `v:<json>` (an element of a
set), `i:<n>` (read, never produced: lists without keys are atomic). A set holds only *members*; a path with
members below it but not itself a member is implied, as in upstream's Set.

What a value's field set is (ToFieldSet): every scalar and every atomic struct, map or list is a member, so
is every list element of a set or keyed list, every map key a struct does not declare, and a declared field
whose value is null or an empty object; a struct field with fields inside is only implied. Comparing two
values (Compare): a leaf whose value differs is modified; a path present on one side only is added or
removed, together with everything below it (which is why an Update entry has `.` markers where a whole map or
list element appeared).

The type of every node comes from fieldschema.py. An element of a keyed list that lacks a key field without a
default, and two elements with the same key in an applied configuration, are `FieldSetError`s (upstream's
messages), which the server answers with a 400 for apply and answers an ordinary write by dropping the
object's managedFields as upstream's UpdateNoErrors does.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from control.apiserver.fieldmanager.fieldschema import DEDUCED, KEY_DEFAULTS, SCALAR, Schema, Type, deduced_child

Path = tuple[str, ...]
_MISSING: Any = object()
_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


class FieldSetError(ValueError):
    """A value that has no field set under its schema, or a FieldsV1 document that does not parse."""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- one value's shape under its type -------------------------------------------------------------

def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _is_leaf(t: Type, lhs: Any, rhs: Any = _MISSING) -> bool:
    """Whether a node is compared and owned whole: scalars, atomic structs/maps/lists, deduced lists, a node
    whose two sides are not the same kind of value, and a container empty (or absent) on both sides."""
    if t.shape == "scalar" or t.atomic or (t.shape == "list" and t.list_type == "atomic"):
        return True
    values = [v for v in (lhs, rhs) if v is not _MISSING and v is not None]
    if not values:
        return True
    container = "list" if t.shape == "list" else "map"
    if t.shape == "deduced":
        container = _kind(values[0])
        if container != "map":
            return True
    if any(_kind(v) != container for v in values):
        return True
    return all(len(v) == 0 for v in values)


def _child(schema: Schema, t: Type, key: str, value: Any) -> tuple[Type, bool]:
    child, declared = schema.field(t, key)
    if child is DEDUCED:
        return deduced_child(value), declared
    return child, declared


def item_element(schema: Schema, t: Type, item: Any) -> str:
    """The path element of one element of a set or keyed list (upstream listItemToPathElement)."""
    if t.list_type == "set":
        return "v:" + _json(item)
    if not isinstance(item, dict):
        raise FieldSetError(f"associative list with keys has an element that is not a map: {_json(item)}")
    keys = {}
    for key in t.keys:
        if key in item:
            keys[key] = item[key]
        elif key in KEY_DEFAULTS:
            keys[key] = KEY_DEFAULTS[key]
        else:
            raise FieldSetError(f"associative list with keys has an element that omits key field {json.dumps(key)} "
                                "(and doesn't have default value)")
    return "k:" + _json(keys)


def _items(schema: Schema, t: Type, values: Any, *, strict: bool = False, path: Path = ()) -> dict[str, Any]:
    """A set's or keyed list's elements by path element; of duplicates the first is kept, or with `strict`
    (an applied configuration) they are refused with upstream's validation message."""
    items: dict[str, Any] = {}
    for index, item in enumerate(values or []):
        try:
            pe = item_element(schema, t, item)
        except FieldSetError as exc:
            raise FieldSetError(_at(path, f"element {index}: {exc}")) from None
        if strict and pe in items:
            raise FieldSetError(_at(path, f"duplicate entries for key {path_string((pe,))}"))
        items.setdefault(pe, item)
    return items


def _at(path: Path, message: str) -> str:
    """typed.ValidationError: the path, then the message."""
    return f"{path_string(path)}: {message}" if path else message


# --- ToFieldSet -----------------------------------------------------------------------------------

def to_field_set(schema: Schema, t: Type, value: Any, *, strict: bool = False) -> set[Path]:
    """The fields `value` sets: what an applier of `value` owns. With `strict` (an applied configuration)
    two elements of a list with the same key and a field its struct does not declare are errors, as
    upstream's typed conversion of the configuration makes them."""
    out: set[Path] = set()
    _to_set(schema, t, value, (), out, strict)
    return out


_TYPE_META = frozenset({"apiVersion", "kind"})  # declared on every kind's root, absent from its proto message


def _to_set(schema: Schema, t: Type, value: Any, path: Path, out: set[Path], strict: bool = False) -> None:
    """typed/tofieldset.go: an empty non-atomic map or list is not a member of itself (its parent field adds
    it when it is an empty object or null)."""
    if value is None:
        return
    container = "list" if t.shape == "list" else "map"
    if (t.shape == "scalar" or t.atomic or (t.shape == "list" and t.list_type == "atomic")
            or (t.shape == "deduced" and _kind(value) != "map") or (t.shape != "deduced"
                                                                    and _kind(value) != container)):
        if path:
            out.add(path)
        return
    if isinstance(value, list):
        element = schema.element(t)
        for pe, item in _items(schema, t, value, strict=strict, path=path).items():
            _to_set(schema, element, item, (*path, pe), out, strict)
            out.add((*path, pe))
        return
    for key, item in value.items():
        child, declared = _child(schema, t, key, item)
        if strict and not declared and t.shape == "struct" and not (not path and key in _TYPE_META):
            raise FieldSetError(_at((*path, "f:" + key), "field not declared in schema"))
        _to_set(schema, child, item, (*path, "f:" + key), out, strict)
        if item is None or item == {} or not declared:
            out.add((*path, "f:" + key))


# --- Compare --------------------------------------------------------------------------------------

@dataclass
class Comparison:
    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def changed(self) -> set[Path]:
        return self.added | self.modified


def compare(schema: Schema, t: Type, lhs: Any, rhs: Any) -> Comparison:
    """How `rhs` differs from `lhs` (upstream TypedValue.Compare)."""
    out = Comparison()
    _compare(schema, t, lhs, rhs, (), out)
    return out


def _compare(schema: Schema, t: Type, lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if path and lhs is _MISSING:
        _added_below(schema, t, rhs, path, out)
        return
    if path and rhs is _MISSING:
        out.removed.add(path)
        out.removed |= {(*path, *p) for p in to_field_set(schema, t, lhs)}
        return
    if _is_leaf(t, lhs, rhs):
        if path and lhs != rhs:
            out.modified.add(path)
        return
    if t.shape == "list":
        element = schema.element(t)
        left, right = _items(schema, t, lhs), _items(schema, t, rhs)
        for pe in {**left, **right}:
            _compare(schema, element, left.get(pe, _MISSING), right.get(pe, _MISSING), (*path, pe), out)
        return
    lhs, rhs = lhs or {}, rhs or {}  # a null map compares as an empty one
    for key in {**lhs, **rhs}:
        sample = rhs.get(key, lhs.get(key))
        child, _ = _child(schema, t, key, sample)
        _compare(schema, child, lhs.get(key, _MISSING), rhs.get(key, _MISSING), (*path, "f:" + key), out)


def _added_below(schema: Schema, t: Type, value: Any, path: Path, out: Comparison) -> None:
    """Everything a new node brings is added: the node itself and every path under it."""
    out.added.add(path)
    if _is_leaf(t, value):
        return
    if isinstance(value, list):
        element = schema.element(t)
        for pe, item in _items(schema, t, value).items():
            _added_below(schema, element, item, (*path, pe), out)
        return
    for key, item in value.items():
        _added_below(schema, _child(schema, t, key, item)[0], item, (*path, "f:" + key), out)


# --- Merge ----------------------------------------------------------------------------------------

def merge(schema: Schema, t: Type, live: Any, config: Any) -> Any:
    """The applied configuration `config` merged over `live` (upstream TypedValue.Merge): leaves and atomic
    nodes are the configuration's, maps merge key by key, sets and keyed lists element by element. A null in
    the configuration removes the field (the applier still owns it)."""
    return _merge(schema, t, live, config)


def _merge(schema: Schema, t: Type, lhs: Any, rhs: Any) -> Any:
    if rhs is _MISSING:
        return lhs
    if lhs is _MISSING or _is_leaf(t, lhs, rhs):
        return copy.deepcopy(rhs)
    if t.shape == "list":
        return _merge_list(schema, t, lhs or [], rhs)
    result = dict(lhs or {})
    lhs = lhs or {}
    for key, value in rhs.items():
        if value is None:
            result.pop(key, None)
            continue
        child, _ = _child(schema, t, key, value)
        result[key] = _merge(schema, child, lhs.get(key, _MISSING), value)
    return result


def _merge_list(schema: Schema, t: Type, lhs: list[Any], rhs: list[Any]) -> list[Any]:
    """typed/merge.go visitListItems: the live order, with the configuration's elements in the
    configuration's order, each shared element merged where the configuration puts it."""
    element = schema.element(t)
    left = [(item_element(schema, t, item), item) for item in lhs]
    right = [(item_element(schema, t, item), item) for item in rhs]
    right_items = _items(schema, t, rhs, strict=True)
    left_items = dict(reversed(left))
    shared = [pe for pe, _ in right if pe in left_items]
    out: list[Any] = []
    merged: set[str] = set()
    li = ri = 0
    next_shared = shared.pop(0) if shared else None
    while li < len(left) or ri < len(right):
        if li < len(left) and ri < len(right):
            pe = left[li][0]
            if pe == right[ri][0]:
                merged.add(pe)
                out.append(_merge(schema, element, left_items[pe], right_items[pe]))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in right_items and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(left):
            pe, item = left[li]
            if pe not in right_items:
                out.append(item)
                li += 1
                continue
            if pe in merged:
                li += 1
        if ri < len(right):
            pe = right[ri][0]
            merged.add(pe)
            out.append(_merge(schema, element, left_items.get(pe, _MISSING), right_items[pe]))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


# --- RemoveItems ----------------------------------------------------------------------------------

def remove_items(schema: Schema, t: Type, value: Any, paths: set[Path]) -> Any:
    """A copy of `value` without the nodes at `paths` (each with everything below it)."""
    prefixes = {p[:i] for p in paths for i in range(len(p))}
    return _remove(schema, t, copy.deepcopy(value), (), paths, prefixes)


def _remove(schema: Schema, t: Type, value: Any, path: Path, paths: set[Path], prefixes: set[Path]) -> Any:
    if path not in prefixes or _is_leaf(t, value):
        return value
    if isinstance(value, list):
        element = schema.element(t)
        kept = []
        for item in value:
            item_path = (*path, item_element(schema, t, item))
            if item_path not in paths:
                kept.append(_remove(schema, element, item, item_path, paths, prefixes))
        return kept
    for key in list(value):
        child_path = (*path, "f:" + key)
        if child_path in paths:
            del value[key]
        else:
            value[key] = _remove(schema, _child(schema, t, key, value[key])[0], value[key], child_path, paths,
                                 prefixes)
    return value


# --- FieldsV1 -------------------------------------------------------------------------------------

def _sort_key(element: str) -> tuple[int, str]:
    return _ORDER.get(element[:1], 4), element


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The FieldsV1 trie of a set: a member with members below it gets a `.` entry."""
    tree: dict[str, Any] = {}
    members: set[Path] = set(paths)
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return _render(tree, (), members)


def _render(node: dict[str, Any], path: Path, members: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if path and path in members and node:
        out["."] = {}
    for element in sorted(node, key=_sort_key):
        out[element] = _render(node[element], (*path, element), members)
    return out


def from_fields_v1(document: Any) -> set[Path]:
    """The set a FieldsV1 trie encodes (an empty object below an element: that path is a member)."""
    if not isinstance(document, dict):
        raise FieldSetError("FieldsV1 must be an object")
    out: set[Path] = set()
    _parse(document, (), out)
    return out


def _parse(node: dict[str, Any], path: Path, out: set[Path]) -> None:
    for element, child in node.items():
        if element == ".":
            if path:
                out.add(path)
            continue
        if element[:2] not in ("f:", "k:", "v:", "i:") or not isinstance(child, dict):
            raise FieldSetError(f"unexpected path element {element!r}")
        if element[:2] in ("k:", "v:"):
            try:
                json.loads(element[2:])
            except ValueError:
                raise FieldSetError(f"unparsable path element {element!r}") from None
        if child:
            _parse(child, (*path, element), out)
        else:
            out.add((*path, element))


# --- paths as upstream prints them -----------------------------------------------------------------

def _to_string(value: Any) -> str:
    """structured-merge-diff value.ToString: strings quoted as Go's %q does, numbers and booleans bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value) if isinstance(value, int | float) else _json(value)


def path_string(path: Path) -> str:
    """fieldpath.Path.String(): `.spec.containers[name="web"].image`, `[=value]` for a set element."""
    parts = []
    for element in path:
        kind, text = element[:1], element[2:]
        if kind == "f":
            parts.append("." + text)
        elif kind == "k":
            keys = json.loads(text)
            parts.append("[" + ",".join(f"{k}={_to_string(v)}" for k, v in sorted(keys.items())) + "]")
        elif kind == "v":
            parts.append(f"[={_to_string(json.loads(text))}]")
        else:
            parts.append(f"[{text}]")
    return "".join(parts)


def has_prefix(path: Path, prefixes: set[Path]) -> bool:
    """Whether `path` or one of its ancestors is in `prefixes` (upstream RecursiveDifference's test)."""
    return any(path[:i] in prefixes for i in range(len(path) + 1))


__all__ = ["SCALAR", "Comparison", "FieldSetError", "Path", "compare", "from_fields_v1", "has_prefix",
           "item_element", "merge", "path_string", "remove_items", "to_field_set", "to_fields_v1"]
