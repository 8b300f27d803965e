"""TaintToleration: a node's NoSchedule and NoExecute taints keep out pods that do not tolerate them
(filter); PreferNoSchedule taints count against a node (score, fewer is better).

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go; whether a toleration
tolerates a taint is control.api.taints.tolerates (upstream's `ToleratesTaint`), shared with the node
lifecycle and taint eviction controllers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.taints import taints_of, tolerates, tolerations_of
from control.scheduler.framework import (
    SUCCESS,
    CycleState,
    Pod,
    Status,
    default_normalize_score,
    unschedulable,
)
from control.scheduler.nodeinfo import NodeInfo

FILTER_EFFECTS = ("NoSchedule", "NoExecute")


def _taints(node: NodeInfo) -> list[dict[str, Any]]:
    return taints_of(node.node or {})


def _has_taints(node: NodeInfo) -> bool:
    return bool(node.facts.taints)


def _tolerations(pod: Pod) -> list[Mapping[str, Any]]:
    return list(tolerations_of(pod))


class TaintToleration:
    name = "TaintToleration"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not _has_taints(node):  # most nodes: nothing to tolerate (read per node per cycle, so kept cheap)
            return SUCCESS
        tolerations = _tolerations(pod)
        for taint in _taints(node):
            if taint.get("effect") in FILTER_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
                reason = f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
                return unschedulable(reason, resolvable=False)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """How many PreferNoSchedule taints the pod does not tolerate (only tolerations with no effect or
        PreferNoSchedule count, as upstream getAllTolerationPreferNoSchedule)."""
        if not _has_taints(node):
            return 0
        tolerations = [t for t in _tolerations(pod) if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
        return sum(1 for taint in _taints(node)
                   if taint.get("effect") == "PreferNoSchedule" and not any(tolerates(t, taint) for t in tolerations))

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize_score(scores, reverse=True)
