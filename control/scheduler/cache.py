"""The scheduler's cache of nodes and the pods on them, fed by informers, with assumed pods.

Upstream: pkg/scheduler/backend/cache/cache.go. A pod counts on its node from the moment the scheduler
decides (`assume_pod`), before the binding reaches the API server, so the next cycle does not put a
second pod in the same room; `forget_pod` takes it back when binding fails; when the informer reports
the pod bound (`add_pod`) the assumption is confirmed and the informer's copy replaces it. `snapshot`
copies only the NodeInfos whose generation moved since the last snapshot (upstream UpdateSnapshot), so a
cycle works on a consistent picture while informers keep changing the cache.

What a snapshot costs matters at thousands of nodes (bench/scheduler.py): as upstream's cache keeps its
NodeInfos in a list ordered by last change and walks it only down to the previous snapshot's generation,
`_recent` holds node names in the order they last changed, so a snapshot visits only what changed since
the previous one. The node list (in name order) and each node's image states (which depend on every
node's images) are rebuilt only when the set of nodes or some node's images changed (`_layout`, upstream
`updateAllLists` / `isNodesUpdated`); otherwise the previous snapshot's list is copied with the changed
NodeInfos put in their places.

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

from control.api.typed.base import ViewList
from control.api.typed.core import ContainerImage, Node
from control.apimachinery.meta import key_of, name_of
from control.scheduler.nodeinfo import ImageState, NodeInfo, PodInfo, next_generation, node_images


@dataclass
class Snapshot:
    """NodeInfos of the nodes that exist, in a stable order, as one scheduling cycle sees them (upstream
    cache.Snapshot). `generation`: the largest NodeInfo generation copied in."""

    node_infos: dict[str, NodeInfo] = field(default_factory=dict)
    node_list: list[NodeInfo] = field(default_factory=list)
    generation: int = 0
    layout: int = -1  # the cache's `_layout` the node list and image states were built at (-1: not by a cache)
    positions: dict[str, int] = field(default_factory=dict)  # node name → index in node_list

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
    sizes = [node_images(info.node) for info in infos]
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
        # Every name in _nodes, the one changed last at the end (a NodeInfo's generation only grows, so the
        # generations along this order increase).
        self._recent: dict[str, None] = {}
        self._layout = 0  # bumped when a node appears or goes, or a node's images change

    def _touched(self, name: str) -> None:
        self._recent.pop(name, None)
        self._recent[name] = None

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
        self._touched(node_name)

    def _remove(self, key: str) -> None:
        node_name = self._pod_nodes.pop(key, None)
        if node_name is None:
            return
        info = self._nodes[node_name]
        info.remove_pod(key)
        if info.node is None and not info.pods:
            del self._nodes[node_name]
            self._recent.pop(node_name, None)
        else:
            self._touched(node_name)

    # -- nodes -------------------------------------------------------------------------------------------

    def add_node(self, node: Mapping[str, Any]) -> None:
        name = name_of(node)
        with self._lock:
            info = self._nodes.setdefault(name, NodeInfo())
            if info.node is None or _images(info.node) != _images(node):
                self._layout += 1
            info.set_node(node)
            self._touched(name)

    update_node = add_node

    def remove_node(self, node: Mapping[str, Any]) -> None:
        """Forget the Node; pods still counted on it keep a NodeInfo without a node until they go."""
        with self._lock:
            info = self._nodes.get(name_of(node))
            if info is None:
                return
            self._layout += 1
            if info.pods:
                info.node = None
                info.generation = next_generation()
                self._touched(name_of(node))
            else:
                del self._nodes[name_of(node)]
                self._recent.pop(name_of(node), None)

    # -- reading -------------------------------------------------------------------------------------------

    def node_count(self) -> int:
        with self._lock:
            return sum(1 for info in self._nodes.values() if info.node is not None)

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pod_nodes)

    def snapshot(self, previous: Snapshot | None = None) -> Snapshot:
        """A Snapshot of the nodes that exist, reusing `previous`'s copies of NodeInfos that did not change
        (module notes); `previous` itself is left as it was."""
        with self._lock:
            if previous is None or previous.layout != self._layout:
                return self._full_snapshot(previous)
            infos = dict(previous.node_infos)
            node_list = list(previous.node_list)
            generation = previous.generation
            for name in reversed(self._recent):
                info = self._nodes[name]
                if info.generation <= previous.generation:
                    break
                copy = info.clone()
                copy.image_states = infos[name].image_states  # no node's images changed (same layout)
                infos[name] = copy
                node_list[previous.positions[name]] = copy
                generation = max(generation, info.generation)
            return Snapshot(infos, node_list, generation, self._layout, previous.positions)

    def _full_snapshot(self, previous: Snapshot | None) -> Snapshot:
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
        node_list = list(infos.values())
        _fill_image_states(node_list)
        return Snapshot(infos, node_list, generation, self._layout,
                        {info.name: index for index, info in enumerate(node_list)})


def _images(node: Mapping[str, Any]) -> ViewList[ContainerImage]:
    return Node(node).status.images

