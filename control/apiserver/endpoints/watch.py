"""Watch streams (upstream: k8s.io/apiserver/pkg/endpoints/handlers/watch.go, and the event filtering of
storage/cacher's cacheWatcher).

A watch is a chunked HTTP response of JSON lines `{"type": ..., "object": ...}`. What a client may rely on:
- `resourceVersion` "" or "0": synthetic ADDED events for what exists now, then changes; any other
  revision: exactly the changes after it — from the watch cache's window, or from the store's history
  when it is older (e.g. a client resuming across a restart of this server) — or one ERROR event with a
  410 Status when the store has compacted it (the client relists).
- Selectors are applied to both sides of a change, so a pod that stops matching is seen as DELETED and
  one that starts matching as ADDED (cacheWatcher's `convertToWatchEvent`).
- `allowWatchBookmarks`: BOOKMARK events carrying only the current revision, sent when the stream has
  been quiet, so a client resumes from a recent revision after a reconnect; with `sendInitialEvents`
  one marked `k8s.io/initial-events-end` follows the synthetic ADDED events.
- A client that disconnects, at any point, ends its watch quietly (a debug line, no traceback): it is
  the most ordinary way for a watch to end.
- `timeoutSeconds` ends the stream cleanly; without it the stream lasts 30-60 minutes (upstream's
  minRequestTimeout jitter); otherwise it stays open. A watcher too slow to keep up is closed, not
  buffered without bound.

Serialising an event is the costly part with many watchers, so the JSON line of a plain event is cached
per (revision, key, type): 100 watchers of the same change encode it once. A watcher without selectors
of a kind without decoration does not decode the event at all: its line is the stored bytes spliced into
the event envelope (registry.with_revision); other watchers share one decoded object per event.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from prometheus_client import Counter

from control.apimachinery.meta import deep_copy
from control.apiserver import status
from control.apiserver.codec.jsonwire import encode_json, wire
from control.apiserver.endpoints import tables
from control.apiserver.endpoints.request import Target
from control.apiserver.registry.store import Registry, decode, with_revision
from control.apiserver.resources import Resource, storage_prefix
from control.apiserver.storage.selection import Filter
from control.apiserver.storage.watchcache import TooOld, WatchCache
from control.storage.interface import Event, EventType, StorageError

log = logging.getLogger(__name__)

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_LINE_CACHE_SIZE = 4096


class EventLines:
    """Encoded watch lines and decoded events shared by every watcher of one server (the loop's only)."""

    def __init__(self) -> None:
        self._lines: collections.OrderedDict[tuple[int, str, str], bytes] = collections.OrderedDict()
        self._objects: collections.OrderedDict[tuple[int, str, bool], dict[str, Any]] = collections.OrderedDict()

    def line(self, revision: int, key: str, kind: str, obj: dict[str, Any]) -> bytes:
        return self._line(revision, key, kind, lambda: encode_line(kind, obj))

    def raw_line(self, resource: Resource, event: Event, kind: str) -> bytes:
        """The line of an event whose object is handed out as stored (see the module docstring)."""
        return self._line(event.revision, event.key, kind, lambda: wire(b'{"type":"%s","object":%s}' % (
            kind.encode(), with_revision(resource, event.value, event.revision))))

    def _line(self, revision: int, key: str, kind: str, encode: Callable[[], bytes]) -> bytes:
        cache_key = (revision, key, kind)
        line = self._lines.get(cache_key)
        if line is None:
            line = encode()
            self._lines[cache_key] = line
            if len(self._lines) > _LINE_CACHE_SIZE:
                self._lines.popitem(last=False)
        return line

    def decoded(self, event: Event, *, previous: bool = False) -> dict[str, Any]:
        """The event's object (or its previous one), decoded once for every watcher: read it, never
        change it."""
        cache_key = (event.revision, event.key, previous)
        obj = self._objects.get(cache_key)
        if obj is None:
            value = event.prev_value if previous else event.value
            assert value is not None
            obj = self._objects[cache_key] = decode(value, event.revision)
            if len(self._objects) > _LINE_CACHE_SIZE:
                self._objects.popitem(last=False)
        return obj


def encode_line(kind: str, obj: dict[str, Any]) -> bytes:
    """One watch event as upstream's encoder writes it: a JSON object and a newline."""
    return encode_json({"type": kind, "object": obj})


def _visible(event: Event, flt: Filter, lines: EventLines) -> tuple[str, dict[str, Any]] | None:
    """The event this watcher sees, if any (type, object; the object shared: read it only)."""
    kind = _plain_kind(event)
    if flt.everything:
        return kind, lines.decoded(event)
    new = lines.decoded(event)
    if kind != "MODIFIED":
        return (kind, new) if flt.matches(new) else None
    now_matches = flt.matches(new)
    was_matching = flt.matches(lines.decoded(event, previous=True))
    if now_matches and was_matching:
        return "MODIFIED", new
    if now_matches:
        return "ADDED", new
    if was_matching:
        return "DELETED", new
    return None


def _plain_kind(event: Event) -> str:
    """The event's type for a watcher that sees both sides of it."""
    if event.type is EventType.DELETED:
        return "DELETED"
    if event.type is EventType.ADDED or event.prev_value is None:
        return "ADDED"
    return "MODIFIED"


class WatchStream:
    """One client watch, from the request to the end of the stream."""

    def __init__(self, request: web.Request, target: Target, flt: Filter, *, registry: Registry,
                 cache: WatchCache, lines: EventLines, bookmark_seconds: float,
                 events_sent: Counter | None = None) -> None:
        self.request = request
        # apiserver_watch_events_total{group, version, kind} of this resource, or None when not counted
        resource = target.resource
        self._sent = events_sent.labels(resource.group, resource.version, resource.kind) if events_sent else None
        self.target = target
        self.flt = flt
        self.registry = registry
        self.cache = cache
        self.lines = lines
        self.bookmark_seconds = bookmark_seconds
        self.table = tables.parse_accept_table(request.headers.get("Accept"))
        self.include_object = tables.parse_include_object(request.query.get("includeObject"))
        self._first_table = True

    def _encode(self, kind: str, obj: dict[str, Any], *, revision: int = 0, key: str = "") -> bytes:
        if self._sent is not None:
            self._sent.inc()
        if self.table is not None and kind != "BOOKMARK" and kind != "ERROR":
            resource = self.target.resource
            row = tables.watch_event_table(resource, obj, now=datetime.now(UTC), first=self._first_table,
                                           include_object=self.include_object, table_version=self.table.version,
                                           printer=tables.printer_for(resource, self.registry.strategy(resource)))
            self._first_table = False
            return encode_line(kind, row)
        if revision:
            return self.lines.line(revision, key, kind, obj)
        return encode_line(kind, obj)

    def _bookmark(self, revision: int, *, initial_end: bool = False) -> bytes:
        if self._sent is not None:
            self._sent.inc()
        resource = self.target.resource
        metadata: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        return encode_line("BOOKMARK", {"kind": resource.kind, "apiVersion": resource.api_version,
                                        "metadata": metadata})

    async def serve(self, *, resource_version: str, timeout_seconds: int | None, bookmarks: bool,
                    send_initial: bool | None) -> web.StreamResponse:
        resource = self.target.resource
        prefix = storage_prefix(resource)
        if self.target.namespace and resource.namespaced:
            prefix += f"{self.target.namespace}/"
        synthetic = send_initial if send_initial is not None else resource_version in ("", "0")
        initial: list[dict[str, Any]] = []
        if synthetic:
            page = await asyncio.to_thread(self.registry.list, resource, self.target.namespace, self.flt)
            initial, after = page.items, int(page.resource_version)
        else:
            after = int(resource_version) if resource_version else 0
        response = web.StreamResponse(headers={"Content-Type": "application/json",
                                               "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(self.request)
            subscription = await self.cache.subscribe_from(prefix, after)
        except TooOld as exc:
            gone = status.gone(f"too old resource version: {exc.requested} ({exc.oldest})").status
            try:
                await response.write(encode_line("ERROR", gone))
            except ConnectionResetError:
                log.debug("watch %s: the client disconnected before its 410", prefix)
            return response
        except StorageError as exc:  # the store cannot replay history now: end; the client resumes
            log.warning("watch from %s: cannot read the store's history (%s)", after, exc)
            return response
        except ConnectionResetError:  # gone before the headers were out: a routine end as below
            log.debug("watch %s: the client disconnected", prefix)
            return response
        strategy = self.registry.strategy(resource)
        raw = self.table is None and self.flt.everything and not strategy.decorates
        loop = asyncio.get_running_loop()
        duration = timeout_seconds if timeout_seconds is not None else random.uniform(1800, 3600)
        deadline = loop.time() + duration
        try:
            for obj in initial:
                await response.write(self._encode("ADDED", obj))
                # write() returns without yielding while the buffer is small; yielding lets a lost connection
                # be noticed (and this handler cancelled) before hundreds more writes go to a dead socket,
                # each of which asyncio logs as a WARNING.
                await asyncio.sleep(0)
            if send_initial and bookmarks:
                await response.write(self._bookmark(after, initial_end=True))
            last_sent = after
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, self.bookmark_seconds) if bookmarks else remaining
                event = await subscription.next(timeout=wait)
                if event is None:
                    if subscription.closed:
                        break
                    if bookmarks and self.cache.progress(subscription) > last_sent:
                        last_sent = self.cache.progress(subscription)
                        await response.write(self._bookmark(last_sent))
                    continue
                if raw:
                    await response.write(self.lines.raw_line(resource, event, _plain_kind(event)))
                    last_sent = event.revision
                    continue
                visible = _visible(event, self.flt, self.lines)
                if visible is None:
                    continue
                kind, obj = visible
                if strategy.decorates:
                    obj = deep_copy(obj)
                    strategy.decorate(obj)
                await response.write(self._encode(kind, obj, revision=event.revision, key=event.key))
                last_sent = event.revision
        except ConnectionResetError:  # aiohttp's ClientConnectionResetError: the client went away, a routine end
            log.debug("watch %s: the client disconnected", prefix)
        finally:
            self.cache.unsubscribe(subscription)
        return response
