"""NodeAffinity: `spec.nodeSelector` and required node affinity decide where a pod may go (filter);
preferred node affinity terms add their weights (score, normalised so the best node gets 100).

Upstream: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go and
k8s.io/component-helpers/scheduling/corev1/nodeaffinity (terms are ORed, a term's matchExpressions and
matchFields ANDed, an empty or invalid term matches nothing; matchFields knows only metadata.name).
Formerly MatchNodeSelector and NodeAffinityPriority (In, NotIn, Exists, DoesNotExist, Gt, Lt). The matching
itself is control/api/nodeaffinity.py, which the DaemonSet controller shares.
"""

from __future__ import annotations

from control.api.nodeaffinity import node_affinity, required_matches, term_matches
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


class NodeAffinity:
    name = "NodeAffinity"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        spec = pod.get("spec") or {}
        if not spec.get("nodeSelector") and "requiredDuringSchedulingIgnoredDuringExecution" not in node_affinity(pod):
            return SKIP
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if required_matches(pod, node.node or {}):
            return SUCCESS
        return unschedulable(REASON, resolvable=False)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        preferred = node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        if not preferred:
            return SKIP
        state.write(self.name, preferred)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return sum(int(term.get("weight") or 0) for term in state.read(self.name)
                   if term_matches(term.get("preference") or {}, node.node or {}))

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize_score(scores, reverse=False)
