"""Container lifecycle hooks (postStart, preStop): upstream pkg/kubelet/lifecycle/handlers.go.

As upstream's HandlerRunner:
- `exec` runs the command in the container (Docker exec) and fails on a non-zero exit code, the output
  going into the message ("Exec lifecycle hook ([cmd]) for Container "c" in Pod "p" failed - error: ...,
  message: ...");
- `httpGet` sends a GET to host (default: the pod IP), port (a number or a named container port), path
  and headers, with the scheme given (HTTP default). Only a failed request is a failure: upstream reads
  and discards the body without looking at the status code;
- `tcpSocket` is not a valid hook handler (upstream's API validation refuses it; newer kubelets ignore it
  with a warning): we report it as a failed hook rather than silently pass;
- `sleep` (a newer upstream handler) waits the given seconds.
Every handler is bounded by `timeout` (the caller passes the grace period for preStop; upstream bounds
postStart by nothing but the runtime's timeout, we use a fixed default).

The runner only talks to the runtime (exec) and to an injected `http_get`, so the sync tests use fakes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import requests

from nodeagent.runtime.interface import ExecResult, RuntimeFailure

DEFAULT_POST_START_TIMEOUT = 30.0


class Exec(Protocol):
    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult: ...


HttpGet = Callable[..., Any]  # requests.get's shape: (url, *, headers, timeout, verify)


def _pod_desc(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"


def resolve_port(port: Any, container: Mapping[str, Any]) -> int:
    """A number, or the name of one of the container's ports (upstream resolvePort)."""
    if isinstance(port, int):
        return port
    text = str(port)
    if text.isdigit():
        return int(text)
    for item in container.get("ports") or []:
        if item.get("name") == text:
            return int(item["containerPort"])
    raise ValueError(f"couldn't find port: {text} in {container.get('name', '')}")


def http_url(handler: Mapping[str, Any], container: Mapping[str, Any], pod_ip: str) -> str:
    host = handler.get("host") or pod_ip
    if not host:
        raise ValueError("no host for the httpGet hook (the pod has no IP)")
    port = resolve_port(handler.get("port", 80), container)
    path = handler.get("path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    scheme = str(handler.get("scheme") or "HTTP").lower()
    return f"{scheme}://{host}:{port}{path}"


def direct_get(url: str, **kwargs: Any) -> requests.Response:
    """GET without the environment's proxy settings: a pod IP is reached from this host, never via a proxy."""
    with requests.Session() as session:
        session.trust_env = False
        return session.get(url, **kwargs)


class HookRunner:
    def __init__(self, runtime: Exec, *, http_get: HttpGet = direct_get,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._runtime = runtime
        self._http_get = http_get
        self._sleep = sleep

    def run(self, hook: str, handler: Mapping[str, Any], *, pod: Mapping[str, Any], container: Mapping[str, Any],
            container_id: str, pod_ip: str, timeout: float) -> str | None:
        """Run one handler; None on success, else upstream's failure message (for the event and status)."""
        name = container.get("name", "")
        if "exec" in handler:
            command = [str(part) for part in (handler["exec"] or {}).get("command") or []]
            try:
                result = self._runtime.exec(container_id, command, timeout=timeout)
            except RuntimeFailure as exc:
                return (f"Exec lifecycle hook ({command}) for Container {name!r} in Pod {_pod_desc(pod)!r} "
                        f"failed - error: {exc}, message: \"\"")
            if result.exit_code != 0:
                output = result.output.decode("utf-8", "replace")
                return (f"Exec lifecycle hook ({command}) for Container {name!r} in Pod {_pod_desc(pod)!r} "
                        f"failed - error: command '{' '.join(command)}' exited with {result.exit_code}: "
                        f"{output}, message: {output!r}")
            return None
        if "httpGet" in handler:
            spec = handler["httpGet"] or {}
            try:
                url = http_url(spec, container, pod_ip)
                headers = {h.get("name", ""): h.get("value", "") for h in spec.get("httpHeaders") or []}
                response = self._http_get(url, headers=headers, timeout=timeout, verify=False)
                response.close()
            except (ValueError, requests.RequestException) as exc:
                return f"HTTP lifecycle hook ({spec.get('path', '')}) for Container {name!r} in Pod " \
                       f"{_pod_desc(pod)!r} failed - error: {exc}"
            return None
        if "sleep" in handler:
            self._sleep(min(float((handler["sleep"] or {}).get("seconds", 0)), timeout))
            return None
        kinds = ", ".join(sorted(handler)) or "none"
        return f"{hook} hook for Container {name!r} in Pod {_pod_desc(pod)!r} has no valid handler ({kinds})"
