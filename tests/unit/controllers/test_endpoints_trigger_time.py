"""control/controllers/shared/trigger_time.py: the last-change trigger time as upstream's
TriggerTimeTracker computes it (trigger_time_tracker_test.go cases: a new Service gives its creation time,
then the earliest of the pod Ready transitions that moved since the previous sync, nothing when none did),
and Go's RFC3339Nano formatting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from control.controllers.shared.trigger_time import TriggerTimeTracker, format_trigger_time, pod_trigger_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return format_trigger_time(T0 + timedelta(seconds=seconds))


def service(created: float | None = 0, name: str = "web") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if created is not None:
        meta["creationTimestamp"] = stamp(created)
    return {"metadata": meta, "spec": {}}


def pod(name: str, ready_since: float | None) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Ready", "status": "True"}
    if ready_since is not None:
        condition["lastTransitionTime"] = stamp(ready_since)
    return {"metadata": {"name": name, "namespace": "ns"}, "status": {"conditions": [condition]}}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(("moment", "text"), [
    pytest.param(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05Z", id="whole-seconds"),
    pytest.param(datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), "2026-01-02T03:04:05.12Z", id="trailing-zeros"),
    pytest.param(datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC), "2026-01-02T03:04:05.000007Z", id="micro"),
    pytest.param(datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))), "2026-01-02T03:04:05Z",
                 id="to-utc"),
])
def test_format_is_rfc3339nano_in_utc(moment, text):
    assert format_trigger_time(moment) == text


def test_pod_trigger_time_is_the_ready_transition():
    assert pod_trigger_time(pod("a", 5)) == at(5)
    assert pod_trigger_time(pod("a", None)) is None
    assert pod_trigger_time({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": "junk"}]}}) is None
    assert pod_trigger_time({"status": {}}) is None


def test_new_service_then_earliest_changed_pod_then_nothing():
    tracker = TriggerTimeTracker()
    assert tracker.compute(service(0), [pod("a", 3)]) == at(0)  # first sync: the Service's creation
    assert tracker.compute(service(0), [pod("a", 3)]) is None  # nothing moved
    assert tracker.compute(service(0), [pod("a", 3), pod("b", 7)]) == at(7)  # a new pod
    assert tracker.compute(service(0), [pod("a", 10), pod("b", 9)]) == at(9)  # two moved: the earlier one
    assert tracker.compute(service(0), [pod("a", 10)]) is None  # a pod left: no trigger time upstream either
    assert tracker.compute(service(0), [pod("a", 10), pod("b", 9)]) == at(9)  # back: seen as changed again
    assert tracker.compute(service(0), [pod("a", 8), pod("b", 9)]) is None  # only moving forward counts


def test_services_are_tracked_apart_and_forgotten():
    tracker = TriggerTimeTracker()
    assert tracker.compute(service(0), []) == at(0)
    assert tracker.compute(service(2, name="db"), []) == at(2)
    assert tracker.compute(service(0), []) is None
    tracker.forget("ns", "web")
    assert tracker.compute(service(0), []) == at(0)  # known anew: creation time again
    assert tracker.compute(service(2, name="db"), []) is None


def test_missing_times_are_not_triggers():
    tracker = TriggerTimeTracker()
    assert tracker.compute(service(None), [pod("a", None)]) is None
    assert tracker.compute(service(None), [pod("a", None)]) is None
    assert tracker.compute(service(None), [pod("a", 4)]) == at(4)
