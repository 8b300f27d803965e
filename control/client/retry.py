"""When the REST client retries, and how long it waits (upstream: client-go rest/request.go
`checkWait`/`retryFn` and rest/with_retry.go; the verb rules follow what is safe to repeat).

Pure decision logic, no I/O: `retry_delay` answers "retry after how many seconds, or give up?" for one
failed attempt, so the rules are tested as a table without a network.

| what went wrong                                         | retried for                                  |
|---------------------------------------------------------|----------------------------------------------|
| never connected (refused, unreachable, connect timeout) | every verb: nothing was sent                 |
| connection lost or read timeout after sending           | GET, PUT, PATCH, DELETE; not POST (it may    |
|                                                         | have happened)                               |
| 429 Too Many Requests, 503 Service Unavailable          | every verb (refused before acting), after    |
|                                                         | Retry-After                                  |
| any other 5xx                                           | GET only                                     |

The wait is exponential (`base * 2**n`, at most `cap`) with jitter (a random 50-100 % of it) so clients
that failed together do not come back together; a Retry-After header replaces it (also capped).
`attempts` bounds the number of tries, so with the defaults a request gives up after about 7.5 s of
waiting at most.

Why not urllib3's `Retry`: one `Retry` has a single `allowed_methods` set for both status and read
retries, so "429/503 for every verb but 500 for GET only" needs a subclass of its internals; and the
watch needs its own resume loop anyway (each retry must carry a newer resourceVersion). A small
explicit loop over this function serves both.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """At most `attempts` tries; waits `base * 2**n` seconds (jittered), never more than `cap`."""

    attempts: int = 5
    base: float = 0.5
    cap: float = 5.0


class Failure(enum.Enum):
    NOT_CONNECTED = "not-connected"  # the request never reached the server
    CONNECTION_LOST = "connection-lost"  # sent, but the connection broke or timed out before an answer
    STATUS = "status"  # the server answered with an error code


IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})
_REFUSED_STATUSES = frozenset({429, 503})


def retryable(method: str, failure: Failure, status: int = 0) -> bool:
    """Whether this failure may be retried for this verb (the table in the module docstring)."""
    method = method.upper()
    if failure is Failure.NOT_CONNECTED:
        return True
    if failure is Failure.CONNECTION_LOST:
        return method in IDEMPOTENT
    if status in _REFUSED_STATUSES:
        return True
    return status >= 500 and method == "GET"


def backoff(policy: RetryPolicy, failures: int, *, retry_after: float | None = None,
            rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after the `failures`-th consecutive failure (1-based)."""
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, policy.cap)
    step = min(policy.cap, policy.base * 2.0 ** max(0, failures - 1))
    return step * (0.5 + 0.5 * rand())


def retry_delay(policy: RetryPolicy, method: str, failure: Failure, *, failures: int, status: int = 0,
                retry_after: float | None = None, rand: Callable[[], float] = random.random) -> float | None:
    """Seconds to wait before the next try, or None to give up. `failures` counts this one (1-based)."""
    if failures >= policy.attempts or not retryable(method, failure, status):
        return None
    return backoff(policy, failures, retry_after=retry_after, rand=rand)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the API server sends an integer; an HTTP date is ignored)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
