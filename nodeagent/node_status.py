"""The Node object the kubelet registers and the status it reports every `nodeStatusUpdateFrequency`.

Upstream: pkg/kubelet/kubelet_node_status.go (initialNode, registerWithAPIServer) and
pkg/kubelet/nodestatus/setters.go (NodeAddress, MachineInfo, VersionInfo, DaemonEndpoints, Images,
ReadyCondition, MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition).
Facts are gathered by `gather_facts` (psutil, platform, Docker, /etc/machine-id) into a
frozen `NodeFacts`; everything else is pure, so tests build facts by hand and check the status.

Conditions follow the setters' rule: `lastHeartbeatTime` moves on every report, `lastTransitionTime` only
when `status` changes. Memory and disk pressure come from the hard eviction thresholds (nodeagent/eviction.py;
KubeletConfiguration `evictionHard`, upstream's defaults memory.available < 100Mi, nodefs.available < 10%,
imagefs.available < 15%): memory.available is the kernel's MemAvailable, nodefs the kubelet's data dir's
filesystem, imagefs Docker's data root's. PID pressure uses available PIDs < 5% of pid_max, as upstream
has no default PID threshold and a node out of PIDs is as unusable as one out of memory.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from control.apimachinery.meta import format_timestamp
from control.util.version import KUBERNETES_VERSION
from nodeagent import eviction

MAX_IMAGES = 50  # upstream's nodeStatusMaxImages
DEFAULT_THRESHOLDS = eviction.parse_thresholds(eviction.DEFAULT_EVICTION_HARD)
PID_PRESSURE_FRACTION = 0.05
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


@dataclass(frozen=True)
class ImageFacts:
    names: tuple[str, ...]  # repo tags (and digests)
    size_bytes: int


@dataclass(frozen=True)
class NodeFacts:
    """What the machine is and has, at one moment."""

    hostname: str
    internal_ip: str
    cpus: int
    memory_bytes: int
    memory_available_bytes: int
    disk_bytes: int  # the filesystem holding the kubelet's data dir (nodefs)
    disk_available_bytes: int
    pid_max: int
    pids_in_use: int
    kernel_version: str
    os_image: str
    architecture: str  # Go's GOARCH names: amd64, arm64
    machine_id: str
    boot_id: str
    runtime_version: str  # "docker://20.10.24"
    images: tuple[ImageFacts, ...] = ()
    image_fs_bytes: int = 0  # Docker's data root's filesystem (imagefs); 0: unknown
    image_fs_available_bytes: int = 0


def node_labels(node_name: str, architecture: str, extra: Mapping[str, str]) -> dict[str, str]:
    """The well-known labels the kubelet sets on its Node (kubelet_node_status.go initialNode)."""
    labels = {
        "kubernetes.io/hostname": node_name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": architecture,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": architecture,
    }
    labels.update(extra)
    return labels


def initial_node(node_name: str, facts: NodeFacts, *, pod_cidr: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The Node the kubelet creates when it registers (status is filled by `node_status` right after)."""
    spec: dict[str, Any] = {}
    if pod_cidr:
        spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node_name, "labels": node_labels(node_name, facts.architecture, labels),
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": spec}


def _condition(kind: str, value: bool, reason: str, message: str, *, old: Mapping[str, Mapping[str, Any]],
               now: str) -> dict[str, Any]:
    status = "True" if value else "False"
    previous = old.get(kind)
    transition = previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
    return {"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": transition or now,
            "reason": reason, "message": message}


def pressure(facts: NodeFacts, thresholds: tuple[eviction.Threshold, ...] = DEFAULT_THRESHOLDS) -> dict[str, bool]:
    """Which of memory, disk and PID pressure the node is under by the hard eviction thresholds."""
    memory, disk = eviction.pressure(eviction.crossed(thresholds, eviction.Observations(
        memory=(facts.memory_available_bytes, facts.memory_bytes),
        nodefs=(facts.disk_available_bytes, facts.disk_bytes),
        imagefs=(facts.image_fs_available_bytes, facts.image_fs_bytes) if facts.image_fs_bytes else None)))
    return {
        "MemoryPressure": memory,
        "DiskPressure": disk,
        "PIDPressure": facts.pid_max > 0 and facts.pid_max - facts.pids_in_use < PID_PRESSURE_FRACTION * facts.pid_max,
    }


def node_status(facts: NodeFacts, *, old_status: Mapping[str, Any] | None, now: datetime, max_pods: int,
                kubelet_port: int, runtime_healthy: bool, not_ready_reasons: Sequence[str] = (),
                thresholds: tuple[eviction.Threshold, ...] = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    """The Node's status: addresses, capacity/allocatable, nodeInfo, images, daemonEndpoints, conditions.

    `runtime_healthy` is Docker answering and the PLEG relisting in time; `not_ready_reasons` adds other
    reasons to report NotReady (e.g. the pod network is not set up)."""
    stamp = format_timestamp(now)
    old: dict[str, Mapping[str, Any]] = {
        str(c.get("type")): c for c in (old_status or {}).get("conditions") or [] if isinstance(c, Mapping)}
    capacity = {"cpu": str(facts.cpus), "memory": f"{facts.memory_bytes // 1024}Ki",
                "ephemeral-storage": f"{facts.disk_bytes // 1024}Ki", "pods": str(max_pods)}
    under = pressure(facts, thresholds)
    problems = ([] if runtime_healthy else ["container runtime is down or PLEG is not healthy"]) + \
        list(not_ready_reasons)
    ready = not problems
    conditions = [
        _condition("MemoryPressure", under["MemoryPressure"],
                   "KubeletHasInsufficientMemory" if under["MemoryPressure"] else "KubeletHasSufficientMemory",
                   "kubelet has insufficient memory available" if under["MemoryPressure"]
                   else "kubelet has sufficient memory available", old=old, now=stamp),
        _condition("DiskPressure", under["DiskPressure"],
                   "KubeletHasDiskPressure" if under["DiskPressure"] else "KubeletHasNoDiskPressure",
                   "kubelet has disk pressure" if under["DiskPressure"] else "kubelet has no disk pressure",
                   old=old, now=stamp),
        _condition("PIDPressure", under["PIDPressure"],
                   "KubeletHasInsufficientPID" if under["PIDPressure"] else "KubeletHasSufficientPID",
                   "kubelet has insufficient PID available" if under["PIDPressure"]
                   else "kubelet has sufficient PID available", old=old, now=stamp),
        _condition("Ready", ready, "KubeletReady" if ready else "KubeletNotReady",
                   "kubelet is posting ready status" if ready else "; ".join(problems), old=old, now=stamp),
    ]
    images = sorted(facts.images, key=lambda i: i.size_bytes, reverse=True)[:MAX_IMAGES]
    addresses = [{"type": "InternalIP", "address": facts.internal_ip}] if facts.internal_ip else []
    addresses.append({"type": "Hostname", "address": facts.hostname})
    return {
        "addresses": addresses,
        "capacity": capacity,
        "allocatable": dict(capacity),  # no kube-reserved/system-reserved yet
        "conditions": conditions,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "nodeInfo": {
            "machineID": facts.machine_id, "systemUUID": facts.machine_id, "bootID": facts.boot_id,
            "kernelVersion": facts.kernel_version, "osImage": facts.os_image,
            "containerRuntimeVersion": facts.runtime_version, "kubeletVersion": KUBERNETES_VERSION,
            "kubeProxyVersion": KUBERNETES_VERSION, "operatingSystem": "linux", "architecture": facts.architecture,
        },
        "images": [{"names": list(i.names), "sizeBytes": i.size_bytes} for i in images if i.names],
    }


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def default_ip() -> str:
    """The address this host sends from towards the default route (no packet is sent: a UDP connect only
    picks the route). Falls back to 127.0.0.1 on a machine with no default route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere real, nothing is sent
            address: str = probe.getsockname()[0]
            return address
        except OSError:
            return "127.0.0.1"


def gather_facts(*, node_name: str, node_ip: str, data_dir: str, docker_version: str,
                 images: Sequence[ImageFacts], image_fs_path: str = "") -> NodeFacts:
    """The machine's facts now, from psutil, platform and /proc (the runtime's part is passed in)."""
    import psutil

    memory = psutil.virtual_memory()
    path = data_dir if os.path.exists(data_dir) else "/"
    disk = psutil.disk_usage(path)
    pid_max = int(_read("/proc/sys/kernel/pid_max") or 0)
    image_fs = psutil.disk_usage(image_fs_path) if image_fs_path and os.path.exists(image_fs_path) else None
    return NodeFacts(
        hostname=node_name, internal_ip=node_ip or default_ip(), cpus=psutil.cpu_count() or 1,
        memory_bytes=memory.total, memory_available_bytes=memory.available,
        disk_bytes=disk.total, disk_available_bytes=disk.free,
        pid_max=pid_max, pids_in_use=len(psutil.pids()),
        kernel_version=platform.release(), os_image=_os_image(),
        architecture=_ARCH.get(platform.machine(), platform.machine()),
        machine_id=_read("/etc/machine-id") or _read("/var/lib/dbus/machine-id"),
        boot_id=_read("/proc/sys/kernel/random/boot_id"),
        runtime_version=f"docker://{docker_version}", images=tuple(images),
        image_fs_bytes=image_fs.total if image_fs else 0, image_fs_available_bytes=image_fs.free if image_fs else 0)
