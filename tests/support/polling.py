"""One poller with a deadline, for tests that wait on other threads, processes or the real substrate.

Why: a bare `time.sleep(n)` before an assertion is either too short (a flaky test on a busy CI host) or too
long (a slow suite); polling a condition until a deadline is as fast as the system allows and fails with a
bound. Thirteen test modules each grew their own copy of this loop; this is the one they share now. It plays
the part of upstream's `wait.PollUntilContextTimeout` (k8s.io/apimachinery/pkg/util/wait) and of gomega's
`Eventually` in the e2e framework.

Two shapes, because callers want two things:
- `wait_until` returns the predicate's first truthy value, or its value once more after the deadline, so a
  test writes `assert wait_until(...)` (and may add its own failure message);
- `wait_for` returns the first truthy value or fails the test with "timed out after …s waiting for <what>",
  where `what` may be a callable so the message can show the state at the moment of failure.

`interval` is each call site's own: unit tests against in-process fakes poll every few milliseconds, tests
against real daemons less often.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 5.0, *, interval: float = 0.05) -> T:
    """Poll `predicate` until it is truthy or `timeout` seconds pass; its first truthy (or its last) value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := predicate():
            return result
        time.sleep(interval)
    return predicate()


def wait_for(predicate: Callable[[], T], timeout: float, what: str | Callable[[], str], *,
             interval: float = 0.1) -> T:
    """Like `wait_until`, but a timeout fails the test, saying what it waited for."""
    if result := wait_until(predicate, timeout, interval=interval):
        return result
    pytest.fail(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
