"""The REST client's retry rules, error mapping and watch resumption against a scripted HTTP server on
127.0.0.1 (http.server in a thread): each test queues the answers the server gives, in order, and checks
what the client sent and raised."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

from control.client import errors
from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient, WatchEvent
from control.client.retry import Failure, RetryPolicy, backoff, retry_delay, retryable

FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop:
    """Read the request, then close the connection without answering."""


@dataclass(frozen=True)
class Stream:
    """A chunked watch answer: these events, then `end` — "clean" (final chunk), "break" (connection
    closed mid-stream) or "hold" (kept open until the test ends)."""

    events: list[dict]
    end: str = "break"
    linger: float = 0.0  # seconds to stay quiet before the end


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class FakeAPI:
    def __init__(self, port: int = 0) -> None:
        self.script: queue.Queue = queue.Queue()
        self.seen: list[Seen] = []
        self.release = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                url = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                api.seen.append(Seen(self.command, url.path, dict(parse_qsl(url.query)), dict(self.headers), body))
                try:
                    action = api.script.get_nowait()
                except queue.Empty:
                    action = Reply(200, {})
                if isinstance(action, Drop):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif isinstance(action, Stream):
                    self.stream(action)
                else:
                    data = b"" if action.body is None else (
                        action.body if isinstance(action.body, bytes) else json.dumps(action.body).encode())
                    self.send_response(action.status)
                    for key, value in action.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def stream(self, action: Stream) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in action.events:
                    line = json.dumps(event).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                api.release.wait(action.linger)
                if action.end == "clean":
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if action.end == "hold":
                    api.release.wait(30)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def queue(self, *actions: object) -> None:
        for action in actions:
            self.script.put(action)

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    yield server
    server.stop()


@pytest.fixture
def client(api: FakeAPI) -> Iterator[RESTClient]:
    rest = RESTClient(ClientConfig(server=f"http://127.0.0.1:{api.port}", token="sekret"), retry=FAST,
                      user_agent="sktest/1")
    yield rest
    rest.close()


def status(code: int, reason: str, **extra: object) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": f"{reason} happened", **extra}


def call(client: RESTClient, method: str) -> dict:
    path = "/api/v1/namespaces/default/configmaps/a"
    return {
        "GET": lambda: client.get(path),
        "POST": lambda: client.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}}),
        "PUT": lambda: client.update(path, {"metadata": {"name": "a"}}),
        "PATCH": lambda: client.patch(path, {"data": {"k": "v"}}),
        "DELETE": lambda: client.delete(path),
    }[method]()


def event(kind: str, rv: int, name: str = "a") -> dict:
    return {"type": kind, "object": {"kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": str(rv)}}}


def names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["resourceVersion"]) for e in events]


# -- the pure rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "failure", "code", "expected"), [
    pytest.param("POST", Failure.NOT_CONNECTED, 0, True, id="refused-post"),
    pytest.param("POST", Failure.CONNECTION_LOST, 0, False, id="lost-post"),
    pytest.param("PATCH", Failure.CONNECTION_LOST, 0, True, id="lost-patch"),
    pytest.param("POST", Failure.STATUS, 429, True, id="429-post"),
    pytest.param("DELETE", Failure.STATUS, 503, True, id="503-delete"),
    pytest.param("GET", Failure.STATUS, 500, True, id="500-get"),
    pytest.param("PUT", Failure.STATUS, 502, False, id="502-put"),
    pytest.param("GET", Failure.STATUS, 404, False, id="404-get"),
])
def test_retryable_table(method, failure, code, expected):
    assert retryable(method, failure, code) is expected


def test_backoff_doubles_with_jitter_up_to_the_cap_and_honours_retry_after():
    policy = RetryPolicy(attempts=10, base=0.5, cap=3.0)
    assert [backoff(policy, n, rand=lambda: 1.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert [backoff(policy, n, rand=lambda: 0.0) for n in range(1, 4)] == [0.25, 0.5, 1.0]
    assert backoff(policy, 1, retry_after=2) == 2 and backoff(policy, 1, retry_after=60) == 3.0
    assert retry_delay(policy, "GET", Failure.STATUS, failures=10, status=503) is None  # attempts used up


# -- requests against the scripted server ----------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_429_and_503_are_retried_for_every_verb(api, client, method):
    api.queue(Reply(429, status(429, "TooManyRequests"), {"Retry-After": "0"}), Reply(503, status(503, "x")),
              Reply(200, {"ok": method}))
    assert call(client, method) == {"ok": method}
    assert [s.method for s in api.seen] == [method] * 3


def test_retry_after_is_honoured(api, client):
    client.retry = RetryPolicy(attempts=3, base=0.01, cap=5)
    api.queue(Reply(429, status(429, "TooManyRequests"), {"Retry-After": "1"}), Reply(200, {}))
    started = time.monotonic()
    client.get("/api/v1/namespaces")
    assert 0.9 <= time.monotonic() - started < 3


@pytest.mark.parametrize(("method", "tries"), [("GET", 2), ("POST", 1), ("PUT", 1), ("DELETE", 1)])
def test_other_5xx_are_retried_for_get_only(api, client, method, tries):
    api.queue(Reply(500, status(500, "InternalError")), Reply(200, {"ok": True}))
    if tries == 1:
        with pytest.raises(errors.ApiError) as excinfo:
            call(client, method)
        assert excinfo.value.code == 500 and excinfo.value.reason == "InternalError"
    else:
        assert call(client, method) == {"ok": True}
    assert len(api.seen) == tries


@pytest.mark.parametrize(("method", "retried"), [("GET", True), ("PUT", True), ("PATCH", True),
                                                 ("DELETE", True), ("POST", False)])
def test_a_dropped_connection_is_retried_except_for_post(api, client, method, retried):
    api.queue(Drop(), Reply(200, {"ok": True}))
    if retried:
        assert call(client, method) == {"ok": True}
        assert len(api.seen) == 2
    else:
        with pytest.raises(requests.ConnectionError):
            call(client, method)
        assert len(api.seen) == 1


def test_connection_refused_is_retried_even_for_post():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    rest = RESTClient(ClientConfig(server=f"http://127.0.0.1:{port}"), retry=RetryPolicy(attempts=6, base=0.2, cap=0.4))
    late: list[FakeAPI] = []
    starter = threading.Timer(0.3, lambda: late.append(FakeAPI(port)))
    starter.start()
    try:
        assert rest.create("/api/v1/namespaces", {"metadata": {"name": "x"}}) == {}
        assert [s.method for s in late[0].seen] == ["POST"]
    finally:
        starter.join()
        for server in late:
            server.stop()
        rest.close()


def test_retries_are_bounded_and_the_last_error_is_raised(api, client):
    api.queue(*[Reply(503, status(503, "ServiceUnavailable"))] * 10)
    with pytest.raises(errors.ApiError) as excinfo:
        client.get("/api/v1/pods")
    assert excinfo.value.code == 503 and len(api.seen) == FAST.attempts


@pytest.mark.parametrize(("code", "reason", "cls"), [
    pytest.param(404, "NotFound", errors.NotFound, id="404"),
    pytest.param(409, "AlreadyExists", errors.Conflict, id="409-exists"),
    pytest.param(409, "Conflict", errors.Conflict, id="409-stale"),
    pytest.param(410, "Expired", errors.Gone, id="410"),
    pytest.param(422, "Invalid", errors.Invalid, id="422"),
    pytest.param(400, "BadRequest", errors.ApiError, id="400"),
])
def test_error_answers_are_raised_as_their_subclass(api, client, code, reason, cls):
    body = status(code, reason, details={"causes": [{"field": "metadata.name"}]})
    api.queue(Reply(code, body))
    with pytest.raises(cls) as excinfo:
        client.create("/api/v1/namespaces/default/configmaps", {})
    error = excinfo.value
    assert type(error) is cls and error.code == code and error.reason == reason and error.status == body
    assert error.message == f"{reason} happened"


def test_429_after_every_retry_is_too_many_requests(api, client):
    api.queue(*[Reply(429, status(429, "TooManyRequests"), {"Retry-After": "0"})] * FAST.attempts)
    with pytest.raises(errors.TooManyRequests):
        client.get("/api/v1/pods")


def test_an_error_without_a_status_body_keeps_its_text(api, client):
    api.queue(Reply(403, b"forbidden by a proxy"))
    with pytest.raises(errors.ApiError) as excinfo:
        client.get("/api/v1/pods")
    assert excinfo.value.code == 403 and excinfo.value.message == "forbidden by a proxy"


def test_headers_patch_types_and_delete_options(api, client):
    client.patch("/p", [{"op": "add", "path": "/x", "value": 1}], patch_type="json")
    client.patch("/p", {"spec": {}}, patch_type="strategic")
    client.delete("/p", grace_period_seconds=0, propagation_policy="Foreground",
                  preconditions={"uid": "u1"})
    first, second, third = api.seen
    assert first.headers["Authorization"] == "Bearer sekret" and first.headers["User-Agent"] == "sktest/1"
    assert first.headers["Content-Type"] == "application/json-patch+json"
    assert second.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert json.loads(third.body) == {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                      "propagationPolicy": "Foreground", "preconditions": {"uid": "u1"}}
    with pytest.raises(ValueError):
        client.patch("/p", {}, patch_type="apply")


def test_list_pages_through_continue_at_the_first_pages_revision(api, client):
    api.queue(Reply(200, {"kind": "List", "metadata": {"resourceVersion": "7", "continue": "t1"}, "items": [1, 2]}),
              Reply(200, {"kind": "List", "metadata": {"resourceVersion": "7", "continue": "t2"}, "items": [3]}),
              Reply(200, {"kind": "List", "metadata": {"resourceVersion": "7"}, "items": [4]}))
    result = client.list("/api/v1/pods", params={"limit": "2", "labelSelector": "a=b"})
    assert result == {"kind": "List", "metadata": {"resourceVersion": "7"}, "items": [1, 2, 3, 4]}
    assert [s.query for s in api.seen] == [{"limit": "2", "labelSelector": "a=b"},
                                           {"limit": "2", "labelSelector": "a=b", "continue": "t1"},
                                           {"limit": "2", "labelSelector": "a=b", "continue": "t2"}]


def test_an_expired_continue_token_falls_back_to_one_whole_list(api, client):
    api.queue(Reply(200, {"metadata": {"resourceVersion": "7", "continue": "t1"}, "items": [1]}),
              Reply(410, status(410, "Expired")),
              Reply(200, {"metadata": {"resourceVersion": "9"}, "items": [1, 2]}))
    assert client.list("/api/v1/pods", params={"limit": "1"})["items"] == [1, 2]
    assert api.seen[-1].query == {}


# -- watch --------------------------------------------------------------------------------------------


def test_a_broken_watch_resumes_from_the_last_resource_version(api, client):
    api.queue(Stream([event("ADDED", 5), event("MODIFIED", 6)], end="break"),
              Drop(),  # the reconnect itself fails once
              Stream([event("DELETED", 7)], end="hold"))
    got = []
    for item in client.watch("/api/v1/configmaps", resource_version="4"):
        got.append(item)
        if len(got) == 3:
            break
    assert names(got) == [("ADDED", "5"), ("MODIFIED", "6"), ("DELETED", "7")]
    queries = [s.query for s in api.seen]
    assert queries[0] == {"watch": "1", "resourceVersion": "4", "allowWatchBookmarks": "true"}
    assert queries[1]["resourceVersion"] == queries[2]["resourceVersion"] == "6"


def test_bookmarks_are_yielded_and_move_the_resume_point(api, client):
    bookmark = {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": "40"}}}
    api.queue(Stream([event("ADDED", 5), bookmark], end="break"), Stream([event("ADDED", 41)], end="hold"))
    got = []
    for item in client.watch("/api/v1/configmaps", resource_version="4"):
        got.append(item)
        if len(got) == 3:
            break
    assert names(got) == [("ADDED", "5"), ("BOOKMARK", "40"), ("ADDED", "41")]
    assert api.seen[1].query["resourceVersion"] == "40"


def test_a_watch_from_now_starts_over_until_a_bookmark_says_where_it_is(api, client):
    api.queue(Stream([event("ADDED", 9, "b"), event("ADDED", 3, "a")], end="break"),
              Stream([event("ADDED", 9, "b")], end="hold"))
    got = []
    for item in client.watch("/api/v1/configmaps", allow_bookmarks=False):
        got.append(item)
        if len(got) == 3:
            break
    assert "resourceVersion" not in api.seen[1].query and "allowWatchBookmarks" not in api.seen[1].query


@pytest.mark.parametrize("answer", [
    pytest.param(Reply(410, status(410, "Expired")), id="status"),
    pytest.param(Stream([{"type": "ERROR", "object": status(410, "Expired")}], end="hold"), id="in-stream"),
])
def test_a_watch_that_is_too_old_raises_gone(api, client, answer):
    api.queue(answer)
    with pytest.raises(errors.Gone):
        list(client.watch("/api/v1/configmaps", resource_version="1"))


def test_other_in_stream_errors_are_raised(api, client):
    api.queue(Stream([event("ADDED", 5), {"type": "ERROR", "object": status(500, "InternalError")}], end="hold"))
    got = []
    with pytest.raises(errors.ApiError) as excinfo:
        for item in client.watch("/api/v1/configmaps", resource_version="4"):
            got.append(item)
    assert excinfo.value.code == 500 and names(got) == [("ADDED", "5")]


def test_a_watch_retries_503_before_streaming(api, client):
    api.queue(Reply(503, status(503, "ServiceUnavailable"), {"Retry-After": "0"}), Stream([event("ADDED", 5)], "hold"))
    assert names([next(iter(client.watch("/api/v1/configmaps", resource_version="4")))]) == [("ADDED", "5")]


def test_timeout_seconds_is_sent_and_ends_the_stream(api, client):
    api.queue(Stream([event("ADDED", 5)], end="clean", linger=1.2))  # the server's end of timeoutSeconds
    started = time.monotonic()
    got = list(client.watch("/api/v1/configmaps", resource_version="4", timeout_seconds=1))
    assert names(got) == [("ADDED", "5")] and time.monotonic() - started < 3
    assert api.seen[0].query["timeoutSeconds"] == "1"


def test_stop_wakes_a_watch_blocked_on_a_quiet_stream(api, client):
    api.queue(Stream([event("ADDED", 5)], end="hold"))
    stop = threading.Event()
    got: list[WatchEvent] = []
    worker = threading.Thread(target=lambda: got.extend(client.watch("/api/v1/configmaps", resource_version="4",
                                                                     stop=stop)))
    worker.start()
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    started = time.monotonic()
    worker.join(5)
    assert not worker.is_alive() and time.monotonic() - started < 1.0
    assert names(got) == [("ADDED", "5")] and len(api.seen) == 1
