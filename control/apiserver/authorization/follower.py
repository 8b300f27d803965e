"""In-memory views the authorizers read, kept current from the API server's own watch cache (upstream: the
informers the kube-apiserver runs for its authorizers — the RBAC listers of plugin/pkg/auth/authorizer/rbac
and the Node authorizer's plugin/pkg/auth/authorizer/node/graph_populator.go).

Each view is a `Consumer`: the key prefixes it wants, `reset` (the whole view at once), `apply(key, object
or None when deleted)`, and `caught_up(revision)` once everything up to a revision is applied. `load` lists
every consumer's prefixes at one revision and resets each view with them (readers never see a half-filled
view); `follow` then applies each later change from one watch-cache subscription. A subscription the cache
closes (it fell behind, or restarted after compaction) is replaced by a fresh list, as an informer relists.
Changes are applied on the event loop: each is a few dict operations.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from control.apiserver.storage.watchcache import Subscription, TooOld, WatchCache
from control.storage.interface import EventType, Storage, StorageError

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0


class Consumer(Protocol):
    prefixes: tuple[str, ...]

    def reset(self, objects: Iterable[tuple[str, dict[str, Any] | None]]) -> None:
        """Replace the whole view with these (storage key, object) pairs, atomically for readers."""

    def apply(self, key: str, obj: dict[str, Any] | None) -> None: ...

    def caught_up(self, revision: int) -> None: ...


def decoded(value: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(value)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def load(consumers: Sequence[Consumer], storage: Storage) -> int:
    """Replace every consumer's view with its stored objects, all read at one revision (a reader sees the
    old view or the new one, never a half-filled one); returns that revision (blocking)."""
    revision = storage.revision()
    for consumer in consumers:
        consumer.reset([(record.key, decoded(record.value)) for prefix in consumer.prefixes
                        for record in storage.list(prefix, revision=revision).records])
        consumer.caught_up(revision)
    return revision


async def follow(consumers: Sequence[Consumer], storage: Storage, cache: WatchCache, revision: int) -> None:
    """Run until cancelled: follow the cache from `revision` (what `load` returned); list again and follow
    anew whenever the subscription ends."""
    while True:
        subscription: Subscription | None = None
        try:
            subscription = await cache.subscribe_from("/registry/", revision)
            while not subscription.closed:
                event = await subscription.next(timeout=30.0)
                if event is None:
                    continue
                for consumer in consumers:
                    if event.key.startswith(consumer.prefixes):
                        consumer.apply(event.key, None if event.type is EventType.DELETED else decoded(event.value))
                    consumer.caught_up(event.revision)
        except (TooOld, StorageError) as exc:
            log.warning("the authorizers' views lost their watch (%s); listing again", exc)
        finally:
            if subscription is not None:
                cache.unsubscribe(subscription)
        await asyncio.sleep(_RETRY_SECONDS)
        try:
            revision = await asyncio.to_thread(load, consumers, storage)
        except StorageError as exc:
            log.warning("listing for the authorizers' views failed (%s)", exc)
