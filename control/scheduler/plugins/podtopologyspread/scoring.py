"""PodTopologySpread's soft constraints (whenUnsatisfiable: ScheduleAnyway, and the default constraints):
a node scores the matching pods of its domains, weighted so that a topology with many domains does not
drown one with few, and NormalizeScore turns "fewer is better" into 0-100.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/scoring.go:
- PreScore (`initPreScoreState`): the domains are those of the feasible nodes; a node missing a topology
  key is ignored (scored 0) unless only the system defaults apply, so nodes without a zone label still
  spread by hostname; each constraint's weight is `log(size + 2)` with size the number of its domains
  (the number of feasible, not ignored nodes for kubernetes.io/hostname). Pods are counted over all
  nodes of the snapshot (hostname domains are counted per node in Score).
- Score: `Σ count · weight + (maxSkew - 1)`, rounded.
- NormalizeScore: ignored nodes 0; if the highest score is 0 every node gets 100; else
  `100 · (max + min - score) / max` (integer division).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from control.api.typed.core import Pod as PodView
from control.scheduler.framework import MAX_NODE_SCORE, Pod
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    Constraint,
    count_node_pods_match_selector,
    node_labels,
    node_labels_match_spread_constraints,
)

_INVALID_SCORE = -1


@dataclass
class PreScoreState:
    """What Score and NormalizeScore read (upstream preScoreState): per constraint the matching pods by
    topology value (hostname ones are counted in Score) and the normalizing weight; the ignored nodes."""

    constraints: tuple[Constraint, ...] = ()
    ignored_nodes: set[str] = field(default_factory=set)
    topology_value_to_pod_counts: list[dict[str, int]] = field(default_factory=list)
    topology_normalizing_weight: list[float] = field(default_factory=list)


def topology_normalizing_weight(size: int) -> float:
    """log(size + 2): in [1.09, 8.52] for 1 to 5000 domains."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """`maxSkew - 1` waters down the differences between domains: the larger the allowed skew, the
    less a difference counts."""
    return count * weight + (max_skew - 1)


def cal_pre_score_state(pod: Pod, constraints: Sequence[Constraint], filtered: Sequence[NodeInfo],
                        all_nodes: Sequence[NodeInfo], *, require_all_topologies: bool) -> PreScoreState:
    """Upstream initPreScoreState + the counting loop of PreScore."""
    state = PreScoreState(tuple(constraints))
    if not constraints:
        return state
    state.topology_value_to_pod_counts = [{} for _ in constraints]
    for info in filtered:
        labels_of_node = node_labels(info.node)
        if require_all_topologies and not node_labels_match_spread_constraints(labels_of_node, constraints):
            state.ignored_nodes.add(info.name)
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key == LABEL_HOSTNAME:
                continue
            state.topology_value_to_pod_counts[index].setdefault(labels_of_node.get(constraint.topology_key, ""), 0)
    for index, constraint in enumerate(constraints):
        size = len(state.topology_value_to_pod_counts[index])
        if constraint.topology_key == LABEL_HOSTNAME:
            size = len(filtered) - len(state.ignored_nodes)
        state.topology_normalizing_weight.append(topology_normalizing_weight(size))
    namespace = PodView(pod).metadata.namespace
    for info in all_nodes:
        node = info.node
        if node is None:
            continue
        labels_of_node = node_labels(node)
        if require_all_topologies and not node_labels_match_spread_constraints(labels_of_node, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not constraint.matches_node_inclusion_policies(pod, node):
                continue
            counts = state.topology_value_to_pod_counts[index]
            value = labels_of_node.get(constraint.topology_key, "")
            if value not in counts:  # no candidate node in that domain (or a hostname domain: Score counts it)
                continue
            counts[value] += count_node_pods_match_selector(info, constraint.selector, namespace)
    return state


def score_node(state: PreScoreState, pod: Pod, node: NodeInfo) -> int:
    """The node's weighted count of matching pods in its domains (upstream Score)."""
    if node.name in state.ignored_nodes:
        return 0
    labels_of_node = node_labels(node.node)
    namespace = PodView(pod).metadata.namespace
    score = 0.0
    for index, constraint in enumerate(state.constraints):
        value = labels_of_node.get(constraint.topology_key)
        if value is None:
            continue
        if constraint.topology_key == LABEL_HOSTNAME:
            count = count_node_pods_match_selector(node, constraint.selector, namespace)
        else:
            count = state.topology_value_to_pod_counts[index].get(value, 0)
        score += score_for_count(count, constraint.max_skew, state.topology_normalizing_weight[index])
    return math.floor(score + 0.5)  # Go's math.Round: halves away from zero (scores are not negative)


def normalize_scores(state: PreScoreState, scores: dict[str, int]) -> None:
    """Upstream NormalizeScore (module notes), in place."""
    lowest: int | None = None
    highest = 0
    for name, score in scores.items():
        if name in state.ignored_nodes:
            scores[name] = _INVALID_SCORE
            continue
        lowest = score if lowest is None else min(lowest, score)
        highest = max(highest, score)
    for name, score in scores.items():
        if score == _INVALID_SCORE:
            scores[name] = 0
        elif highest == 0:
            scores[name] = MAX_NODE_SCORE
        else:
            scores[name] = MAX_NODE_SCORE * (highest + (lowest or 0) - score) // highest
