"""The scheduling framework's plugin interfaces and the state one scheduling cycle shares among them.

Upstream: pkg/scheduler/framework/interface.go (`PreFilterPlugin`, `FilterPlugin`, `PreScorePlugin`,
`ScorePlugin` + `ScoreExtensions.NormalizeScore`, `Status` with its codes, MaxNodeScore 100) and
cycle_state.go (`CycleState`: what a PreFilter/PreScore computes once per pod for its Filter/Score to read
per node). Seed 003 shows the same shape; seed 000's predicates are Filters and its priorities Scores.

A plugin is a plain object with a `name` and the methods of the extension points it implements; the
framework asks `isinstance(plugin, FilterPlugin)` (runtime-checkable Protocols), as upstream's type
assertions do. Filters and scores are pure: they read the pod (a dict), the CycleState and a NodeInfo of the
cycle's snapshot, and return a Status or a number.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from control.scheduler.cache import Snapshot
from control.scheduler.nodeinfo import NodeInfo

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


class CycleState:
    """Data one plugin computes for the cycle of one pod, by key (upstream CycleState). `skip_filter` and
    `skip_score` hold the plugins whose PreFilter/PreScore said Skip; `snapshot` is the cycle's picture of
    the cluster (upstream's handle.SnapshotSharedLister())."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self.snapshot = snapshot if snapshot is not None else Snapshot()
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value written under `key`; KeyError if its PreFilter/PreScore did not run."""
        return self._data[key]


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status: ...


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
