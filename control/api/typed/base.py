"""The machinery under every typed view: a class holding one wire dict, and field descriptors that read it.

Upstream's Go types decode JSON into structs whose absent fields are zero values (`""`, `0`, `false`, nil
slices and maps, nil pointers, zero-valued nested structs). A view gives the same answers without decoding:
it keeps the dict it was given (`raw`, never copied, so unknown fields and annotations round-trip exactly)
and each property reads one key on access:

- a scalar field absent or null reads as its zero value (`string`, `integer`, `boolean`);
- a pointer field (`*int32`, `*bool`, `*string`) absent or null reads as None (`optional_*`), as Go's nil;
- a nested struct held by value (a Pod's `spec`, a ContainerStatus's `state`) reads as a view over the
  nested dict, or over an empty one (`nested`); one held by pointer reads as None when absent (`pointer`);
- a slice of structs reads as a `ViewList` that wraps each element when it is read (`nested_list`);
- maps and scalar slices read as the dict or list itself, or an empty one (`mapping`, `string_list`).

Views are read-only: what changes an object writes its dict (`view.raw` is the object itself). They are
cheap enough for hot paths: one small object per access, no copy of the tree below it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, TypeVar, overload

EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The dict a view of an absent struct reads; shared, immutable."""

_NO_ITEMS: Sequence[Any] = ()

T = TypeVar("T")
V = TypeVar("V", bound="View")


class View:
    """A read-only typed view of one wire dict (or of an empty one when the struct is absent)."""

    __slots__ = ("raw",)

    raw: Mapping[str, Any]

    def __init__(self, raw: Mapping[str, Any] | None = None) -> None:
        self.raw = raw if raw is not None else EMPTY

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.raw!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.raw == self.raw

    __hash__ = None  # type: ignore[assignment]  # the dict under a view is mutable


class ViewList(Sequence[V]):
    """A list of structs read as views, each element wrapped when it is read; the list is not copied."""

    __slots__ = ("_items", "_wrap")

    def __init__(self, items: Sequence[Mapping[str, Any]] | None, wrap: Callable[[Mapping[str, Any]], V]) -> None:
        self._items = items or _NO_ITEMS
        self._wrap = wrap

    @overload
    def __getitem__(self, index: int) -> V: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[V]: ...

    def __getitem__(self, index: int | slice) -> V | Sequence[V]:
        if isinstance(index, slice):
            return [self._wrap(item) for item in self._items[index]]
        return self._wrap(self._items[index])

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[V]:
        wrap = self._wrap
        for item in self._items:
            yield wrap(item)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ViewList):
            return NotImplemented
        return self._wrap is other._wrap and list(self._items) == list(other._items)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ViewList({list(self._items)!r})"


class _Field(Generic[T]):
    """A descriptor reading `raw[key]`, turning an absent or null value into `zero`."""

    __slots__ = ("key", "zero")

    def __init__(self, key: str, zero: T) -> None:
        self.key = key
        self.zero = zero

    @overload
    def __get__(self, view: None, owner: type) -> _Field[T]: ...

    @overload
    def __get__(self, view: View, owner: type) -> T: ...

    def __get__(self, view: View | None, owner: type) -> T | _Field[T]:
        if view is None:
            return self
        value = view.raw.get(self.key)
        return self.zero if value is None else value


class _Nested(Generic[V]):
    """A descriptor reading `raw[key]` as a view; absent reads as a view of nothing (a struct by value)."""

    __slots__ = ("key", "wrap")

    def __init__(self, key: str, wrap: type[V]) -> None:
        self.key = key
        self.wrap = wrap

    @overload
    def __get__(self, view: None, owner: type) -> _Nested[V]: ...

    @overload
    def __get__(self, view: View, owner: type) -> V: ...

    def __get__(self, view: View | None, owner: type) -> V | _Nested[V]:
        if view is None:
            return self
        return self.wrap(view.raw.get(self.key) or EMPTY)


class _Pointer(Generic[V]):
    """A descriptor reading `raw[key]` as a view, or None when absent (a struct by pointer)."""

    __slots__ = ("key", "wrap")

    def __init__(self, key: str, wrap: type[V]) -> None:
        self.key = key
        self.wrap = wrap

    @overload
    def __get__(self, view: None, owner: type) -> _Pointer[V]: ...

    @overload
    def __get__(self, view: View, owner: type) -> V | None: ...

    def __get__(self, view: View | None, owner: type) -> V | None | _Pointer[V]:
        if view is None:
            return self
        value = view.raw.get(self.key)
        return None if value is None else self.wrap(value)


class _NestedList(Generic[V]):
    """A descriptor reading `raw[key]` (a list of structs) as a `ViewList`."""

    __slots__ = ("key", "wrap")

    def __init__(self, key: str, wrap: type[V]) -> None:
        self.key = key
        self.wrap = wrap

    @overload
    def __get__(self, view: None, owner: type) -> _NestedList[V]: ...

    @overload
    def __get__(self, view: View, owner: type) -> ViewList[V]: ...

    def __get__(self, view: View | None, owner: type) -> ViewList[V] | _NestedList[V]:
        if view is None:
            return self
        return ViewList(view.raw.get(self.key), self.wrap)


def string(key: str) -> _Field[str]:
    return _Field(key, "")


def integer(key: str) -> _Field[int]:
    return _Field(key, 0)


def boolean(key: str) -> _Field[bool]:
    return _Field(key, False)


def optional_string(key: str) -> _Field[str | None]:
    return _Field(key, None)


def optional_int(key: str) -> _Field[int | None]:
    return _Field(key, None)


def optional_bool(key: str) -> _Field[bool | None]:
    return _Field(key, None)


def quantity(key: str) -> _Field[str | int | float | None]:
    """A resource.Quantity as written on the wire (usually a string; parse with apimachinery.quantity)."""
    return _Field(key, None)


def int_or_string(key: str) -> _Field[int | str | None]:
    """An intstr.IntOrString (a port by number or name, a percentage); None when absent."""
    return _Field(key, None)


def optional_mapping(key: str) -> _Field[Mapping[str, Any] | None]:
    """A struct by pointer that code passes on whole (a volume source, an affinity), or None when absent."""
    return _Field(key, None)


def mapping(key: str) -> _Field[Mapping[str, Any]]:
    """A map, or a struct code reads as a whole (passes on untouched), as the dict itself or an empty one."""
    return _Field(key, EMPTY)


def string_map(key: str) -> _Field[Mapping[str, str]]:
    return _Field(key, EMPTY)


def string_list(key: str) -> _Field[Sequence[str]]:
    return _Field(key, _NO_ITEMS)


def int_list(key: str) -> _Field[Sequence[int]]:
    return _Field(key, _NO_ITEMS)


def raw_list(key: str) -> _Field[Sequence[Mapping[str, Any]]]:
    """A list of structs code passes on whole (affinity terms, volume sources) rather than reads."""
    return _Field(key, _NO_ITEMS)


def nested(key: str, wrap: type[V]) -> _Nested[V]:
    return _Nested(key, wrap)


def pointer(key: str, wrap: type[V]) -> _Pointer[V]:
    return _Pointer(key, wrap)


def nested_list(key: str, wrap: type[V]) -> _NestedList[V]:
    return _NestedList(key, wrap)
