"""The scheduler's Prometheus metrics, under upstream's names (pkg/scheduler/metrics/metrics.go):
`scheduler_schedule_attempts_total{result,profile}` (result: scheduled | unschedulable | error),
`scheduler_scheduling_attempt_duration_seconds{result,profile}` (from the start of the cycle to the end of
binding for a scheduled pod, to the decision otherwise) and `scheduler_pending_pods{queue}` (active,
backoff, unschedulable, gated — read from the queue when scraped).

One registry per scheduler, as proxy/metrics.py, so two schedulers in one process do not collide; the
composition root keeps one SchedulerMetrics across leadership terms, so the counters of a server that led
before stay on its /metrics (control/scheduler/httpserver.py).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from control.scheduler.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, SchedulingQueue

SCHEDULED = "scheduled"
UNSCHEDULABLE_RESULT = "unschedulable"
ERROR = "error"
GATED = "gated"  # upstream's fourth queue label; always 0 here (no schedulingGates)
# Upstream's buckets: exponential from 1 ms, factor 2, 15 buckets.
_BUCKETS = tuple(0.001 * 2 ** i for i in range(15))


class SchedulerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts", "Number of attempts to schedule pods, by the result.",
            ["result", "profile"], registry=self.registry)
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=_BUCKETS, registry=self.registry)
        self.pending_pods = Gauge(
            "scheduler_pending_pods", "Number of pending pods, by the queue type.", ["queue"],
            registry=self.registry)

    def watch_queue(self, queue: SchedulingQueue) -> None:
        """Report `queue`'s sizes whenever the registry is collected."""
        def size_of(name: str) -> Callable[[], float]:
            return lambda: queue.pending()[name]

        for name in (ACTIVE, BACKOFF, UNSCHEDULABLE):
            self.pending_pods.labels(queue=name).set_function(size_of(name))
        self.pending_pods.labels(queue=GATED).set(0)

    def forget_queue(self) -> None:
        """The scheduler stopped (this server lost the Lease): nothing is pending here any more."""
        for name in (ACTIVE, BACKOFF, UNSCHEDULABLE):
            self.pending_pods.labels(queue=name).set_function(lambda: 0.0)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.attempt_duration.labels(result=result, profile=profile).observe(seconds)
