"""What the scheduler knows of one node: the Node and the pods on it, with their sums kept up to date as pods
come and go, so a filter or score reads totals instead of walking pods.

Upstream: pkg/scheduler/framework/types.go (`NodeInfo`: Requested, NonZeroRequested, Allocatable,
UsedPorts, ImageStates, Generation; `AddPod`/`RemovePod` update them incrementally) and
`ImageStateSummary` (an image's size and on how many nodes it is, for ImageLocality's spread).
A NodeInfo in the cache is changed in place; the scheduling cycle works on `clone()`s (the snapshot).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from control.api.typed.core import Node, Pod
from control.apimachinery.meta import key_of
from control.scheduler.affinityterms import PodAffinityTerms, pod_affinity_terms
from control.scheduler.resources import Resource, host_ports, pod_requests, resource_from_list

_generations = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing number: a NodeInfo changed later has a larger one (upstream nextGeneration)."""
    return next(_generations)


@dataclass(frozen=True)
class ImageState:
    """An image on a node: its size, and on how many nodes of the cluster it is (upstream ImageStateSummary)."""

    size: int
    num_nodes: int


@dataclass(frozen=True)
class PodInfo:
    """A pod with its requests and inter-pod affinity terms computed once (upstream framework.PodInfo)."""

    pod: Mapping[str, Any]
    requests: Resource
    non_zero: Resource
    ports: tuple[tuple[str, str, int], ...]
    affinity: PodAffinityTerms = PodAffinityTerms()

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodInfo:
        return cls(pod, pod_requests(pod), pod_requests(pod, non_zero=True), tuple(host_ports(pod)),
                   pod_affinity_terms(pod))

    @property
    def key(self) -> str:
        return key_of(self.pod)

    @cached_property
    def selector_key(self) -> tuple[str, frozenset[tuple[str, str]]] | None:
        """(namespace, labels) as one hashable value, for counting pods by label selector: pods of one
        controller share it, so a count matches the selector once per distinct label set. None while the
        pod is terminating, which such counts leave out."""
        metadata = Pod(self.pod).metadata
        if metadata.deletion_timestamp:
            return None
        return metadata.namespace, frozenset(metadata.labels.items())


@dataclass(frozen=True)
class NodeFacts:
    """What the plugins read of one Node object, kept beside it (`node` is that object, compared by identity)."""

    node: Mapping[str, Any] | None
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    unschedulable: bool

    @classmethod
    def of(cls, node: Mapping[str, Any] | None) -> NodeFacts:
        view = Node(node)
        return cls(node, view.metadata.labels, tuple(t.raw for t in view.spec.taints), view.spec.unschedulable)


@dataclass
class NodeInfo:
    node: Mapping[str, Any] | None = None  # None: pods are known on a node the informer has not (or no longer) seen
    pods: dict[str, PodInfo] = field(default_factory=dict)  # by namespace/name
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    allocatable: Resource = field(default_factory=Resource)
    used_ports: set[tuple[str, str, int]] = field(default_factory=set)
    image_states: dict[str, ImageState] = field(default_factory=dict)  # by image name, set by the snapshot
    generation: int = field(default_factory=next_generation)
    # how many of `pods` have pod (anti-)affinity / required anti-affinity, so nodes without skip the scan
    num_with_affinity: int = 0
    num_with_required_anti_affinity: int = 0
    name: str = ""  # the Node's name, kept from set_node (read per node per plugin: not parsed each time)
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)
    _memo_generation: int = field(default=0, repr=False, compare=False)
    _facts: NodeFacts | None = field(default=None, repr=False, compare=False)

    def memo(self) -> dict[Hashable, Any]:
        """Values plugins derive from this node's pods, kept while the node does not change: its generation
        changes with every pod added or removed, so a snapshot node no pod came to since the last cycle
        answers from here instead of walking its pods again."""
        if self._memo_generation != self.generation:
            self._memo, self._memo_generation = {}, self.generation
        return self._memo

    @property
    def labels(self) -> Mapping[str, str]:
        return self.facts.labels

    @property
    def facts(self) -> NodeFacts:
        """The Node's fields filters and scores read per node per cycle, read through the typed view once per
        Node object (a view per read made the 1,000-node scheduling bench ~25% slower)."""
        facts = self._facts
        if facts is None or facts.node is not self.node:
            facts = self._facts = NodeFacts.of(self.node)
        return facts

    def pods_with_affinity(self) -> list[PodInfo]:
        """Upstream NodeInfo.PodsWithAffinity: pods with pod affinity or anti-affinity."""
        if not self.num_with_affinity:
            return []
        return [info for info in self.pods.values() if info.affinity.has_affinity]

    def pods_with_required_anti_affinity(self) -> list[PodInfo]:
        """Upstream NodeInfo.PodsWithRequiredAntiAffinity."""
        if not self.num_with_required_anti_affinity:
            return []
        return [info for info in self.pods.values() if info.affinity.required_anti_affinity]

    def _count_affinity(self, info: PodInfo, value: int) -> None:
        self.num_with_affinity += value if info.affinity.has_affinity else 0
        self.num_with_required_anti_affinity += value if info.affinity.required_anti_affinity else 0

    def set_node(self, node: Mapping[str, Any]) -> None:
        self.node = node
        self.name = Node(node).metadata.name
        self.allocatable = resource_from_list(Node(node).status.allocatable)
        self.generation = next_generation()

    def add_pod(self, info: PodInfo) -> None:
        replaced = self.pods.get(info.key)
        if replaced is not None:
            self._count_affinity(replaced, -1)
        self.pods[info.key] = info
        self._count_affinity(info, 1)
        self.requested.add(info.requests)
        self.non_zero_requested.add(info.non_zero)
        self.used_ports.update(info.ports)
        self.generation = next_generation()

    def remove_pod(self, key: str) -> bool:
        info = self.pods.pop(key, None)
        if info is None:
            return False
        self._count_affinity(info, -1)
        self.requested.add(info.requests, -1)
        self.non_zero_requested.add(info.non_zero, -1)
        self.used_ports.difference_update(info.ports)
        for other in self.pods.values():  # two pods may (wrongly) share a port: keep what the others hold
            self.used_ports.update(other.ports)
        self.generation = next_generation()
        return True

    def clone(self) -> NodeInfo:
        return NodeInfo(self.node, dict(self.pods), self.requested.copy(), self.non_zero_requested.copy(),
                        self.allocatable.copy(), set(self.used_ports), dict(self.image_states), self.generation,
                        self.num_with_affinity, self.num_with_required_anti_affinity, self.name,
                        _facts=self._facts)  # the same Node object: its facts carry over


def node_images(node: Mapping[str, Any] | None) -> dict[str, int]:
    """Image name → size in bytes from `status.images` (every name of each image)."""
    sizes = {}
    for image in Node(node).status.images:
        for name in image.names:
            sizes[name] = int(image.size_bytes)
    return sizes


def node_info(node: Mapping[str, Any] | None, *pods: Mapping[str, Any]) -> NodeInfo:
    """A NodeInfo of `node` holding `pods` (tests and the snapshot build them so)."""
    info = NodeInfo()
    if node is not None:
        info.set_node(node)
    for pod in pods:
        info.add_pod(PodInfo.of(pod))
    return info
