"""The storage contract the API server is written against (upstream: k8s.io/apiserver/pkg/storage.Interface,
narrowed to what an etcd3-like key-value store gives; kine implements the same contract over SQL).

Keys are `/registry/{resource}/{namespace}/{name}` (or `/registry/{resource}/{name}` when cluster-scoped);
values are opaque bytes (the API server stores JSON). Every successful write bumps one global revision and
the record carries it as `mod_revision`: the API server shows that number as `metadata.resourceVersion`,
so it is never stored inside the value.

Compare-and-swap is by revision: `update`/`delete` name the `mod_revision` they read, and a write that
lost a race raises `Conflict` (the API server answers 409). History is kept until `compact`, so a watch
can resume from any revision after the compacted one; an older one raises `Compacted` (410 Gone).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class StorageError(Exception):
    """Base class of everything a backend raises on purpose."""


class KeyExists(StorageError):
    """`create` of a key that exists (409 AlreadyExists)."""


class KeyNotFound(StorageError):
    """`update`/`delete` of a key that does not exist (404)."""


class Conflict(StorageError):
    """The key's current `mod_revision` is not the expected one (409 Conflict)."""

    def __init__(self, key: str, current: Record) -> None:
        super().__init__(f"{key}: revision is {current.mod_revision}")
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than the oldest one kept (410 Gone)."""

    def __init__(self, requested: int, compact_revision: int) -> None:
        super().__init__(f"revision {requested} is compacted (oldest kept: {compact_revision})")
        self.requested = requested
        self.compact_revision = compact_revision


class Unavailable(StorageError):
    """The backend cannot be reached or timed out (the API server answers 503/504, never loses data)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One key's value at one revision. `stale`: the value was read with an encryption key that no longer
    writes (control/apiserver/storage/encrypted.py), so the next write must store it again even if unchanged."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    stale: bool = False


class EventType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class Event:
    """One change, in revision order. For DELETED, `value` is the last value the key had and `revision`
    is the revision of the delete itself; `prev_value` is the value before this change (None for ADDED)."""

    type: EventType
    key: str
    value: bytes
    revision: int
    create_revision: int
    prev_value: bytes | None = None


@dataclass(frozen=True, slots=True)
class ListResult:
    """Records sorted by key, read at one `revision`; `more` says keys past `limit` exist."""

    records: list[Record]
    revision: int
    more: bool


class Watch(Protocol):
    """A stream of events under one prefix, strictly after the revision it was opened at."""

    def next(self, timeout: float) -> list[Event]:
        """Events in revision order; [] when `timeout` seconds passed with none. Raises `Compacted`
        if the stream fell behind compaction, `Unavailable` if the backend went away."""
        ...

    def close(self) -> None: ...


class Storage(Protocol):
    """What every backend implements. All methods are thread-safe and blocking."""

    def revision(self) -> int:
        """The current (latest) revision of the whole store."""
        ...

    def get(self, key: str) -> Record | None: ...

    def list(self, prefix: str, *, start_after: str = "", limit: int = 0, revision: int = 0) -> ListResult:
        """Live keys under `prefix` greater than `start_after`, at most `limit` of them (0: all), as of
        `revision` (0: now; older revisions serve `continue` tokens and raise `Compacted` when gone)."""
        ...

    def count(self, prefix: str) -> int: ...

    def create(self, key: str, value: bytes) -> Record:
        """Raises `KeyExists`."""
        ...

    def update(self, key: str, value: bytes, *, expected_revision: int) -> Record:
        """Raises `KeyNotFound`, or `Conflict` when the key's mod_revision is not `expected_revision`."""
        ...

    def delete(self, key: str, *, expected_revision: int | None = None) -> Record:
        """Returns the deleted value with `mod_revision` set to the revision of the delete.
        Raises `KeyNotFound`, or `Conflict` on a revision mismatch."""
        ...

    def watch(self, prefix: str, *, after: int) -> Watch:
        """Events under `prefix` with revision > `after`, history first. Raises `Compacted` when
        `after` is older than the compacted revision."""
        ...

    def compact(self, revision: int) -> None:
        """Forget history at and before `revision` (live values are kept)."""
        ...

    def compact_revision(self) -> int: ...

    def close(self) -> None: ...
