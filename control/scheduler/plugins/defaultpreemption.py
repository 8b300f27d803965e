"""DefaultPreemption (PostFilter): a pod that fits nowhere may have lower-priority pods evicted from the one
node where that costs least.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (`PostFilter` prefixing
"preemption: ", `PodEligibleToPreemptOthers`, `SelectVictimsOnNode`, `calculateNumCandidates` with
DefaultPreemptionArgs minCandidateNodesPercentage 10 and minCandidateNodesAbsolute 100) and
pkg/scheduler/framework/preemption/preemption.go (`Preempt`, `findCandidates`, `DryRunPreemption`,
`pickOneNodeForPreemption`, `getLowerPriorityNominatedPods`), util.MoreImportantPod and
GetEarliestPodStartTime.

1. Eligible? Not with preemptionPolicy Never ("not eligible due to preemptionPolicy=Never."), nor while a
   lower-priority pod on its nominated node is still terminating from an earlier preemption ("not
   eligible due to a terminating pod on the nominated node.") — unless that node now rejects it for
   good.
2. Only nodes whose rejection was Unschedulable (not UnschedulableAndUnresolvable) are tried, from a
   random offset, until enough candidates are found.
3. Per node (`select_victims_on_node`): remove every lower-priority pod; if the pod still does not fit,
   the node is out (its filter status says why); else put them back one by one, most important first
   (higher priority, then earlier start), keeping out only those without which it does not fit — first
   the pods whose eviction would violate a PodDisruptionBudget (`filter_pods_with_pdb_violation`: a PDB of
   the pod's namespace with a non-empty selector matching its labels, whose `status.disruptionsAllowed`,
   less the pods already counted against it, drops below 0; pods in its `status.disruptedPods` do not
   count), each one kept out counting as a violation, then the others.
4. Pick the node (`pick_one_node_for_preemption`): fewest PDB violations, lowest highest-victim
   priority, smallest sum of victim priorities (each + 2^31), fewest victims, latest start among the
   highest-priority victims, then the first.
5. The result names the node, the victims and the lower-priority pods nominated there, whose nomination
   goes; the scheduler loop evicts and nominates (scheduler.py).

When no node can be helped the message is a FitError of its own: "preemption: 0/3 nodes are available:
3 No preemption victims found for incoming pod." (nodes not tried: "Preemption is not helpful for
scheduling").

The PodDisruptionBudgets come from the scheduler's informer (CycleState.listers), listed once per
preemption as upstream's findCandidates does.

Departures: no extenders; victims are chosen sequentially, not in parallel.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from control.api.priority import PREEMPT_NEVER, pod_priority, preemption_policy
from control.api.typed.core import Pod as PodView
from control.api.typed.policy import PodDisruptionBudget
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.meta import get_condition, parse_timestamp
from control.scheduler.framework import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    Pod,
    PostFilterResult,
    Status,
    fit_error_message,
)
from control.scheduler.nodeinfo import NodeInfo, PodInfo

NAME = "DefaultPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_NOT_STARTED = datetime.max.replace(tzinfo=UTC)  # upstream takes "now" for a pod without startTime: the latest
_PRIORITY_OFFSET = 2 ** 31  # upstream adds MaxInt32+1 so that negative priorities sum sensibly


@dataclass(frozen=True)
class Candidate:
    """A node where evicting `victims` (most important first) makes room (upstream candidate + Victims)."""

    node: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


def start_time(pod: Pod) -> datetime:
    text = PodView(pod).status.start_time
    try:
        return parse_timestamp(text) if text else _NOT_STARTED
    except ValueError:
        return _NOT_STARTED


def more_important(first: Pod, second: Pod) -> bool:
    """Upstream util.MoreImportantPod: higher priority, or equal priority and started earlier."""
    if pod_priority(first) != pod_priority(second):
        return pod_priority(first) > pod_priority(second)
    return start_time(first) < start_time(second)


def _importance_order(first: Pod, second: Pod) -> int:
    return -1 if more_important(first, second) else 1 if more_important(second, first) else 0


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted, with the DisruptionTarget condition the scheduler sets before evicting a victim."""
    if not PodView(pod).metadata.deletion_timestamp:
        return False
    condition = get_condition(pod, DISRUPTION_TARGET) or {}
    return condition.get("status") == "True" and condition.get("reason") == PREEMPTION_BY_SCHEDULER


def earliest_start_of_highest_priority(victims: Sequence[Pod]) -> datetime:
    """Upstream GetEarliestPodStartTime: the earliest start among the victims of the highest priority."""
    highest = max(pod_priority(pod) for pod in victims)
    return min(start_time(pod) for pod in victims if pod_priority(pod) == highest)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream pickOneNodeForPreemption with its default score functions (module notes, step 4)."""
    scores = (
        lambda c: -c.num_pdb_violations,
        lambda c: -pod_priority(c.victims[0]),
        lambda c: -sum(pod_priority(pod) + _PRIORITY_OFFSET for pod in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims),
    )
    remaining = list(candidates)
    for score in scores:
        if len(remaining) <= 1:
            break
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
    return remaining[0] if remaining else None


def filter_pods_with_pdb_violation(infos: Sequence[PodInfo], pdbs: Sequence[Mapping[str, Any]],
                                   ) -> tuple[list[PodInfo], list[PodInfo]]:
    """Upstream filterPodsWithPDBViolation: (pods whose eviction violates a budget, the others), each in
    the order given; evicting the earlier pods uses up a budget's allowed disruptions first."""
    budgets = [PodDisruptionBudget(pdb) for pdb in pdbs]
    allowed = [budget.status.disruptions_allowed for budget in budgets]
    violating: list[PodInfo] = []
    others: list[PodInfo] = []
    for info in infos:
        metadata = PodView(info.pod).metadata
        labels = metadata.labels
        violated = False
        for index, budget in enumerate(budgets if labels else ()):
            if budget.metadata.namespace != metadata.namespace:
                continue
            label_selector = budget.spec.selector
            try:
                selector = selector_from_label_selector(label_selector.raw if label_selector else None)
            except SelectorError:
                continue
            if selector.empty or not selector.matches(labels):  # a nil or empty selector matches nothing
                continue
            if metadata.name in budget.status.disrupted_pods:
                continue  # the API server's eviction already counted it
            allowed[index] -= 1
            if allowed[index] < 0:
                violated = True
        (violating if violated else others).append(info)
    return violating, others


def select_victims_on_node(state: CycleState, pod: Pod, node: NodeInfo, handle: Handle,
                           pdbs: Sequence[Mapping[str, Any]] = ()) -> tuple[list[Pod], int, Status]:
    """Upstream SelectVictimsOnNode on a copy of the node (changed in place): (victims, most important
    first within the PDB-violating ones and then the others; PDB violations; status)."""
    priority = pod_priority(pod)
    potential = [info for info in node.pods.values() if pod_priority(info.pod) < priority]
    for info in potential:
        node.remove_pod(info.key)
        handle.run_pre_filter_extension_remove_pod(state, pod, info, node)
    if not potential:
        return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
    status = handle.run_filters_with_nominated_pods(state, pod, node)
    if not status.is_success:
        return [], 0, status
    potential.sort(key=functools.cmp_to_key(lambda a, b: _importance_order(a.pod, b.pod)))
    violating, others = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[Pod] = []

    def reprieve(info: PodInfo) -> bool:
        """Put `info` back; if the pod then does not fit, take it out again as a victim."""
        node.add_pod(info)
        handle.run_pre_filter_extension_add_pod(state, pod, info, node)
        if handle.run_filters_with_nominated_pods(state, pod, node).is_success:
            return True
        node.remove_pod(info.key)
        handle.run_pre_filter_extension_remove_pod(state, pod, info, node)
        victims.append(info.pod)
        return False

    violations = sum(1 for info in violating if not reprieve(info))  # the most important first, in each group
    for info in others:
        reprieve(info)
    return victims, violations, SUCCESS


class DefaultPreemption:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.min_candidate_nodes_percentage = int(args.get("minCandidateNodesPercentage", 10))
        self.min_candidate_nodes_absolute = int(args.get("minCandidateNodesAbsolute", 100))
        if not 0 <= self.min_candidate_nodes_percentage <= 100:
            raise ValueError(f"minCandidateNodesPercentage: Invalid value: {self.min_candidate_nodes_percentage}: "
                             "not in valid range [0, 100]")
        if self.min_candidate_nodes_absolute < 0:
            raise ValueError(f"minCandidateNodesAbsolute: Invalid value: {self.min_candidate_nodes_absolute}: "
                             "not in valid range [0, inf)")
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError("minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
                             "minCandidateNodesAbsolute")

    def num_candidates(self, num_nodes: int) -> int:
        """Upstream calculateNumCandidates."""
        wanted = max(num_nodes * self.min_candidate_nodes_percentage // 100, self.min_candidate_nodes_absolute)
        return min(wanted, num_nodes)

    def eligible(self, pod: Pod, nominated_status: Status | None, handle: Handle) -> tuple[bool, str]:
        """Upstream PodEligibleToPreemptOthers."""
        if preemption_policy(pod) == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER
        nominated = PodView(pod).status.nominated_node_name
        if nominated:
            if nominated_status is not None and nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = handle.snapshot.get(nominated)
            if node is not None and any(pod_priority(info.pod) < pod_priority(pod) and
                                        terminating_by_preemption(info.pod) for info in node.pods.values()):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def dry_run(self, state: CycleState, pod: Pod, potential: Sequence[NodeInfo], handle: Handle, *,
                offset: int, wanted: int, pdbs: Sequence[Mapping[str, Any]] = (),
                ) -> tuple[list[Candidate], dict[str, Status]]:
        """Upstream DryRunPreemption: nodes from `offset` round, until `wanted` candidates (one of them
        without PDB violations) are found; candidates without violations first."""
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        for index in range(len(potential)):
            node = potential[(offset + index) % len(potential)]
            victims, violations, status = select_victims_on_node(state.clone(), pod, node.clone(), handle, pdbs)
            if status.is_success and victims:
                found = Candidate(node.name, tuple(victims), violations)
                (violating if violations else clean).append(found)
                if clean and len(clean) + len(violating) >= wanted:
                    break
                continue
            if status.is_success:
                status = Status(Code.ERROR, (f'expected at least one victim pod on node "{node.name}"',))
            statuses[node.name] = status
        return clean[:wanted] + violating[:wanted], statuses

    def post_filter(self, state: CycleState, pod: Pod, statuses: Mapping[str, Status],
                    handle: Handle) -> tuple[PostFilterResult | None, Status]:
        nominated = PodView(pod).status.nominated_node_name
        eligible, why = self.eligible(pod, statuses.get(nominated), handle)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, (f"preemption: {why}",))
        all_nodes = handle.snapshot.node_list
        potential = [node for node in all_nodes
                     if (status := statuses.get(node.name)) is not None and status.code is Code.UNSCHEDULABLE]
        candidates: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        if potential:
            offset = handle.rng.randrange(len(potential))
            pdbs = state.listers.pod_disruption_budgets.list()
            candidates, node_statuses = self.dry_run(state, pod, potential, handle, offset=offset,
                                                     wanted=self.num_candidates(len(potential)), pdbs=pdbs)
        best = pick_one_node_for_preemption(candidates)
        if best is None:
            not_helpful = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
            every = {node.name: node_statuses.get(node.name, not_helpful) for node in all_nodes}
            message = fit_error_message(len(all_nodes), every)
            return PostFilterResult(nominated_node_name=""), Status(Code.UNSCHEDULABLE, (f"preemption: {message}",))
        lower = tuple(info.pod for info in handle.nominated_pods_for_node(best.node)
                      if pod_priority(info.pod) < pod_priority(pod))
        return PostFilterResult(best.node, best.victims, lower), SUCCESS
