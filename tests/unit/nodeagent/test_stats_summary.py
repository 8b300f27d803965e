"""The Summary API's pure parts (nodeagent/stats/summary.py), Docker's stats document → ContainerStats, and
the provider (nodeagent/stats/provider.py) over a fake runtime: cpu rates from two samples, the first
request primed, gone containers forgotten, pods summed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodeagent.runtime.docker import container_stats
from nodeagent.runtime.interface import ContainerStats
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.stats.provider import StatsProvider
from nodeagent.stats.summary import (
    ContainerSample,
    CpuRates,
    FsStats,
    InterfaceStats,
    NodeSample,
    PodSample,
    parse_net_dev,
    summary,
)

NOW = datetime(2026, 11, 27, 10, 0, 0, tzinfo=UTC)
GiB = 1024 ** 3


@pytest.mark.parametrize("samples, expected", [
    pytest.param([(0, 1.0)], [None], id="first-sample-has-no-rate"),
    pytest.param([(0, 1.0), (500_000_000, 2.0)], [None, 500_000_000], id="half-a-core"),
    pytest.param([(0, 1.0), (4_000_000_000, 3.0)], [None, 2_000_000_000], id="two-cores"),
    pytest.param([(10, 1.0), (5, 2.0), (1_000_000_005, 3.0)], [None, None, 1_000_000_000], id="counter-reset"),
    pytest.param([(0, 1.0), (100, 2.0), (200, 2.0)], [None, 100, 100], id="same-instant-repeats-rate"),
])
def test_cpu_rates(samples: list[tuple[int, float]], expected: list[int | None]) -> None:
    rates = CpuRates()
    assert [rates.rate("c", usage, at) for usage, at in samples] == expected


def test_cpu_rates_forget_what_is_gone() -> None:
    rates = CpuRates()
    rates.rate("a", 1, 1.0)
    rates.rate("b", 1, 1.0)
    rates.retain(["a"])
    assert rates.known("a") and not rates.known("b")


NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0        0
  eth0:  123456     100    2    0    0     0          0         0    65432      90    1    0    0     0       0        0
"""


def test_parse_net_dev_skips_lo() -> None:
    assert parse_net_dev(NET_DEV) == (InterfaceStats("eth0", 123456, 2, 65432, 1),)
    assert parse_net_dev("") == ()


@pytest.mark.parametrize("raw, working_set, rss, faults", [
    pytest.param({"cpu_stats": {"cpu_usage": {"total_usage": 7}},
                  "memory_stats": {"usage": 1000, "limit": 5000,
                                   "stats": {"total_inactive_file": 300, "total_rss": 600, "total_pgfault": 9,
                                             "total_pgmajfault": 1}}}, 700, 600, (9, 1), id="cgroup-v1"),
    pytest.param({"cpu_stats": {"cpu_usage": {"total_usage": 7}},
                  "memory_stats": {"usage": 1000, "limit": 5000,
                                   "stats": {"inactive_file": 1200, "anon": 400, "pgfault": 3, "pgmajfault": 0}}},
                 0, 400, (3, 0), id="cgroup-v2-inactive-above-usage-floors-at-0"),
    pytest.param({}, 0, 0, (0, 0), id="empty"),
])
def test_docker_stats_document(raw: dict, working_set: int, rss: int, faults: tuple[int, int]) -> None:
    stats = container_stats(raw)
    assert (stats.memory_working_set_bytes, stats.memory_rss_bytes) == (working_set, rss)
    assert (stats.page_faults, stats.major_page_faults) == faults
    if raw:
        assert (stats.cpu_usage_ns, stats.memory_usage_bytes, stats.memory_limit_bytes) == (7, 1000, 5000)


def _stats(cpu: int, working_set: int, limit: int = 8 * GiB) -> ContainerStats:
    return ContainerStats(cpu_usage_ns=cpu, memory_usage_bytes=working_set + 10, memory_limit_bytes=limit,
                          memory_working_set_bytes=working_set, memory_rss_bytes=working_set // 2)


NODE = NodeSample(cpu_usage_ns=10 ** 12, cpu_nano_cores=250_000_000, memory_total=8 * GiB, memory_available=6 * GiB,
                  memory_free=5 * GiB, memory_rss=GiB, interfaces=(InterfaceStats("eth0", 1, 0, 2, 0),),
                  nodefs=FsStats(100, 40, 60, inodes=1000, inodes_free=900), imagefs=FsStats(200, 50, 150),
                  max_pid=4096, cur_proc=100, boot_time=NOW)


def test_summary_node_part() -> None:
    node = summary("n1", NODE, [], NOW)["node"]
    stamp = "2026-11-27T10:00:00Z"
    assert node["nodeName"] == "n1" and node["startTime"] == stamp
    assert node["cpu"] == {"time": stamp, "usageCoreNanoSeconds": 10 ** 12, "usageNanoCores": 250_000_000}
    assert node["memory"] == {"time": stamp, "availableBytes": 6 * GiB, "usageBytes": 3 * GiB,
                              "workingSetBytes": 2 * GiB, "rssBytes": GiB}
    assert node["fs"] == {"time": stamp, "availableBytes": 40, "capacityBytes": 100, "usedBytes": 60,
                          "inodesFree": 900, "inodes": 1000, "inodesUsed": 100}
    assert node["runtime"]["imageFs"]["capacityBytes"] == 200
    assert node["rlimit"] == {"time": stamp, "maxpid": 4096, "curproc": 100}
    assert node["network"]["name"] == "eth0" and node["network"]["interfaces"][0]["txBytes"] == 2


def test_summary_pod_sums_containers_and_keeps_the_rate_only_when_every_container_has_one() -> None:
    pod = PodSample(name="p", namespace="ns", uid="u", start_time=NOW, containers=(
        ContainerSample("a", NOW, _stats(100, 1000, limit=4000), 10, logs_bytes=5),
        ContainerSample("b", None, _stats(50, 500), 20, logs_bytes=7)),
        interfaces=(InterfaceStats("eth0", 11, 0, 22, 0),), volumes={"scratch": 4096})
    (entry,) = summary("n1", NODE, [pod], NOW)["pods"]
    assert entry["podRef"] == {"name": "p", "namespace": "ns", "uid": "u"}
    assert entry["cpu"]["usageCoreNanoSeconds"] == 150 and entry["cpu"]["usageNanoCores"] == 30
    assert entry["memory"]["workingSetBytes"] == 1500 and entry["memory"]["usageBytes"] == 1520
    a, b = entry["containers"]
    assert a["memory"]["availableBytes"] == 3000  # limit - working set, under a limit only
    assert "availableBytes" not in b["memory"] and "startTime" not in b
    assert a["logs"]["usedBytes"] == 5 and "usedBytes" not in a["rootfs"] and a["rootfs"]["capacityBytes"] == 200
    assert entry["network"]["rxBytes"] == 11 and entry["network"]["txBytes"] == 22
    assert entry["volume"] == [{"name": "scratch", "time": "2026-11-27T10:00:00Z", "availableBytes": 40,
                                "capacityBytes": 100, "usedBytes": 4096, "inodesFree": 900, "inodes": 1000,
                                "inodesUsed": 100}]
    assert entry["ephemeral-storage"]["usedBytes"] == 5 + 7 + 4096
    unrated = PodSample(name="q", namespace="ns", uid="v", start_time=None, containers=(
        ContainerSample("a", None, _stats(1, 1), 10), ContainerSample("b", None, _stats(1, 1), None)))
    assert "usageNanoCores" not in summary("n1", NODE, [unrated], NOW)["pods"][0]["cpu"]


class FakeRuntime:
    """Two pods, one container each; cumulative cpu grows by `step` ns per stats call."""

    def __init__(self) -> None:
        self.cpu = {"c1": 0, "c2": 0}
        self.step = {"c1": 500_000_000, "c2": 0}
        self.running = {"c1", "c2"}
        self.calls = 0

    def list_pods(self) -> list[PodStatus]:
        pods = []
        for cid in sorted(self.running):
            pods.append(PodStatus(uid=f"u-{cid}", name=f"pod-{cid}", namespace="ns",
                                  sandboxes=(SandboxStatus(id=f"s-{cid}", state=SandboxState.READY, created_at=NOW),),
                                  containers=(ContainerStatus(id=cid, name="app", state=ContainerState.RUNNING,
                                                              image="busybox", started_at=NOW),)))
        return pods

    def stats(self, container_id: str) -> ContainerStats | None:
        self.calls += 1
        self.cpu[container_id] += self.step[container_id]
        return _stats(self.cpu[container_id], 1024)

    def sandbox_pid(self, sandbox_id: str) -> int:
        return 0


def test_provider_primes_new_containers_and_rates_them_over_the_wait() -> None:
    runtime, clock, slept = FakeRuntime(), [100.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    provider = StatsProvider(runtime, node_name="n1", fs_path="/", clock=lambda: clock[0], sleep=sleep)  # type: ignore[arg-type]
    first = provider.summary()
    assert slept == [1.0]
    rates = {p["podRef"]["name"]: p["containers"][0]["cpu"]["usageNanoCores"] for p in first["pods"]}
    assert rates == {"pod-c1": 500_000_000, "pod-c2": 0}  # half a core over the 1 s wait
    assert "usageNanoCores" in first["node"]["cpu"]

    clock[0] += 10
    second = provider.summary()
    assert slept == [1.0]  # everything known: no second wait
    assert second["pods"][0]["containers"][0]["cpu"]["usageNanoCores"] == 50_000_000  # 0.5 s of cpu over 10 s

    runtime.running = {"c1"}
    clock[0] += 10
    provider.summary()
    assert not provider._rates.known("c2")  # gone containers leave the cache
