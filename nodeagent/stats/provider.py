"""Gathers the samples summary.py turns into a Summary: the node from psutil and /proc, containers from
Docker's one-shot stats, a pod's network from /proc/<sandbox pid>/net/dev (the pause process sits in the
pod's network namespace; the sandbox runs with `network_mode=none`, so Docker's stats carry no networks).

Upstream: pkg/kubelet/stats/cri_stats_provider.go ListPodStats / ListPodCPUAndMemoryStats. CPU rates come
from two samples as there: the previous cumulative sample is kept per container (and for the node); a
container seen for the first time is sampled again after `PRIME_SECONDS` in the same request, so even the
first `kubectl top` after a pod starts has a rate (upstream's kubelet has cAdvisor's housekeeping samples
instead). One sampler at a time (a lock): concurrent scrapes would shorten each other's windows.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from nodeagent.runtime.interface import ContainerStats, Runtime, RuntimeFailure
from nodeagent.runtime.types import ContainerState, PodStatus, SandboxState
from nodeagent.stats.summary import (
    NANO,
    ContainerSample,
    CpuRates,
    FsStats,
    InterfaceStats,
    NodeSample,
    PodSample,
    parse_net_dev,
    summary,
)

log = logging.getLogger(__name__)

PRIME_SECONDS = 1.0
NODE_KEY = "/"  # the node's key in the rate cache (container ids never look like this)
EMPTY_DIR = "kubernetes.io~empty-dir"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def fs_stats(path: str) -> FsStats | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    capacity, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return FsStats(capacity_bytes=capacity, available_bytes=free, used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize,
                   inodes=st.f_files, inodes_free=st.f_ffree)


def _meminfo(field_name: str) -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) * 1024
    return 0


def du(path: str) -> int:
    """Bytes used under `path` (upstream's fsquota-less du); 0 if it does not exist."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


class StatsProvider:
    """`summary()` is the Summary document now; `pods()` is what it covered (for /metrics)."""

    def __init__(self, runtime: Runtime, *, node_name: str, fs_path: str, pods_dir: str = "",
                 image_fs_path: Callable[[], str] | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._runtime = runtime
        self._node_name = node_name
        self._fs_path = fs_path
        self._pods_dir = pods_dir
        self._image_fs_path = image_fs_path
        self._image_root: str | None = None
        self._clock = clock
        self._sleep = sleep
        self._rates = CpuRates()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="kubelet-stats")

    def summary(self) -> dict[str, Any]:
        with self._lock:
            pods = self._runtime.list_pods()
            running = [(p, c) for p in pods for c in p.containers if c.state is ContainerState.RUNNING]
            if not self._rates.known(NODE_KEY) or any(not self._rates.known(c.id) for _, c in running):
                self._prime([c.id for _, c in running if not self._rates.known(c.id)])
            node = self._node()
            samples = self._sample([c.id for _, c in running])
            at = self._clock()
            self._rates.retain([NODE_KEY, *samples])
            pod_samples = [self._pod(p, samples, at) for p in pods]
            return summary(self._node_name, node, [p for p in pod_samples if p is not None], datetime.now(UTC))

    def _prime(self, container_ids: list[str]) -> None:
        """First samples for the node and for containers new to us, then wait so the real ones make a rate."""
        self._rates.rate(NODE_KEY, _node_cpu_ns(), self._clock())
        for cid, stats in self._sample(container_ids).items():
            if stats is not None:
                self._rates.rate(cid, stats.cpu_usage_ns, self._clock())
        self._sleep(PRIME_SECONDS)

    def _sample(self, container_ids: list[str]) -> dict[str, ContainerStats | None]:
        """One Docker stats call per container, a few at a time (each is a round trip to dockerd)."""
        if not container_ids:
            return {}
        return dict(zip(container_ids, self._pool.map(self._runtime.stats, container_ids), strict=True))

    def _image_fs(self) -> FsStats | None:
        if self._image_fs_path is None:
            return None
        if self._image_root is None:
            try:
                self._image_root = self._image_fs_path()
            except RuntimeFailure:
                return None
        return fs_stats(self._image_root)

    def _node(self) -> NodeSample:
        import psutil

        usage = _node_cpu_ns()
        memory = psutil.virtual_memory()
        nodefs = fs_stats(self._fs_path if os.path.exists(self._fs_path) else "/") or FsStats(0, 0, 0)
        counters = psutil.net_io_counters(pernic=True)
        interfaces = tuple(InterfaceStats(name, c.bytes_recv, c.errin, c.bytes_sent, c.errout)
                           for name, c in sorted(counters.items()) if name != "lo" and not name.startswith("veth"))
        return NodeSample(
            cpu_usage_ns=usage, cpu_nano_cores=self._rates.rate(NODE_KEY, usage, self._clock()),
            memory_total=memory.total, memory_available=memory.available, memory_free=memory.free,
            memory_rss=_meminfo("AnonPages"), interfaces=interfaces, nodefs=nodefs, imagefs=self._image_fs(),
            max_pid=int(_read("/proc/sys/kernel/pid_max").strip() or 0), cur_proc=len(psutil.pids()),
            boot_time=datetime.fromtimestamp(psutil.boot_time(), UTC))

    def _pod(self, pod: PodStatus, samples: dict[str, ContainerStats | None], at: float) -> PodSample | None:
        containers = []
        for container in pod.containers:
            stats = samples.get(container.id)
            if stats is None:
                continue
            containers.append(ContainerSample(
                name=container.name, start_time=container.started_at, stats=stats,
                nano_cores=self._rates.rate(container.id, stats.cpu_usage_ns, at),
                logs_bytes=self._log_bytes(container.id)))
        sandbox = next((s for s in pod.sandboxes if s.state is SandboxState.READY), None)
        if sandbox is None and not containers:
            return None
        return PodSample(name=pod.name, namespace=pod.namespace, uid=pod.uid,
                         start_time=sandbox.created_at if sandbox is not None else None, containers=tuple(containers),
                         interfaces=self._pod_network(sandbox.id) if sandbox and not sandbox.host_network else (),
                         volumes=self._volumes(pod.uid))

    def _pod_network(self, sandbox_id: str) -> tuple[InterfaceStats, ...]:
        try:
            pid = self._runtime.sandbox_pid(sandbox_id)
        except RuntimeFailure:
            return ()
        return parse_net_dev(_read(f"/proc/{pid}/net/dev")) if pid > 0 else ()

    def _log_bytes(self, container_id: str) -> int | None:
        """The size of Docker's json-file log of the container (where the data root keeps it), if there."""
        root = self._image_root
        if root is None:
            return None
        try:
            return os.stat(f"{root}/containers/{container_id}/{container_id}-json.log").st_size
        except OSError:
            return None

    def _volumes(self, uid: str) -> dict[str, int]:
        if not self._pods_dir:
            return {}
        base = os.path.join(self._pods_dir, uid, "volumes", EMPTY_DIR)
        try:
            names = os.listdir(base)
        except OSError:
            return {}
        return {name: du(os.path.join(base, name)) for name in names}


def _node_cpu_ns() -> int:
    """Busy cpu time of the whole machine (every mode but idle and iowait; guest time is already in user and
    nice on Linux), in core-nanoseconds."""
    import psutil

    times = psutil.cpu_times()
    uncounted = sum(getattr(times, name, 0.0) for name in ("idle", "iowait", "guest", "guest_nice"))
    return int((sum(times) - uncounted) * NANO)
