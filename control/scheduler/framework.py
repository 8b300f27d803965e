"""The scheduling framework's plugin interfaces and the state one scheduling cycle shares among them.

Upstream: pkg/scheduler/framework/interface.go (`PreFilterPlugin` + `PreFilterExtensions` AddPod/RemovePod,
`FilterPlugin`, `PostFilterPlugin` + `PostFilterResult`, `PreScorePlugin`, `ScorePlugin` +
`ScoreExtensions.NormalizeScore`, `Status` with its codes, MaxNodeScore 100, the part of `Handle` a
PostFilter uses), types.go (`FitError.Error()`'s message) and cycle_state.go (`CycleState`: what a
PreFilter/PreScore computes once per pod for its Filter/Score to read per node). The old
predicates are Filters and the old priorities Scores.

`Listers` is the narrow part of upstream's `Handle.SharedInformerFactory()` the plugins read: the
workload objects that select a pod (Services, ReplicationControllers, ReplicaSets, StatefulSets, for
PodTopologySpread's default constraints and SelectorSpread), namespaces (InterPodAffinity's
namespaceSelector), PodDisruptionBudgets (DefaultPreemption) and PersistentVolumeClaims, PersistentVolumes and
StorageClasses (VolumeBinding). The scheduler fills it from its informers'
caches; the cycle reaches it through `CycleState.listers`, so a plugin stays a plain object built from its
args alone.

A plugin is a plain object with a `name` and the methods of the extension points it implements; the
framework asks `isinstance(plugin, FilterPlugin)` (runtime-checkable Protocols), as upstream's type
assertions do. Filters and scores are pure: they read the pod (a dict), the CycleState and a NodeInfo of the
cycle's snapshot, and return a Status or a number. A PostFilter (DefaultPreemption) decides too and acts
not: what it wants done (victims to evict, nominations to clear, the pod's nominated node) comes back in
its PostFilterResult, and the scheduler loop carries it out.
"""

from __future__ import annotations

import enum
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from control.api.typed.core import Namespace
from control.api.typed.meta import TypedObject
from control.apimachinery.labels import Selector, parse_selector
from control.scheduler.cache import Snapshot
from control.scheduler.nodeinfo import NodeInfo, PodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

Pod = Mapping[str, Any]


class Code(enum.Enum):
    """Upstream framework.Code (Wait, Pending are not used here)."""

    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"  # preemption might help
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"  # nothing on this node can help
    SKIP = "Skip"  # from PreFilter/PreScore: this plugin has nothing to do for this pod


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        return ", ".join(self.reasons)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    return Status(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def fit_error_message(num_all_nodes: int, node_statuses: Mapping[str, Status], *, pre_filter_message: str = "",
                      post_filter_message: str = "") -> str:
    """Upstream FitError.Error(): "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's
    node affinity/selector." — each distinct reason with how many nodes gave it, sorted as strings (or the
    PreFilter's message instead), then what the PostFilter said."""
    if num_all_nodes == 0:
        return NO_NODES_AVAILABLE
    text = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_message:
        text += f" {pre_filter_message}."
    else:
        histogram = Counter(reason for status in node_statuses.values() for reason in status.reasons)
        reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
        if reasons:
            text += f" {', '.join(reasons)}."
    if post_filter_message:
        text += f" {post_filter_message}"
    return text


class ObjectLister(Protocol):
    """Read access to one informer's cache (control.client.store.Lister has it). Returned objects are
    shared: read them, never change them."""

    def list(self, namespace: str | None = None,
             label_selector: str | Selector | None = None) -> Sequence[Mapping[str, Any]]: ...

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None: ...


class _NoObjects:
    """The lister of a cluster without such objects (the default, and what tests need most)."""

    def list(self, namespace: str | None = None,
             label_selector: str | Selector | None = None) -> Sequence[Mapping[str, Any]]:
        return ()

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return None


NO_OBJECTS = _NoObjects()


class StaticLister:
    """An ObjectLister over a fixed list of objects (tests and benchmarks)."""

    def __init__(self, objects: Sequence[Mapping[str, Any]] = ()) -> None:
        self._objects = [dict(obj) for obj in objects]

    def list(self, namespace: str | None = None,
             label_selector: str | Selector | None = None) -> Sequence[Mapping[str, Any]]:
        selector = parse_selector(label_selector) if isinstance(label_selector, str) else label_selector
        return [obj for obj in self._objects
                if (namespace is None or TypedObject(obj).metadata.namespace == namespace)
                and (selector is None or selector.matches(TypedObject(obj).metadata.labels))]

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return next((obj for obj in self._objects if TypedObject(obj).metadata.name == name
                     and (TypedObject(obj).metadata.namespace or None) == (namespace or None)), None)


@dataclass(frozen=True)
class Listers:
    """The informer caches plugins may read (module notes); `namespaces` is cluster-scoped,
    `pod_disruption_budgets` policy/v1."""

    services: ObjectLister = NO_OBJECTS
    replication_controllers: ObjectLister = NO_OBJECTS
    replica_sets: ObjectLister = NO_OBJECTS
    stateful_sets: ObjectLister = NO_OBJECTS
    namespaces: ObjectLister = NO_OBJECTS
    pod_disruption_budgets: ObjectLister = NO_OBJECTS
    persistent_volume_claims: ObjectLister = NO_OBJECTS
    persistent_volumes: ObjectLister = NO_OBJECTS  # cluster-scoped
    storage_classes: ObjectLister = NO_OBJECTS  # cluster-scoped, storage.k8s.io/v1

    def namespace_labels(self, name: str) -> dict[str, str]:
        """Upstream GetNamespaceLabelsSnapshot: the namespace's labels, none if it is not in the cache."""
        namespace = self.namespaces.get(None, name) or {}
        return dict(Namespace(namespace).metadata.labels)


class CycleState:
    """Data one plugin computes for the cycle of one pod, by key (upstream CycleState). `skip_filter` and
    `skip_score` hold the plugins whose PreFilter/PreScore said Skip; `snapshot` is the cycle's picture of
    the cluster (upstream's handle.SnapshotSharedLister()); `listers` the informer caches (module notes)."""

    def __init__(self, snapshot: Snapshot | None = None, listers: Listers | None = None) -> None:
        self.snapshot = snapshot if snapshot is not None else Snapshot()
        self.listers = listers if listers is not None else Listers()
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value written under `key`; KeyError if its PreFilter/PreScore did not run."""
        return self._data[key]

    def clone(self) -> CycleState:
        """A copy preemption may change (upstream CycleState.Clone): a value with a `clone()` method — the
        state a PreFilterExtensions' add_pod/remove_pod changes in place — is cloned, others are shared."""
        copy = CycleState(self.snapshot, self.listers)
        copy._data = {key: value.clone() if hasattr(value, "clone") else value for key, value in self._data.items()}
        copy.skip_filter = set(self.skip_filter)
        copy.skip_score = set(self.skip_score)
        return copy


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """A PreFilter whose cycle state depends on the pods of a node (InterPodAffinity, PodTopologySpread)
    updates it when preemption or the nominated pods add or remove a pod (upstream PreFilterExtensions)."""

    name: str

    def add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo, node: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter wants done (upstream PostFilterResult's NominatingInfo, plus the preemption the
    upstream plugin performs itself): `nominated_node_name` None leaves the pod's nomination as it is, ""
    clears it; `victims` are evicted for the pod; `clear_nominations` are lower-priority pods nominated to
    that node, which lose their nomination."""

    nominated_node_name: str | None = None
    victims: tuple[Pod, ...] = ()
    clear_nominations: tuple[Pod, ...] = ()


class Handle(Protocol):
    """What of the framework a PostFilter uses (upstream framework.Handle): the cycle's snapshot, the
    filters as the cycle runs them (with the nominated pods), the PreFilter extensions, the nominated
    pods and a random source."""

    snapshot: Snapshot
    rng: random.Random

    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo,
                                         node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo,
                                            node: NodeInfo) -> Status: ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    """Runs when a pod fits nowhere, with every node's rejecting Status (upstream PostFilterPlugin)."""

    name: str

    def post_filter(self, state: CycleState, pod: Pod, statuses: Mapping[str, Status],
                    handle: Handle) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int: ...

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        """Map the raw scores (node name → score, changed in place) to 0-100; most plugins leave them."""
        ...


def default_normalize_score(scores: dict[str, int], *, reverse: bool) -> None:
    """Scale to 0-100 by the largest score, reversed if asked (upstream helper.DefaultNormalizeScore)."""
    highest = max(scores.values(), default=0)
    for name, score in scores.items():
        if highest == 0:
            scores[name] = MAX_NODE_SCORE if reverse else score
            continue
        scaled = MAX_NODE_SCORE * score // highest
        scores[name] = MAX_NODE_SCORE - scaled if reverse else scaled
