"""TaintToleration: a node's NoSchedule and NoExecute taints keep out pods that do not tolerate them
(filter); PreferNoSchedule taints count against a node (score, fewer is better).

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go and
k8s.io/api/core/v1/toleration.go (`ToleratesTaint`: an empty effect matches every effect, an empty key
with operator Exists matches every key, Equal (the default) compares values).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    match toleration.get("operator") or "Equal":
        case "Exists":
            return True
        case "Equal":
            return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _taints(node: NodeInfo) -> list[Mapping[str, Any]]:
    return list(((node.node or {}).get("spec") or {}).get("taints") or [])


def _tolerations(pod: Pod) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("tolerations") or [])


class TaintToleration:
    name = "TaintToleration"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        tolerations = _tolerations(pod)
        for taint in _taints(node):
            if taint.get("effect") in FILTER_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
                reason = f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
                return unschedulable(reason, resolvable=False)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """How many PreferNoSchedule taints the pod does not tolerate (only tolerations with no effect or
        PreferNoSchedule count, as upstream getAllTolerationPreferNoSchedule)."""
        tolerations = [t for t in _tolerations(pod) if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
        return sum(1 for taint in _taints(node)
                   if taint.get("effect") == "PreferNoSchedule" and not any(tolerates(t, taint) for t in tolerations))

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize_score(scores, reverse=True)
