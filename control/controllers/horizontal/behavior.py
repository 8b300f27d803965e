"""From the replicas the metrics ask for to the replicas the HPA sets: stabilisation over recent
recommendations and the scaling limits (bounds, rate policies), pure over recorded history and `now`.

Upstream: pkg/controller/podautoscaler/horizontal.go (`normalizeDesiredReplicas` with
`stabilizeRecommendation` and `convertDesiredReplicasWithRules` / `calculateScaleUpLimit` for an HPA without
`behavior`; `normalizeDesiredReplicasWithBehaviors` with `stabilizeRecommendationWithBehaviors`,
`convertDesiredReplicasWithBehaviorRate`, `calculateScaleUpLimitWithScalingRules`,
`calculateScaleDownLimitWithBehaviors`, `getReplicasChangePerPeriod`, `storeScaleEvent`,
`markScaleEventsOutdated`, `getLongestPolicyPeriod` for one with it), with the condition reasons and
messages the controller writes (AbleToScale, ScalingLimited).

Scale-down stabilisation: the highest recommendation of the window (default 300 s, upstream's
--horizontal-pod-autoscaler-downscale-stabilization; `behavior.scaleDown.stabilizationWindowSeconds`
overrides it) wins, so a dip does not remove pods that are needed a minute later. With `behavior`,
scale-up has its own window (default 0) and each direction is rate limited by its policies over the
scale events of their periods (Max: the most permissive policy, Min: the least, Disabled: no change).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

DOWNSCALE_STABILIZATION = 300.0  # upstream --horizontal-pod-autoscaler-downscale-stabilization


@dataclass(frozen=True)
class Recommendation:
    replicas: int
    at: datetime


@dataclass(frozen=True)
class ScaleEvent:
    change: int  # replicas added (scale-up list) or removed (scale-down list)
    at: datetime
    outdated: bool = False


@dataclass(frozen=True)
class Normalized:
    """The replicas to set and the two conditions the normalisation decided."""

    replicas: int
    able_reason: str
    able_message: str
    limited: bool
    limited_reason: str
    limited_message: str


def _record(history: Sequence[Recommendation], replicas: int, now: datetime,
            is_old: Any) -> list[Recommendation]:
    """Replace the last old sample with the new one (upstream reuses a slot), else append."""
    updated = list(history)
    old = [index for index, rec in enumerate(updated) if is_old(rec)]
    if old:
        updated[old[-1]] = Recommendation(replicas, now)
    else:
        updated.append(Recommendation(replicas, now))
    return updated


def stabilize(history: Sequence[Recommendation], desired: int, *, now: datetime,
              window: float) -> tuple[int, list[Recommendation]]:
    """stabilizeRecommendation: the highest recommendation within `window` seconds (this one included)."""
    cutoff = now - timedelta(seconds=window)
    highest = max([desired] + [rec.replicas for rec in history if rec.at >= cutoff])
    return highest, _record(history, desired, now, lambda rec: rec.at < cutoff)


def scale_up_limit(current: int) -> int:
    """calculateScaleUpLimit: at most double, at least 4 (for an HPA without behavior)."""
    return max(2 * current, 4)


def limit_by_rules(current: int, desired: int, minimum: int, maximum: int) -> tuple[int, str, str]:
    """convertDesiredReplicasWithRules: (replicas, ScalingLimited reason, message)."""
    up_limit = scale_up_limit(current)
    if maximum > up_limit:
        allowed_max, reason, message = (up_limit, "ScaleUpLimit",
                                        "the desired replica count is increasing faster than the maximum scale rate")
    else:
        allowed_max, reason, message = (maximum, "TooManyReplicas",
                                        "the desired replica count is more than the maximum replica count")
    if desired < minimum:
        return minimum, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > allowed_max:
        return allowed_max, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def normalize(history: Sequence[Recommendation], *, current: int, desired: int, minimum: int, maximum: int,
              now: datetime, window: float = DOWNSCALE_STABILIZATION) -> tuple[Normalized, list[Recommendation]]:
    """normalizeDesiredReplicas (no behavior)."""
    stabilized, history = stabilize(history, desired, now=now, window=window)
    if stabilized != desired:
        able = ("ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation")
    else:
        able = ("ReadyForNewScale", "recommended size matches current size")
    replicas, reason, message = limit_by_rules(current, stabilized, minimum, maximum)
    return Normalized(replicas, *able, replicas != stabilized, reason, message), history


# -- with behavior ------------------------------------------------------------------------------------


def _changed_in_period(events: Sequence[ScaleEvent], period: int, now: datetime) -> int:
    """getReplicasChangePerPeriod."""
    cutoff = now - timedelta(seconds=period)
    return sum(event.change for event in events if event.at > cutoff)


def _select(rules: Mapping[str, Any]) -> str:
    return str(rules.get("selectPolicy") or "Max")


def _policies(current: int, up: Sequence[ScaleEvent], down: Sequence[ScaleEvent], rules: Mapping[str, Any],
              now: datetime) -> list[tuple[str, int, int]]:
    """(type, value, start) of each Pods/Percent policy; `start` is the replica count at the beginning of
    the policy's period (the current count with that period's scale events undone), which both directions
    apply their policy to."""
    found = []
    for policy in rules.get("policies") or []:
        if policy.get("type") not in ("Pods", "Percent"):
            continue
        period = int(policy.get("periodSeconds") or 0)
        start = current - _changed_in_period(up, period, now) + _changed_in_period(down, period, now)
        found.append((str(policy["type"]), int(policy.get("value") or 0), start))
    return found


def scale_up_limit_with_rules(current: int, up: Sequence[ScaleEvent], down: Sequence[ScaleEvent],
                              rules: Mapping[str, Any], now: datetime) -> int:
    """calculateScaleUpLimitWithScalingRules: Max → the highest proposal, Min → the lowest."""
    if _select(rules) == "Disabled":
        return current
    proposals = [start + value if kind == "Pods" else math.ceil(start * (1 + value / 100))
                 for kind, value, start in _policies(current, up, down, rules, now)]
    if not proposals:
        return current
    return min(proposals) if _select(rules) == "Min" else max(proposals)


def scale_down_limit_with_rules(current: int, up: Sequence[ScaleEvent], down: Sequence[ScaleEvent],
                                rules: Mapping[str, Any], now: datetime) -> int:
    """calculateScaleDownLimitWithBehaviors: Max → the lowest proposal (the biggest change), Min → the highest."""
    if _select(rules) == "Disabled":
        return current
    proposals = [start - value if kind == "Pods" else int(start * (1 - value / 100))
                 for kind, value, start in _policies(current, up, down, rules, now)]
    if not proposals:
        return current
    return max(proposals) if _select(rules) == "Min" else min(proposals)


def normalize_with_behavior(history: Sequence[Recommendation], up_events: Sequence[ScaleEvent],
                            down_events: Sequence[ScaleEvent], *, behavior: Mapping[str, Any], current: int,
                            desired: int, minimum: int, maximum: int, now: datetime,
                            default_down_window: float = DOWNSCALE_STABILIZATION,
                            ) -> tuple[Normalized, list[Recommendation]]:
    """normalizeDesiredReplicasWithBehaviors: stabilise within the up/down windows, then rate-limit."""
    up_rules, down_rules = behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {}
    up_window = float(up_rules.get("stabilizationWindowSeconds") or 0)
    down_value = down_rules.get("stabilizationWindowSeconds")
    down_window = float(default_down_window if down_value is None else down_value)
    up_cutoff, down_cutoff = now - timedelta(seconds=up_window), now - timedelta(seconds=down_window)
    up_rec = down_rec = desired
    for rec in history:
        if rec.at > up_cutoff:
            up_rec = min(rec.replicas, up_rec)
        if rec.at > down_cutoff:
            down_rec = max(rec.replicas, down_rec)
    stabilized = min(max(current, up_rec), down_rec)
    history = _record(history, desired, now, lambda rec: rec.at < up_cutoff and rec.at < down_cutoff)
    if stabilized != desired:
        if desired >= current:
            able = ("ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation")
        else:
            able = ("ScaleDownStabilized", "recent recommendations were higher than current one, applying the "
                                           "highest recent recommendation")
    else:
        able = ("ReadyForNewScale", "recommended size matches current size")
    replicas, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
    if stabilized > current:
        limit = max(scale_up_limit_with_rules(current, up_events, down_events, up_rules, now), current)
        if maximum > limit:
            allowed, why = limit, ("ScaleUpLimit",
                                   "the desired replica count is increasing faster than the maximum scale rate")
        else:
            allowed, why = maximum, ("TooManyReplicas",
                                     "the desired replica count is more than the maximum replica count")
        if stabilized > allowed:
            replicas, (reason, message) = allowed, why
    elif stabilized < current:
        limit = min(scale_down_limit_with_rules(current, up_events, down_events, down_rules, now), current)
        if minimum < limit:
            allowed, why = limit, ("ScaleDownLimit",
                                   "the desired replica count is decreasing faster than the maximum scale rate")
        else:
            allowed, why = minimum, ("TooFewReplicas",
                                     "the desired replica count is less than the minimum replica count")
        if stabilized < allowed:
            replicas, (reason, message) = allowed, why
    return Normalized(replicas, *able, replicas != stabilized, reason, message), history


def longest_period(rules: Mapping[str, Any] | None) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in (rules or {}).get("policies") or []), default=0)


def record_scale_event(events: Sequence[ScaleEvent], change: int, *, now: datetime,
                       period: int) -> list[ScaleEvent]:
    """storeScaleEvent: mark events older than the longest policy period outdated, reuse such a slot."""
    cutoff = now - timedelta(seconds=period)
    updated = [replace(event, outdated=True) if event.at <= cutoff else event for event in events]
    outdated = [index for index, event in enumerate(updated) if event.outdated]
    if outdated:
        updated[outdated[-1]] = ScaleEvent(change, now)
    else:
        updated.append(ScaleEvent(change, now))
    return updated
