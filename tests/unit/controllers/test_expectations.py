"""control/controllers/shared/expectations.py on tables (upstream behaviour: pkg/controller/controller_utils.go,
TestControllerExpectations and TestUIDExpectations in controller_utils_test.go), the 5-minute timeout on
a fake clock, and concurrent observers."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from control.controllers.shared.expectations import (
    EXPECTATIONS_TIMEOUT,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from tests.support.fake_clock import FakeClock

KEY = "ns/rs"
Step = Callable[[ControllerExpectations], None]


@pytest.mark.parametrize(("steps", "satisfied"), [
    pytest.param([], True, id="no-record-is-satisfied"),
    pytest.param([lambda e: e.expect_creations(KEY, 2)], False, id="creations-outstanding"),
    pytest.param([lambda e: e.expect_creations(KEY, 2), lambda e: e.creation_observed(KEY)], False,
                 id="one-of-two-seen"),
    pytest.param([lambda e: e.expect_creations(KEY, 2)] + [lambda e: e.creation_observed(KEY)] * 2, True,
                 id="all-creations-seen"),
    pytest.param([lambda e: e.expect_creations(KEY, 1)] + [lambda e: e.creation_observed(KEY)] * 3, True,
                 id="more-seen-than-expected"),
    pytest.param([lambda e: e.expect_deletions(KEY, 1)], False, id="deletion-outstanding"),
    pytest.param([lambda e: e.expect_deletions(KEY, 1), lambda e: e.deletion_observed(KEY)], True,
                 id="deletion-seen"),
    pytest.param([lambda e: e.set_expectations(KEY, add=1, delete=1), lambda e: e.creation_observed(KEY)], False,
                 id="both-kinds-need-both"),
    pytest.param([lambda e: e.expect_creations(KEY, 1), lambda e: e.raise_expectations(KEY, add=1, delete=0),
                  lambda e: e.creation_observed(KEY)], False, id="raised-needs-more"),
    pytest.param([lambda e: e.raise_expectations(KEY, add=3, delete=0)], True, id="raise-without-record-does-nothing"),
    pytest.param([lambda e: e.expect_creations(KEY, 5), lambda e: e.lower_expectations(KEY, add=5, delete=0)], True,
                 id="lowered-to-zero"),
    pytest.param([lambda e: e.expect_creations(KEY, 5), lambda e: e.delete_expectations(KEY)], True,
                 id="deleted-record"),
    pytest.param([lambda e: e.expect_creations("other/rs", 5)], True, id="other-keys-do-not-count"),
    pytest.param([lambda e: e.expect_creations(KEY, 2), lambda e: e.creation_observed(KEY),
                  lambda e: e.expect_creations(KEY, 2)], False, id="set-replaces-the-record"),
])
def test_satisfied_expectations(steps: list[Step], satisfied: bool) -> None:
    expectations = ControllerExpectations(clock=FakeClock())
    for step in steps:
        step(expectations)
    assert expectations.satisfied_expectations(KEY) is satisfied


@pytest.mark.parametrize(("elapsed", "satisfied"), [
    pytest.param(EXPECTATIONS_TIMEOUT - 1, False, id="within-the-timeout"),
    pytest.param(EXPECTATIONS_TIMEOUT, False, id="at-the-timeout"),
    pytest.param(EXPECTATIONS_TIMEOUT + 1, True, id="expired"),
])
def test_unfulfilled_expectations_expire_after_five_minutes(elapsed: float, satisfied: bool) -> None:
    clock = FakeClock()
    expectations = ControllerExpectations(clock=clock)
    expectations.expect_creations(KEY, 1)
    clock.step(elapsed)
    assert expectations.satisfied_expectations(KEY) is satisfied
    assert EXPECTATIONS_TIMEOUT == 300.0


def test_observations_keep_the_time_the_expectations_were_set() -> None:
    clock = FakeClock()
    expectations = ControllerExpectations(clock=clock)
    expectations.expect_creations(KEY, 3)
    clock.step(EXPECTATIONS_TIMEOUT)
    expectations.creation_observed(KEY)  # not a renewal: the record is as old as its set
    clock.step(1)
    assert expectations.satisfied_expectations(KEY)
    record = expectations.get_expectations(KEY)
    assert record is not None and (record.add, record.delete, record.fulfilled) == (2, 0, False)


def test_concurrent_observers_count_every_observation() -> None:
    expectations = ControllerExpectations(clock=FakeClock())
    expectations.expect_creations(KEY, 800)
    threads = [threading.Thread(target=lambda: [expectations.creation_observed(KEY) for _ in range(100)])
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    record = expectations.get_expectations(KEY)
    assert record is not None and record.add == 0 and expectations.satisfied_expectations(KEY)


@pytest.mark.parametrize(("observed", "satisfied", "left"), [
    pytest.param(["ns/a", "ns/b"], True, frozenset(), id="both-deleted-pods-seen"),
    pytest.param(["ns/a"], False, frozenset({"ns/b"}), id="one-outstanding"),
    pytest.param(["ns/a", "ns/a"], False, frozenset({"ns/b"}), id="a-pod-counts-once"),
    pytest.param(["ns/someone-elses", "ns/a"], False, frozenset({"ns/b"}), id="others-deletions-do-not-count"),
])
def test_uid_tracking_counts_only_the_controllers_own_deletions(observed: list[str], satisfied: bool,
                                                                left: frozenset[str]) -> None:
    expectations = UIDTrackingControllerExpectations(ControllerExpectations(clock=FakeClock()))
    expectations.expect_deletions(KEY, ["ns/a", "ns/b"])
    for pod_key in observed:
        expectations.deletion_observed(KEY, pod_key)
    assert expectations.satisfied_expectations(KEY) is satisfied
    assert expectations.get_deleting(KEY) == left


def test_uid_tracking_creations_and_delete_expectations() -> None:
    expectations = UIDTrackingControllerExpectations(ControllerExpectations(clock=FakeClock()))
    expectations.expect_creations(KEY, 1)
    assert not expectations.satisfied_expectations(KEY)
    expectations.creation_observed(KEY)
    assert expectations.satisfied_expectations(KEY)
    expectations.expect_deletions(KEY, ["ns/a"])
    expectations.delete_expectations(KEY)
    assert expectations.satisfied_expectations(KEY) and expectations.get_deleting(KEY) == frozenset()
    assert expectations.get_expectations(KEY) is None
