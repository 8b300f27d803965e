"""Reconciling the bootstrap policy with what is stored (upstream: pkg/registry/rbac/reconciliation/
reconcile_role.go, reconcile_rolebindings.go, and the post-start hook of pkg/registry/rbac/rest/
storage_rbac.go that runs them with RemoveExtraPermissions/RemoveExtraSubjects off).

Each decision is pure: (stored or None, wanted) → what to write, or None. A missing object is created; one
annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left alone; otherwise missing labels and
annotations are added (stored values win), missing rules are added as their uncovered pieces (never removed),
an aggregated role gains the missing selectors (its rules are the aggregation controller's), and a binding
gains missing subjects. A binding whose roleRef differs is deleted and created again (roleRef is immutable).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.apiserver.authorization.bootstrappolicy import AUTOUPDATE
from control.apiserver.authorization.rules import Rule, rules_of, uncovered


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    RECREATE = "recreate"


@dataclass(frozen=True)
class Plan:
    action: Action
    obj: dict[str, Any]


def _protected(stored: Mapping[str, Any]) -> bool:
    return ((stored.get("metadata") or {}).get("annotations") or {}).get(AUTOUPDATE) == "false"


def _merged_metadata(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(dict(stored))
    metadata = result.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        merged = {**(wanted["metadata"].get(key) or {}), **(metadata.get(key) or {})}
        if merged:
            metadata[key] = merged
    return result


def reconcile_role(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> Plan | None:
    if stored is None:
        return Plan(Action.CREATE, copy.deepcopy(dict(wanted)))
    if _protected(stored):
        return None
    result = _merged_metadata(stored, wanted)
    wanted_aggregation = wanted.get("aggregationRule")
    if wanted_aggregation:
        stored_aggregation = result.get("aggregationRule") or {}
        selectors = list(stored_aggregation.get("clusterRoleSelectors") or [])
        selectors += [s for s in wanted_aggregation.get("clusterRoleSelectors") or [] if s not in selectors]
        result["aggregationRule"] = {**stored_aggregation, "clusterRoleSelectors": selectors}
    else:
        missing = uncovered(rules_of(stored), rules_of(wanted))
        if missing:
            result["rules"] = [*(result.get("rules") or []), *(Rule.to_json(r) for r in missing)]
    return None if result == stored else Plan(Action.UPDATE, result)


def reconcile_binding(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> Plan | None:
    if stored is None:
        return Plan(Action.CREATE, copy.deepcopy(dict(wanted)))
    if _protected(stored):
        return None
    if stored.get("roleRef") != wanted.get("roleRef"):
        result = _merged_metadata(stored, wanted)
        result["roleRef"] = copy.deepcopy(wanted["roleRef"])
        result.setdefault("subjects", [])
        result["subjects"] += [s for s in wanted.get("subjects") or [] if s not in result["subjects"]]
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            result["metadata"].pop(key, None)
        return Plan(Action.RECREATE, result)
    result = _merged_metadata(stored, wanted)
    subjects = list(result.get("subjects") or [])
    subjects += [s for s in wanted.get("subjects") or [] if s not in subjects]
    if subjects:
        result["subjects"] = subjects
    return None if result == stored else Plan(Action.UPDATE, result)


Getter = Callable[[str], dict[str, Any] | None]
Writer = Callable[[Plan], None]


def reconcile_all(wanted: list[dict[str, Any]], get: Getter, write: Writer,
                  decide: Callable[[Mapping[str, Any] | None, Mapping[str, Any]], Plan | None]) -> int:
    """Apply `decide` to each wanted object against the stored one; the number of writes."""
    writes = 0
    for obj in wanted:
        plan = decide(get(obj["metadata"]["name"]), obj)
        if plan is not None:
            write(plan)
            writes += 1
    return writes
