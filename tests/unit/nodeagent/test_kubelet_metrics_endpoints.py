"""/metrics/resource (nodeagent/stats/resource_metrics.py) and the kubelet's /metrics
(nodeagent/stats/kubelet_metrics.py): upstream's names, labels and values, parsed back with
prometheus-client's own parser."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client.parser import text_string_to_metric_families

from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.stats.kubelet_metrics import KubeletMetrics, running_counts
from nodeagent.stats.resource_metrics import render

STAMP = "2026-11-27T10:00:00Z"
SUMMARY = {
    "node": {"cpu": {"time": STAMP, "usageCoreNanoSeconds": 2_500_000_000}, "memory": {"time": STAMP,
                                                                                       "workingSetBytes": 4096}},
    "pods": [{"podRef": {"name": "web", "namespace": "ns", "uid": "u"},
              "cpu": {"time": STAMP, "usageCoreNanoSeconds": 1_000_000_000},
              "memory": {"time": STAMP, "workingSetBytes": 300},
              "containers": [{"name": "app", "startTime": "2026-11-27T09:00:00Z",
                              "cpu": {"time": STAMP, "usageCoreNanoSeconds": 1_000_000_000},
                              "memory": {"time": STAMP, "workingSetBytes": 300}}]}],
}


def _samples(text: bytes) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def test_resource_metrics_have_upstreams_names_labels_and_values() -> None:
    samples = _samples(render(SUMMARY))
    labels = (("container", "app"), ("namespace", "ns"), ("pod", "web"))
    assert samples[("node_cpu_usage_seconds_total", ())] == 2.5
    assert samples[("node_memory_working_set_bytes", ())] == 4096
    assert samples[("container_cpu_usage_seconds_total", labels)] == 1.0
    assert samples[("container_memory_working_set_bytes", labels)] == 300
    assert samples[("container_start_time_seconds", labels)] == datetime(2026, 11, 27, 9, tzinfo=UTC).timestamp()
    assert samples[("pod_cpu_usage_seconds_total", (("namespace", "ns"), ("pod", "web")))] == 1.0
    assert samples[("pod_memory_working_set_bytes", (("namespace", "ns"), ("pod", "web")))] == 300
    assert samples[("scrape_error", ())] == 0
    stamp_ms = int(datetime(2026, 11, 27, 10, tzinfo=UTC).timestamp() * 1000)
    assert f"node_cpu_usage_seconds_total 2.5 {stamp_ms}" in render(SUMMARY).decode()


def test_a_failed_scrape_reports_scrape_error_only() -> None:
    samples = _samples(render(None))
    assert samples == {("scrape_error", ()): 1.0}


def _pod(uid: str, ready: bool, *states: ContainerState) -> PodStatus:
    sandbox = SandboxStatus(id=f"s{uid}", state=SandboxState.READY if ready else SandboxState.NOTREADY)
    return PodStatus(uid=uid, name=uid, namespace="ns", sandboxes=(sandbox,),
                     containers=tuple(ContainerStatus(id=f"{uid}{i}", name=f"c{i}", state=s, image="i")
                                      for i, s in enumerate(states)))


PODS = [_pod("a", True, ContainerState.RUNNING, ContainerState.EXITED), _pod("b", True, ContainerState.RUNNING),
        _pod("c", False, ContainerState.EXITED)]


def test_running_counts() -> None:
    assert running_counts(PODS) == (2, {"created": 0, "running": 2, "exited": 2, "unknown": 0})


def test_kubelet_metrics_render_counts_and_pleg_durations() -> None:
    metrics = KubeletMetrics(lambda: PODS)
    metrics.pleg_relist_duration.observe(0.004)
    metrics.pleg_relist_duration.observe(0.02)
    samples = _samples(metrics.render())
    assert samples[("kubelet_running_pods", ())] == 2
    assert samples[("kubelet_running_containers", (("container_state", "running"),))] == 2
    assert samples[("kubelet_running_containers", (("container_state", "exited"),))] == 2
    assert samples[("kubelet_pleg_relist_duration_seconds_count", ())] == 2
    assert samples[("kubelet_pleg_relist_duration_seconds_bucket", (("le", "0.005"),))] == 1
