"""The informer's local cache: a thread-safe keyed store with secondary indices, and listers over it.

Upstream: client-go tools/cache/thread_safe_store.go (`threadSafeMap`: items, indexers, indices under one
lock), index.go (`Indexers`, `Indices`, `MetaNamespaceIndexFunc`), store.go (`MetaNamespaceKeyFunc`), and
the listers generated from listers/*. The same shape: "threadSafeMap{lock, items,
indexers, indices}", a generic key/value store (add, update, delete, list keys, list objects, get by key)
used by controllers as their cache so they read locally instead of asking the API server.

Keys are `namespace/name`, or `name` for cluster-scoped objects (`control.apimachinery.meta.key_of`).

Invariants (held under `_lock` at every return):
- `_items[key]` is the latest object stored under `key`.
- for every index name N with function f: `key in _indices[N][v]` iff `key in _items` and
  `v in f(_items[key])`; empty value sets are removed, so `_indices[N]` has no empty entries.

Returned objects are SHARED and READ-ONLY: the store hands out the very dicts it holds (as upstream does,
to avoid a deep copy per read). A caller that wants to change one must `meta.deep_copy` it first; writing
into a returned dict corrupts the cache for every other reader and can leave the indices stale.

Python has no reader-writer lock in the standard library; a plain Lock is used, since every critical
section is a few dictionary operations.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from control.api.typed.core import Pod
from control.api.typed.meta import TypedObject
from control.apimachinery import labels
from control.apimachinery.meta import key_of, namespace_of

IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
KeyFunc = Callable[[Mapping[str, Any]], str]

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "spec.nodeName"
OWNER_UID_INDEX = "ownerReferences.uid"


def index_by_namespace(obj: Mapping[str, Any]) -> list[str]:
    """The object's namespace; cluster-scoped objects are indexed under "" (MetaNamespaceIndexFunc)."""
    return [namespace_of(obj)]


def index_by_node_name(obj: Mapping[str, Any]) -> list[str]:
    """`spec.nodeName`; unscheduled pods are indexed under "" (so by_index(…, "") finds them)."""
    return [Pod(obj).spec.node_name]


def index_by_owner_uid(obj: Mapping[str, Any]) -> list[str]:
    """The uid of every owner reference: what the garbage collector and workload controllers look up."""
    return [ref.uid for ref in TypedObject(obj).metadata.owner_references if ref.uid]


STANDARD_INDEXERS: Mapping[str, IndexFunc] = {
    NAMESPACE_INDEX: index_by_namespace,
    NODE_NAME_INDEX: index_by_node_name,
    OWNER_UID_INDEX: index_by_owner_uid,
}


class Store:
    """Objects by key, plus one inverted index per indexer (index value → keys)."""

    def __init__(self, *, indexers: Mapping[str, IndexFunc] | None = None, key_func: KeyFunc = key_of) -> None:
        self._lock = threading.Lock()
        self._key_func = key_func
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        if indexers:
            self.add_indexers(indexers)

    def key_of(self, obj: Mapping[str, Any]) -> str:
        return self._key_func(obj)

    # -- writes -------------------------------------------------------------------------------------

    def add(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store `obj` under its key; returns what was there before (None for a new key)."""
        return self.update(obj)

    def update(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, old, obj)
            return old

    def delete(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Remove the object with `obj`'s key; returns the stored one (None if there was none)."""
        return self.delete_by_key(self._key_func(obj))

    def delete_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._reindex(key, old, None)
            return old

    def replace(self, objects: Iterable[dict[str, Any]]) -> None:
        """Make the store hold exactly `objects`, indices rebuilt (upstream `Replace`)."""
        items = {self._key_func(obj): obj for obj in objects}
        with self._lock:
            self._items = items
            self._indices = {name: {} for name in self._indexers}
            for key, obj in items.items():
                self._reindex(key, None, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indices. Unlike upstream (which refuses once the store has items), existing items
        are indexed at once, so an index can be added to a running informer. A name already in use is a
        ValueError: silently replacing a function would leave its index computed by the old one."""
        with self._lock:
            clash = set(indexers) & set(self._indexers)
            if clash:
                raise ValueError(f"indexer(s) already registered: {', '.join(sorted(clash))}")
            for name, func in indexers.items():
                self._indexers[name] = func
                index: dict[str, set[str]] = {}
                self._indices[name] = index
                for key, obj in self._items.items():
                    for value in func(obj):
                        index.setdefault(value, set()).add(key)

    def _reindex(self, key: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Move `key` from the index values of `old` to those of `new` (caller holds the lock)."""
        for name, func in self._indexers.items():
            index = self._indices[name]
            old_values = set(func(old)) if old is not None else set()
            new_values = set(func(new)) if new is not None else set()
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)

    # -- reads (returned objects are shared: do not modify them) ------------------------------------

    def get(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.get_by_key(self._key_func(obj))

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def items(self) -> dict[str, dict[str, Any]]:
        """A snapshot of key → object (a new dict; the objects themselves are shared)."""
        with self._lock:
            return dict(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Sorted keys of the objects whose `index_name` function yields `value`; KeyError if no such index."""
        with self._lock:
            return sorted(self._index(index_name).get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[dict[str, Any]]:
        """The objects whose `index_name` function yields `value`, in key order."""
        with self._lock:
            return [self._items[key] for key in sorted(self._index(index_name).get(value, ()))]

    def index_values(self, index_name: str) -> builtins.list[str]:
        """Every value that index currently holds (upstream `ListIndexFuncValues`)."""
        with self._lock:
            return sorted(self._index(index_name))

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"index {index_name!r} does not exist") from None


class Lister:
    """Read-only queries over a store, as upstream's generated listers (`PodLister.List(selector)`,
    `Pods(ns).Get(name)`). Uses the namespace index when the store has one, else scans."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def list(self, namespace: str | None = None,
             label_selector: str | labels.Selector | None = None) -> list[dict[str, Any]]:
        """Objects in `namespace` (None: every namespace) whose labels match the selector (a string is
        parsed; None selects all). Shared objects: do not modify them."""
        selector = labels.parse_selector(label_selector) if isinstance(label_selector, str) else label_selector
        if namespace is None:
            candidates = self._store.list()
        else:
            try:
                candidates = self._store.by_index(NAMESPACE_INDEX, namespace)
            except KeyError:
                candidates = [obj for obj in self._store.list() if namespace_of(obj) == namespace]
        if selector is None or selector.empty:
            return candidates
        return [obj for obj in candidates if selector.matches(TypedObject(obj).metadata.labels)]

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None if the cache does not hold it ("" or None namespace: cluster-scoped)."""
        return self._store.get_by_key(f"{namespace}/{name}" if namespace else name)
