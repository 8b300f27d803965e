"""The Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1 `Summary`) built from plain samples.

Upstream: pkg/kubelet/stats/cri_stats_provider.go (the cadvisor-less provider: container cpu/memory from
the runtime's stats, `usageNanoCores` from two samples of the cumulative `usageCoreNanoSeconds`, pod cpu and
memory the sum of its containers, pod network from the sandbox's interface) and
pkg/kubelet/server/stats/summary.go (node part: cpu, memory, network, fs, runtime.imageFs, rlimit).

Everything here is pure: the samples come in as frozen dataclasses (provider.py gathers them with psutil,
/proc and Docker), `now` is passed in, and `CpuRates` keeps the previous cumulative sample per key, as
upstream's `cpuUsageCache`. Departures: no `systemContainers` (there is no kubelet/runtime cgroup of our
own), no per-container `rootfs.usedBytes` (Docker computes a writable layer's size only by walking it) —
a pod's `ephemeral-storage` is its containers' log files plus its emptyDir volumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from control.apimachinery.meta import format_timestamp
from nodeagent.runtime.interface import ContainerStats

NANO = 1_000_000_000


class CpuRates:
    """usageNanoCores from consecutive cumulative samples per key (upstream getAndUpdateContainerUsageNanoCores):
    the first sample of a key, or one that went backwards (a restarted container under the same key), gives
    None and becomes the new reference; samples at the same instant give the previous rate."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, int, int | None]] = {}  # key → (seconds, usage ns, last rate)

    def rate(self, key: str, usage_ns: int, at: float) -> int | None:
        previous = self._last.get(key)
        if previous is None or usage_ns < previous[1]:
            self._last[key] = (at, usage_ns, None)
            return None
        seconds, before, last_rate = previous
        if at <= seconds:
            return last_rate
        rate = int((usage_ns - before) / (at - seconds))  # ns of cpu per s = nanocores
        self._last[key] = (at, usage_ns, rate)
        return rate

    def known(self, key: str) -> bool:
        return key in self._last

    def retain(self, keys: Iterable[str]) -> None:
        """Forget every key not in `keys` (containers that are gone), so the cache cannot grow without end."""
        alive = set(keys)
        for key in [k for k in self._last if k not in alive]:
            del self._last[key]


@dataclass(frozen=True)
class InterfaceStats:
    name: str
    rx_bytes: int
    rx_errors: int
    tx_bytes: int
    tx_errors: int


@dataclass(frozen=True)
class FsStats:
    capacity_bytes: int
    available_bytes: int
    used_bytes: int
    inodes: int | None = None
    inodes_free: int | None = None


@dataclass(frozen=True)
class NodeSample:
    cpu_usage_ns: int
    cpu_nano_cores: int | None
    memory_total: int
    memory_available: int
    memory_free: int
    memory_rss: int
    interfaces: tuple[InterfaceStats, ...]
    nodefs: FsStats
    imagefs: FsStats | None
    max_pid: int
    cur_proc: int
    boot_time: datetime


@dataclass(frozen=True)
class ContainerSample:
    name: str
    start_time: datetime | None
    stats: ContainerStats
    nano_cores: int | None
    logs_bytes: int | None = None


@dataclass(frozen=True)
class PodSample:
    name: str
    namespace: str
    uid: str
    start_time: datetime | None
    containers: tuple[ContainerSample, ...]
    interfaces: tuple[InterfaceStats, ...] = ()  # the pod's network namespace, without lo
    volumes: Mapping[str, int] = field(default_factory=dict)  # volume name → used bytes (emptyDir)


def parse_net_dev(text: str) -> tuple[InterfaceStats, ...]:
    """/proc/<pid>/net/dev → per-interface counters (`lo` left out, as cadvisor does)."""
    found = []
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() in ("", "lo") or len(fields) < 16:
            continue
        found.append(InterfaceStats(name=name.strip(), rx_bytes=int(fields[0]), rx_errors=int(fields[2]),
                                    tx_bytes=int(fields[8]), tx_errors=int(fields[10])))
    return tuple(found)


def _interface(i: InterfaceStats) -> dict[str, Any]:
    return {"name": i.name, "rxBytes": i.rx_bytes, "rxErrors": i.rx_errors, "txBytes": i.tx_bytes,
            "txErrors": i.tx_errors}


def network(interfaces: Sequence[InterfaceStats], now: str, *, default: str = "eth0") -> dict[str, Any] | None:
    """NetworkStats: the default interface's counters inline (eth0, else the first), and every interface."""
    if not interfaces:
        return None
    main = next((i for i in interfaces if i.name == default), interfaces[0])
    return {"time": now, **_interface(main), "interfaces": [_interface(i) for i in interfaces]}


def fs(stats: FsStats, now: str, *, used: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"time": now, "availableBytes": stats.available_bytes,
                             "capacityBytes": stats.capacity_bytes,
                             "usedBytes": stats.used_bytes if used is None else used}
    if stats.inodes is not None and stats.inodes_free is not None:
        entry.update(inodesFree=stats.inodes_free, inodes=stats.inodes, inodesUsed=stats.inodes - stats.inodes_free)
    return entry


def _cpu(usage_ns: int, nano_cores: int | None, now: str) -> dict[str, Any]:
    cpu: dict[str, Any] = {"time": now, "usageCoreNanoSeconds": usage_ns}
    if nano_cores is not None:
        cpu["usageNanoCores"] = nano_cores
    return cpu


def _stamp(moment: datetime | None) -> dict[str, str]:
    return {"startTime": format_timestamp(moment)} if moment is not None else {}


def container_entry(sample: ContainerSample, now: str, *, node_memory: int,
                    imagefs: FsStats | None, nodefs: FsStats) -> dict[str, Any]:
    """ContainerStats; `memory.availableBytes` only under a limit (Docker reports the host's memory as the
    limit of an unlimited container, upstream leaves the field out then)."""
    s = sample.stats
    memory: dict[str, Any] = {"time": now, "usageBytes": s.memory_usage_bytes,
                              "workingSetBytes": s.memory_working_set_bytes, "rssBytes": s.memory_rss_bytes,
                              "pageFaults": s.page_faults, "majorPageFaults": s.major_page_faults}
    if 0 < s.memory_limit_bytes < node_memory:
        memory["availableBytes"] = max(0, s.memory_limit_bytes - s.memory_working_set_bytes)
    entry: dict[str, Any] = {"name": sample.name, **_stamp(sample.start_time),
                             "cpu": _cpu(s.cpu_usage_ns, sample.nano_cores, now), "memory": memory}
    if imagefs is not None:
        rootfs = fs(imagefs, now)
        del rootfs["usedBytes"]
        entry["rootfs"] = rootfs
    if sample.logs_bytes is not None:
        entry["logs"] = fs(nodefs, now, used=sample.logs_bytes)
    return entry


def pod_entry(pod: PodSample, now: str, *, node_memory: int, nodefs: FsStats,
              imagefs: FsStats | None) -> dict[str, Any]:
    """PodStats: containers, their summed cpu (the rate only if every container has one) and memory, the
    sandbox's network, emptyDir volumes and ephemeral storage (logs + volumes)."""
    containers = [container_entry(c, now, node_memory=node_memory, imagefs=imagefs, nodefs=nodefs)
                  for c in pod.containers]
    rates = [c.nano_cores for c in pod.containers]
    entry: dict[str, Any] = {
        "podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}, **_stamp(pod.start_time),
        "containers": containers,
        "cpu": _cpu(sum(c.stats.cpu_usage_ns for c in pod.containers),
                    sum(r for r in rates if r is not None) if rates and None not in rates else None, now),
        "memory": {"time": now, "usageBytes": sum(c.stats.memory_usage_bytes for c in pod.containers),
                   "workingSetBytes": sum(c.stats.memory_working_set_bytes for c in pod.containers),
                   "rssBytes": sum(c.stats.memory_rss_bytes for c in pod.containers),
                   "pageFaults": sum(c.stats.page_faults for c in pod.containers),
                   "majorPageFaults": sum(c.stats.major_page_faults for c in pod.containers)},
    }
    net = network(pod.interfaces, now)
    if net is not None:
        entry["network"] = net
    if pod.volumes:
        entry["volume"] = [{"name": name, **fs(nodefs, now, used=used)} for name, used in sorted(pod.volumes.items())]
    ephemeral = sum(c.logs_bytes or 0 for c in pod.containers) + sum(pod.volumes.values())
    entry["ephemeral-storage"] = fs(nodefs, now, used=ephemeral)
    return entry


def summary(node_name: str, node: NodeSample, pods: Sequence[PodSample], now: datetime) -> dict[str, Any]:
    """The Summary document. Node memory: usage = total - free, working set = total - available (the
    kernel's MemAvailable; what the memory.available eviction signal uses), available = MemAvailable."""
    stamp = format_timestamp(now)
    node_entry: dict[str, Any] = {
        "nodeName": node_name, "startTime": format_timestamp(node.boot_time),
        "cpu": _cpu(node.cpu_usage_ns, node.cpu_nano_cores, stamp),
        "memory": {"time": stamp, "availableBytes": node.memory_available,
                   "usageBytes": node.memory_total - node.memory_free,
                   "workingSetBytes": node.memory_total - node.memory_available, "rssBytes": node.memory_rss},
        "fs": fs(node.nodefs, stamp),
        "rlimit": {"time": stamp, "maxpid": node.max_pid, "curproc": node.cur_proc},
    }
    net = network(node.interfaces, stamp)
    if net is not None:
        node_entry["network"] = net
    if node.imagefs is not None:
        node_entry["runtime"] = {"imageFs": fs(node.imagefs, stamp)}
    return {"node": node_entry,
            "pods": [pod_entry(p, stamp, node_memory=node.memory_total, nodefs=node.nodefs, imagefs=node.imagefs)
                     for p in pods]}
