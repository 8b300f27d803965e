"""Rate limiters (upstream: client-go util/workqueue/default_rate_limiters.go; the bucket follows
golang.org/x/time/rate's Reserve): backoff sequences, token-bucket burst then qps, max-of and the
controller default, all on a fake `now`."""

from __future__ import annotations

import threading

import pytest

from control.client.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
    exponential_backoff,
)


class Now:
    """A settable monotonic time for the bucket."""

    def __init__(self, t: float = 500.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_exponential_backoff_doubles_from_5ms_and_caps_at_1000s():
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.005, max_delay=1000.0)
    delays = [limiter.when("a") for _ in range(22)]
    assert delays[:5] == pytest.approx([0.005, 0.010, 0.020, 0.040, 0.080])
    # 0.005 * 2**17 = 655.36 s is the last uncapped step; 2**18 would be 1310.72 s
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * 4
    assert limiter.num_requeues("a") == 22


def test_exponential_defaults_are_the_controller_defaults():
    limiter = ItemExponentialFailureRateLimiter()
    assert (limiter.base_delay, limiter.max_delay) == (0.005, 1000.0)


def test_exponential_backoff_never_overflows():
    assert exponential_backoff(10_000, base_delay=0.005, max_delay=1000.0) == 1000.0
    assert exponential_backoff(0, base_delay=0.005, max_delay=1000.0) == 0.005


def test_exponential_counts_per_item_and_forget_starts_afresh():
    limiter = ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=100.0)
    assert [limiter.when("a"), limiter.when("a"), limiter.when("b")] == [1.0, 2.0, 1.0]
    assert (limiter.num_requeues("a"), limiter.num_requeues("b"), limiter.num_requeues("c")) == (2, 1, 0)
    limiter.forget("a")
    limiter.forget("never-seen")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


def test_exponential_counts_every_concurrent_failure():
    limiter = ItemExponentialFailureRateLimiter()

    def fail() -> None:
        for _ in range(500):
            limiter.when("k")

    threads = [threading.Thread(target=fail) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert limiter.num_requeues("k") == 2000


def test_fast_slow_switches_after_max_fast_attempts():
    limiter = ItemFastSlowRateLimiter(fast_delay=0.1, slow_delay=5.0, max_fast_attempts=3)
    assert [limiter.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 5.0, 5.0]
    assert limiter.when("b") == 0.1
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_bucket_allows_the_burst_then_queues_reservations_at_qps():
    now = Now()
    bucket = BucketRateLimiter(qps=10, burst=100, now=now)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    # reservations stack: the 101st waits one token (0.1 s), the 102nd two, ...
    assert [bucket.when(i) for i in range(3)] == pytest.approx([0.1, 0.2, 0.3])
    now.t += 0.3  # three tokens come back, all already promised
    assert bucket.when("x") == pytest.approx(0.1)
    now.t += 1.1  # eleven more: ten free after paying the one owed
    assert [bucket.when(i) for i in range(10)] == [0.0] * 10
    assert bucket.when("y") == pytest.approx(0.1)


def test_bucket_refills_at_most_to_the_burst():
    now = Now()
    bucket = BucketRateLimiter(qps=2, burst=3, now=now)
    for i in range(3):
        bucket.when(i)
    now.t += 1000.0
    assert [bucket.when(i) for i in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.5])


def test_bucket_keeps_no_per_item_state():
    bucket = BucketRateLimiter(qps=1, burst=1, now=Now())
    bucket.when("a")
    bucket.forget("a")
    assert bucket.num_requeues("a") == 0
    assert bucket.when("a") == pytest.approx(1.0)  # forget gives no token back


def test_bucket_ignores_a_clock_that_steps_back():
    now = Now()
    bucket = BucketRateLimiter(qps=1, burst=1, now=now)
    bucket.when("a")
    now.t -= 50
    assert bucket.when("b") == pytest.approx(1.0)


@pytest.mark.parametrize("qps, burst", [pytest.param(0, 1, id="no-qps"), pytest.param(1, 0, id="no-burst")])
def test_bucket_refuses_a_bucket_that_never_grants(qps, burst):
    with pytest.raises(ValueError):
        BucketRateLimiter(qps=qps, burst=burst)


def test_max_of_answers_the_worst_and_asks_every_limiter():
    now = Now()
    exp = ItemExponentialFailureRateLimiter(base_delay=0.5, max_delay=100.0)
    bucket = BucketRateLimiter(qps=1, burst=2, now=now)
    limiter = MaxOfRateLimiter([exp, bucket])
    assert limiter.when("a") == 0.5  # exponential wins; the bucket still spent a token
    assert limiter.when("b") == 0.5
    assert limiter.when("c") == pytest.approx(1.0)  # bucket empty: it wins now
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert exp.num_requeues("a") == 0


def test_max_of_needs_a_limiter():
    with pytest.raises(ValueError):
        MaxOfRateLimiter([])


def test_default_controller_rate_limiter():
    now = Now()
    limiter = default_controller_rate_limiter(now=now)
    # a hundred different items failing once: the per-item 5 ms each, within the bucket's burst
    assert [limiter.when(f"k{i}") for i in range(100)] == [0.005] * 100
    # the 101st failure overall waits for the 10 qps bucket
    assert limiter.when("k0") == pytest.approx(0.1)
    now.t += 1000.0
    # one item failing over and over: the per-item backoff (5 ms, 10 ms, 20 ms, ...) dominates
    assert [limiter.when("hot") for _ in range(4)] == pytest.approx([0.005, 0.010, 0.020, 0.040])
    assert limiter.num_requeues("hot") == 4
