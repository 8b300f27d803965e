"""Hard eviction thresholds (nodeagent/eviction.py): parsing `evictionHard` as upstream, which signals are
crossed, and the MemoryPressure/DiskPressure conditions node status reports from them (imagefs included)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from control.util.componentconfig import ConfigError
from nodeagent import config as kubelet_config
from nodeagent import eviction
from nodeagent.eviction import Observations, Threshold, crossed, parse_thresholds
from nodeagent.node_status import NodeFacts, node_status

GiB, MiB = 1024 ** 3, 1024 ** 2
NOW = datetime(2026, 11, 27, 10, 0, 0, tzinfo=UTC)
FACTS = NodeFacts(hostname="n", internal_ip="10.0.0.1", cpus=2, memory_bytes=4 * GiB, memory_available_bytes=3 * GiB,
                  disk_bytes=100 * GiB, disk_available_bytes=50 * GiB, pid_max=100_000, pids_in_use=10,
                  kernel_version="6.1", os_image="Debian", architecture="amd64", machine_id="m", boot_id="b",
                  runtime_version="docker://20.10", image_fs_bytes=200 * GiB, image_fs_available_bytes=100 * GiB)


def test_upstreams_defaults() -> None:
    assert parse_thresholds(eviction.DEFAULT_EVICTION_HARD) == (
        Threshold("memory.available", value=100 * MiB), Threshold("nodefs.available", percentage=0.10),
        Threshold("imagefs.available", percentage=0.15))
    assert kubelet_config.KubeletConfig().eviction_hard == {
        "memory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "15%"}


@pytest.mark.parametrize("hard, message", [
    pytest.param({"memory.free": "1Gi"}, "unsupported eviction signal memory.free", id="unknown-signal"),
    pytest.param({"nodefs.available": "abc%"}, "invalid percentage", id="bad-percentage"),
    pytest.param({"nodefs.available": "0%"}, "must be positive", id="zero-percentage"),
    pytest.param({"memory.available": "lots"}, "invalid quantity", id="bad-quantity"),
])
def test_bad_thresholds_are_refused(hard: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_thresholds(hard)
    with pytest.raises(ConfigError, match="evictionHard"):
        kubelet_config.from_document({"evictionHard": hard})


@pytest.mark.parametrize("observed, expected", [
    pytest.param(Observations((200 * MiB, GiB), (50, 100), (50, 100)), frozenset(), id="none"),
    pytest.param(Observations((99 * MiB, GiB), (50, 100), (50, 100)), {"memory.available"}, id="memory"),
    pytest.param(Observations((GiB, GiB), (9, 100), (50, 100)), {"nodefs.available"}, id="nodefs"),
    pytest.param(Observations((GiB, GiB), (50, 100), (14, 100)), {"imagefs.available"}, id="imagefs"),
    pytest.param(Observations((GiB, GiB), (10, 100), (15, 100)), frozenset(), id="at-threshold-is-not-below"),
    pytest.param(Observations((GiB, GiB), (50, 100), None), frozenset(), id="imagefs-unknown"),
])
def test_crossed_signals(observed: Observations, expected: set) -> None:
    assert crossed(parse_thresholds(eviction.DEFAULT_EVICTION_HARD), observed) == expected


def _condition(status: dict, kind: str) -> tuple[str, str]:
    found = next(c for c in status["conditions"] if c["type"] == kind)
    return found["status"], found["reason"]


@pytest.mark.parametrize("facts, thresholds, memory, disk", [
    pytest.param(FACTS, None, "False", "False", id="healthy"),
    pytest.param(replace(FACTS, image_fs_available_bytes=20 * GiB), None, "False", "True", id="imagefs-below-15%"),
    pytest.param(replace(FACTS, disk_available_bytes=5 * GiB), None, "False", "True", id="nodefs-below-10%"),
    pytest.param(FACTS, {"memory.available": "3.5Gi"}, "True", "False", id="configured-memory"),
    pytest.param(replace(FACTS, image_fs_available_bytes=20 * GiB), {"memory.available": "1Mi"}, "False", "False",
                 id="configured-map-replaces-defaults"),
    pytest.param(FACTS, {"nodefs.available": "60%"}, "False", "True", id="configured-percentage"),
])
def test_node_conditions_follow_the_thresholds(facts: NodeFacts, thresholds: dict | None, memory: str,
                                               disk: str) -> None:
    kwargs = {} if thresholds is None else {"thresholds": parse_thresholds(thresholds)}
    status = node_status(facts, old_status=None, now=NOW, max_pods=110, kubelet_port=10250, runtime_healthy=True,
                         **kwargs)
    assert _condition(status, "MemoryPressure")[0] == memory
    assert _condition(status, "DiskPressure") == (
        (disk, "KubeletHasDiskPressure") if disk == "True" else (disk, "KubeletHasNoDiskPressure"))


def test_config_reads_eviction_hard() -> None:
    config = kubelet_config.from_document({"evictionHard": {"memory.available": "500Mi"}})
    assert config.eviction_hard == {"memory.available": "500Mi"}
