"""NodeSelectorTerms against a Node: shared by the scheduler's NodeAffinity and VolumeBinding plugins, the
PersistentVolume controller (a PV's `spec.nodeAffinity`) and the kubelet.

Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity (terms are ORed, a term's
matchExpressions and matchFields ANDed, an empty or invalid term matches nothing; matchFields knows only
metadata.name) and pkg/volume/util `CheckNodeAffinity` for volumes. Seed 000: MatchNodeSelector
(In, NotIn, Exists, DoesNotExist, Gt, Lt).
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
    """A NodeSelector (some term matches); None, meaning no constraint, matches every node."""
    if selector is None:
        return True
    return any(term_matches(term, node) for term in selector.get("nodeSelectorTerms") or [])
