"""One scheduling decision, pure: a pod, a snapshot of the cluster and a profile in, a node (or why none)
out. No I/O, no clock; randomness only through the `rng` passed in.

Upstream: pkg/scheduler/schedule_one.go `schedulePod` → `findNodesThatFitPod` (PreFilter once; Filter per
node, plugins in order, stopping at the first that rejects, and stopping the search once
`numFeasibleNodesToFind` nodes fit, starting where the previous cycle stopped so every node gets its turn)
→ `prioritizeNodes` (PreScore once; Score per feasible node per plugin; NormalizeScore; times the
plugin's weight; summed) → `selectHost` (the highest total, ties broken at random by reservoir sampling:
the k-th node with the best score so far replaces the pick with probability 1/k). One feasible node is
taken without scoring. The old predicates and priorities are these filters and scores.

Nominated pods (framework.go `RunFilterPluginsWithNominatedPods` / `addGENominatedPods`): a pod a
preemption nominated to a node counts there, for every pod of lower or equal priority, until it binds:
the filters run on the node with those pods added, and — if any were added and it passed — once more
without them (for filters such as anti-affinity that adding pods can make pass). A pod with
`status.nominatedNodeName` tries that node first (upstream evaluateNominatedNode) and takes it if it fits.

When no node fits, the PostFilter plugins run (upstream RunPostFilterPlugins: the first success wins; the
rejections' messages are joined) and their message ends the FitError's.

`FitError.message()` is upstream's FitError.Error(): "0/3 nodes are available: 1 Insufficient cpu, 2
node(s) didn't match Pod's node affinity/selector." — each distinct reason with how many nodes gave it,
sorted as strings — then "preemption: ..." when DefaultPreemption found nothing to evict.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from control.api.priority import pod_priority
from control.api.typed.core import Pod as PodView
from control.apimachinery.meta import key_of
from control.scheduler.cache import Snapshot
from control.scheduler.framework import (
    NO_NODES_AVAILABLE,
    Code,
    CycleState,
    Listers,
    Pod,
    PostFilterResult,
    PreFilterExtensions,
    Status,
    fit_error_message,
)
from control.scheduler.nodeinfo import NodeInfo, PodInfo
from control.scheduler.profile import Profile, num_feasible_nodes_to_find

__all__ = ["NO_NODES_AVAILABLE", "FitError", "Framework", "ScheduleResult", "SchedulingError", "schedule_one"]

Nominated = Mapping[str, Sequence[PodInfo]]  # node name → the pods nominated to it


@dataclass(frozen=True)
class FitError:
    """Why no node fits: each node's rejecting Status (upstream FitError + Diagnosis)."""

    num_all_nodes: int
    node_statuses: Mapping[str, Status] = field(default_factory=dict)
    pre_filter_message: str = ""
    post_filter_message: str = ""

    def message(self) -> str:
        return fit_error_message(self.num_all_nodes, self.node_statuses, pre_filter_message=self.pre_filter_message,
                                 post_filter_message=self.post_filter_message)

    @property
    def reasons(self) -> frozenset[str]:
        return frozenset(reason for status in self.node_statuses.values() for reason in status.reasons)

    @property
    def plugins(self) -> frozenset[str]:
        """The plugins that rejected a node (upstream Diagnosis.UnschedulablePlugins): the queue moves the pod
        back on the cluster events those plugins care about."""
        return frozenset(status.plugin for status in self.node_statuses.values() if status.plugin)


class SchedulingError(Exception):
    """A plugin returned Error (upstream: the cycle fails with an error, the pod is retried with backoff)."""


@dataclass(frozen=True)
class ScheduleResult:
    """The decision: `node` or `fit_error`; how many nodes were filtered and found feasible; the total score
    of each scored node (empty when one node was feasible); what the PostFilter wants done, if one ran."""

    node: str | None
    evaluated_nodes: int
    feasible_nodes: int
    fit_error: FitError | None = None
    scores: Mapping[str, int] = field(default_factory=dict)
    post_filter_result: PostFilterResult | None = None


class Framework:
    """One cycle's profile, snapshot, nominated pods and random source: runs the filters and is the
    `Handle` a PostFilter gets (upstream frameworkImpl)."""

    def __init__(self, profile: Profile, snapshot: Snapshot, rng: random.Random, *,
                 nominated: Nominated | None = None) -> None:
        self.profile = profile
        self.snapshot = snapshot
        self.rng = rng
        self._nominated = nominated or {}

    def run_filters(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Every Filter in order, stopping at the first rejection (upstream RunFilterPlugins)."""
        for plugin in self.profile.filter:
            if plugin.name in state.skip_filter:
                continue
            status = plugin.filter(state, pod, node)
            if status.code is Code.ERROR:
                raise SchedulingError(f"running {plugin.name!r} filter plugin: {status.message()}")
            if not status.is_success:
                return Status(status.code, status.reasons, plugin.name)
        return Status()

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._nominated.get(node_name, ())

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo,
                                         node: NodeInfo) -> Status:
        return self._run_extensions(state, pod, to_add, node, add=True)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo,
                                            node: NodeInfo) -> Status:
        return self._run_extensions(state, pod, to_remove, node, add=False)

    def _run_extensions(self, state: CycleState, pod: Pod, other: PodInfo, node: NodeInfo, *, add: bool) -> Status:
        for plugin in self.profile.pre_filter:
            if plugin.name in state.skip_filter or not isinstance(plugin, PreFilterExtensions):
                continue
            status = plugin.add_pod(state, pod, other, node) if add else plugin.remove_pod(state, pod, other, node)
            if not status.is_success:
                raise SchedulingError(f"running {'AddPod' if add else 'RemovePod'} on PreFilter plugin "
                                      f"{plugin.name!r}: {status.message()}")
        return Status()

    def _with_nominated_pods(self, state: CycleState, pod: Pod,
                             node: NodeInfo) -> tuple[bool, CycleState, NodeInfo]:
        """Upstream addGENominatedPods: the node (and state) with the pods nominated to it of at least the
        pod's priority, other than the pod itself."""
        nominated = [info for info in self.nominated_pods_for_node(node.name)
                     if pod_priority(info.pod) >= pod_priority(pod) and info.key != key_of(pod)]
        if not nominated:
            return False, state, node
        node_out, state_out = node.clone(), state.clone()
        for info in nominated:
            node_out.add_pod(info)
            self.run_pre_filter_extension_add_pod(state_out, pod, info, node_out)
        return True, state_out, node_out

    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not self._nominated:  # the common case: nothing nominated anywhere
            return self.run_filters(state, pod, node)
        added, state_with, node_with = self._with_nominated_pods(state, pod, node)
        status = self.run_filters(state_with, pod, node_with)
        if added and status.is_success:
            status = self.run_filters(state, pod, node)
        return status


def find_feasible(pod: Pod, framework: Framework, state: CycleState, *,
                  start_index: int = 0) -> tuple[list[NodeInfo], dict[str, Status], int]:
    """PreFilter, then the nominated node if the pod has one, then Filter from `start_index` round the node
    list until enough nodes fit: (feasible nodes, statuses of the rejected ones, how many nodes were
    evaluated)."""
    profile, snapshot = framework.profile, framework.snapshot
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
    nominated_node = snapshot.get(PodView(pod).status.nominated_node_name)
    if nominated_node is not None and framework.run_filters_with_nominated_pods(state, pod, nominated_node).is_success:
        return [nominated_node], {}, 1
    wanted = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, len(nodes))
    feasible: list[NodeInfo] = []
    rejected_statuses: dict[str, Status] = {}
    evaluated = 0
    for offset in range(len(nodes)):
        if len(feasible) >= wanted:
            break
        node = nodes[(start_index + offset) % len(nodes)]
        evaluated += 1
        status = framework.run_filters_with_nominated_pods(state, pod, node)
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


def run_post_filters(framework: Framework, state: CycleState, pod: Pod,
                     statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status]:
    """Upstream RunPostFilterPlugins: the first plugin to succeed (or to say nothing can help) decides;
    otherwise the rejections are joined, keeping the last result that asked for something."""
    result: PostFilterResult | None = None
    reasons: list[str] = []
    for plugin in framework.profile.post_filter:
        plugin_result, status = plugin.post_filter(state, pod, statuses, framework)
        if status.is_success or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return plugin_result, Status(status.code, status.reasons, plugin.name)
        if status.code is not Code.UNSCHEDULABLE:
            return None, Status(Code.ERROR, status.reasons, plugin.name)
        if plugin_result is not None:
            result = plugin_result
        reasons.extend(status.reasons)
    return result, Status(Code.UNSCHEDULABLE, tuple(reasons))


def schedule_one(pod: Pod, snapshot: Snapshot, profile: Profile, rng: random.Random, *,
                 start_index: int = 0, nominated: Nominated | None = None,
                 listers: Listers | None = None) -> ScheduleResult:
    """Where `pod` goes (module notes); `nominated`: the pods nominated to each node; `listers`: the
    informer caches plugins read (none: an empty cluster's). Raises SchedulingError when a plugin fails with
    an error."""
    if not snapshot.node_list:
        return ScheduleResult(None, 0, 0, FitError(0))
    state = CycleState(snapshot, listers)
    framework = Framework(profile, snapshot, rng, nominated=nominated)
    feasible, rejected, evaluated = find_feasible(pod, framework, state, start_index=start_index)
    if not feasible:
        result, status = (run_post_filters(framework, state, pod, rejected) if profile.post_filter
                          else (None, Status()))
        fit_error = FitError(len(snapshot.node_list), rejected, post_filter_message=status.message())
        return ScheduleResult(None, evaluated, 0, fit_error, post_filter_result=result)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    totals = prioritize(pod, feasible, profile, state)
    return ScheduleResult(select_host(feasible, totals, rng), evaluated, len(feasible), scores=totals)
