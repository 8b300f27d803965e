"""When certificates are renewed (nodeagent/rotation.py, upstream certificate_manager.go nextRotationDeadline):
at a jittered 70-90% of their life; one past 90% (or unreadable, or from the future) is asked for anew at
start; a failed renewal is tried again after a back-off and the loop stops when told."""

from __future__ import annotations

import threading

import pytest

from nodeagent import rotation

YEAR = 365 * 86400.0
PERIOD = rotation.Validity(not_before=1000.0, not_after=1000.0 + YEAR)


@pytest.mark.parametrize(("fraction", "expected"), [
    (0.0, 1000.0 + 0.7 * YEAR), (0.5, 1000.0 + 0.8 * YEAR), (0.999, 1000.0 + 0.8998 * YEAR),
])
def test_deadline_is_between_70_and_90_percent(fraction: float, expected: float) -> None:
    assert rotation.rotation_deadline(PERIOD, fraction) == pytest.approx(expected)


@pytest.mark.parametrize(("period", "now", "needed"), [
    (PERIOD, 1000.0 + 0.5 * YEAR, False),
    (PERIOD, 1000.0 + 0.89 * YEAR, False),
    (PERIOD, 1000.0 + 0.9 * YEAR, True),
    (PERIOD, 1000.0 + 2 * YEAR, True),  # expired
    (PERIOD, 1000.0 - 3600, True),  # issued an hour in the future: a wrong clock or a wrong certificate
    (PERIOD, 1000.0 - 60, False),  # within the signer's five minutes of backdating
    (None, 0.0, True),
])
def test_what_is_asked_for_anew_at_start(period, now: float, needed: bool) -> None:
    assert rotation.needs_new(period, now) is needed


def test_the_rotator_renews_at_the_deadline_and_retries_a_failure(tmp_path, monkeypatch) -> None:
    clock = [1000.0 + 0.95 * YEAR]  # already past any deadline: renew at once
    monkeypatch.setattr(rotation, "validity", lambda path: PERIOD)
    monkeypatch.setattr(rotation, "BACKOFF_INITIAL", 0.01)
    calls: list[int] = []
    done = threading.Event()

    def renew(stop: threading.Event) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the API server is away")
        if len(calls) == 2:
            clock[0] = 1000.0  # renewed: the next deadline is far away
            done.set()

    rotator = rotation.Rotator("test", str(tmp_path / "cert"), renew, rand=lambda: 0.5, clock=lambda: clock[0])
    rotator.start()
    assert done.wait(5)
    rotator.stop()
    assert len(calls) == 2 and not rotator._thread.is_alive()
