"""PodDisruptionBudget arithmetic, shared by the API server's eviction subresource and the disruption
controller: pure functions over wire dicts, `now` passed in.

Upstream: pkg/controller/disruption/disruption.go (getExpectedPodCount, countHealthyPods,
buildDisruptedPodMap, updatePdbStatus), k8s.io/component-helpers/apps/poddisruptionbudget
(UpdateDisruptionAllowedCondition, ConditionsAreUpToDate), k8s.io/apimachinery intstr
(GetScaledValueFromIntOrPercent) and pkg/registry/core/pod/storage/eviction.go (checkAndDecrement,
canIgnorePDB, getPodDisruptionBudgets).

Two selector rules, both upstream's: the controller counts the pods `LabelSelectorAsSelector` selects (no
selector: none; an empty one: every pod of the namespace, as policy/v1 documents), while the eviction
handler treats a nil or empty selector as matching nothing, so a PDB that "creeps in" empty never blocks
every eviction of its namespace.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from control.apimachinery.labels import Selector, SelectorError, selector_from_label_selector
from control.apimachinery.meta import format_timestamp, get_condition, parse_timestamp

DELETION_TIMEOUT = timedelta(minutes=2)  # upstream DeletionTimeout: an approved eviction's pod must go by then
MAX_DISRUPTED_POD_SIZE = 2000  # upstream eviction.go MaxDisruptedPodSize
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"  # policyv1.DisruptionBudgetCause
VIOLATION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS_MESSAGE = ("This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
                         "support.")

Obj = Mapping[str, Any]


def _field(obj: Obj, key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def scaled_value(value: int | str, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, `"N%"` of `total` rounded up or down."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(value[:-1])
    except ValueError:
        raise ValueError(f"invalid value for IntOrString: invalid value for percent: {value}") from None
    exact = percent * total
    return -(-exact // 100) if round_up else math.floor(exact / 100)


def is_pod_ready(pod: Obj) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    condition = get_condition(pod, "Ready") if isinstance(pod.get("status"), Mapping) else None
    return condition is not None and condition.get("status") == "True"


def controller_selector(pdb: Obj) -> Selector | None:
    """The pods the controller counts (module notes); None when the PDB has no selector or a bad one."""
    selector = _field(pdb, "spec").get("selector")
    if not isinstance(selector, Mapping):
        return None
    try:
        return selector_from_label_selector(selector)
    except SelectorError:
        return None


def eviction_selects(pdb: Obj, pod: Obj) -> bool:
    """Whether the eviction handler applies `pdb` to `pod`: same namespace, a non-empty selector matching."""
    if _field(pdb, "metadata").get("namespace") != _field(pod, "metadata").get("namespace"):
        return False
    selector = controller_selector(pdb)
    labels = _field(pod, "metadata").get("labels")
    return selector is not None and not selector.empty and selector.matches(labels if isinstance(labels, Mapping)
                                                                            else {})


# -- the controller's arithmetic ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expected:
    """getExpectedPodCount's answer: pods expected, pods that must stay healthy, pods without a controller."""

    expected_count: int
    desired_healthy: int
    unmanaged: tuple[str, ...] = ()


def needs_scale(pdb: Obj) -> bool:
    """Whether the expected count comes from the pods' controllers (maxUnavailable, or a percent
    minAvailable) rather than from the number of pods (an int minAvailable)."""
    spec = _field(pdb, "spec")
    if spec.get("maxUnavailable") is not None:
        return True
    return isinstance(spec.get("minAvailable"), str)


def expected_pods(pdb: Obj, pod_count: int, controller_scale: int, unmanaged: Iterable[str] = ()) -> Expected:
    """getExpectedPodCount, with the summed scale of the pods' controllers already found (`controller_scale`,
    only read when `needs_scale`)."""
    spec = _field(pdb, "spec")
    unmanaged = tuple(unmanaged) if needs_scale(pdb) else ()
    if spec.get("maxUnavailable") is not None:
        unavailable = scaled_value(spec["maxUnavailable"], controller_scale, round_up=True)
        return Expected(controller_scale, max(controller_scale - unavailable, 0), unmanaged)
    minimum = spec.get("minAvailable")
    if isinstance(minimum, int) and not isinstance(minimum, bool):
        return Expected(pod_count, minimum)
    if isinstance(minimum, str):
        return Expected(controller_scale, scaled_value(minimum, controller_scale, round_up=True), unmanaged)
    return Expected(0, 0)


def _disruption_time(value: Any) -> datetime | None:
    try:
        return parse_timestamp(value) if isinstance(value, str) else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class DisruptedPods:
    """buildDisruptedPodMap's answer: the entries still awaiting their pod's deletion, when to look
    again (the earliest of their deadlines) and the pods whose deadline passed without a deletion."""

    pods: dict[str, str]
    recheck: datetime | None
    not_deleted: tuple[str, ...]


def disrupted_pods(pods: Iterable[Obj], recorded: Mapping[str, Any] | None, now: datetime) -> DisruptedPods:
    """Keep a recorded eviction while its pod exists, is not yet being deleted and its 2 minutes last."""
    result: dict[str, str] = {}
    recheck: datetime | None = None
    late: list[str] = []
    for pod in pods if recorded else ():
        metadata = _field(pod, "metadata")
        name = str(metadata.get("name") or "")
        if metadata.get("deletionTimestamp") or name not in recorded:  # type: ignore[operator]
            continue
        when = _disruption_time(recorded[name])  # type: ignore[index]
        if when is None:
            continue
        deadline = when + DELETION_TIMEOUT
        if deadline < now:
            late.append(name)
        else:
            recheck = deadline if recheck is None or deadline < recheck else recheck
            result[name] = recorded[name]  # type: ignore[index]
    return DisruptedPods(result, recheck, tuple(late))


def count_healthy(pods: Iterable[Obj], disrupted: Mapping[str, str], now: datetime) -> int:
    """countHealthyPods: Ready pods that are neither being deleted nor about to be (a live eviction)."""
    healthy = 0
    for pod in pods:
        metadata = _field(pod, "metadata")
        if metadata.get("deletionTimestamp"):
            continue
        when = _disruption_time(disrupted.get(metadata.get("name", "")))
        if when is not None and when + DELETION_TIMEOUT > now:
            continue
        healthy += is_pod_ready(pod)
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected_count: int) -> int:
    """updatePdbStatus: none while no pod is expected (a new PDB is safe before its first sync), never
    negative."""
    allowed = current_healthy - desired_healthy
    return 0 if expected_count <= 0 or allowed <= 0 else allowed


def set_condition(conditions: list[dict[str, Any]], condition: Mapping[str, Any], now: datetime) -> None:
    """apimeta.SetStatusCondition: replace the condition of the same type in place; its
    lastTransitionTime moves only when the status changes."""
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            if existing.get("status") != condition["status"]:
                existing["lastTransitionTime"] = format_timestamp(now)
            existing.update({k: v for k, v in condition.items() if k != "lastTransitionTime"})
            return
    conditions.append({**condition, "lastTransitionTime": format_timestamp(now)})


def update_disruption_allowed_condition(status: dict[str, Any], now: datetime) -> None:
    """UpdateDisruptionAllowedCondition: True/SufficientPods while a disruption is allowed, else
    False/InsufficientPods (in place)."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    conditions = status.setdefault("conditions", [])
    set_condition(conditions, {"type": DISRUPTION_ALLOWED, "status": "True" if allowed else "False",
                               "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS, "message": "",
                               "observedGeneration": int(status.get("observedGeneration") or 0)}, now)


def conditions_up_to_date(pdb: Obj) -> bool:
    """ConditionsAreUpToDate: the DisruptionAllowed condition agrees with disruptionsAllowed and generation."""
    status = _field(pdb, "status")
    condition = next((c for c in status.get("conditions") or [] if isinstance(c, Mapping)
                      and c.get("type") == DISRUPTION_ALLOWED), None)
    if condition is None or status.get("observedGeneration") != _field(pdb, "metadata").get("generation"):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return condition.get("status") == "True" and condition.get("reason") == SUFFICIENT_PODS
    return condition.get("status") == "False" and condition.get("reason") == INSUFFICIENT_PODS


def desired_status(pdb: Obj, *, current_healthy: int, expected: Expected, disrupted: Mapping[str, str],
                   now: datetime) -> dict[str, Any] | None:
    """updatePdbStatus: the new status, or None when the stored one already says all of it."""
    status = _field(pdb, "status")
    generation = _field(pdb, "metadata").get("generation") or 0
    allowed = disruptions_allowed(current_healthy, expected.desired_healthy, expected.expected_count)
    wanted = {"currentHealthy": current_healthy, "desiredHealthy": expected.desired_healthy,
              "expectedPods": expected.expected_count, "disruptionsAllowed": allowed}
    if (all(status.get(k, 0) == v for k, v in wanted.items()) and dict(status.get("disruptedPods") or {}) == disrupted
            and status.get("observedGeneration", 0) == generation and conditions_up_to_date(pdb)):
        return None
    new: dict[str, Any] = {**wanted, "observedGeneration": generation,
                           "conditions": [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]}
    if disrupted:
        new["disruptedPods"] = dict(disrupted)
    update_disruption_allowed_condition(new, now)
    return new


def fail_safe_status(pdb: Obj, message: str, now: datetime) -> dict[str, Any]:
    """failSafe: whatever went wrong, allow no disruption and say why (False/SyncFailed)."""
    status = {**_field(pdb, "status"), "disruptionsAllowed": 0}
    conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    set_condition(conditions, {"type": DISRUPTION_ALLOWED, "status": "False", "reason": SYNC_FAILED,
                               "message": message, "observedGeneration": int(status.get("observedGeneration") or 0)},
                  now)
    status["conditions"] = conditions
    return status


# -- the eviction handler's decisions ----------------------------------------------------------------


def can_ignore_pdb(pod: Obj) -> bool:
    """canIgnorePDB: a pod that finished, never started or is already being deleted disrupts nothing more."""
    phase = _field(pod, "status").get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(_field(pod, "metadata").get("deletionTimestamp"))


def should_enforce_resource_version(pod: Obj) -> bool:
    """shouldEnforceResourceVersion: delete a live pod only in the version that was judged."""
    phase = _field(pod, "status").get("phase")
    return phase not in ("Succeeded", "Failed") and not _field(pod, "metadata").get("deletionTimestamp")


def unready_within_budget(pod: Obj, pdb: Obj) -> bool:
    """A pod that is not Ready does not count as healthy: while the budget holds, it goes without a
    decrement (upstream: delete with a resourceVersion precondition instead)."""
    status = _field(pdb, "status")
    desired = int(status.get("desiredHealthy") or 0)
    return not is_pod_ready(pod) and int(status.get("currentHealthy") or 0) >= desired and desired > 0


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an eviction may not go ahead: HTTP code, reason, message and (for 429) the DisruptionBudget cause."""

    code: int
    reason: str
    message: str
    cause: str = ""
    retry_after_seconds: int = 0


def still_processing(name: str) -> Refusal:
    """createTooManyRequestsError: the controller has not seen the PDB's latest spec (or a race was lost)."""
    return Refusal(429, "TooManyRequests", VIOLATION_MESSAGE,
                   f"The disruption budget {name} is still being processed by the server.", 10)


def check_and_decrement(pdb: Obj, pod_name: str, *, now: datetime, dry_run: bool) -> dict[str, Any] | Refusal:
    """checkAndDecrement: the PDB's new status (one disruption fewer, the pod recorded as disrupted), or
    why not."""
    metadata, status = _field(pdb, "metadata"), _field(pdb, "status")
    name = metadata.get("name", "")
    allowed = int(status.get("disruptionsAllowed") or 0)
    if int(status.get("observedGeneration") or 0) < int(metadata.get("generation") or 0):
        return still_processing(name)
    if allowed < 0:
        return Refusal(403, "Forbidden", f'poddisruptionbudget.policy "{name}" is forbidden: pdb disruptions '
                       "allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        return Refusal(403, "Forbidden", f'poddisruptionbudget.policy "{name}" is forbidden: DisruptedPods map '
                       "too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        return Refusal(429, "TooManyRequests", VIOLATION_MESSAGE,
                       f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
                       f"and has {int(status.get('currentHealthy') or 0)} currently")
    new = {**status, "disruptionsAllowed": allowed - 1,
           "conditions": [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]}
    if allowed - 1 == 0:
        update_disruption_allowed_condition(new, now)
    if not dry_run:
        new["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: format_timestamp(now)}
    return new
