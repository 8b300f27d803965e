"""The kubelet's own `/metrics`, under upstream's names (pkg/kubelet/metrics/metrics.go): kubelet_running_pods
(pods with a running sandbox), kubelet_running_containers by container_state, and
kubelet_pleg_relist_duration_seconds (observed by the PLEG after every relist).

One registry per kubelet rather than prometheus-client's global one, so several kubelets in one process
(tests) do not collide. The running counts are read from the runtime at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from nodeagent.runtime.types import ContainerState, PodStatus, SandboxState

# upstream's label values for kubelet_running_containers (kubecontainer.State)
_STATES = {ContainerState.CREATED: "created", ContainerState.RUNNING: "running", ContainerState.EXITED: "exited",
           ContainerState.UNKNOWN: "unknown"}


def running_counts(pods: Sequence[PodStatus]) -> tuple[int, dict[str, int]]:
    """(pods with a ready sandbox, containers per state label), as upstream's podAndContainerCollector."""
    running_pods = sum(1 for p in pods if any(s.state is SandboxState.READY for s in p.sandboxes))
    containers = dict.fromkeys(_STATES.values(), 0)
    for pod in pods:
        for container in pod.containers:
            containers[_STATES[container.state]] += 1
    return running_pods, containers


class _Running:
    def __init__(self, pods: Callable[[], Sequence[PodStatus]]) -> None:
        self._pods = pods

    def collect(self) -> Iterator[Metric]:
        running_pods, containers = running_counts(self._pods())
        yield GaugeMetricFamily("kubelet_running_pods", "[ALPHA] Number of pods that have a running pod sandbox",
                                value=running_pods)
        family = GaugeMetricFamily("kubelet_running_containers", "[ALPHA] Number of containers currently running",
                                   labels=["container_state"])
        for state, count in containers.items():
            family.add_metric([state], count)
        yield family


class KubeletMetrics:
    """`pleg_relist_duration.observe(seconds)` from the PLEG; `render()` is the /metrics body."""

    def __init__(self, pods: Callable[[], Sequence[PodStatus]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.pleg_relist_duration = Histogram(
            "kubelet_pleg_relist_duration_seconds", "[ALPHA] Duration in seconds for relisting pods in PLEG.",
            registry=self.registry)
        self.registry.register(_Running(pods))

    def render(self) -> bytes:
        return generate_latest(self.registry)
