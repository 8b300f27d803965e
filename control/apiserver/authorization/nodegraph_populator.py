"""Keeps the Node authorizer's graph current from the API server's own watch cache (upstream:
plugin/pkg/auth/authorizer/node/graph_populator.go, which does it with informers on pods, PVs and
VolumeAttachments inside the kube-apiserver).

`load` lists the three kinds at one revision into a cleared graph; `follow` applies every later change from
a watch-cache subscription, one object at a time. A subscription the cache closes (it fell behind, or the
cache restarted after compaction) is replaced by a fresh list, as an informer relists. Changes are applied
on the event loop: each is a few dict operations.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from control.apiserver.authorization.nodegraph import NodeGraph
from control.apiserver.storage.watchcache import Subscription, TooOld, WatchCache
from control.storage.interface import Event, EventType, Storage, StorageError

log = logging.getLogger(__name__)

PODS, PVS, ATTACHMENTS = "/registry/pods/", "/registry/persistentvolumes/", "/registry/volumeattachments/"
_RETRY_SECONDS = 1.0


def _decoded(value: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(value)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def apply(graph: NodeGraph, key: str, obj: dict[str, Any] | None) -> None:
    """One object's state (None: gone) into the graph; keys of other kinds are ignored."""
    if key.startswith(PODS):
        namespace, _, name = key[len(PODS):].partition("/")
        graph.set_pod(namespace, name, obj)
    elif key.startswith(PVS):
        graph.set_pv(key[len(PVS):], obj)
    elif key.startswith(ATTACHMENTS):
        graph.set_attachment(key[len(ATTACHMENTS):], obj)


def apply_event(graph: NodeGraph, event: Event) -> None:
    apply(graph, event.key, None if event.type is EventType.DELETED else _decoded(event.value))


def load(graph: NodeGraph, storage: Storage) -> int:
    """Clear the graph and fill it with the stored pods, PVs and VolumeAttachments, all read at one
    revision; returns that revision (blocking)."""
    revision = storage.revision()
    graph.clear()
    for prefix in (PODS, PVS, ATTACHMENTS):
        for record in storage.list(prefix, revision=revision).records:
            apply(graph, record.key, _decoded(record.value))
    return revision


async def follow(graph: NodeGraph, storage: Storage, cache: WatchCache, revision: int) -> None:
    """Run until cancelled: follow the cache from `revision` (what `load` returned); list again and follow
    anew whenever the subscription ends."""
    while True:
        subscription: Subscription | None = None
        try:
            subscription = await cache.subscribe_from("/registry/", revision)
            while not subscription.closed:
                event = await subscription.next(timeout=30.0)
                if event is not None:
                    apply_event(graph, event)
        except (TooOld, StorageError) as exc:
            log.warning("the node authorizer's graph lost its watch (%s); listing again", exc)
        finally:
            if subscription is not None:
                cache.unsubscribe(subscription)
        await asyncio.sleep(_RETRY_SECONDS)
        try:
            revision = await asyncio.to_thread(load, graph, storage)
        except StorageError as exc:
            log.warning("listing for the node authorizer's graph failed (%s)", exc)
