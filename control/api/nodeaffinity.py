"""Node affinity matching: whether a Node satisfies a pod's `nodeSelector` and required node affinity, and
whether a NodeSelectorTerm matches a Node. Shared by the scheduler's NodeAffinity plugin (filter, score,
topology spread), the DaemonSet controller (which nodes should run a daemon pod) and PersistentVolumes'
node affinity (control/api/volumes.py).

Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity (`GetRequiredNodeAffinity(pod).Match`,
`NodeSelectorTerm` matching: terms are ORed, a term's matchExpressions and matchFields ANDed, an empty or
invalid term matches nothing; matchFields knows only metadata.name with In/NotIn), the old MatchNodeSelector
predicate's operators (In, NotIn, Exists, DoesNotExist, Gt, Lt).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.apimachinery.labels import Operator, Requirement, SelectorError

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


def node_selector_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """A NodeSelector (some term matches); None, meaning no constraint, matches every node (a
    PersistentVolume's `spec.nodeAffinity.required`, upstream volume util CheckNodeAffinity)."""
    if selector is None:
        return True
    return any(term_matches(term, node) for term in selector.get("nodeSelectorTerms") or [])


def node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def required_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """nodeSelector (every label equal) and required node affinity (some term matches)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    required = node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])
