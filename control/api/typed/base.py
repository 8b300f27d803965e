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
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

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


class _Field(property, Generic[T]):
    """A property reading `raw[key]`, an absent or null value read as `zero`.

    A `property` subclass so that reading it stays in C up to the one getter call; `key` and `zero` are
    kept for introspection (tests check every property reads the JSON field of its name)."""

    key: str
    zero: Any

    if TYPE_CHECKING:
        @overload
        def __get__(self, instance: None, owner: type | None = None) -> _Field[T]: ...

        @overload
        def __get__(self, instance: object, owner: type | None = None) -> T: ...

        def __get__(self, instance: object, owner: type | None = None) -> T | _Field[T]: ...


class _Nested(_Field[V]):
    """A struct held by value: absent reads as a view of nothing."""

    wrap: type[V]


class _Pointer(_Field[V | None]):
    """A struct held by pointer: absent reads as None."""

    wrap: type[V]


class _NestedList(_Field[ViewList[V]]):
    """A list of structs, read as a `ViewList`."""

    wrap: type[V]


def _scalar(key: str, zero: T) -> _Field[T]:
    def get(view: View) -> T:
        value = view.raw.get(key)
        return zero if value is None else value

    field: _Field[T] = _Field(get)
    field.key, field.zero = key, zero
    return field


def string(key: str) -> _Field[str]:
    return _scalar(key, "")


def integer(key: str) -> _Field[int]:
    return _scalar(key, 0)


def boolean(key: str) -> _Field[bool]:
    return _scalar(key, False)


def optional_string(key: str) -> _Field[str | None]:
    return _scalar(key, None)


def optional_int(key: str) -> _Field[int | None]:
    return _scalar(key, None)


def optional_bool(key: str) -> _Field[bool | None]:
    return _scalar(key, None)


def int_or_string(key: str) -> _Field[int | str | None]:
    """An intstr.IntOrString (a port by number or name, a percentage); None when absent."""
    return _scalar(key, None)


def optional_mapping(key: str) -> _Field[Mapping[str, Any] | None]:
    """A struct by pointer that code passes on whole (a volume source, an affinity), or None when absent."""
    return _scalar(key, None)


def mapping(key: str) -> _Field[Mapping[str, Any]]:
    """A map, or a struct code reads as a whole (passes on untouched), as the dict itself or an empty one."""
    return _scalar(key, EMPTY)


def string_map(key: str) -> _Field[Mapping[str, str]]:
    return _scalar(key, EMPTY)


def string_list(key: str) -> _Field[Sequence[str]]:
    return _scalar(key, _NO_ITEMS)


def int_list(key: str) -> _Field[Sequence[int]]:
    return _scalar(key, _NO_ITEMS)


def raw_list(key: str) -> _Field[Sequence[Mapping[str, Any]]]:
    """A list of structs code passes on whole (affinity terms, volume sources) rather than reads."""
    return _scalar(key, _NO_ITEMS)


def nested(key: str, wrap: type[V]) -> _Nested[V]:
    def get(view: View) -> V:
        return wrap(view.raw.get(key) or EMPTY)

    field: _Nested[V] = _Nested(get)
    field.key, field.zero, field.wrap = key, None, wrap
    return field


def pointer(key: str, wrap: type[V]) -> _Pointer[V]:
    def get(view: View) -> V | None:
        value = view.raw.get(key)
        return None if value is None else wrap(value)

    field: _Pointer[V] = _Pointer(get)
    field.key, field.zero, field.wrap = key, None, wrap
    return field


def nested_list(key: str, wrap: type[V]) -> _NestedList[V]:
    def get(view: View) -> ViewList[V]:
        return ViewList(view.raw.get(key), wrap)

    field: _NestedList[V] = _NestedList(get)
    field.key, field.zero, field.wrap = key, None, wrap
    return field
