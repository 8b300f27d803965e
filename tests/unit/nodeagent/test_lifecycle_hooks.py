"""HookRunner: exec exit codes, httpGet URL building (pod IP default, named ports, scheme), request failures,
and handlers that are not valid for hooks."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from nodeagent.hooks import HookRunner, http_url
from nodeagent.runtime.interface import ExecResult, ExecTimeout

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
CONTAINER = {"name": "c", "ports": [{"name": "web", "containerPort": 8080}]}


class FakeExec:
    def __init__(self, result: ExecResult | Exception) -> None:
        self.result = result
        self.calls: list[tuple[str, list[str], float]] = []

    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult:
        self.calls.append((container_id, argv, timeout))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def run(runner: HookRunner, handler: dict[str, Any]) -> str | None:
    return runner.run("PreStop", handler, pod=POD, container=CONTAINER, container_id="cid", pod_ip="10.244.0.5",
                      timeout=3)


def test_exec_success_and_failure() -> None:
    fake = FakeExec(ExecResult(0, b""))
    assert run(HookRunner(fake), {"exec": {"command": ["sh", "-c", "true"]}}) is None
    assert fake.calls == [("cid", ["sh", "-c", "true"], 3)]
    failed = run(HookRunner(FakeExec(ExecResult(2, b"oops"))), {"exec": {"command": ["false"]}})
    assert failed is not None and failed.startswith("Exec lifecycle hook (['false']) for Container 'c'")
    assert "exited with 2" in failed and "oops" in failed
    timed_out = run(HookRunner(FakeExec(ExecTimeout("timed out after 3s"))), {"exec": {"command": ["x"]}})
    assert timed_out is not None and "error: timed out after 3s" in timed_out


@pytest.mark.parametrize("handler, url", [
    pytest.param({"port": 8080, "path": "/stop"}, "http://10.244.0.5:8080/stop", id="number"),
    pytest.param({"port": "web"}, "http://10.244.0.5:8080/", id="named-port"),
    pytest.param({"port": "81", "host": "127.0.0.1", "path": "x", "scheme": "HTTPS"}, "https://127.0.0.1:81/x",
                 id="host-scheme"),
])
def test_http_url(handler: dict[str, Any], url: str) -> None:
    assert http_url(handler, CONTAINER, "10.244.0.5") == url


def test_http_get_sends_headers_and_reports_connection_errors() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Response:
        def close(self) -> None:
            pass

    def get(url: str, **kwargs: Any) -> Response:
        seen.append((url, kwargs))
        return Response()

    handler = {"httpGet": {"port": "web", "path": "/bye", "httpHeaders": [{"name": "X-A", "value": "1"}]}}
    assert run(HookRunner(FakeExec(ExecResult(0, b"")), http_get=get), handler) is None
    assert seen[0][0] == "http://10.244.0.5:8080/bye" and seen[0][1]["headers"] == {"X-A": "1"}

    def refuse(url: str, **kwargs: Any) -> Response:
        raise requests.ConnectionError("connection refused")

    failed = run(HookRunner(FakeExec(ExecResult(0, b"")), http_get=refuse), handler)
    assert failed is not None and failed.startswith("HTTP lifecycle hook (/bye)") and "refused" in failed
    unknown_port = run(HookRunner(FakeExec(ExecResult(0, b"")), http_get=get), {"httpGet": {"port": "nope"}})
    assert unknown_port is not None and "couldn't find port: nope" in unknown_port


def test_tcp_socket_is_not_a_hook_handler() -> None:
    failed = run(HookRunner(FakeExec(ExecResult(0, b""))), {"tcpSocket": {"port": 80}})
    assert failed is not None and "no valid handler (tcpSocket)" in failed


def test_sleep_handler_is_bounded_by_the_timeout() -> None:
    slept: list[float] = []
    runner = HookRunner(FakeExec(ExecResult(0, b"")), sleep=slept.append)
    assert run(runner, {"sleep": {"seconds": 10}}) is None and slept == [3]
