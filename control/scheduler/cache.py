"""The scheduler's cache of nodes and the pods on them, fed by informers, with assumed pods.

Upstream: pkg/scheduler/backend/cache/cache.go. A pod counts on its node from the moment the scheduler
decides (`assume_pod`), before the binding reaches the API server, so the next cycle does not put a
second pod in the same room; `forget_pod` takes it back when binding fails; when the informer reports
the pod bound (`add_pod`) the assumption is confirmed and the informer's copy replaces it. `snapshot`
copies only the NodeInfos whose generation moved since the last snapshot (upstream UpdateSnapshot), so a
cycle works on a consistent picture while informers keep changing the cache.

State of a pod (upstream's comment on the cache): Initial → Assumed (assume) → Added (informer add; the
assumption is confirmed) → Deleted; Assumed → Initial (forget). A pod the informer reports on another
node than assumed is moved there. Upstream expires assumed pods after a TTL once binding finished; with
its current default (0: never) there is nothing to expire, so neither is there here.

Thread-safe: informer handler threads and the scheduling loop call in under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from control.apimachinery.meta import key_of, name_of
from control.scheduler.nodeinfo import ImageState, NodeInfo, PodInfo, next_generation, node_images


@dataclass
class Snapshot:
    """NodeInfos of the nodes that exist, in a stable order, as one scheduling cycle sees them (upstream
    cache.Snapshot). `generation`: the largest NodeInfo generation copied in."""

    node_infos: dict[str, NodeInfo] = field(default_factory=dict)
    node_list: list[NodeInfo] = field(default_factory=list)
    generation: int = 0

    @classmethod
    def of(cls, *infos: NodeInfo) -> Snapshot:
        """A snapshot of the given NodeInfos (tests and benchmarks), image states filled in."""
        snapshot = cls({info.name: info for info in infos}, list(infos))
        _fill_image_states(snapshot.node_list)
        return snapshot

    def get(self, name: str) -> NodeInfo | None:
        return self.node_infos.get(name)


def _fill_image_states(infos: list[NodeInfo]) -> None:
    counts: dict[str, int] = {}
    sizes = [node_images(info.node or {}) for info in infos]
    for images in sizes:
        for name in images:
            counts[name] = counts.get(name, 0) + 1
    for info, images in zip(infos, sizes, strict=True):
        info.image_states = {name: ImageState(size, counts[name]) for name, size in images.items()}


class SchedulerCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeInfo] = {}
        self._pod_nodes: dict[str, str] = {}  # pod key → node it counts on
        self._assumed: set[str] = set()  # keys of assumed pods not yet confirmed by the informer

    # -- pods --------------------------------------------------------------------------------------------

    def assume_pod(self, pod: Mapping[str, Any], node_name: str) -> None:
        """Count `pod` (not yet bound) on `node_name`; ValueError if the cache already has it."""
        key = key_of(pod)
        with self._lock:
            if key in self._pod_nodes:
                raise ValueError(f"pod {key} is in the cache, so can't be assumed")
            bound = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node_name}}
            self._add(key, bound, node_name)
            self._assumed.add(key)

    def forget_pod(self, pod: Mapping[str, Any]) -> None:
        """Undo `assume_pod` (binding failed). A pod the informer has meanwhile confirmed stays."""
        key = key_of(pod)
        with self._lock:
            if key in self._assumed:
                self._assumed.discard(key)
                self._remove(key)

    def is_assumed(self, pod: Mapping[str, Any]) -> bool:
        with self._lock:
            return key_of(pod) in self._assumed

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """The informer saw `pod` bound (spec.nodeName set): confirm an assumption, or add it."""
        key = key_of(pod)
        with self._lock:
            self._assumed.discard(key)
            self._remove(key)
            self._add(key, pod, pod["spec"]["nodeName"])

    update_pod = add_pod  # the informer's newer copy replaces the old one (on its node, which may have moved)

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        key = key_of(pod)
        with self._lock:
            self._assumed.discard(key)
            self._remove(key)

    def _add(self, key: str, pod: Mapping[str, Any], node_name: str) -> None:
        self._nodes.setdefault(node_name, NodeInfo()).add_pod(PodInfo.of(pod))
        self._pod_nodes[key] = node_name

    def _remove(self, key: str) -> None:
        node_name = self._pod_nodes.pop(key, None)
        if node_name is None:
            return
        info = self._nodes[node_name]
        info.remove_pod(key)
        if info.node is None and not info.pods:
            del self._nodes[node_name]

    # -- nodes -------------------------------------------------------------------------------------------

    def add_node(self, node: Mapping[str, Any]) -> None:
        with self._lock:
            self._nodes.setdefault(name_of(node), NodeInfo()).set_node(node)

    update_node = add_node

    def remove_node(self, node: Mapping[str, Any]) -> None:
        """Forget the Node; pods still counted on it keep a NodeInfo without a node until they go."""
        with self._lock:
            info = self._nodes.get(name_of(node))
            if info is None:
                return
            if info.pods:
                info.node = None
                info.generation = next_generation()
            else:
                del self._nodes[name_of(node)]

    # -- reading -------------------------------------------------------------------------------------------

    def node_count(self) -> int:
        with self._lock:
            return sum(1 for info in self._nodes.values() if info.node is not None)

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pod_nodes)

    def snapshot(self, previous: Snapshot | None = None) -> Snapshot:
        """A Snapshot of the nodes that exist, reusing `previous`'s copies of NodeInfos that did not change."""
        with self._lock:
            old = previous.node_infos if previous is not None else {}
            infos: dict[str, NodeInfo] = {}
            generation = previous.generation if previous is not None else 0
            for name in sorted(self._nodes):
                info = self._nodes[name]
                if info.node is None:
                    continue
                kept = old.get(name)
                infos[name] = kept if kept is not None and kept.generation == info.generation else info.clone()
                generation = max(generation, info.generation)
        snapshot = Snapshot(infos, list(infos.values()), generation)
        _fill_image_states(snapshot.node_list)
        return snapshot
