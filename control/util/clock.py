"""The one clock of the shared base: monotonic seconds for intervals, an aware UTC "now" for timestamps,
and the two ways code here waits (on a condition it holds, or for a stop Event).

Upstream: k8s.io/utils/clock (`Clock`: `Now`, `Since`, `After`, `NewTimer`; `PassiveClock` for code that
only reads time) with its testing/fake_clock.go; the work queue, the leader elector, the event recorder
and the proxy's bounded-frequency runner all take one "for testability", as they do here.

Why the waits belong to the clock: a test moves time by hand, so a thread that waits "until 5 s from now"
must be woken by the test's clock, not by the wall clock. `wait` serves code that sleeps on a
`threading.Condition` it holds (the delaying queue, the runner); `sleep` serves loops that pause between
tries and must end promptly on `stop` (leader election). The fake is tests/support/fake_clock.py.

`monotonic()` never jumps with wall-clock steps: use it for every interval and deadline. `now()` is for
what is written into objects (timestamps), always timezone-aware UTC.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a scale that only moves forward; only differences mean anything."""
        ...

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        """Wait on `condition` (held by the caller) until notified or `timeout` seconds of this clock have
        passed (None: until notified). Spurious returns are allowed; the caller re-checks."""
        ...

    def sleep(self, stop: threading.Event, seconds: float) -> bool:
        """Pause up to `seconds` of this clock; True if `stop` was set (at once or meanwhile)."""
        ...


class RealClock:
    """The clock of production: time.monotonic, datetime.now(UTC), and real waits."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        condition.wait(timeout)

    def sleep(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(max(0.0, seconds))

