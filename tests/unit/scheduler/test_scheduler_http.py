"""The scheduler's health and metrics listener (control/scheduler/httpserver.py) on 127.0.0.1: /healthz and
/livez "ok", /readyz follows the readiness it is given (500 with upstream's check text until ready), /metrics
carries the scheduler's metrics under upstream's names; port 0 binds a free port."""

from __future__ import annotations

import requests

from control.scheduler.httpserver import NOT_READY_BODY, SchedulerHTTPServer
from control.scheduler.metrics import SCHEDULED, SchedulerMetrics
from control.scheduler.queue import SchedulingQueue
from tests.support.scheduler_objects import make_pod


def test_health_readiness_and_metrics_are_served() -> None:
    metrics = SchedulerMetrics()
    queue = SchedulingQueue()
    metrics.watch_queue(queue)
    queue.add(make_pod("waiting"))
    metrics.attempt(SCHEDULED, "bin-packing", 0.003)
    ready = [False]
    server = SchedulerHTTPServer(("127.0.0.1", 0), registry=metrics.registry, ready=lambda: ready[0])
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        for path in ("/healthz", "/livez"):
            answer = requests.get(base + path, timeout=5)
            assert (answer.status_code, answer.text) == (200, "ok")
        answer = requests.get(base + "/readyz", timeout=5)
        assert (answer.status_code, answer.text) == (500, NOT_READY_BODY)
        ready[0] = True
        assert requests.get(base + "/readyz", timeout=5).text == "ok"
        text = requests.get(base + "/metrics", timeout=5).text
        assert 'scheduler_schedule_attempts_total{profile="bin-packing",result="scheduled"} 1.0' in text
        assert ('scheduler_scheduling_attempt_duration_seconds_bucket{le="0.004",profile="bin-packing",'
                'result="scheduled"} 1.0') in text
        assert 'scheduler_pending_pods{queue="active"} 1.0' in text
        metrics.forget_queue()  # the scheduler stopped (Lease lost): nothing pending here any more
        assert 'scheduler_pending_pods{queue="active"} 0.0' in requests.get(base + "/metrics", timeout=5).text
    finally:
        server.stop()
    try:
        requests.get(base + "/healthz", timeout=2)
        raise AssertionError("still listening after stop")
    except requests.ConnectionError:
        pass
