"""CrashLoopBackOff arithmetic with the clock as data."""

from __future__ import annotations

import pytest

from nodeagent.runtime.backoff import Backoff, backoff_key


def test_next_doubles_up_to_the_maximum():
    backoff = Backoff(initial=10, maximum=300)
    assert [backoff.next("k", float(t)) for t in range(7)] == [10, 20, 40, 80, 160, 300, 300]


def test_in_backoff_and_remaining_count_from_the_last_failure():
    backoff = Backoff(initial=10, maximum=300)
    backoff.next("k", 100.0)
    assert backoff.in_backoff("k", 100.0) and backoff.remaining("k", 100.0) == 10
    assert backoff.in_backoff("k", 109.5) and backoff.remaining("k", 109.5) == pytest.approx(0.5)
    assert not backoff.in_backoff("k", 110.0) and backoff.remaining("k", 110.0) == 0
    assert not backoff.in_backoff("other", 100.0) and backoff.remaining("other", 100.0) == 0


def test_quiet_for_twice_the_maximum_starts_over():
    backoff = Backoff(initial=1, maximum=4)
    for t in (0.0, 1.0, 2.0, 3.0):
        backoff.next("k", t)
    assert backoff.get("k") == 4
    assert backoff.next("k", 3.0 + 8.0) == 4  # exactly 2 × max: not yet expired
    assert backoff.next("k", 11.0 + 8.5) == 1  # more than 2 × max since the last failure


def test_gc_drops_only_expired_entries():
    backoff = Backoff(initial=1, maximum=5)
    backoff.next("old", 0.0)
    backoff.next("new", 8.0)
    assert backoff.gc(10.0) == []
    assert backoff.gc(10.5) == ["old"]
    assert len(backoff) == 1 and backoff.get("old") == 0 and backoff.get("new") == 1


def test_expired_entry_is_not_in_backoff_before_gc():
    backoff = Backoff(initial=1, maximum=2)
    backoff.next("k", 0.0)
    assert backoff.remaining("k", 4.5) == 0


@pytest.mark.parametrize(("initial", "maximum"), [
    pytest.param(0, 10, id="zero-initial"),
    pytest.param(-1, 10, id="negative-initial"),
    pytest.param(10, 5, id="max-below-initial"),
])
def test_bad_configuration_rejected(initial: float, maximum: float):
    with pytest.raises(ValueError):
        Backoff(initial=initial, maximum=maximum)


def crash_loop(backoff: Backoff, runtime: float, polls: float = 0.5, until: float = 200.0) -> list[float]:
    """A container that dies `runtime` seconds after each start, polled by a sync loop every `polls`
    seconds; returns the start times."""
    key = backoff_key("uid", "app", "h")
    starts = [0.0]
    now = 0.0
    while now < until:
        now += polls
        finished_at = starts[-1] + runtime
        if now < finished_at:
            continue
        if backoff.admit(key, finished_at=finished_at, now=now) == 0:
            starts.append(now)
    return starts


def test_admit_gives_upstream_restart_spacing():
    starts = crash_loop(Backoff(initial=10, maximum=40), runtime=1.0)
    gaps = [b - a - 1.0 for a, b in zip(starts, starts[1:], strict=False)]  # the wait after each exit
    assert gaps[:6] == pytest.approx([0.0, 10.0, 20.0, 40.0, 40.0, 40.0], abs=0.5)


def test_admit_repeated_for_the_same_exit_records_once():
    backoff = Backoff(initial=10, maximum=300)
    assert backoff.admit("k", finished_at=0.0, now=0.0) == 0  # the first restart is immediate
    assert backoff.admit("k", finished_at=1.0, now=2.0) == pytest.approx(9.0)
    assert backoff.admit("k", finished_at=1.0, now=5.0) == pytest.approx(6.0)
    assert backoff.get("k") == 10
    assert backoff.admit("k", finished_at=1.0, now=11.0) == 0
    assert backoff.get("k") == 20


def test_key_changes_with_the_spec_hash():
    assert backoff_key("u", "c", "h1") != backoff_key("u", "c", "h2")
    assert backoff_key("u", "c", "h1") == backoff_key("u", "c", "h1")
