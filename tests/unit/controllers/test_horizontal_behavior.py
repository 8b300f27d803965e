"""control/controllers/horizontal/behavior.py: scale-down stabilisation, the bounds and the rate policies of
`behavior` (defaults as the API server fills them in)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from control.api.autoscaling import default_scale_down_rules, default_scale_up_rules
from control.controllers.horizontal import behavior as b

NOW = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def test_scale_down_is_stabilised_over_the_window():
    history = [b.Recommendation(5, ago(100))]
    assert b.stabilize(history, 2, now=NOW, window=300)[0] == 5
    assert b.stabilize(history, 2, now=NOW, window=60)[0] == 2
    _, recorded = b.stabilize(history, 2, now=NOW, window=60)
    assert recorded == [b.Recommendation(2, NOW)]  # the expired slot is reused


@pytest.mark.parametrize(("current", "desired", "minimum", "maximum", "expected"), [
    pytest.param(1, 10, 1, 10, (4, "ScaleUpLimit"), id="at-most-double-or-4"),
    pytest.param(4, 10, 1, 6, (6, "TooManyReplicas"), id="max"),
    pytest.param(3, 0, 1, 6, (1, "TooFewReplicas"), id="min"),
    pytest.param(3, 4, 1, 6, (4, "DesiredWithinRange"), id="within"),
])
def test_limits_without_behavior(current, desired, minimum, maximum, expected):
    assert b.limit_by_rules(current, desired, minimum, maximum)[:2] == expected


def test_normalize_without_behavior_reports_the_conditions():
    result, _ = b.normalize([b.Recommendation(4, ago(30))], current=4, desired=1, minimum=1, maximum=5, now=NOW)
    assert (result.replicas, result.able_reason, result.limited) == (4, "ScaleDownStabilized", False)
    result, _ = b.normalize([], current=1, desired=9, minimum=1, maximum=9, now=NOW)
    assert (result.replicas, result.able_reason, result.limited, result.limited_reason) == (
        4, "ReadyForNewScale", True, "ScaleUpLimit")


def behavior(down_window: int | None = None, **down) -> dict:
    scale_down = {**default_scale_down_rules(), **down}
    if down_window is not None:
        scale_down["stabilizationWindowSeconds"] = down_window
    return {"scaleUp": default_scale_up_rules(), "scaleDown": scale_down}


@pytest.mark.parametrize(("history", "up_events", "spec", "current", "desired", "expected"), [
    pytest.param([], [], behavior(), 1, 10, (5, "ScaleUpLimit"), id="default-up-4-pods-or-100-percent"),
    pytest.param([], [], behavior(), 4, 10, (8, "ScaleUpLimit"), id="percent-wins-when-larger"),
    pytest.param([], [b.ScaleEvent(4, ago(5))], behavior(), 5, 10, (5, "ScaleUpLimit"),
                 id="events-of-the-period-count"),
    pytest.param([], [b.ScaleEvent(4, ago(20))], behavior(), 5, 10, (10, "DesiredWithinRange"), id="old-events-do-not"),
    pytest.param([b.Recommendation(3, ago(10))], [], behavior(5), 3, 1, (1, "DesiredWithinRange"),
                 id="short-down-window-lets-it-go"),
    pytest.param([b.Recommendation(3, ago(10))], [], behavior(), 3, 1, (3, "DesiredWithinRange"),
                 id="default-300s-window-holds"),
    pytest.param([], [], behavior(0, policies=[{"type": "Pods", "value": 1, "periodSeconds": 60}]), 4, 1,
                 (3, "ScaleDownLimit"), id="down-policy-one-pod-a-minute"),
    pytest.param([], [], behavior(0, selectPolicy="Disabled"), 4, 1, (4, "ScaleDownLimit"), id="down-disabled"),
])
def test_normalize_with_behavior(history, up_events, spec, current, desired, expected):
    result, _ = b.normalize_with_behavior(history, up_events, [], behavior=spec, current=current, desired=desired,
                                          minimum=1, maximum=10, now=NOW)
    assert (result.replicas, result.limited_reason) == expected


def test_stabilised_reason_and_recorded_history():
    result, history = b.normalize_with_behavior([b.Recommendation(3, ago(10))], [], [], behavior=behavior(),
                                                current=3, desired=1, minimum=1, maximum=10, now=NOW)
    assert (result.able_reason, result.replicas) == ("ScaleDownStabilized", 3)
    assert history == [b.Recommendation(3, ago(10)), b.Recommendation(1, NOW)]


def test_scale_events_reuse_outdated_slots():
    events = b.record_scale_event([b.ScaleEvent(2, ago(100)), b.ScaleEvent(1, ago(5))], 3, now=NOW, period=15)
    assert events == [b.ScaleEvent(3, NOW), b.ScaleEvent(1, ago(5))]
