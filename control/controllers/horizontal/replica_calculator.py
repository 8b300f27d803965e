"""How many replicas a resource metric asks for: upstream's replica calculator, pure (pods, metrics, `now`).

Upstream: pkg/controller/podautoscaler/replica_calculator.go (`GetResourceReplicas`,
`GetRawResourceReplicas` → `calcPlainMetricReplicas`, `groupPods`, `calculateRequests`,
`removeMetricsForPods`) and metrics/utilization.go (`GetResourceUtilizationRatio`, `GetMetricUsageRatio`),
metrics/client.go (`getPodMetrics`: a pod counts only when every container reports the resource).

The algorithm, for a target utilisation (percent of the pods' requests) or a target average value:
1. Group the pods: deleted or Failed → ignored; Pending → unready; no metric → missing; for cpu, a pod
   whose Ready condition or start time is missing, or that is within the cpu initialisation period (5 min)
   and not Ready or measured less than one metric window after it became Ready, or that has never been
   Ready within the initial readiness delay (30 s) → unready. The rest are ready.
2. The usage ratio over the ready pods' metrics (utilisation: sum of usage × 100 / sum of requests, as an
   integer percent, over the target; value: integer average over the target).
3. No unready pods to count on a scale-up and no missing pods: within the tolerance (|1 − ratio| ≤ 0.1)
   keep the current count, else ceil(ratio × ready pods).
4. Otherwise fill in the gaps conservatively: missing pods use 100 % of their request (or the target if
   higher) on a scale-down, 0 on a scale-up; unready pods use 0 on a scale-up. Recompute; keep the current
   count if within tolerance, if the direction flipped, or if the new count would move the other way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from control.api.typed import Pod, TypedObject
from control.apimachinery.meta import get_condition, timestamp_or_none
from control.apimachinery.quantity import Quantity, QuantityError

TOLERANCE = 0.1  # upstream --horizontal-pod-autoscaler-tolerance
CPU_INITIALIZATION_PERIOD = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
INITIAL_READINESS_DELAY = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay


class ReplicaCalculationError(Exception):
    """No replica count can be computed (upstream's error texts)."""


@dataclass(frozen=True)
class PodMetric:
    """One pod's usage (milli-units: millicores, or milli-bytes for memory, as MilliValue) when measured."""

    value: int
    timestamp: datetime
    window: float  # seconds


@dataclass(frozen=True)
class Proposal:
    replicas: int
    utilization: int | None  # percent of requests (utilisation targets only)
    raw_average: int  # milli-units per pod


@dataclass(frozen=True)
class Settings:
    tolerance: float = TOLERANCE
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = INITIAL_READINESS_DELAY


DEFAULT_SETTINGS = Settings()


def pod_metrics(items: Iterable[Mapping[str, Any]], resource: str) -> dict[str, PodMetric]:
    """getPodMetrics over metrics.k8s.io PodMetrics: per pod the sum over its containers, left out when a
    container lacks the resource or there are none."""
    result: dict[str, PodMetric] = {}
    for item in items:
        containers = item.get("containers") or []
        total, missing = 0, not containers
        for container in containers:
            usage = (container.get("usage") or {}).get(resource)
            if usage is None:
                missing = True
                break
            try:
                total += Quantity(str(usage)).milli_value()
            except (QuantityError, ValueError):
                missing = True
                break
        stamp = timestamp_or_none(item.get("timestamp"))
        if missing or stamp is None:
            continue
        window = str(item.get("window") or "0s")
        result[str(TypedObject(item).metadata.name)] = PodMetric(total, stamp, _seconds(window))
    return result


def _seconds(duration: str) -> float:
    """A metrics window such as "15s" or "1m0s" (only what metricsapi writes: minutes and seconds)."""
    minutes, _, rest = duration.rpartition("m")
    seconds = float(rest.rstrip("s") or 0)
    return seconds + 60 * float(minutes or 0)


def _name(pod: Mapping[str, Any]) -> str:
    return Pod(pod).metadata.name


def pod_requests(pods: Iterable[Mapping[str, Any]], resource: str, container: str = "") -> dict[str, int]:
    """calculateRequests: milli-units requested per pod (every container, or the one named); a container
    without a request is an error, as upstream (utilisation has no meaning without one)."""
    requests: dict[str, int] = {}
    for pod in pods:
        total = 0
        for spec in Pod(pod).spec.containers:
            if container and spec.name != container:
                continue
            value = spec.resources.requests.get(resource)
            if value is None:
                raise ReplicaCalculationError(
                    f"missing request for {resource} in container {spec.name} of Pod {_name(pod)}")
            total += Quantity(str(value)).milli_value()
        requests[_name(pod)] = total
    return requests


@dataclass(frozen=True)
class Groups:
    ready: int
    unready: frozenset[str]
    missing: frozenset[str]
    ignored: frozenset[str]


def group_pods(pods: Sequence[Mapping[str, Any]], metrics: Mapping[str, PodMetric], resource: str, *,
               now: datetime, settings: Settings) -> Groups:
    """groupPods (module notes, step 1)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name, status = _name(pod), pod.get("status") or {}
        if Pod(pod).metadata.deletion_timestamp or status.get("phase") == "Failed":
            ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = get_condition(pod, "Ready")
            started = timestamp_or_none(status.get("startTime"))
            if condition is None or started is None:
                is_unready = True
            else:
                changed = timestamp_or_none(condition.get("lastTransitionTime")) or started
                if started + timedelta(seconds=settings.cpu_initialization_period) > now:
                    is_unready = (condition.get("status") == "False"
                                  or metric.timestamp < changed + timedelta(seconds=metric.window))
                else:
                    is_unready = (condition.get("status") == "False"
                                  and started + timedelta(seconds=settings.initial_readiness_delay) > changed)
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return Groups(ready, frozenset(unready), frozenset(missing), frozenset(ignored))


def utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                      target: int) -> tuple[float, int, int]:
    """GetResourceUtilizationRatio: (ratio, utilisation percent, raw average) over the pods with a request."""
    total = requested = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue
        total += metric.value
        requested += requests[name]
        entries += 1
    if requested == 0:
        raise ReplicaCalculationError("no metrics returned matched known pods")
    utilization = total * 100 // requested
    return utilization / target, utilization, total // entries


def usage_ratio(metrics: Mapping[str, PodMetric], target: int) -> tuple[float, int]:
    """GetMetricUsageRatio: (ratio, integer average) of the metrics over the target."""
    average = sum(m.value for m in metrics.values()) // len(metrics)
    return average / target, average


def _within(ratio: float, settings: Settings) -> bool:
    return abs(1.0 - ratio) <= settings.tolerance


def resource_replicas(current: int, pods: Sequence[Mapping[str, Any]], metrics: Mapping[str, PodMetric], *,
                      resource: str, now: datetime, target_utilization: int | None = None,
                      target_average: int | None = None, container: str = "",
                      settings: Settings = DEFAULT_SETTINGS) -> Proposal:
    """GetResourceReplicas (a utilisation target, percent) or GetRawResourceReplicas (an average value
    target, milli-units); see the module notes. Raises ReplicaCalculationError."""
    if not pods:
        raise ReplicaCalculationError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now=now, settings=settings)
    usable = {name: metric for name, metric in metrics.items()
              if name not in groups.ignored and name not in groups.unready}
    if not usable:
        raise ReplicaCalculationError("did not receive metrics for targeted pods (pods might be unready)")
    requests: dict[str, int] = {}
    if target_utilization is not None:
        requests = pod_requests(pods, resource, container)
        ratio, utilization, raw = utilization_ratio(usable, requests, target_utilization)
        found: int | None = utilization
    elif target_average is not None:
        ratio, raw = usage_ratio(usable, target_average)
        found = None
    else:
        raise ReplicaCalculationError("invalid resource metric source: neither an average utilization target "
                                      "nor an average value (usage) target was set")
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        replicas = current if _within(ratio, settings) else math.ceil(ratio * groups.ready)
        return Proposal(replicas, found, raw)
    filled = dict(usable)
    if groups.missing and ratio != 1.0:
        for name in groups.missing:
            if ratio < 1.0:
                fallback = (requests.get(name, 0) * max(100, target_utilization) // 100
                            if target_utilization is not None else int(target_average or 0))
            else:
                fallback = 0
            filled[name] = PodMetric(fallback, now, 0.0)
    if scale_up_with_unready:
        for name in groups.unready:
            filled[name] = PodMetric(0, now, 0.0)
    if target_utilization is not None:
        new_ratio = utilization_ratio(filled, requests, target_utilization)[0]
    else:
        new_ratio = usage_ratio(filled, int(target_average or 1))[0]
    if _within(new_ratio, settings) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return Proposal(current, found, raw)
    replicas = math.ceil(new_ratio * len(filled))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return Proposal(current, found, raw)
    return Proposal(replicas, found, raw)
