"""control/controllers/horizontal/replica_calculator.py: upstream's replica calculation for utilisation and average
value targets — tolerance, missing metrics, unready pods and the cpu initialisation period."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from control.controllers.horizontal.replica_calculator import (
    PodMetric,
    ReplicaCalculationError,
    pod_metrics,
    resource_replicas,
)

NOW = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=1)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, cpu: str | None = "100m", memory: str = "64Mi", phase: str = "Running", ready: bool = True,
        started: datetime = LONG_AGO, ready_since: datetime = LONG_AGO) -> dict:
    requests = {"memory": memory, **({"cpu": cpu} if cpu else {})}
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "resources": {"requests": requests}}]},
            "status": {"phase": phase, "startTime": stamp(started), "conditions": [
                {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": stamp(ready_since)}]}}


def metric(milli: int, at: datetime = NOW - timedelta(seconds=5), window: float = 15.0) -> PodMetric:
    return PodMetric(milli, at, window)


@pytest.mark.parametrize(("current", "pods", "metrics", "target", "replicas", "utilization"), [
    pytest.param(2, [pod("a"), pod("b")], {"a": metric(150), "b": metric(150)}, 50, 6, 150, id="scale-up"),
    pytest.param(2, [pod("a"), pod("b")], {"a": metric(54), "b": metric(54)}, 50, 2, 54, id="within-tolerance"),
    pytest.param(2, [pod("a"), pod("b")], {"a": metric(60), "b": metric(60)}, 50, 3, 60, id="just-out-of-tolerance"),
    pytest.param(4, [pod(n) for n in "abcd"], {n: metric(5) for n in "abcd"}, 50, 1, 5, id="scale-down"),
    pytest.param(3, [pod("a"), pod("b"), pod("c")], {"a": metric(10), "b": metric(10)}, 50, 3, 10,
                 id="missing-pod-counts-as-full-request-on-scale-down"),
    pytest.param(2, [pod("a"), pod("b"), pod("c")], {"a": metric(150), "b": metric(150)}, 50, 6, 150,
                 id="missing-pod-counts-as-zero-on-scale-up"),
    pytest.param(3, [pod("a"), pod("b"), pod("c", phase="Pending")], {"a": metric(150), "b": metric(150)}, 50, 6,
                 150, id="pending-pod-counts-as-zero-on-scale-up"),
    pytest.param(3, [pod("a"), pod("b"), pod("c", ready=False, started=NOW - timedelta(seconds=20),
                                              ready_since=NOW - timedelta(seconds=20))],
                 {"a": metric(10), "b": metric(10), "c": metric(900)}, 50, 1, 10,
                 id="not-ready-in-initialization-period-ignored"),
    pytest.param(2, [pod("a"), pod("b", started=NOW - timedelta(seconds=20), ready_since=NOW - timedelta(seconds=8))],
                 {"a": metric(100), "b": metric(500, at=NOW - timedelta(seconds=1), window=15)}, 50, 2, 100,
                 id="sample-within-a-window-of-readiness-counts-as-zero"),
    pytest.param(2, [pod("a"), pod("b", phase="Failed")], {"a": metric(100), "b": metric(900)}, 50, 2, 100,
                 id="failed-pod-ignored"),
])
def test_utilization_targets(current, pods, metrics, target, replicas, utilization):
    proposal = resource_replicas(current, pods, metrics, resource="cpu", now=NOW, target_utilization=target)
    assert (proposal.replicas, proposal.utilization) == (replicas, utilization)


def test_average_value_target():
    pods = [pod("a"), pod("b")]
    mib = 1024 * 1024 * 1000  # milli-bytes of one MiB
    proposal = resource_replicas(2, pods, {"a": metric(200 * mib), "b": metric(200 * mib)}, resource="memory",
                                 now=NOW, target_average=100 * mib)
    assert (proposal.replicas, proposal.utilization, proposal.raw_average) == (4, None, 200 * mib)
    assert resource_replicas(2, pods, {"a": metric(105 * mib), "b": metric(95 * mib)}, resource="memory", now=NOW,
                             target_average=100 * mib).replicas == 2  # within the tolerance


@pytest.mark.parametrize(("pods", "metrics", "message"), [
    pytest.param([], {}, "no pods returned by selector while calculating replica count", id="no-pods"),
    pytest.param([pod("a", ready=False, started=NOW - timedelta(seconds=10), ready_since=NOW - timedelta(seconds=10))],
                 {"a": metric(100)}, "did not receive metrics for targeted pods (pods might be unready)",
                 id="only-unready"),
    pytest.param([pod("a", cpu=None)], {"a": metric(100)}, "missing request for cpu in container app of Pod a",
                 id="missing-request"),
])
def test_errors(pods, metrics, message):
    with pytest.raises(ReplicaCalculationError, match=re.escape(message)):
        resource_replicas(1, pods, metrics, resource="cpu", now=NOW, target_utilization=50)


def test_pod_metrics_from_metrics_api():
    items = [
        {"metadata": {"name": "a"}, "timestamp": "2024-01-01T11:59:50Z", "window": "15s",
         "containers": [{"name": "x", "usage": {"cpu": "250m", "memory": "10Mi"}},
                        {"name": "y", "usage": {"cpu": "1", "memory": "1Mi"}}]},
        {"metadata": {"name": "b"}, "timestamp": "2024-01-01T11:59:50Z", "window": "1m0s",
         "containers": [{"name": "x", "usage": {"memory": "1Mi"}}]},
        {"metadata": {"name": "c"}, "timestamp": "2024-01-01T11:59:50Z", "window": "15s", "containers": []},
    ]
    metrics = pod_metrics(items, "cpu")
    assert list(metrics) == ["a"]
    assert (metrics["a"].value, metrics["a"].window) == (1250, 15.0)
    assert pod_metrics(items, "memory")["b"].window == 60.0
