"""The probe executors: upstream pkg/probe/http (http.go, request.go), pkg/probe/tcp, pkg/probe/exec.

Each returns a `ProbeOutput` (outcome, output text, or an error that means "could not probe"), and does
its I/O through one narrow callable so the decisions are tested with fakes:

- httpGet: the request is built as upstream NewRequestForHTTPGetAction (scheme lower-cased, http by
  default; host default the pod IP; port a number or a container port's name; the path as given; the
  probe's httpHeaders, with `User-Agent: kube-probe/<major>.<minor>` and `Accept: */*` unless the probe
  sets them, an empty Accept removed). 2xx is success; 3xx that is not followed is a Warning (success,
  with a ProbeWarning event); anything else is a failure "HTTP probe failed with statuscode: N" (the body
  never goes into the message, kubernetes/kubernetes#99425). Redirects are followed only to the same host name,
  at most 10 (upstream RedirectChecker with followNonLocalRedirects=false); one to another host stops
  there and its 3xx answer gives the Warning. At most 10 KiB of the body is read. A request that fails
  (refused, timed out) is a Failure with the error text, not an error. No proxy, no keep-alive, TLS not
  verified, as upstream. `timeoutSeconds` bounds the whole exchange, redirects included.
- tcpSocket: a TCP connect within the timeout, closed at once.
- exec: the command through the runtime's exec (Docker exec) with the timeout; exit 0 success, any other
  exit failure with the combined output (10 KiB at most); a timeout is a failure `command "..." timed out`
  (upstream with ExecProbeTimeout, on by default); a runtime error is an error.
"""

from __future__ import annotations

import socket
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

from control.util.version import KUBERNETES_MAJOR, KUBERNETES_MINOR
from nodeagent.hooks import resolve_port
from nodeagent.prober.types import HTTPGetAction, Outcome
from nodeagent.runtime.interface import ExecResult, ExecTimeout, RuntimeFailure

MAX_BODY = 10 * 1024  # upstream maxRespBodyLength
MAX_OUTPUT = 10 * 1024  # upstream exec maxReadLength
MAX_REDIRECTS = 10
USER_AGENT = f"kube-probe/{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}"
REDIRECT_CODES = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class ProbeOutput:
    outcome: Outcome
    output: str = ""
    error: str | None = None  # set with Outcome.UNKNOWN: the probe could not run


# ---- httpGet ----

@dataclass(frozen=True)
class HTTPRequest:
    url: str
    headers: tuple[tuple[str, str], ...]  # sent in order; names as given


@dataclass(frozen=True)
class HTTPReply:
    status: int
    location: str = ""
    body: bytes = b""


class Fetch(Protocol):
    """One GET without following redirects; raises OSError or requests' errors when it fails."""

    def __call__(self, url: str, headers: Mapping[str, str], timeout: float) -> HTTPReply: ...


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve_probe_port(port: Any, container: Mapping[str, Any]) -> int:
    """upstream probe.ResolveContainerPort: a number, or a named container port; 1-65535."""
    number = resolve_port(port, container)
    if not 0 < number < 65536:
        raise ValueError(f"invalid port number: {number}")
    return number


def build_http_request(action: HTTPGetAction, container: Mapping[str, Any], pod_ip: str) -> HTTPRequest:
    """upstream NewRequestForHTTPGetAction; raises ValueError for a port that cannot be resolved."""
    scheme = action.scheme.lower() or "http"
    host = action.host or pod_ip
    if not host:
        raise ValueError("the pod has no IP yet")
    port = resolve_probe_port(action.port, container)
    path = action.path
    if path and not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{_join_host_port(host, port)}{path}"
    names = {name.lower() for name, _ in action.headers}
    headers = [(name, value) for name, value in action.headers
               if not (name.lower() == "accept" and value == "")]
    if "user-agent" not in names:
        headers.append(("User-Agent", USER_AGENT))
    if "accept" not in names:
        headers.append(("Accept", "*/*"))
    return HTTPRequest(url, tuple(headers))


def http_probe(request: HTTPRequest, timeout: float, fetch: Fetch, *,
               clock: Callable[[], float] = time.monotonic) -> ProbeOutput:
    """upstream DoHTTPProbe with the kubelet's client (same-host redirects only)."""
    deadline = clock() + timeout
    headers: dict[str, str] = {}
    for name, value in request.headers:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    first_host = urlsplit(request.url).hostname
    url = request.url
    redirects = 0
    while True:
        remaining = deadline - clock()
        try:
            if remaining <= 0:
                raise TimeoutError("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
            reply = fetch(url, headers, remaining)
        except (OSError, requests.RequestException) as exc:
            return ProbeOutput(Outcome.FAILURE, f'Get "{url}": {exc}')
        if reply.status in REDIRECT_CODES and reply.location:
            target = urljoin(url, reply.location)
            if urlsplit(target).hostname == first_host:
                redirects += 1
                if redirects > MAX_REDIRECTS:
                    return ProbeOutput(Outcome.FAILURE, f'Get "{target}": stopped after {MAX_REDIRECTS} redirects')
                url = target
                continue
        break
    body = reply.body[:MAX_BODY].decode("utf-8", "replace")
    if 200 <= reply.status < 400:
        if reply.status >= 300:
            return ProbeOutput(Outcome.WARNING, f"Probe terminated redirects, Response body: {body}")
        return ProbeOutput(Outcome.SUCCESS, body)
    return ProbeOutput(Outcome.FAILURE, f"HTTP probe failed with statuscode: {reply.status}")


def requests_fetch(url: str, headers: Mapping[str, str], timeout: float) -> HTTPReply:
    """Fetch with requests: no proxy from the environment, no keep-alive, TLS unverified (as upstream)."""
    with requests.Session() as session, warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        session.trust_env = False
        sent: dict[str, str | None] = {"Accept-Encoding": None, "Connection": "close", **headers}
        if not any(name.lower() == "accept" for name in headers):
            sent["Accept"] = None  # the probe asked for no Accept header: requests must not add its own
        response = session.get(url, headers=sent, timeout=timeout, verify=False, allow_redirects=False,
                               stream=True)
        try:
            body = response.raw.read(MAX_BODY, decode_content=True) or b""
        finally:
            response.close()
        return HTTPReply(response.status_code, response.headers.get("Location", ""), body)


# ---- tcpSocket ----

Connect = Callable[[tuple[str, int], float], socket.socket]


def tcp_probe(host: str, port: int, timeout: float, connect: Connect = socket.create_connection) -> ProbeOutput:
    """upstream tcp.DoTCPProbe: success when the connection opens within the timeout."""
    try:
        connection = connect((host, port), timeout)
    except OSError as exc:
        reason = "i/o timeout" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc)).lower()
        return ProbeOutput(Outcome.FAILURE, f"dial tcp {_join_host_port(host, port)}: connect: {reason}")
    connection.close()
    return ProbeOutput(Outcome.SUCCESS)


# ---- exec ----

class Exec(Protocol):
    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult: ...


def exec_probe(runtime: Exec, container_id: str, command: list[str], timeout: float) -> ProbeOutput:
    """upstream exec.Probe over ExecSync."""
    try:
        result = runtime.exec(container_id, command, timeout=timeout)
    except ExecTimeout:
        return ProbeOutput(Outcome.FAILURE, f'command "{" ".join(command)}" timed out')
    except RuntimeFailure as exc:
        return ProbeOutput(Outcome.UNKNOWN, error=str(exc))
    output = result.output[:MAX_OUTPUT].decode("utf-8", "replace")
    return ProbeOutput(Outcome.SUCCESS if result.exit_code == 0 else Outcome.FAILURE, output)
