"""The kubelet's exec/attach and port-forward WebSocket endpoints (nodeagent/streaming/remotecommand.py,
portforward.py) against fake runtimes: a "process" is the far end of a socketpair run by a thread, speaking
Docker's multiplexed framing unless it has a TTY; the pod's port is another socketpair."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import WSCloseCode, web
from aiohttp.test_utils import TestClient, TestServer

from control.util.openstreams import OpenStreams
from nodeagent.runtime.interface import ContainerStream, RuntimeOperationError
from nodeagent.streaming import channels as ch
from nodeagent.streaming import portforward, remotecommand


class FakeProcess:
    """`cat` that also writes "err" on stderr and exits 3; with a TTY it echoes raw bytes."""

    def __init__(self, *, tty: bool, exit_code: int = 3) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.tty = tty
        self.code = exit_code
        self.resized: list[tuple[int, int]] = []
        self.closed = threading.Event()
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            while data := self.theirs.recv(4096):
                self.theirs.sendall(data if self.tty else ch.docker_frame(1, data))
            if not self.tty:
                self.theirs.sendall(ch.docker_frame(2, b"err\n"))
        except OSError:
            pass
        finally:
            self.done.set()
            self.theirs.close()

    def stream(self) -> ContainerStream:
        return ContainerStream(socket=self.ours, multiplexed=not self.tty,
                               resize=lambda w, h: self.resized.append((w, h)),
                               exit_code=lambda: self.code if self.done.wait(5) else None,
                               close=self.closed.set)


class FakeRuntime:
    def __init__(self, process: FakeProcess | None = None) -> None:
        self.process = process
        self.calls: list[tuple[str, Any]] = []

    def exec_stream(self, container_id: str, argv: list[str], *, stdin: bool, tty: bool) -> ContainerStream:
        self.calls.append(("exec", (container_id, argv, stdin, tty)))
        if self.process is None:
            raise RuntimeOperationError("container is not running")
        return self.process.stream()

    def attach_stream(self, container_id: str, *, stdin: bool) -> ContainerStream:
        self.calls.append(("attach", (container_id, stdin)))
        assert self.process is not None
        return self.process.stream()


def run(app: web.Application, body: Callable[[TestClient], Awaitable[None]]) -> None:
    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            await body(client)
    asyncio.run(main())


def exec_app(runtime: FakeRuntime) -> web.Application:
    app = web.Application()
    find = {("ns", "pod", "c"): "cid"}

    async def handler(request: web.Request) -> web.StreamResponse:
        kind = request.match_info["kind"]
        return await remotecommand.serve(request, runtime=runtime, exec_=kind == "exec",
                                         find_container=lambda n, p, c: find.get((n, p, c)))
    app.router.add_get("/{kind}/{namespace}/{pod}/{container}", handler)
    return app


async def collect(ws: aiohttp.ClientWebSocketResponse) -> list[tuple[int, bytes]]:
    return [(m.data[0], m.data[1:]) async for m in ws if m.type is aiohttp.WSMsgType.BINARY]


@pytest.mark.parametrize(("query", "options"), [
    pytest.param({"stdout": "1"}, remotecommand.Options(("ls",), False, True, False, False), id="kubelet-style"),
    pytest.param({"stdin": "true", "stdout": "true", "stderr": "true", "tty": "true"},
                 remotecommand.Options(("ls",), True, True, False, True), id="tty-drops-stderr"),
])
def test_parse_options(query: dict[str, str], options: remotecommand.Options) -> None:
    assert remotecommand.parse_options(query, ["ls"], exec_=True) == options


@pytest.mark.parametrize(("query", "command", "message"), [
    pytest.param({}, ["ls"], "you must specify at least 1 of stdin, stdout, stderr", id="no-stream"),
    pytest.param({"stdout": "1"}, [], "you must specify at least one command for the container", id="no-command"),
])
def test_parse_options_refuses(query: dict[str, str], command: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        remotecommand.parse_options(query, command, exec_=True)


def test_v5_exec_stdin_close_output_and_exit_code() -> None:
    process = FakeProcess(tty=False)
    runtime = FakeRuntime(process)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=cat&command=-&stdin=1&stdout=1&stderr=1",
                                     protocols=(ch.V5, ch.V4))
        assert ws.protocol == ch.V5
        await ws.send_bytes(ch.encode(ch.STDIN, b"hi\n"))
        await ws.send_bytes(bytes((ch.CLOSE, ch.STDIN)))
        messages = await collect(ws)
        # first upstream's empty "connected" message on the lowest channel the client reads
        assert messages[:-1] == [(ch.STDOUT, b""), (ch.STDOUT, b"hi\n"), (ch.STDERR, b"err\n")]
        channel, status = messages[-1]
        assert channel == ch.ERROR
        assert json.loads(status)["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]

    run(exec_app(runtime), body)
    assert runtime.calls == [("exec", ("cid", ["cat", "-"], True, False))]
    assert process.closed.is_set()


def received(protocol: ch.Protocol, message: aiohttp.WSMessage) -> tuple[int, bytes]:
    """(channel, data) of a server message, as a client of `protocol` reads it."""
    if protocol.base64:
        assert message.type is aiohttp.WSMsgType.TEXT
        return ord(message.data[0]) - ord("0"), base64.b64decode(message.data[1:])
    assert message.type is aiohttp.WSMsgType.BINARY
    return message.data[0], message.data[1:]


@pytest.mark.parametrize("name", [ch.V5, ch.V4, ch.V4_BASE64, ch.BASE64, ch.V1, ""])
def test_every_protocol_text_and_binary_stdin_output_and_end(name: str) -> None:
    """Stdin in a text message (what the official Python client sends for `str`) and in a binary one reaches
    the process; output comes back framed as the protocol says; the command's end is a Status from v4 on,
    a failure's message before."""
    protocol = ch.PROTOCOLS[name]
    process = FakeProcess(tty=False)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=cat&stdin=1&stdout=1&stderr=1",
                                     protocols=(name,) if name else ())
        assert (ws.protocol or "") == name
        assert received(protocol, await ws.receive()) == (ch.STDOUT, b"")
        as_text = protocol.encode(ch.STDIN, b"text\n")
        await ws.send_str(as_text if isinstance(as_text, str) else as_text.decode())
        assert received(protocol, await ws.receive()) == (ch.STDOUT, b"text\n")
        as_binary = protocol.encode(ch.STDIN, b"\x00\xffbin\n")
        await ws.send_bytes(as_binary.encode() if isinstance(as_binary, str) else as_binary)
        assert received(protocol, await ws.receive()) == (ch.STDOUT, b"\x00\xffbin\n")
        if protocol.stream_close:
            await ws.send_bytes(bytes((ch.CLOSE, ch.STDIN)))
        else:
            process.ours.shutdown(socket.SHUT_WR)  # the process's stdin ends on its own
        rest = []
        while (message := await ws.receive()).type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
            rest.append(received(protocol, message))
        assert rest[0] == (ch.STDERR, b"err\n") and [c for c, _ in rest[1:]] == [ch.ERROR]
        end = rest[1][1]
        if protocol.status:
            assert json.loads(end)["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
        else:
            assert end == b"command terminated with non-zero exit code: error executing command [cat], exit code 3"
        assert ws.closed or (await ws.receive()).type is aiohttp.WSMsgType.CLOSED

    run(exec_app(FakeRuntime(process)), body)


def test_older_protocols_say_nothing_on_success() -> None:
    process = FakeProcess(tty=True, exit_code=0)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=sh&stdin=1&stdout=1&tty=1", protocols=(ch.BASE64,))
        process.ours.shutdown(socket.SHUT_WR)
        assert [m.data async for m in ws] == ["1"]  # the empty "connected" message only

    run(exec_app(FakeRuntime(process)), body)


def test_unknown_protocols_are_refused_before_the_upgrade() -> None:
    async def body(client: TestClient) -> None:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect("/exec/ns/pod/c?command=ls&stdout=1", protocols=("v3.channel.k8s.io",))
        assert refused.value.status == 400

    run(exec_app(FakeRuntime(FakeProcess(tty=False))), body)


def test_v4_tty_resize_and_success() -> None:
    process = FakeProcess(tty=True, exit_code=0)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=sh&stdin=1&stdout=1&tty=1", protocols=(ch.V4,))
        assert ws.protocol == ch.V4
        await ws.send_bytes(ch.encode(ch.RESIZE, b'{"Width":100,"Height":30}'))
        await ws.send_bytes(ch.encode(ch.STDIN, b"x"))
        assert (await ws.receive()).data == ch.encode(ch.STDOUT, b"")
        first = await ws.receive()
        assert first.data == ch.encode(ch.STDOUT, b"x")  # a TTY's output is not demultiplexed
        await ws.send_bytes(b"\xff\x00")  # not a close in v4: ignored
        process.ours.shutdown(socket.SHUT_WR)  # the process ends (its stdin closed from our side)
        messages = await collect(ws)
        assert messages == [(ch.ERROR, b'{"metadata":{},"status":"Success"}')]

    run(exec_app(FakeRuntime(process)), body)
    assert process.resized == [(100, 30)]


def test_client_leaving_closes_the_runtime_stream() -> None:
    process = FakeProcess(tty=False)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=cat&stdin=1&stdout=1", protocols=(ch.V5,))
        await ws.close()
        for _ in range(100):
            if process.closed.is_set():
                break
            await asyncio.sleep(0.02)

    run(exec_app(FakeRuntime(process)), body)
    assert process.closed.is_set()


def test_stop_ends_open_sessions_at_once() -> None:
    """A kubelet that stops closes each open session with 1001 Going Away and releases the runtime stream,
    without waiting out the runner's shutdown timeout (aiohttp's test server: 60 s)."""
    process = FakeProcess(tty=False)

    async def main() -> None:
        app = exec_app(FakeRuntime(process))
        OpenStreams(lambda request: True).install(app)
        server = TestServer(app)
        async with TestClient(server) as client:
            ws = await client.ws_connect("/exec/ns/pod/c?command=cat&stdin=1&stdout=1", protocols=(ch.V5,))
            assert (await ws.receive()).data == ch.encode(ch.STDOUT, b"")
            started = time.monotonic()
            await server.close()
            assert time.monotonic() - started < 2
            assert (await ws.receive()).type is aiohttp.WSMsgType.CLOSE
            assert ws.close_code == WSCloseCode.GOING_AWAY

    asyncio.run(main())
    assert process.closed.is_set()


def test_errors_before_and_after_the_upgrade() -> None:
    async def body(client: TestClient) -> None:
        missing = await client.get("/exec/ns/other/c?command=ls&stdout=1")
        assert missing.status == 404
        plain = await client.get("/exec/ns/pod/c?command=ls&stdout=1")
        assert plain.status == 400 and "Upgrade request required" in await plain.text()
        ws = await client.ws_connect("/exec/ns/pod/c?command=ls&stdout=1", protocols=(ch.V5,))
        messages = await collect(ws)  # the runtime refused: a Status on the error channel, then the close
        assert [c for c, _ in messages] == [ch.STDOUT, ch.ERROR]
        assert json.loads(messages[1][1])["message"] == "container is not running"

    run(exec_app(FakeRuntime(None)), body)


def test_attach_has_no_exit_code() -> None:
    process = FakeProcess(tty=False, exit_code=9)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/attach/ns/pod/c?stdin=1&stdout=1&stderr=1", protocols=(ch.V5,))
        await ws.send_bytes(ch.encode(ch.STDIN, b"a"))
        await ws.send_bytes(bytes((ch.CLOSE, ch.STDIN)))
        messages = await collect(ws)
        assert messages[-1] == (ch.ERROR, b'{"metadata":{},"status":"Success"}')

    runtime = FakeRuntime(process)
    run(exec_app(runtime), body)
    assert runtime.calls == [("attach", ("cid", True))]


# -- port-forward ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "ports"), [
    pytest.param(["80"], [80], id="one"),
    pytest.param(["80,8080", "53"], [80, 8080, 53], id="comma-and-repeated"),
])
def test_parse_ports(values: list[str], ports: list[int]) -> None:
    assert portforward.parse_ports(values) == ports


@pytest.mark.parametrize("values", [[], ["x"], ["0"], ["65536"]])
def test_parse_ports_refuses(values: list[str]) -> None:
    with pytest.raises(ValueError):
        portforward.parse_ports(values)


def test_port_prefix_is_little_endian() -> None:
    assert portforward.port_prefix(8080) == b"\x90\x1f"  # what the Python client checks: b[0] + 256 * b[1]


def test_port_forward_echo_and_refused_port() -> None:
    opened: list[tuple[str, str, int]] = []

    def open_port(namespace: str, pod: str, port: int) -> socket.socket:
        opened.append((namespace, pod, port))
        if port == 81:
            raise ConnectionRefusedError(111, "Connection refused")
        ours, theirs = socket.socketpair()

        def echo_once() -> None:
            data = theirs.recv(100)
            theirs.sendall(data.upper())
            theirs.close()
        threading.Thread(target=echo_once, daemon=True).start()
        return ours

    app = web.Application()

    async def handler(request: web.Request) -> web.StreamResponse:
        return await portforward.serve(request, open_port=open_port)
    app.router.add_get("/portForward/{namespace}/{pod}", handler)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/portForward/ns/pod?ports=8080,81", protocols=(ch.V5, ch.V4))
        assert ws.protocol == ch.V4
        prefixes = [await ws.receive() for _ in range(4)]
        assert [m.data for m in prefixes] == [b"\x00\x90\x1f", b"\x01\x90\x1f", b"\x02\x51\x00", b"\x03\x51\x00"]
        await ws.send_bytes(b"\x00hello")
        messages = await collect(ws)
        assert (0, b"HELLO") in messages
        errors = [data for channel, data in messages if channel == 3]
        assert errors and b"error forwarding port 81 to pod pod" in errors[0]

    run(app, body)
    assert opened == [("ns", "pod", 8080), ("ns", "pod", 81)]


def test_a_message_over_the_cap_closes_the_session_with_1009() -> None:
    process = FakeProcess(tty=False)
    runtime = FakeRuntime(process)

    async def body(client: TestClient) -> None:
        ws = await client.ws_connect("/exec/ns/pod/c?command=cat&stdin=1&stdout=1", protocols=(ch.V5,),
                                     max_msg_size=0)
        try:  # the server may close (1009) and reset before the client has written it all
            await ws.send_bytes(ch.encode(ch.STDIN, b"x" * (ch.MAX_MESSAGE_BYTES + 1)))
        except ConnectionError:
            return
        async for _ in ws:
            pass
        assert ws.close_code == WSCloseCode.MESSAGE_TOO_BIG

    run(exec_app(runtime), body)
    assert process.closed.is_set()
