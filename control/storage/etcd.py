"""The etcd backend, through etcd's v3 JSON gateway (`/v3/kv/*`, `/v3/watch`).

Mirrors upstream k8s.io/apiserver/pkg/storage/etcd3/store.go (create as a txn comparing
`create_revision == 0`; update and delete as txns comparing `mod_revision`, whose failure branch reads
the key so a lost race answers with the current record in the same round trip), watcher.go (watch from
`after + 1` with `prev_kv`, compaction reported as 410) and compact.go (the `compact_rev_key` that
records how far the store was compacted, since etcd itself does not say).

Design notes
- etcd3gw is the transport: its `Etcd3Client.post` (JSON, connection errors as exceptions) and
  `transaction`. Its `get`/`create` helpers drop the response header and `more`, which `ListResult`
  needs, so the range and txn payloads are built here. Keys and values are base64 in the gateway;
  nothing outside this module sees that.
- Watch talks to `/v3/watch` with a `requests` stream itself: etcd3gw's watcher ignores the
  `canceled`/`compact_revision` response (a compacted watch would just stay silent) and runs its reader
  in an executor that swallows errors. One reader thread per watch turns each response into a batch.
- Ranges are never sorted server-side: etcd returns keys in order already, and asking for a sort
  makes it read the whole range before applying `limit`.
- No compactor thread here (unlike SQLite): as upstream, whoever runs the cluster compacts, through
  `compact` or etcd's own `--auto-compaction-*`. `compact_revision()` knows only compactions recorded
  in `compact_rev_key`; etcd's own errors still raise `Compacted` for the others.
"""

from __future__ import annotations

import base64
import builtins
import json
import queue
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
from etcd3gw import Etcd3Client, exceptions
from requests.adapters import HTTPAdapter

from control.storage.interface import (
    Compacted,
    Conflict,
    Event,
    EventType,
    KeyExists,
    KeyNotFound,
    ListResult,
    Record,
    StorageError,
    Unavailable,
)

COMPACT_KEY = "compact_rev_key"  # as upstream compact.go: outside /registry/, where the API server reads
_TIMEOUT = 10.0  # seconds for one request (and for a watch to be established)
_COMPACTED = "required revision has been compacted"
_FUTURE = "required revision is a future revision"


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode("ascii")


def _unb64(data: str) -> bytes:
    return base64.b64decode(data)


def prefix_end(prefix: str) -> bytes:
    """etcd's range end for a prefix (clientv3.GetPrefixRangeEnd): the prefix with its last byte below
    0xff incremented; b"\\0" (to the end of the keyspace) when there is none."""
    end = bytearray(prefix.encode())
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def _record(kv: dict[str, Any]) -> Record:
    """A gateway KeyValue (int64s as strings, empty fields omitted) as a Record."""
    return Record(
        key=_unb64(kv["key"]).decode(),
        value=_unb64(kv.get("value", "")),
        create_revision=int(kv.get("create_revision", 0)),
        mod_revision=int(kv.get("mod_revision", 0)),
    )


def _event(raw: dict[str, Any]) -> Event:
    kv, prev = raw["kv"], raw.get("prev_kv")
    key = _unb64(kv["key"]).decode()
    revision = int(kv["mod_revision"])
    prev_value = _unb64(prev.get("value", "")) if prev else None
    if raw.get("type") == "DELETE":
        # The tombstone has only key and revision; the last value and create_revision come from prev_kv.
        create = int(prev["create_revision"]) if prev else 0
        return Event(EventType.DELETED, key, prev_value or b"", revision, create, prev_value)
    value = _unb64(kv.get("value", ""))
    if int(kv.get("version", 0)) == 1:
        return Event(EventType.ADDED, key, value, revision, int(kv["create_revision"]), None)
    return Event(EventType.MODIFIED, key, value, revision, int(kv["create_revision"]), prev_value)


class EtcdStorage:
    """`Storage` on an etcd ≥ 3.4 cluster at `endpoint` (e.g. "http://127.0.0.1:2379")."""

    def __init__(self, endpoint: str) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"etcd endpoint must be http://host:port, not {endpoint!r}")
        session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=64)
        session.mount("http://", adapter)
        self._endpoint = endpoint
        self._client = Etcd3Client(
            host=parts.hostname, port=parts.port or 2379, timeout=_TIMEOUT, api_path="/v3/", session=session
        )
        self._watches: set[EtcdWatch] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- transport --------------------------------------------------------------------------------------

    def _call(self, path: str, payload: dict[str, Any], *, revision: int = 0) -> dict[str, Any]:
        """POST to the gateway with etcd's errors as the contract's (`revision`: the one being read)."""
        if self._closed:
            raise Unavailable("storage is closed")
        try:
            if path == "kv/txn":
                return dict(self._client.transaction(payload))  # a TypedDict: the same keys, read the same way
            answer: dict[str, Any] = self._client.post(self._client.get_url(path), json=payload)
            return answer
        except (exceptions.ConnectionFailedError, exceptions.ConnectionTimeoutError) as exc:
            raise Unavailable(f"etcd {self._endpoint}: {exc.detail_text or exc}") from exc
        except exceptions.InternalServerError as exc:
            raise Unavailable(f"etcd {self._endpoint}: {exc.detail_text}") from exc
        except exceptions.Etcd3Exception as exc:
            detail = exc.detail_text or ""
            if _COMPACTED in detail:
                raise Compacted(revision, self.compact_revision()) from exc
            raise StorageError(f"etcd {self._endpoint}: {detail}") from exc
        except requests.RequestException as exc:  # a gateway answer that is not JSON, a broken stream
            raise Unavailable(f"etcd {self._endpoint}: {exc}") from exc

    def _txn(self, compare: list[dict[str, Any]], success: dict[str, Any], key: str) -> dict[str, Any]:
        """A txn whose failure branch reads `key`: the answer says who won a race in one round trip."""
        payload = {"compare": compare, "success": [success], "failure": [{"request_range": {"key": _b64(key)}}]}
        return self._call("kv/txn", payload)

    # -- Storage ----------------------------------------------------------------------------------------

    def revision(self) -> int:
        response = self._call("kv/range", {"key": _b64(COMPACT_KEY), "count_only": True})
        return int(response["header"]["revision"])

    def compact_revision(self) -> int:
        response = self._call("kv/range", {"key": _b64(COMPACT_KEY)})
        kvs = response.get("kvs")
        return int(_unb64(kvs[0]["value"])) if kvs else 0

    def get(self, key: str) -> Record | None:
        kvs = self._call("kv/range", {"key": _b64(key)}).get("kvs")
        return _record(kvs[0]) if kvs else None

    def list(self, prefix: str, *, start_after: str = "", limit: int = 0, revision: int = 0) -> ListResult:
        lower = max(prefix, start_after + "\0") if start_after else prefix
        payload: dict[str, Any] = {"key": _b64(lower), "range_end": _b64(prefix_end(prefix))}
        if limit:
            payload["limit"] = limit
        if revision:
            payload["revision"] = revision
        response = self._call("kv/range", payload, revision=revision)
        records = [_record(kv) for kv in response.get("kvs", [])]
        return ListResult(records, revision or int(response["header"]["revision"]), bool(response.get("more")))

    def count(self, prefix: str) -> int:
        payload = {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)), "count_only": True}
        return int(self._call("kv/range", payload).get("count", 0))

    def create(self, key: str, value: bytes) -> Record:
        compare = [{"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": 0}]
        response = self._txn(compare, {"request_put": {"key": _b64(key), "value": _b64(value)}}, key)
        if not response.get("succeeded"):
            raise KeyExists(key)
        revision = int(response["header"]["revision"])
        return Record(key, value, revision, revision)

    def update(self, key: str, value: bytes, *, expected_revision: int) -> Record:
        put = {"request_put": {"key": _b64(key), "value": _b64(value), "prev_kv": True}}
        response = self._txn(self._expect(key, expected_revision), put, key)
        self._raise_unless_succeeded(key, response)
        previous = response["responses"][0]["response_put"]["prev_kv"]
        return Record(key, value, int(previous["create_revision"]), int(response["header"]["revision"]))

    def delete(self, key: str, *, expected_revision: int | None = None) -> Record:
        delete = {"request_delete_range": {"key": _b64(key), "prev_kv": True}}
        response = self._txn(self._expect(key, expected_revision), delete, key)
        self._raise_unless_succeeded(key, response)
        previous = _record(response["responses"][0]["response_delete_range"]["prev_kvs"][0])
        return Record(key, previous.value, previous.create_revision, int(response["header"]["revision"]))

    @staticmethod
    def _expect(key: str, expected_revision: int | None) -> builtins.list[dict[str, Any]]:
        """The key exists (version > 0: an absent key's mod_revision is 0, which must not match 0) and,
        when given, was last written at `expected_revision`."""
        compare = [{"key": _b64(key), "target": "VERSION", "result": "GREATER", "version": 0}]
        if expected_revision is not None:
            compare.append({"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": expected_revision})
        return compare

    @staticmethod
    def _raise_unless_succeeded(key: str, response: dict[str, Any]) -> None:
        if response.get("succeeded"):
            return
        kvs = response["responses"][0]["response_range"].get("kvs")
        if not kvs:
            raise KeyNotFound(key)
        raise Conflict(key, _record(kvs[0]))

    def watch(self, prefix: str, *, after: int) -> EtcdWatch:
        """`after` is checked by reading at it first, so a compacted revision raises here, as in SQLite;
        a compaction racing with the start ends the stream with `Compacted` instead."""
        try:
            self._call("kv/range", {"key": _b64(COMPACT_KEY), "count_only": True, "revision": max(after, 1)},
                       revision=after)
        except StorageError as exc:
            if _FUTURE not in str(exc):  # watching from a revision not written yet is fine: it waits
                raise
        watch = EtcdWatch(self, prefix, after)
        with self._lock:
            self._watches.add(watch)
        return watch

    def compact(self, revision: int) -> None:
        """Compact etcd, then record the revision in `compact_rev_key` (never lowering it). In that order
        a failure between the two under-reports, which only delays a `Compacted` to etcd's own error."""
        try:
            self._call("kv/compaction", {"revision": revision, "physical": True})
        except Compacted:
            pass  # someone compacted at or past `revision` already
        except StorageError as exc:
            if _FUTURE in str(exc):
                raise ValueError(f"cannot compact revision {revision}: it is in the future") from exc
            raise
        while True:
            current = self._call("kv/range", {"key": _b64(COMPACT_KEY)}).get("kvs")
            if current and int(_unb64(current[0]["value"])) >= revision:
                return
            version = int(current[0]["version"]) if current else 0
            compare = [{"key": _b64(COMPACT_KEY), "target": "VERSION", "result": "EQUAL", "version": version}]
            put = {"request_put": {"key": _b64(COMPACT_KEY), "value": _b64(str(revision))}}
            if self._txn(compare, put, COMPACT_KEY).get("succeeded"):
                return

    def close(self) -> None:
        with self._lock:
            self._closed = True
            watches, self._watches = list(self._watches), set()
        for watch in watches:
            watch.close()
        self._client.session.close()

    def _forget(self, watch: EtcdWatch) -> None:
        with self._lock:
            self._watches.discard(watch)


class EtcdWatch:
    """One `/v3/watch` stream and the thread that reads it into a queue of batches.

    The queue holds lists of events (one per watch response, in revision order) and, last, at most one
    `StorageError` that ends the stream; `next` merges the batches waiting and raises the error once
    they are drained.
    """

    def __init__(self, storage: EtcdStorage, prefix: str, after: int) -> None:
        self._storage = storage
        self._after = after
        self._queue: queue.Queue[list[Event] | StorageError] = queue.Queue()
        self._error: StorageError | None = None
        self._closed = threading.Event()
        self._established = threading.Event()  # set by the reader at the first message or at its end
        self._start_error: StorageError | None = None  # why the stream ended before its first message
        client = storage._client
        request = {
            "create_request": {
                "key": _b64(prefix),
                "range_end": _b64(prefix_end(prefix)),
                "start_revision": after + 1,
                "prev_kv": True,
            }
        }
        try:
            self._response = client.session.post(
                client.get_url("watch"), json=request, stream=True, timeout=(_TIMEOUT, None)
            )
            self._response.raise_for_status()
        except requests.RequestException as exc:
            raise Unavailable(f"etcd watch: {exc}") from exc
        self._thread = threading.Thread(target=self._read, name="etcd-watch", daemon=True)
        self._thread.start()
        if not self._established.wait(_TIMEOUT):
            self.close()
            raise Unavailable(f"etcd watch: not established within {_TIMEOUT} s")
        if self._start_error is not None:
            self.close()
            raise self._start_error

    def _messages(self) -> Iterator[dict[str, Any]]:
        """The stream's JSON messages; the gateway ends each with a newline, chunks may split or join them."""
        buffer = b""
        for chunk in self._response.iter_content(chunk_size=None):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield json.loads(line)

    def _read(self) -> None:
        try:
            for message in self._messages():
                self._established.set()
                self._handle(message)
            raise Unavailable("etcd watch stream ended")
        except StorageError as exc:
            error = exc
        except (requests.RequestException, OSError, ValueError) as exc:
            error = Unavailable(f"etcd watch: {exc}")
        if not self._established.is_set():
            self._start_error = error
            self._established.set()
        self._queue.put(error)

    def _handle(self, message: dict[str, Any]) -> None:
        if "error" in message:
            raise StorageError(f"etcd watch: {message['error']}")
        result = message["result"]
        if result.get("canceled"):
            compacted = int(result.get("compact_revision", 0))
            if compacted:
                raise Compacted(self._after, compacted)
            raise Unavailable(f"etcd watch canceled: {result.get('cancel_reason', '')}")
        events = [_event(raw) for raw in result.get("events", [])]
        if events:
            self._queue.put(events)

    def next(self, timeout: float) -> list[Event]:
        batch: list[Event] = []
        if self._error is None and not self._closed.is_set():
            try:
                item = self._queue.get(timeout=timeout)
                while not isinstance(item, StorageError):
                    batch.extend(item)
                    item = self._queue.get_nowait()
                self._error = item
            except queue.Empty:
                pass
        if batch or self._error is None or self._closed.is_set():
            return batch
        raise self._error

    def close(self) -> None:
        """Shut the socket down so the reader thread's blocking read returns, then wait for it."""
        if self._closed.is_set():
            return
        self._closed.set()
        connection = self._response.raw.connection
        try:
            if connection is None or connection.sock is None:
                raise OSError("the connection is already gone")
            sock = socket.socket(fileno=connection.sock.fileno())
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.detach()
        except (AttributeError, OSError):
            pass  # already closed by the server or the reader
        self._response.close()
        self._thread.join(_TIMEOUT)
        self._storage._forget(self)
