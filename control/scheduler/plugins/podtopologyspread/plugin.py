"""The PodTopologySpread plugin: PreFilter (+ AddPod/RemovePod), Filter, PreScore, Score, NormalizeScore over
filtering.py and scoring.py, and its args.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/plugin.go and the PodTopologySpreadArgs of
kubescheduler.config.k8s.io/v1: `defaultingType` System (the default: the system default constraints,
hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway) or List (`defaultConstraints` as given, without a
labelSelector: the pod's default selector is used). A pod with constraints of its own uses only those.
The queue moves pods this plugin rejected back when an assigned pod is added, changed or deleted and when
a node is added, deleted or relabelled (upstream EventsToRegister; control/scheduler/scheduler.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed.core import Pod as PodView
from control.apimachinery.labels import SelectorError
from control.scheduler.cache import Snapshot
from control.scheduler.framework import SKIP, SUCCESS, Code, CycleState, Pod, Status
from control.scheduler.nodeinfo import NodeInfo, PodInfo
from control.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    LIST_DEFAULTING,
    NAME,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    Constraint,
    build_default_constraints,
    filter_constraints,
    pod_labels,
)
from control.scheduler.plugins.podtopologyspread.filtering import PreFilterState, cal_pre_filter_state, filter_node
from control.scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    cal_pre_score_state,
    normalize_scores,
    score_node,
)

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class PodTopologySpread:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
        if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise ValueError(f"PodTopologySpread: defaultingType {defaulting!r} is not System or List")
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        if self.system_defaulted:
            if args.get("defaultConstraints"):
                raise ValueError("PodTopologySpread: defaultConstraints must be empty with defaultingType System")
            self.default_constraints: tuple[Mapping[str, Any], ...] = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            self.default_constraints = tuple(args.get("defaultConstraints") or ())
            if any("labelSelector" in c for c in self.default_constraints):
                raise ValueError("PodTopologySpread: defaultConstraints must not have a labelSelector")

    def _constraints(self, state: CycleState, pod: Pod, action: str) -> list[Constraint]:
        own = PodView(pod).spec.topology_spread_constraints
        if own:
            return filter_constraints(own, pod_labels(pod), action)
        return build_default_constraints(pod, self.default_constraints, state.listers, action)

    # -- filter --------------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        try:
            constraints = self._constraints(state, pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return Status(Code.ERROR, (f"obtaining pod's hard topology spread constraints: {exc}",))
        if not constraints:
            return SKIP
        state.write(PRE_FILTER_STATE_KEY, cal_pre_filter_state(pod, constraints, snapshot.node_list))
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo, node: NodeInfo) -> Status:
        pre_filter_state: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        pre_filter_state.update_with_pod(to_add.pod, pod, node, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo, node: NodeInfo) -> Status:
        pre_filter_state: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        pre_filter_state.update_with_pod(to_remove.pod, pod, node, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        return filter_node(state.read(PRE_FILTER_STATE_KEY), pod, node)

    # -- score ---------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        all_nodes = state.snapshot.node_list
        if not all_nodes:
            return SKIP
        try:
            constraints = self._constraints(state, pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            return Status(Code.ERROR, (f"obtaining pod's soft topology spread constraints: {exc}",))
        if not constraints:
            return SKIP
        # Only pods with constraints of their own (or a List default) need every topology key on a node, so
        # nodes without a zone label still spread by hostname under the system defaults.
        require_all = bool(PodView(pod).spec.topology_spread_constraints) or not self.system_defaulted
        state.write(PRE_SCORE_STATE_KEY, cal_pre_score_state(pod, constraints, nodes, all_nodes,
                                                             require_all_topologies=require_all))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        pre_score_state: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        return score_node(pre_score_state, pod, node)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        normalize_scores(state.read(PRE_SCORE_STATE_KEY), scores)
