"""Which pending pods are nominated to which node: a preemptor's room, held until it binds.

Upstream: pkg/scheduler/backend/queue/nominator.go (`nominator`: nominatedPods by node, nominatedPodToNode
by pod; `AddNominatedPod` with a NominatingInfo — override with a node, override with "" to drop, or
take the pod's `status.nominatedNodeName` —, `UpdateNominatedPod` keeping an in-memory nomination when an
update races ahead of the status write, `DeleteNominatedPodIfExists`). Upstream keeps it inside the
scheduling queue; here it stands beside it, fed by the same informer handlers and by the scheduling
cycle, and read as a plain mapping (`snapshot`) by the cycle's filters (algorithm.py).

A bound pod is never nominated. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from control.api.typed.core import Pod
from control.apimachinery.meta import key_of
from control.scheduler.nodeinfo import PodInfo


def nominated_node_name(pod: Mapping[str, Any]) -> str:
    return Pod(pod).status.nominated_node_name


class Nominator:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Invariant: a key is in _node_of exactly when its PodInfo is in _by_node[_node_of[key]].
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: Mapping[str, Any], node_name: str | None = None) -> None:
        """Nominate `pod` to `node_name`; None: to its `status.nominatedNodeName` (if any); "": to none."""
        with self._lock:
            self._add(pod, node_name)

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """An informer update: the new copy replaces the old; a nomination made in memory survives an update
        that carries no nominatedNodeName yet (the status write has not arrived)."""
        with self._lock:
            node_name = None
            if not nominated_node_name(old) and not nominated_node_name(new):
                node_name = self._node_of.get(key_of(old))
            self._delete(key_of(old))
            self._add(new, node_name)

    def delete(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            self._delete(key_of(pod))

    def node_of(self, pod: Mapping[str, Any]) -> str | None:
        with self._lock:
            return self._node_of.get(key_of(pod))

    def snapshot(self) -> dict[str, tuple[PodInfo, ...]]:
        """Node name → the pods nominated to it, for one scheduling cycle."""
        with self._lock:
            return {node: tuple(pods.values()) for node, pods in self._by_node.items()}

    def _add(self, pod: Mapping[str, Any], node_name: str | None) -> None:
        key = key_of(pod)
        self._delete(key)
        if node_name is None:
            node_name = nominated_node_name(pod)
        if not node_name or Pod(pod).spec.node_name:
            return
        self._by_node.setdefault(node_name, {})[key] = PodInfo.of(pod)
        self._node_of[key] = node_name

    def _delete(self, key: str) -> None:
        node_name = self._node_of.pop(key, None)
        if node_name is None:
            return
        pods = self._by_node[node_name]
        del pods[key]
        if not pods:
            del self._by_node[node_name]
