"""The bounded-frequency runner on a fake clock: at most every min interval, at least every max interval."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from proxy.runner import BoundedFrequencyRunner
from tests.support.fake_clock import FakeClock

START = 1000.0


class Loop:
    def __init__(self, clock: FakeClock, *, fail: bool = False) -> None:
        self.clock = clock
        self.runs: list[float] = []
        self.fail = fail
        self.runner = BoundedFrequencyRunner(self.fn, min_interval=1.0, max_interval=30.0, clock=clock)
        self.thread = threading.Thread(target=self.runner.loop, daemon=True)

    def fn(self) -> None:
        self.runs.append(self.clock.monotonic() - START)
        if self.fail:
            raise RuntimeError("sync failed")

    def settle(self) -> None:
        """Return once the loop has acted on everything so far and waits again (see FakeClock.advance)."""
        self.clock.advance(0)


@pytest.fixture
def loop() -> Iterator[Loop]:
    loop = Loop(FakeClock(START))
    loop.thread.start()
    loop.settle()
    yield loop
    loop.runner.stop()
    loop.thread.join(5)
    assert not loop.thread.is_alive()


def test_first_request_runs_at_once_and_requests_coalesce(loop: Loop):
    loop.runner.request()
    loop.settle()
    assert loop.runs == [0.0]
    for _ in range(5):
        loop.runner.request()
    loop.settle()
    assert loop.runs == [0.0]  # within min_interval: waits
    loop.clock.advance(0.5)
    assert loop.runs == [0.0]
    loop.clock.advance(0.5)
    assert loop.runs == [0.0, 1.0]  # five requests, one run


def test_runs_every_max_interval_without_requests(loop: Loop):
    loop.clock.advance(29.0)
    assert loop.runs == []
    loop.clock.advance(1.0)
    assert loop.runs == [30.0]
    loop.clock.advance(30.0)
    assert loop.runs == [30.0, 60.0]


def test_retry_after_and_a_failing_function_does_not_end_the_loop():
    loop = Loop(FakeClock(START), fail=True)
    loop.thread.start()
    loop.settle()
    loop.runner.request()
    loop.settle()
    loop.runner.retry_after(5.0)
    loop.clock.advance(4.0)
    assert loop.runs == [0.0]
    loop.clock.advance(1.0)
    assert loop.runs == [0.0, 5.0]
    assert loop.thread.is_alive()
    loop.runner.stop()
    loop.thread.join(5)
    assert not loop.thread.is_alive()


def test_intervals_are_checked():
    with pytest.raises(ValueError):
        BoundedFrequencyRunner(lambda: None, min_interval=2.0, max_interval=1.0)
