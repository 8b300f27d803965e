"""The PLEG's transition table (upstream pleg/generic.go generateEvents) and per-pod diff, as pure functions."""

from __future__ import annotations

import pytest

from nodeagent.pleg import EventType, PlegState, PodLifecycleEvent, compute_pod_events, convert_state, generate_events
from nodeagent.runtime.types import ContainerState

R, X, U, N = PlegState.RUNNING, PlegState.EXITED, PlegState.UNKNOWN, PlegState.NON_EXISTENT
STARTED, DIED = EventType.CONTAINER_STARTED, EventType.CONTAINER_DIED
REMOVED, CHANGED = EventType.CONTAINER_REMOVED, EventType.CONTAINER_CHANGED

TABLE = [
    (R, R, ()), (X, X, ()), (U, U, ()), (N, N, ()),
    (N, R, (STARTED,)), (U, R, (STARTED,)), (X, R, (STARTED,)),
    (N, X, (DIED,)), (R, X, (DIED,)), (U, X, (DIED,)),
    (N, U, (CHANGED,)), (R, U, (CHANGED,)), (X, U, (CHANGED,)),
    (X, N, (REMOVED,)), (R, N, (DIED, REMOVED)), (U, N, (DIED, REMOVED)),
]


@pytest.mark.parametrize("old, new, expected", [pytest.param(*r, id=f"{r[0].value}->{r[1].value}") for r in TABLE])
def test_every_transition(old, new, expected):
    assert tuple(e.type for e in generate_events("pod", "c1", old, new)) == expected
    assert all(e == PodLifecycleEvent("pod", e.type, "c1") for e in generate_events("pod", "c1", old, new))


def test_all_sixteen_pairs_are_in_the_table():
    assert {(o, n) for o, n, _ in TABLE} == {(o, n) for o in PlegState for n in PlegState}


@pytest.mark.parametrize(
    "state, expected",
    [(ContainerState.RUNNING, R), (ContainerState.EXITED, X), (ContainerState.CREATED, U), (ContainerState.UNKNOWN, U),
     (None, N)],
)
def test_convert_state(state, expected):
    assert convert_state(state) is expected


def test_pod_diff_covers_old_and_new_containers_in_order():
    old = {"sandbox": R, "app-1": R, "gone": X}
    new = {"sandbox": R, "app-1": X, "app-2": R, "init": U}
    assert compute_pod_events("u", old, new) == (
        PodLifecycleEvent("u", DIED, "app-1"),
        PodLifecycleEvent("u", REMOVED, "gone"),
        PodLifecycleEvent("u", STARTED, "app-2"),
        PodLifecycleEvent("u", CHANGED, "init"),
    )


def test_a_pod_that_vanished_reports_every_container():
    assert [e.type for e in compute_pod_events("u", {"s": R, "a": X}, {})] == [DIED, REMOVED, REMOVED]
