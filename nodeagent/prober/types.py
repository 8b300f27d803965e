"""The prober's vocabulary: probe kinds, results, and a container's probe spec parsed into typed records.

Upstream: pkg/kubelet/prober/prober_manager.go (probeType), pkg/kubelet/prober/results/results_manager.go
(Result: Unknown, Success, Failure), pkg/probe/probe.go (the executors' Result: Success, Warning, Failure,
Unknown) and the v1.Probe defaults (k8s.io/api core/v1 SetDefaults_Probe: timeoutSeconds 1,
periodSeconds 10, successThreshold 1, failureThreshold 3). The API server defaults these already; the
kubelet applies them again because static pods never pass through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any


class ProbeType(str, Enum):
    """Which probe of a container; the value is the spec field, `label` what events print."""

    LIVENESS = "livenessProbe"
    READINESS = "readinessProbe"
    STARTUP = "startupProbe"

    @property
    def label(self) -> str:
        return {"livenessProbe": "Liveness", "readinessProbe": "Readiness", "startupProbe": "Startup"}[self.value]


class Result(str, Enum):
    """What the results managers hold per container id (upstream results.Result)."""

    UNKNOWN = "Unknown"
    SUCCESS = "Success"
    FAILURE = "Failure"


class Outcome(str, Enum):
    """What one probe execution says (upstream probe.Result); WARNING counts as success with an event."""

    SUCCESS = "success"
    WARNING = "warning"
    FAILURE = "failure"
    UNKNOWN = "unknown"


# Each probe type's result before the first probe (upstream newWorker's initialValue): a container is not
# ready until its readiness probe passes, alive until its liveness probe fails, not started until known.
INITIAL_RESULT = {ProbeType.READINESS: Result.FAILURE, ProbeType.LIVENESS: Result.SUCCESS,
                  ProbeType.STARTUP: Result.UNKNOWN}


@dataclass(frozen=True)
class ExecAction:
    command: tuple[str, ...]


@dataclass(frozen=True)
class HTTPGetAction:
    port: int | str  # a number or a container port's name
    path: str = ""
    host: str = ""  # "" = the pod IP
    scheme: str = "HTTP"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TCPSocketAction:
    port: int | str
    host: str = ""


@dataclass(frozen=True)
class GRPCAction:
    port: int
    service: str = ""


Handler = ExecAction | HTTPGetAction | TCPSocketAction | GRPCAction


@dataclass(frozen=True)
class ProbeSpec:
    """One v1.Probe with defaults applied; `handler` None when the spec names no handler we know."""

    handler: Handler | None
    initial_delay_seconds: int = 0
    timeout_seconds: int = 1
    period_seconds: int = 10
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace_period_seconds: int | None = None


def _int(value: Any, default: int, minimum: int) -> int:
    """A probe field as an int, the default when unset, raised to the API's minimum when below it."""
    try:
        number = default if value is None else int(value)
    except (TypeError, ValueError):
        number = default
    return max(number, minimum)


def _handler(probe: Mapping[str, Any]) -> Handler | None:
    if isinstance(probe.get("exec"), Mapping):
        return ExecAction(tuple(str(part) for part in probe["exec"].get("command") or []))
    if isinstance(probe.get("httpGet"), Mapping):
        http = probe["httpGet"]
        headers = tuple((str(h.get("name", "")), str(h.get("value", ""))) for h in http.get("httpHeaders") or []
                        if isinstance(h, Mapping))
        return HTTPGetAction(port=http.get("port", 80), path=str(http.get("path") or ""),
                             host=str(http.get("host") or ""), scheme=str(http.get("scheme") or "HTTP"),
                             headers=headers)
    if isinstance(probe.get("tcpSocket"), Mapping):
        tcp = probe["tcpSocket"]
        return TCPSocketAction(port=tcp.get("port", 0), host=str(tcp.get("host") or ""))
    if isinstance(probe.get("grpc"), Mapping):
        grpc = probe["grpc"]
        return GRPCAction(port=_int(grpc.get("port"), 0, 0), service=str(grpc.get("service") or ""))
    return None


def parse_probe(probe: Mapping[str, Any]) -> ProbeSpec:
    """A container's probe (API dict) as a ProbeSpec, with v1's defaults and minimums."""
    grace = probe.get("terminationGracePeriodSeconds")
    return ProbeSpec(
        handler=_handler(probe),
        initial_delay_seconds=_int(probe.get("initialDelaySeconds"), 0, 0),
        timeout_seconds=_int(probe.get("timeoutSeconds"), 1, 1),
        period_seconds=_int(probe.get("periodSeconds"), 10, 1),
        success_threshold=_int(probe.get("successThreshold"), 1, 1),
        failure_threshold=_int(probe.get("failureThreshold"), 3, 1),
        termination_grace_period_seconds=None if grace is None else _int(grace, 0, 0),
    )


def container_probes(container: Mapping[str, Any]) -> dict[ProbeType, ProbeSpec]:
    """The probes a container spec declares, by type."""
    return {kind: parse_probe(container[kind.value]) for kind in ProbeType
            if isinstance(container.get(kind.value), Mapping)}
