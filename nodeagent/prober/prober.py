"""Run one probe of one container and say what it means: upstream pkg/kubelet/prober/prober.go.

`Prober.probe` picks the executor for the probe's handler, retries up to 3 times when the probe could not
run at all (upstream runProbeWithRetries), records the container's event and returns:
- Result.SUCCESS for success and warning (a redirect not followed: event ProbeWarning
  "<Type> probe warning: ...");
- Result.FAILURE for a failure (event Unhealthy "<Type> probe failed: <output>");
- None when the probe could not run (event Unhealthy "<Type> probe errored: <error>"): the worker throws
  the result away, so the container keeps its last (or initial) result.

gRPC probes: slimkube has no gRPC client (no grpcio dependency), so a grpc probe is what upstream's prober
does with a handler it cannot run — an error, the result thrown away. The container keeps its initial
result: a grpc liveness probe never kills, a grpc readiness probe never makes it ready, a grpc startup
probe never lets it start. Unlike other errors, which repeat their event every period, this one is told
once per container and probe (Warning Unhealthy "... probe errored: gRPC probes are not supported ...").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from control.api.typed.core import Pod
from nodeagent.prober.probes import (
    Exec,
    Fetch,
    ProbeOutput,
    build_http_request,
    exec_probe,
    http_probe,
    requests_fetch,
    resolve_probe_port,
    tcp_probe,
)
from nodeagent.prober.types import (
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Outcome,
    ProbeSpec,
    ProbeType,
    Result,
    TCPSocketAction,
)
from nodeagent.runtime.expansion import expand, mapping_for

log = logging.getLogger(__name__)

MAX_PROBE_RETRIES = 3  # upstream maxProbeRetries
GRPC_UNSUPPORTED = ("gRPC probes are not supported by this kubelet (slimkube has no gRPC client); "
                    "the probe's result stays at its initial value")


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, *,
              field_path: str | None = None) -> None: ...


class TCPProbe(Protocol):
    def __call__(self, host: str, port: int, timeout: float) -> ProbeOutput: ...


class Prober:
    def __init__(self, runtime: Exec, *, recorder: Recorder | None = None, fetch: Fetch = requests_fetch,
                 tcp: TCPProbe = tcp_probe) -> None:
        self.runtime = runtime
        self.recorder = recorder
        self.fetch = fetch
        self.tcp = tcp
        self._lock = threading.Lock()
        self._told_unsupported: set[tuple[str, str, ProbeType]] = set()

    def forget(self, pod_uid: str) -> None:
        """The pod is gone: its once-only warnings may be told again for a new pod."""
        with self._lock:
            self._told_unsupported = {key for key in self._told_unsupported if key[0] != pod_uid}

    def probe(self, kind: ProbeType, spec: ProbeSpec, pod: Mapping[str, Any], status: Mapping[str, Any],
              container: Mapping[str, Any], container_id: str) -> Result | None:
        """One probe (with retries on errors) → its Result, or None when it could not run."""
        name = container.get("name", "")
        if isinstance(spec.handler, GRPCAction):
            key = (Pod(pod).metadata.uid, name, kind)
            with self._lock:
                told = key in self._told_unsupported
                self._told_unsupported.add(key)
            if not told:
                self._event(pod, name, "Warning", "Unhealthy", f"{kind.label} probe errored: {GRPC_UNSUPPORTED}")
            return None
        output = ProbeOutput(Outcome.UNKNOWN, error="no probe ran")
        for _ in range(MAX_PROBE_RETRIES):
            output = self._run(spec, status, container, container_id)
            if output.error is None:
                break
        if output.error is not None:
            log.debug("%s probe of %s errored: %s", kind.label, name, output.error)
            self._event(pod, name, "Warning", "Unhealthy", f"{kind.label} probe errored: {output.error}")
            return None
        if output.outcome is Outcome.FAILURE:
            self._event(pod, name, "Warning", "Unhealthy", f"{kind.label} probe failed: {output.output}")
            return Result.FAILURE
        if output.outcome is Outcome.WARNING:
            self._event(pod, name, "Warning", "ProbeWarning", f"{kind.label} probe warning: {output.output}")
        return Result.SUCCESS

    def _run(self, spec: ProbeSpec, status: Mapping[str, Any], container: Mapping[str, Any],
             container_id: str) -> ProbeOutput:
        """upstream runProbe."""
        timeout = float(spec.timeout_seconds)
        handler = spec.handler
        pod_ip = str(status.get("podIP") or "")
        try:
            if isinstance(handler, ExecAction):
                static_env = {str(e.get("name", "")): str(e.get("value") or "")
                              for e in container.get("env") or [] if isinstance(e, Mapping)}
                lookup = mapping_for(static_env)
                command = [expand(part, lookup) for part in handler.command]
                return exec_probe(self.runtime, container_id, command, timeout)
            if isinstance(handler, HTTPGetAction):
                return http_probe(build_http_request(handler, container, pod_ip), timeout, self.fetch)
            if isinstance(handler, TCPSocketAction):
                port = resolve_probe_port(handler.port, container)
                host = handler.host or pod_ip
                if not host:
                    raise ValueError("the pod has no IP yet")
                return self.tcp(host, port, timeout)
        except ValueError as exc:
            return ProbeOutput(Outcome.UNKNOWN, error=str(exc))
        return ProbeOutput(Outcome.UNKNOWN, error=f"missing probe handler for container {container.get('name', '')}")

    def _event(self, pod: Mapping[str, Any], container: str, type: str, reason: str, message: str) -> None:
        if self.recorder is None:
            return
        meta = pod.get("metadata") or {}
        ref = {"kind": "Pod", "apiVersion": "v1", "name": meta.get("name", ""),
               "namespace": meta.get("namespace", ""), "uid": meta.get("uid", "")}
        try:
            self.recorder.event(ref, type, reason, message, field_path=f"spec.containers{{{container}}}")
        except Exception:  # an event is never worth a probe
            log.exception("recording event %s failed", reason)
