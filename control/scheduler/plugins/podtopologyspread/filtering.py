"""PodTopologySpread's hard constraints (whenUnsatisfiable: DoNotSchedule): PreFilter counts once per pod
the matching pods of every topology domain; Filter lets a node in only if placing the pod there keeps
`matching pods in its domain + 1 (if the pod matches itself) - global minimum <= maxSkew`.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go (`preFilterState` with
TpValueToMatchNum per constraint and two `criticalPaths` holding the minimum; `calPreFilterState`;
`minMatchNum`: the global minimum is 0 while fewer domains than `minDomains` exist; `AddPod`/`RemovePod`
update the counts for preemption and nominated pods; `Filter` with its two reasons). Only nodes that
carry every constraint's topology key, and that the constraint's node inclusion policies admit, are
counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from control.api.typed.core import Pod as PodView
from control.scheduler.framework import Code, Pod, Status
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.plugins.podtopologyspread.common import (
    Constraint,
    count_node_pods_match_selector,
    node_labels,
    node_labels_match_spread_constraints,
    pod_labels,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_MAX_INT32 = 2 ** 31 - 1


@dataclass
class CriticalPaths:
    """The two domains with the fewest matching pods seen so far: `paths[0]` always holds the minimum,
    `paths[1]` something at least as large (upstream criticalPaths; two suffice because preemption removes
    pods from one node at a time, on its own copy of the state)."""

    paths: list[tuple[str, int]] = field(default_factory=lambda: [("", _MAX_INT32), ("", _MAX_INT32)])

    @property
    def min_match(self) -> int:
        return self.paths[0][1]

    def update(self, value: str, num: int) -> None:
        first, second = self.paths
        if value == first[0] or value == second[0]:
            at = 0 if value == first[0] else 1
            self.paths[at] = (value, num)
            if self.paths[0][1] > self.paths[1][1]:
                self.paths.reverse()
        elif num < first[1]:
            self.paths = [(value, num), first]
        elif num < second[1]:
            self.paths[1] = (value, num)

    def clone(self) -> CriticalPaths:
        return CriticalPaths(list(self.paths))


@dataclass
class PreFilterState:
    """Per constraint: matching pods by topology value, and the critical paths (upstream preFilterState)."""

    constraints: tuple[Constraint, ...] = ()
    critical_paths: list[CriticalPaths] = field(default_factory=list)
    tp_value_to_match_num: list[dict[str, int]] = field(default_factory=list)

    def min_match_num(self, index: int) -> int:
        """The global minimum for constraint `index`: 0 while fewer domains than minDomains exist."""
        if len(self.tp_value_to_match_num[index]) < self.constraints[index].min_domains:
            return 0
        return self.critical_paths[index].min_match

    def clone(self) -> PreFilterState:
        """What preemption changes is copied; the constraints are shared (they do not change)."""
        return PreFilterState(self.constraints, [paths.clone() for paths in self.critical_paths],
                              [dict(counts) for counts in self.tp_value_to_match_num])

    def update_with_pod(self, updated: Pod, preemptor: Pod, node: NodeInfo, delta: int) -> None:
        """Count `updated` (+1 added, -1 removed) where it matches (upstream updateWithPod)."""
        node_obj = node.node
        namespace = PodView(updated).metadata.namespace
        if (node_obj is None or not self.constraints
                or namespace != (PodView(preemptor).metadata.namespace)):
            return
        labels_of_node = node_labels(node_obj)
        if not node_labels_match_spread_constraints(labels_of_node, self.constraints):
            return
        labels_of_pod = pod_labels(updated)
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(labels_of_pod):
                continue
            if not constraint.matches_node_inclusion_policies(preemptor, node_obj):
                continue
            value = labels_of_node[constraint.topology_key]
            counts = self.tp_value_to_match_num[index]
            counts[value] = counts.get(value, 0) + delta
            self.critical_paths[index].update(value, counts[value])


def cal_pre_filter_state(pod: Pod, constraints: Iterable[Constraint], nodes: Iterable[NodeInfo]) -> PreFilterState:
    """Count the matching pods per constraint and topology value over every node (upstream
    calPreFilterState)."""
    constraints = tuple(constraints)
    state = PreFilterState(constraints, [], [{} for _ in constraints])
    if not constraints:
        return state
    namespace = PodView(pod).metadata.namespace
    for info in nodes:
        node = info.node
        if node is None:
            continue
        labels_of_node = node_labels(node)
        if not node_labels_match_spread_constraints(labels_of_node, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not constraint.matches_node_inclusion_policies(pod, node):
                continue
            value = labels_of_node[constraint.topology_key]
            count = count_node_pods_match_selector(info, constraint.selector, namespace)
            counts = state.tp_value_to_match_num[index]
            counts[value] = counts.get(value, 0) + count
    for counts in state.tp_value_to_match_num:
        paths = CriticalPaths()
        for value, num in counts.items():
            paths.update(value, num)
        state.critical_paths.append(paths)
    return state


def filter_node(state: PreFilterState, pod: Pod, node: NodeInfo) -> Status:
    """Upstream Filter: missing topology label → UnschedulableAndUnresolvable; skew above maxSkew →
    Unschedulable (preemption may help)."""
    if not state.constraints:
        return Status()
    labels_of_node = node_labels(node.node)
    labels_of_pod = pod_labels(pod)
    for index, constraint in enumerate(state.constraints):
        value = labels_of_node.get(constraint.topology_key)
        if value is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,))
        self_match = 1 if constraint.selector.matches(labels_of_pod) else 0
        match_num = state.tp_value_to_match_num[index].get(value, 0)
        skew = match_num + self_match - state.min_match_num(index)
        if skew > constraint.max_skew:
            return Status(Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,))
    return Status()
