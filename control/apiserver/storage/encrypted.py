"""A `Storage` that encrypts the values of the resources an EncryptionConfiguration names on their way in and
decrypts them on their way out (upstream: the value transformer k8s.io/apiserver/pkg/storage/etcd3/store.go
applies around every etcd read and write).

Everything the backend keeps passes through here — live values, SQLite's history rows (each keeps the value
and the one before it) and etcd's revisions — so no plaintext of those resources reaches the store. Records
read with a key other than the writing one come back `stale`, which makes the registry rewrite an object even
when an update changes nothing. Keys, revisions and everything else pass through unchanged.
"""

from __future__ import annotations

import dataclasses

from control.apiserver.storage.encryption import EncryptionConfig, TransformError
from control.storage.interface import Event, ListResult, Record, Storage, StorageError, Watch


class DecryptionError(StorageError):
    """A stored value none of the configured keys opens (answered 500, as upstream)."""


class EncryptedStorage:
    def __init__(self, inner: Storage, config: EncryptionConfig) -> None:
        self.inner = inner
        self.config = config

    def _seal(self, key: str, value: bytes) -> bytes:
        transformer = self.config.for_key(key)
        return value if transformer is None else transformer.to_storage(value, key)

    def _open(self, record: Record) -> Record:
        transformer = self.config.for_key(record.key)
        if transformer is None:
            return record
        try:
            plain, stale = transformer.from_storage(record.value, record.key)
        except TransformError as exc:
            raise DecryptionError(str(exc)) from None
        return dataclasses.replace(record, value=plain, stale=stale)

    def _open_event(self, event: Event) -> Event:
        transformer = self.config.for_key(event.key)
        if transformer is None:
            return event
        try:
            value = transformer.from_storage(event.value, event.key)[0]
            prev = None if event.prev_value is None else transformer.from_storage(event.prev_value, event.key)[0]
        except TransformError as exc:
            raise DecryptionError(str(exc)) from None
        return dataclasses.replace(event, value=value, prev_value=prev)

    def revision(self) -> int:
        return self.inner.revision()

    def get(self, key: str) -> Record | None:
        record = self.inner.get(key)
        return None if record is None else self._open(record)

    def list(self, prefix: str, *, start_after: str = "", limit: int = 0, revision: int = 0) -> ListResult:
        result = self.inner.list(prefix, start_after=start_after, limit=limit, revision=revision)
        return ListResult([self._open(record) for record in result.records], result.revision, result.more)

    def count(self, prefix: str) -> int:
        return self.inner.count(prefix)

    def create(self, key: str, value: bytes) -> Record:
        return dataclasses.replace(self.inner.create(key, self._seal(key, value)), value=value)

    def update(self, key: str, value: bytes, *, expected_revision: int) -> Record:
        written = self.inner.update(key, self._seal(key, value), expected_revision=expected_revision)
        return dataclasses.replace(written, value=value)

    def delete(self, key: str, *, expected_revision: int | None = None) -> Record:
        return self._open(self.inner.delete(key, expected_revision=expected_revision))

    def watch(self, prefix: str, *, after: int) -> Watch:
        return _DecryptingWatch(self.inner.watch(prefix, after=after), self)

    def compact(self, revision: int) -> None:
        self.inner.compact(revision)

    def compact_revision(self) -> int:
        return self.inner.compact_revision()

    def close(self) -> None:
        self.inner.close()


class _DecryptingWatch:
    def __init__(self, inner: Watch, storage: EncryptedStorage) -> None:
        self.inner = inner
        self.storage = storage

    def next(self, timeout: float) -> list[Event]:
        return [self.storage._open_event(event) for event in self.inner.next(timeout)]

    def close(self) -> None:
        self.inner.close()
