"""The probe executors (pkg/probe/http, tcp, exec) with fakes, the HTTP one also against a real server on
127.0.0.1, and the prober's events and verdicts (prober.go)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from nodeagent.prober.prober import GRPC_UNSUPPORTED, Prober
from nodeagent.prober.probes import (
    USER_AGENT,
    HTTPReply,
    HTTPRequest,
    ProbeOutput,
    build_http_request,
    exec_probe,
    http_probe,
    requests_fetch,
    tcp_probe,
)
from nodeagent.prober.types import HTTPGetAction, Outcome, ProbeType, Result, parse_probe
from nodeagent.runtime.interface import ContainerNotFound, ExecResult, ExecTimeout

CONTAINER = {"name": "app", "ports": [{"name": "http", "containerPort": 8080}],
             "env": [{"name": "FILE", "value": "/tmp/ok"}, {"name": "SECRET", "valueFrom": {}}]}


# ---- httpGet: the request ----

def test_http_request_defaults_host_scheme_and_headers() -> None:
    request = build_http_request(HTTPGetAction(port="http", path="healthz"), CONTAINER, "10.244.1.5")
    assert request == HTTPRequest("http://10.244.1.5:8080/healthz",
                                  (("User-Agent", USER_AGENT), ("Accept", "*/*")))
    assert USER_AGENT == "kube-probe/1.30"


def test_http_request_keeps_the_probes_headers_and_drops_an_empty_accept() -> None:
    action = HTTPGetAction(port=443, host="fd00::1", scheme="HTTPS",
                           headers=(("user-agent", "mine"), ("Accept", ""), ("X-A", "1")))
    request = build_http_request(action, CONTAINER, "10.244.1.5")
    assert request == HTTPRequest("https://[fd00::1]:443", (("user-agent", "mine"), ("X-A", "1")))


@pytest.mark.parametrize(("port", "message"), [("nope", "couldn't find port: nope in app"),
                                               (0, "invalid port number: 0"), (70000, "invalid port number")])
def test_http_request_refuses_ports_it_cannot_resolve(port: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_http_request(HTTPGetAction(port=port), CONTAINER, "10.0.0.1")


# ---- httpGet: the exchange ----

class FakeFetch:
    def __init__(self, replies: Mapping[str, HTTPReply | Exception]) -> None:
        self.replies = replies
        self.calls: list[tuple[str, dict[str, str], float]] = []

    def __call__(self, url: str, headers: Mapping[str, str], timeout: float) -> HTTPReply:
        self.calls.append((url, dict(headers), timeout))
        reply = self.replies[url]
        if isinstance(reply, Exception):
            raise reply
        return reply


REQ = HTTPRequest("http://10.0.0.1:80/h", (("User-Agent", USER_AGENT),))


@pytest.mark.parametrize(("reply", "expected"), [
    pytest.param(HTTPReply(200, body=b"fine"), ProbeOutput(Outcome.SUCCESS, "fine"), id="200"),
    pytest.param(HTTPReply(399, body=b"odd"), ProbeOutput(Outcome.WARNING,
                                                          "Probe terminated redirects, Response body: odd"), id="399"),
    pytest.param(HTTPReply(404, body=b"secret"),
                 ProbeOutput(Outcome.FAILURE, "HTTP probe failed with statuscode: 404"), id="404-no-body"),
    pytest.param(HTTPReply(500), ProbeOutput(Outcome.FAILURE, "HTTP probe failed with statuscode: 500"), id="500"),
    pytest.param(ConnectionRefusedError(111, "Connection refused"),
                 ProbeOutput(Outcome.FAILURE, 'Get "http://10.0.0.1:80/h": [Errno 111] Connection refused'),
                 id="refused-is-a-failure"),
])
def test_http_probe_outcomes(reply: HTTPReply | Exception, expected: ProbeOutput) -> None:
    assert http_probe(REQ, 1, FakeFetch({REQ.url: reply})) == expected


def test_http_redirects_followed_on_the_same_host_only() -> None:
    fetch = FakeFetch({REQ.url: HTTPReply(302, location="/next"),
                       "http://10.0.0.1:80/next": HTTPReply(301, location="http://10.0.0.1:81/last"),
                       "http://10.0.0.1:81/last": HTTPReply(200, body=b"here")})
    assert http_probe(REQ, 1, fetch) == ProbeOutput(Outcome.SUCCESS, "here")
    assert [c[1] for c in fetch.calls] == [{"User-Agent": USER_AGENT}] * 3
    away = FakeFetch({REQ.url: HTTPReply(302, location="http://elsewhere.example/", body=b"moved")})
    assert http_probe(REQ, 1, away) == ProbeOutput(Outcome.WARNING, "Probe terminated redirects, Response body: moved")
    assert len(away.calls) == 1


def test_http_redirect_loop_stops_after_ten() -> None:
    fetch = FakeFetch({REQ.url: HTTPReply(307, location=REQ.url)})
    output = http_probe(REQ, 1, fetch)
    assert output.outcome is Outcome.FAILURE and output.output.endswith("stopped after 10 redirects")
    assert len(fetch.calls) == 11


def test_http_timeout_bounds_the_whole_exchange() -> None:
    ticks = iter([0.0, 0.2, 1.5])
    fetch = FakeFetch({REQ.url: HTTPReply(302, location="/again"), "http://10.0.0.1:80/again": HTTPReply(200)})
    output = http_probe(REQ, 1, fetch, clock=lambda: next(ticks))
    assert output.outcome is Outcome.FAILURE and "Client.Timeout exceeded" in output.output
    assert fetch.calls[0][2] == pytest.approx(0.8)


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # http.server's name
        type(self).seen.append(dict(self.headers))
        port = self.server.server_address[1]
        if self.path == "/ok":
            self._reply(200, b"healthy")
        elif self.path == "/same":
            self.send_response(302)
            self.send_header("Location", "/ok")
            self.end_headers()
        elif self.path == "/away":
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/ok")  # another host name, same server
            self.end_headers()
        else:
            self._reply(404, b"not here")

    def _reply(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.seen = []
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_http_probe_against_a_real_server(server: int) -> None:
    def probe(path: str) -> ProbeOutput:
        request = build_http_request(HTTPGetAction(port=server, path=path, headers=(("X-Probe", "yes"),)),
                                     CONTAINER, "127.0.0.1")
        return http_probe(request, 2, requests_fetch)

    assert probe("/ok") == ProbeOutput(Outcome.SUCCESS, "healthy")
    assert _Handler.seen[0]["User-Agent"] == USER_AGENT and _Handler.seen[0]["Accept"] == "*/*"
    assert _Handler.seen[0]["X-Probe"] == "yes" and _Handler.seen[0]["Connection"] == "close"
    assert probe("/gone") == ProbeOutput(Outcome.FAILURE, "HTTP probe failed with statuscode: 404")
    assert probe("/same") == ProbeOutput(Outcome.SUCCESS, "healthy")
    assert probe("/away").outcome is Outcome.WARNING
    assert len(_Handler.seen) == 5  # /ok, /gone, /same → /ok, /away (not followed)


# ---- tcpSocket and exec ----

def test_tcp_probe_real_connect(server: int) -> None:
    assert tcp_probe("127.0.0.1", server, 1) == ProbeOutput(Outcome.SUCCESS)


def test_tcp_probe_failures_say_why() -> None:
    def refuse(address: tuple[str, int], timeout: float) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")

    def slow(address: tuple[str, int], timeout: float) -> Any:
        raise TimeoutError("timed out")

    assert tcp_probe("10.0.0.1", 81, 1, refuse) == ProbeOutput(
        Outcome.FAILURE, "dial tcp 10.0.0.1:81: connect: connection refused")
    assert tcp_probe("10.0.0.1", 81, 1, slow).output == "dial tcp 10.0.0.1:81: connect: i/o timeout"


class FakeExec:
    def __init__(self, *answers: ExecResult | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, list[str], float]] = []

    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult:
        self.calls.append((container_id, argv, timeout))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.mark.parametrize(("answer", "expected"), [
    pytest.param(ExecResult(0, b"fine\n"), ProbeOutput(Outcome.SUCCESS, "fine\n"), id="exit-0"),
    pytest.param(ExecResult(1, b"cat: can't open"), ProbeOutput(Outcome.FAILURE, "cat: can't open"), id="exit-1"),
    pytest.param(ExecTimeout("slow"), ProbeOutput(Outcome.FAILURE, 'command "cat /tmp/x" timed out'), id="timeout"),
    pytest.param(ContainerNotFound("gone"), ProbeOutput(Outcome.UNKNOWN, error="gone"), id="runtime-error"),
])
def test_exec_probe(answer: ExecResult | Exception, expected: ProbeOutput) -> None:
    runtime = FakeExec(answer)
    assert exec_probe(runtime, "cid", ["cat", "/tmp/x"], 3) == expected
    assert runtime.calls == [("cid", ["cat", "/tmp/x"], 3)]


# ---- the prober: verdicts and events ----

class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str, str | None]] = []

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, *,
              field_path: str | None = None) -> None:
        self.items.append((type, reason, message, field_path))


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}
STATUS = {"podIP": "10.244.0.9"}


def prober(runtime: FakeExec | None = None, fetch: FakeFetch | None = None) -> tuple[Prober, Events]:
    events = Events()
    return Prober(runtime or FakeExec(ExecResult(0, b"")), recorder=events,
                  fetch=fetch or FakeFetch({})), events


def test_exec_failure_is_a_failure_with_upstreams_event_and_static_env_expanded() -> None:
    runtime = FakeExec(ExecResult(1, b"no such file"))
    p, events = prober(runtime)
    spec = parse_probe({"exec": {"command": ["cat", "$(FILE)", "$(SECRET)"]}, "timeoutSeconds": 4})
    assert p.probe(ProbeType.LIVENESS, spec, POD, STATUS, CONTAINER, "cid") is Result.FAILURE
    assert runtime.calls == [("cid", ["cat", "/tmp/ok", ""], 4.0)]
    assert events.items == [("Warning", "Unhealthy", "Liveness probe failed: no such file", "spec.containers{app}")]


def test_http_probe_uses_the_pod_ip_and_a_redirect_elsewhere_is_a_warning() -> None:
    url = "http://10.244.0.9:8080/h"
    p, events = prober(fetch=FakeFetch({url: HTTPReply(301, location="http://other/", body=b"b")}))
    spec = parse_probe({"httpGet": {"port": "http", "path": "/h"}})
    assert p.probe(ProbeType.READINESS, spec, POD, STATUS, CONTAINER, "cid") is Result.SUCCESS
    assert events.items == [("Warning", "ProbeWarning", "Readiness probe warning: Probe terminated redirects, "
                                                        "Response body: b", "spec.containers{app}")]


def test_an_error_is_retried_then_thrown_away() -> None:
    runtime = FakeExec(ContainerNotFound("no such container"))
    p, events = prober(runtime)
    spec = parse_probe({"exec": {"command": ["true"]}})
    assert p.probe(ProbeType.STARTUP, spec, POD, STATUS, CONTAINER, "cid") is None
    assert len(runtime.calls) == 3
    assert events.items == [("Warning", "Unhealthy", "Startup probe errored: no such container",
                             "spec.containers{app}")]
    flaky = FakeExec(ContainerNotFound("blip"), ExecResult(0, b""))
    assert prober(flaky)[0].probe(ProbeType.STARTUP, spec, POD, STATUS, CONTAINER, "cid") is Result.SUCCESS


def test_unresolvable_port_and_missing_handler_are_errors() -> None:
    p, events = prober()
    assert p.probe(ProbeType.READINESS, parse_probe({"tcpSocket": {"port": "nope"}}), POD, STATUS, CONTAINER,
                   "cid") is None
    assert p.probe(ProbeType.READINESS, parse_probe({}), POD, STATUS, CONTAINER, "cid") is None
    assert [e[2] for e in events.items] == ["Readiness probe errored: couldn't find port: nope in app",
                                            "Readiness probe errored: missing probe handler for container app"]


def test_grpc_is_unsupported_told_once_per_container_and_probe() -> None:
    p, events = prober()
    spec = parse_probe({"grpc": {"port": 9000}})
    for _ in range(3):
        assert p.probe(ProbeType.LIVENESS, spec, POD, STATUS, CONTAINER, "cid") is None
    assert p.probe(ProbeType.READINESS, spec, POD, STATUS, CONTAINER, "cid") is None
    assert events.items == [("Warning", "Unhealthy", f"Liveness probe errored: {GRPC_UNSUPPORTED}",
                             "spec.containers{app}"),
                            ("Warning", "Unhealthy", f"Readiness probe errored: {GRPC_UNSUPPORTED}",
                             "spec.containers{app}")]
    p.forget("u1")
    p.probe(ProbeType.LIVENESS, spec, POD, STATUS, CONTAINER, "cid")
    assert len(events.items) == 3
