"""NodeAffinity: `spec.nodeSelector` and required node affinity decide where a pod may go (filter);
preferred node affinity terms add their weights (score, normalised so the best node gets 100).

Upstream: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go and
k8s.io/component-helpers/scheduling/corev1/nodeaffinity (terms are ORed, a term's matchExpressions and
matchFields ANDed, an empty or invalid term matches nothing; matchFields knows only metadata.name). Seed
000: MatchNodeSelector and NodeAffinityPriority (In, NotIn, Exists, DoesNotExist, Gt, Lt).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.apimachinery.labels import Operator, Requirement, SelectorError
from control.scheduler.cache import Snapshot
from control.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    Pod,
    Status,
    default_normalize_score,
    unschedulable,
)
from control.scheduler.nodeinfo import NodeInfo

REASON = "node(s) didn't match Pod's node affinity/selector"
_OPERATORS = {"In": Operator.IN, "NotIn": Operator.NOT_IN, "Exists": Operator.EXISTS,
              "DoesNotExist": Operator.DOES_NOT_EXIST, "Gt": Operator.GREATER_THAN, "Lt": Operator.LESS_THAN}


def _requirement(expression: Mapping[str, Any]) -> Requirement | None:
    operator = _OPERATORS.get(expression.get("operator", ""))
    if operator is None:
        return None
    try:
        return Requirement(expression.get("key", ""), operator, tuple(expression.get("values") or ()))
    except SelectorError:
        return None


def term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """One NodeSelectorTerm against a Node (module notes)."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    for expression in expressions:
        requirement = _requirement(expression)
        if requirement is None or not requirement.matches(labels):
            return False
    for expression in fields:
        requirement = _requirement(expression)
        if (requirement is None or expression.get("key") != "metadata.name"
                or requirement.operator not in (Operator.IN, Operator.NOT_IN)
                or not requirement.matches({"metadata.name": metadata.get("name", "")})):
            return False
    return True


def _node_affinity(pod: Pod) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def required_matches(pod: Pod, node: Mapping[str, Any]) -> bool:
    """nodeSelector (every label equal) and required node affinity (some term matches)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


class NodeAffinity:
    name = "NodeAffinity"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        spec = pod.get("spec") or {}
        if not spec.get("nodeSelector") and "requiredDuringSchedulingIgnoredDuringExecution" not in _node_affinity(pod):
            return SKIP
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if required_matches(pod, node.node or {}):
            return SUCCESS
        return unschedulable(REASON, resolvable=False)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        if not preferred:
            return SKIP
        state.write(self.name, preferred)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return sum(int(term.get("weight") or 0) for term in state.read(self.name)
                   if term_matches(term.get("preference") or {}, node.node or {}))

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize_score(scores, reverse=False)
