"""Docker's view of a container turned into the runtime's `types` (pure: no Docker calls).

Upstream: the dockershim's toRuntimeAPIContainerState/ContainerStatus (docker_container.go) and
kuberuntime's getPodContainerStatuses (kuberuntime_container.go), where an exited container's reason
is "OOMKilled" when Docker says so, else "Completed" for exit 0 and "Error" otherwise, and the newest
container of each name comes first. Both the PLEG (which inspects only what changed) and
`DockerRuntime.list_pods` (which inspects everything) build PodStatus through these functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from nodeagent.runtime.labels import Identity, Kind
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus

AnyStatus = ContainerStatus | SandboxStatus

_LIST_STATES = {
    "created": ContainerState.CREATED,
    "running": ContainerState.RUNNING,
    "exited": ContainerState.EXITED,
    "dead": ContainerState.EXITED,
}


def list_state(entry: Mapping[str, Any]) -> ContainerState:
    """The state from a low-level list entry's `State` ("paused", "restarting", "removing" → UNKNOWN)."""
    return _LIST_STATES.get(entry.get("State", ""), ContainerState.UNKNOWN)


def parse_time(value: str | None) -> datetime | None:
    """Docker's RFC 3339 times with nanoseconds; its zero time ("0001-01-01T00:00:00Z") means unset."""
    if not value or value.startswith("0001-01-01"):
        return None
    text = value.rstrip("Z")
    if "." in text:
        head, frac = text.split(".", 1)
        text = f"{head}.{frac[:6]}"
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def inspect_state(state: Mapping[str, Any]) -> ContainerState:
    if state.get("Running"):
        return ContainerState.RUNNING
    status = state.get("Status", "")
    if status in ("exited", "dead"):
        return ContainerState.EXITED
    return ContainerState.CREATED if status == "created" else ContainerState.UNKNOWN


def exit_reason(state: Mapping[str, Any]) -> str:
    if state.get("OOMKilled"):
        return "OOMKilled"
    return "Completed" if state.get("ExitCode", 0) == 0 else "Error"


def container_status(identity: Identity, inspect: Mapping[str, Any], *, message: str = "") -> ContainerStatus:
    state = inspect.get("State") or {}
    current = inspect_state(state)
    exited = current is ContainerState.EXITED
    return ContainerStatus(
        id=inspect["Id"],
        name=identity.container_name,
        state=current,
        image=(inspect.get("Config") or {}).get("Image", ""),
        image_id=inspect.get("Image", ""),
        hash=identity.hash,
        restart_count=identity.attempt,
        created_at=parse_time(inspect.get("Created")),
        started_at=parse_time(state.get("StartedAt")),
        finished_at=parse_time(state.get("FinishedAt")) if exited else None,
        exit_code=int(state.get("ExitCode", 0)) if exited else 0,
        reason=exit_reason(state) if exited else "",
        message=message if exited else "",
    )


def sandbox_status(identity: Identity, inspect: Mapping[str, Any]) -> SandboxStatus:
    running = bool((inspect.get("State") or {}).get("Running"))
    return SandboxStatus(
        id=inspect["Id"],
        state=SandboxState.READY if running else SandboxState.NOTREADY,
        attempt=identity.attempt,
        created_at=parse_time(inspect.get("Created")),
        host_network=(inspect.get("HostConfig") or {}).get("NetworkMode") == "host",
    )


def _newest_first(status: AnyStatus) -> tuple[float, int]:
    created = status.created_at.timestamp() if status.created_at else 0.0
    attempt = status.attempt if isinstance(status, SandboxStatus) else status.restart_count
    return (-created, -attempt)


def assemble(
    uid: str, items: Iterable[tuple[Identity, AnyStatus]], *, pod_ip: Callable[[SandboxStatus], str] | None = None
) -> PodStatus:
    """One PodStatus from a pod's containers: sandboxes newest first, containers grouped by name with the
    newest first. `pod_ip` tells a sandbox's IP (the network's IPAM knows it, Docker does not: sandboxes
    run with network_mode none); `ips` is the newest sandbox's IP while it is ready."""
    name = namespace = ""
    sandboxes: list[SandboxStatus] = []
    containers: list[ContainerStatus] = []
    for identity, status in items:
        name, namespace = identity.pod_name or name, identity.namespace or namespace
        if identity.kind is Kind.SANDBOX and isinstance(status, SandboxStatus):
            sandboxes.append(replace(status, ip=pod_ip(status)) if pod_ip else status)
        elif isinstance(status, ContainerStatus):
            containers.append(status)
    sandboxes.sort(key=_newest_first)
    containers.sort(key=lambda c: (c.name, _newest_first(c)))
    newest = sandboxes[0] if sandboxes else None
    ips = (newest.ip,) if newest and newest.ip and newest.state is SandboxState.READY else ()
    return PodStatus(uid=uid, name=name, namespace=namespace, sandboxes=tuple(sandboxes),
                     containers=tuple(containers), ips=ips)
