"""`/metrics/resource`: the Summary's cpu and memory as Prometheus metrics, under upstream's names and help
texts (pkg/kubelet/metrics/collectors/resource_metrics.go): node_cpu_usage_seconds_total,
node_memory_working_set_bytes, container_cpu_usage_seconds_total, container_memory_working_set_bytes,
container_start_time_seconds, pod_cpu_usage_seconds_total, pod_memory_working_set_bytes, scrape_error;
each sample carries the time it was taken (milliseconds), as upstream's do.

Pure: `render(summary)` (a Summary document, or None when gathering it failed → scrape_error 1) returns the
exposition text, through a one-off prometheus-client registry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from nodeagent.stats.summary import NANO

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus text exposition format


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _cpu_seconds(entry: Mapping[str, Any]) -> tuple[float, float | None] | None:
    cpu = entry.get("cpu") or {}
    if "usageCoreNanoSeconds" not in cpu:
        return None
    return cpu["usageCoreNanoSeconds"] / NANO, _seconds(cpu.get("time"))


def _working_set(entry: Mapping[str, Any]) -> tuple[float, float | None] | None:
    memory = entry.get("memory") or {}
    if "workingSetBytes" not in memory:
        return None
    return float(memory["workingSetBytes"]), _seconds(memory.get("time"))


class _Collector:
    def __init__(self, summary: Mapping[str, Any] | None) -> None:
        self._summary = summary

    def collect(self) -> Iterator[Metric]:
        node_cpu = CounterMetricFamily("node_cpu_usage_seconds_total",
                                       "[STABLE] Cumulative cpu time consumed by the node in core-seconds")
        node_memory = GaugeMetricFamily("node_memory_working_set_bytes",
                                        "[STABLE] Current working set of the node in bytes")
        labels = ["container", "pod", "namespace"]
        container_cpu = CounterMetricFamily("container_cpu_usage_seconds_total",
                                            "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
                                            labels=labels)
        container_memory = GaugeMetricFamily("container_memory_working_set_bytes",
                                             "[STABLE] Current working set of the container in bytes", labels=labels)
        container_start = GaugeMetricFamily("container_start_time_seconds",
                                            "[STABLE] Start time of the container since unix epoch in seconds",
                                            labels=labels)
        pod_cpu = CounterMetricFamily("pod_cpu_usage_seconds_total",
                                      "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
                                      labels=["pod", "namespace"])
        pod_memory = GaugeMetricFamily("pod_memory_working_set_bytes",
                                       "[STABLE] Current working set of the pod in bytes", labels=["pod", "namespace"])
        error = GaugeMetricFamily("scrape_error", "[ALPHA] 1 if there was an error while getting container metrics, "
                                                  "0 otherwise", value=0 if self._summary is not None else 1)
        if self._summary is not None:
            node = self._summary.get("node") or {}
            if (value := _cpu_seconds(node)) is not None:
                node_cpu.add_metric([], value[0], timestamp=value[1])
            if (value := _working_set(node)) is not None:
                node_memory.add_metric([], value[0], timestamp=value[1])
            for pod in self._summary.get("pods") or []:
                ref = pod.get("podRef") or {}
                pod_labels = [ref.get("name", ""), ref.get("namespace", "")]
                for container in pod.get("containers") or []:
                    container_labels = [container.get("name", ""), *pod_labels]
                    if (value := _cpu_seconds(container)) is not None:
                        container_cpu.add_metric(container_labels, value[0], timestamp=value[1])
                    if (value := _working_set(container)) is not None:
                        container_memory.add_metric(container_labels, value[0], timestamp=value[1])
                    if (start := _seconds(container.get("startTime"))) is not None:
                        container_start.add_metric(container_labels, start,
                                                   timestamp=_seconds((container.get("cpu") or {}).get("time")))
                if (value := _cpu_seconds(pod)) is not None:
                    pod_cpu.add_metric(pod_labels, value[0], timestamp=value[1])
                if (value := _working_set(pod)) is not None:
                    pod_memory.add_metric(pod_labels, value[0], timestamp=value[1])
        yield from (container_cpu, container_memory, container_start, node_cpu, node_memory, pod_cpu, pod_memory,
                    error)


def render(summary: Mapping[str, Any] | None) -> bytes:
    """The /metrics/resource body for `summary` (None: gathering failed, only scrape_error 1)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(summary))
    return generate_latest(registry)
