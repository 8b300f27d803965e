"""One scheduling decision, pure: a pod, a snapshot of the cluster and a profile in, a node (or why none)
out. No I/O, no clock; randomness only through the `rng` passed in.

Upstream: pkg/scheduler/schedule_one.go `schedulePod` → `findNodesThatFitPod` (PreFilter once; Filter per
node, plugins in order, stopping at the first that rejects, and stopping the search once
`numFeasibleNodesToFind` nodes fit, starting where the previous cycle stopped so every node gets its turn)
→ `prioritizeNodes` (PreScore once; Score per feasible node per plugin; NormalizeScore; times the
plugin's weight; summed) → `selectHost` (the highest total, ties broken at random by reservoir sampling:
the k-th node with the best score so far replaces the pick with probability 1/k). One feasible node is
taken without scoring. Seed 000 is the same with predicates and priorities.

`FitError.message()` is upstream's FitError.Error(): "0/3 nodes are available: 1 Insufficient cpu, 2
node(s) didn't match Pod's node affinity/selector." — each distinct reason with how many nodes gave it,
sorted as strings.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState, Pod, Status
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.profile import Profile, num_feasible_nodes_to_find

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(frozen=True)
class FitError:
    """Why no node fits: each node's rejecting Status (upstream FitError + Diagnosis)."""

    num_all_nodes: int
    node_statuses: Mapping[str, Status] = field(default_factory=dict)
    pre_filter_message: str = ""

    def message(self) -> str:
        if self.num_all_nodes == 0:
            return NO_NODES_AVAILABLE
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_message:
            text += f" {self.pre_filter_message}."
        histogram = Counter(reason for status in self.node_statuses.values() for reason in status.reasons)
        reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
        if reasons:
            text += f" {', '.join(reasons)}."
        return text

    @property
    def reasons(self) -> frozenset[str]:
        return frozenset(reason for status in self.node_statuses.values() for reason in status.reasons)


class SchedulingError(Exception):
    """A plugin returned Error (upstream: the cycle fails with an error, the pod is retried with backoff)."""


@dataclass(frozen=True)
class ScheduleResult:
    """The decision: `node` or `fit_error`; how many nodes were filtered and found feasible; the total score
    of each scored node (empty when one node was feasible)."""

    node: str | None
    evaluated_nodes: int
    feasible_nodes: int
    fit_error: FitError | None = None
    scores: Mapping[str, int] = field(default_factory=dict)


def _run_filters(profile: Profile, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
    for plugin in profile.filter:
        if plugin.name in state.skip_filter:
            continue
        status = plugin.filter(state, pod, node)
        if status.code is Code.ERROR:
            raise SchedulingError(f"running {plugin.name!r} filter plugin: {status.message()}")
        if not status.is_success:
            return Status(status.code, status.reasons, plugin.name)
    return Status()


def find_feasible(pod: Pod, snapshot: Snapshot, profile: Profile, state: CycleState, *,
                  start_index: int = 0) -> tuple[list[NodeInfo], dict[str, Status], int]:
    """PreFilter, then Filter from `start_index` round the node list until enough nodes fit: (feasible nodes,
    statuses of the rejected ones, how many nodes were evaluated)."""
    nodes = snapshot.node_list
    for pre_filter in profile.pre_filter:
        status = pre_filter.pre_filter(state, pod, snapshot)
        if status.code is Code.SKIP:
            state.skip_filter.add(pre_filter.name)
        elif status.code is Code.ERROR:
            raise SchedulingError(f"running PreFilter plugin {pre_filter.name!r}: {status.message()}")
        elif not status.is_success:
            rejected = Status(status.code, status.reasons, pre_filter.name)
            return [], {node.name: rejected for node in nodes}, 0
    wanted = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, len(nodes))
    feasible: list[NodeInfo] = []
    rejected_statuses: dict[str, Status] = {}
    evaluated = 0
    for offset in range(len(nodes)):
        if len(feasible) >= wanted:
            break
        node = nodes[(start_index + offset) % len(nodes)]
        evaluated += 1
        status = _run_filters(profile, state, pod, node)
        if status.is_success:
            feasible.append(node)
        else:
            rejected_statuses[node.name] = status
    return feasible, rejected_statuses, evaluated


def prioritize(pod: Pod, nodes: list[NodeInfo], profile: Profile, state: CycleState) -> dict[str, int]:
    """Weighted sum of the normalised scores of every score plugin, by node name."""
    for pre_score in profile.pre_score:
        status = pre_score.pre_score(state, pod, nodes)
        if status.code is Code.SKIP:
            state.skip_score.add(pre_score.name)
        elif not status.is_success:
            raise SchedulingError(f"running PreScore plugin {pre_score.name!r}: {status.message()}")
    totals = {node.name: 0 for node in nodes}
    for plugin, weight in profile.score:
        if plugin.name in state.skip_score:
            continue
        scores = {node.name: plugin.score(state, pod, node) for node in nodes}
        plugin.normalize_scores(state, pod, scores)
        for name, score in scores.items():
            totals[name] += score * weight
    return totals


def select_host(nodes: list[NodeInfo], totals: Mapping[str, int], rng: random.Random) -> str:
    """The node with the highest total; among equals each is equally likely (reservoir sampling)."""
    selected = nodes[0].name
    best = totals[selected]
    ties = 1
    for node in nodes[1:]:
        score = totals[node.name]
        if score > best:
            selected, best, ties = node.name, score, 1
        elif score == best:
            ties += 1
            if rng.randrange(ties) == 0:
                selected = node.name
    return selected


def schedule_one(pod: Pod, snapshot: Snapshot, profile: Profile, rng: random.Random, *,
                 start_index: int = 0) -> ScheduleResult:
    """Where `pod` goes (module notes). Raises SchedulingError when a plugin fails with an error."""
    if not snapshot.node_list:
        return ScheduleResult(None, 0, 0, FitError(0))
    state = CycleState(snapshot)
    feasible, rejected, evaluated = find_feasible(pod, snapshot, profile, state, start_index=start_index)
    if not feasible:
        return ScheduleResult(None, evaluated, 0, FitError(len(snapshot.node_list), rejected))
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    totals = prioritize(pod, feasible, profile, state)
    return ScheduleResult(select_host(feasible, totals, rng), evaluated, len(feasible), scores=totals)
