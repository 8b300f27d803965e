"""The Node the kubelet registers and the status it reports, from hand-made facts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from nodeagent.node_status import ImageFacts, NodeFacts, gather_facts, initial_node, node_status

NOW = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)
GiB = 1024 ** 3
FACTS = NodeFacts(hostname="node-a", internal_ip="192.168.56.10", cpus=2, memory_bytes=4 * GiB,
                  memory_available_bytes=3 * GiB, disk_bytes=100 * GiB, disk_available_bytes=50 * GiB,
                  pid_max=4_194_304, pids_in_use=300, kernel_version="6.1.0", os_image="Debian GNU/Linux 12",
                  architecture="amd64", machine_id="abc", boot_id="boot", runtime_version="docker://20.10.24",
                  images=(ImageFacts(("small:1",), 10), ImageFacts(("big:1", "big:latest"), 1000),
                          ImageFacts((), 5)))


def _conditions(status: dict) -> dict[str, dict]:
    return {c["type"]: c for c in status["conditions"]}


def test_initial_node_has_upstreams_labels_and_pod_cidr() -> None:
    node = initial_node("node-a", FACTS, pod_cidr="10.244.1.0/24", labels={"zone": "a"})
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "zone": "a"}
    assert node["spec"] == {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]}
    assert initial_node("node-a", FACTS, pod_cidr="", labels={})["spec"] == {}


def test_a_healthy_node_reports_ready_capacity_info_and_images_biggest_first() -> None:
    status = node_status(FACTS, old_status=None, now=NOW, max_pods=110, kubelet_port=10250, runtime_healthy=True)
    assert status["capacity"] == {"cpu": "2", "memory": f"{4 * GiB // 1024}Ki",
                                  "ephemeral-storage": f"{100 * GiB // 1024}Ki", "pods": "110"}
    assert status["allocatable"] == status["capacity"]
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.168.56.10"},
                                   {"type": "Hostname", "address": "node-a"}]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["nodeInfo"]["containerRuntimeVersion"] == "docker://20.10.24"
    assert status["images"] == [{"names": ["big:1", "big:latest"], "sizeBytes": 1000},
                                {"names": ["small:1"], "sizeBytes": 10}]
    conditions = _conditions(status)
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert conditions["Ready"]["status"] == "True" and conditions["Ready"]["reason"] == "KubeletReady"
    assert all(conditions[k]["status"] == "False" for k in ("MemoryPressure", "DiskPressure", "PIDPressure"))


@pytest.mark.parametrize("change, condition, reason", [
    pytest.param({"memory_available_bytes": 50 * 1024 * 1024}, "MemoryPressure", "KubeletHasInsufficientMemory",
                 id="memory"),
    pytest.param({"disk_available_bytes": 5 * GiB}, "DiskPressure", "KubeletHasDiskPressure", id="disk"),
    pytest.param({"pids_in_use": 4_194_000}, "PIDPressure", "KubeletHasInsufficientPID", id="pids"),
])
def test_pressure_by_the_default_thresholds(change: dict, condition: str, reason: str) -> None:
    status = node_status(replace(FACTS, **change), old_status=None, now=NOW, max_pods=110, kubelet_port=10250,
                         runtime_healthy=True)
    assert _conditions(status)[condition]["status"] == "True"
    assert _conditions(status)[condition]["reason"] == reason


def test_not_ready_says_why() -> None:
    status = node_status(FACTS, old_status=None, now=NOW, max_pods=110, kubelet_port=10250, runtime_healthy=False,
                         not_ready_reasons=["pod network not set up"])
    ready = _conditions(status)["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert "PLEG" in ready["message"] and "pod network not set up" in ready["message"]


def test_heartbeat_moves_but_transition_time_only_on_change() -> None:
    first = node_status(FACTS, old_status=None, now=NOW, max_pods=110, kubelet_port=10250, runtime_healthy=True)
    later = NOW + timedelta(seconds=10)
    second = node_status(FACTS, old_status=first, now=later, max_pods=110, kubelet_port=10250, runtime_healthy=True)
    ready = _conditions(second)["Ready"]
    assert ready["lastHeartbeatTime"] == "2026-11-23T10:00:10Z"
    assert ready["lastTransitionTime"] == "2026-11-23T10:00:00Z"
    third = node_status(FACTS, old_status=second, now=later + timedelta(seconds=10), max_pods=110,
                        kubelet_port=10250, runtime_healthy=False)
    assert _conditions(third)["Ready"]["lastTransitionTime"] == "2026-11-23T10:00:20Z"


def test_gather_facts_reads_this_machine(tmp_path) -> None:
    facts = gather_facts(node_name="here", node_ip="", data_dir=str(tmp_path), docker_version="20.10",
                         images=[])
    assert facts.cpus >= 1 and facts.memory_bytes > facts.memory_available_bytes > 0
    assert facts.disk_bytes > 0 and facts.pid_max > facts.pids_in_use > 0
    assert facts.internal_ip and facts.kernel_version and facts.architecture
