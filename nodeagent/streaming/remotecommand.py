"""The kubelet's `/exec/{namespace}/{pod}/{container}` and `/attach/...` endpoints over WebSocket.

Upstream: pkg/kubelet/server/server.go (getExec, getAttach: GET and POST on those paths),
pkg/kubelet/cri/streaming/remotecommand (options from the query: repeated `command`, `stdin`, `stdout`,
`stderr`, `tty` as "1" or "true"; at least one stream; with a TTY there is no separate stderr; the error
channel gets the command's end when it ends, then the connection closes) and
k8s.io/apimachinery/pkg/util/httpstream/wsstream (the channel framing). The API server relays a client's
WebSocket here unchanged (control/apiserver/streaming/websocket.py), so every subprotocol kubectl, the Python client
or a browser speaks is spoken here: channels.py (v5, v4, v4.base64, base64, channel.k8s.io, none).

The process's stdio is a socket hijacked from Docker (runtime `exec_stream`/`attach_stream`); the socket is
made non-blocking and driven by the event loop (`sock_recv`/`sock_sendall`), so a session costs no thread.
Two tasks: output (runtime → client, demultiplexing Docker's frames unless TTY) and input (client →
runtime: stdin data, v5's stdin close as a write shutdown, resize). When the output ends the exit code is
read and sent as the protocol says (a Status from v4 on); when the client goes first the runtime
connection is closed (a TTY process gets SIGHUP, as upstream; a non-TTY one sees EOF on stdin).

When the kubelet stops, its open sessions are cancelled (control/util/openstreams.py): each closes its
WebSocket with 1001 Going Away and releases the runtime connection, as if the client had gone.

Departures: WebSocket only (kubectl's SPDY is translated by the API server, control/apiserver/
streaming/spdystreaming.py); no streaming idle timeout (upstream: 4 h).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from nodeagent.runtime.interface import ContainerStream, RuntimeFailure, StreamingRuntime
from nodeagent.streaming import channels as ch

log = logging.getLogger(__name__)
READ_SIZE = 64 * 1024
CLOSE_TIMEOUT = 1.0  # how long a close waits for the client's answering close frame


@dataclass(frozen=True)
class Options:
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def parse_options(query: Mapping[str, str], command: list[str], *, exec_: bool) -> Options:
    """Options from the query (`command`: its repeated `command` values), or ValueError with upstream's
    message."""
    stdin, stdout, stderr, tty = (_truthy(query.get(k)) for k in ("stdin", "stdout", "stderr", "tty"))
    if not (stdin or stdout or stderr):
        raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
    if exec_ and not command:
        raise ValueError("you must specify at least one command for the container")
    return Options(command=tuple(command) if exec_ else (), stdin=stdin, stdout=stdout,
                   stderr=stderr and not tty, tty=tty)


async def serve(request: web.Request, *, runtime: StreamingRuntime,
                find_container: Callable[[str, str, str], str | None], exec_: bool) -> web.StreamResponse:
    namespace, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
    try:
        options = parse_options(request.query, request.query.getall("command", []), exec_=exec_)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    container_id = await asyncio.to_thread(find_container, namespace, pod, container)
    if container_id is None:
        raise web.HTTPNotFound(text=f'container "{container}" in pod "{pod}" is not running')
    offered = offered_protocols(request)
    if not web.WebSocketResponse(protocols=offered).can_prepare(request).ok:
        raise web.HTTPBadRequest(text=f"Upgrade request required (WebSocket with one of {', '.join(ch.NAMES)})")
    protocol = ch.negotiate(offered)
    if protocol is None:
        raise web.HTTPBadRequest(text=f"requested protocol(s) are not supported: {offered}; supports "
                                      f"{list(ch.NAMES)}")
    ws = web.WebSocketResponse(protocols=(protocol.name,) if protocol.name else (), max_msg_size=ch.MAX_MESSAGE_BYTES,
                               timeout=CLOSE_TIMEOUT)
    await ws.prepare(request)
    session = Session(ws, options, protocol)
    if exec_:
        start = functools.partial(runtime.exec_stream, container_id, list(options.command), stdin=options.stdin,
                                  tty=options.tty)
    else:
        start = functools.partial(runtime.attach_stream, container_id, stdin=options.stdin)
    try:
        # an empty message on the lowest channel the client reads says the connection is up
        await session.send(ch.STDOUT if options.stdout else ch.STDERR if options.stderr else ch.ERROR, b"")
        await session.serve(start, exec_=exec_)
    except asyncio.CancelledError:  # the kubelet is stopping (control/util/openstreams.py)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"the kubelet is stopping")
        raise
    return ws


def offered_protocols(request: web.Request) -> list[str]:
    """The subprotocols the client offered, in its order."""
    return [p.strip() for header in request.headers.getall("Sec-WebSocket-Protocol", [])
            for p in header.split(",") if p.strip()]


class Session:
    """One client connection bridged to one hijacked runtime connection."""

    def __init__(self, ws: web.WebSocketResponse, options: Options, protocol: ch.Protocol) -> None:
        self.ws = ws
        self.options = options
        self.protocol = protocol

    async def send(self, channel: int, data: bytes) -> None:
        message = self.protocol.encode(channel, data)
        if isinstance(message, str):
            await self.ws.send_str(message)
        else:
            await self.ws.send_bytes(message)

    async def finish(self, status: dict[str, Any]) -> None:
        """The command's end on the error channel (as the protocol says it), then the close."""
        data = self.protocol.final(status)
        with contextlib.suppress(ConnectionError, RuntimeError):
            if data is not None:
                await self.send(ch.ERROR, data)
        await self.ws.close()

    async def serve(self, start: Callable[[], ContainerStream], *, exec_: bool) -> None:
        """Start the process's stream (`start`, blocking), bridge it until either side ends, release it."""
        starting = asyncio.ensure_future(asyncio.to_thread(start))
        try:
            stream = await asyncio.shield(starting)
        except RuntimeFailure as exc:
            await self.finish(ch.error_status(str(exc)))
            return
        except asyncio.CancelledError:  # the stream still comes: release it then
            starting.add_done_callback(_release)
            raise
        try:
            await self._bridge(stream, exec_=exec_)
        finally:
            stream.close()

    async def _bridge(self, stream: ContainerStream, *, exec_: bool) -> None:
        stream.socket.setblocking(False)
        output = asyncio.create_task(self._output(stream))
        client = asyncio.create_task(self._input(stream))
        try:
            await asyncio.wait({output, client}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # whichever ended first, or this task cancelled: the other stops too
            for task in (output, client):
                task.cancel()
            await asyncio.gather(output, client, return_exceptions=True)
        if output.cancelled():  # the client went away first: nothing to report
            return
        code = await asyncio.to_thread(stream.exit_code) if exec_ else 0
        await self.finish(ch.exit_status(code, list(self.options.command)))

    async def _output(self, stream: ContainerStream) -> None:
        loop = asyncio.get_running_loop()
        demux = ch.Demuxer() if stream.multiplexed else None
        wanted = {ch.STDOUT: self.options.stdout, ch.STDERR: self.options.stderr}
        while True:
            try:
                data = await loop.sock_recv(stream.socket, READ_SIZE)
            except OSError as exc:
                log.debug("container stream ended: %s", exc)
                return
            if not data:
                return
            for channel, payload in demux.feed(data) if demux is not None else [(ch.STDOUT, data)]:
                if wanted.get(channel):
                    await self.send(channel, payload)

    async def _input(self, stream: ContainerStream) -> None:
        loop = asyncio.get_running_loop()
        async for message in self.ws:
            if message.type is WSMsgType.BINARY:
                decoded = self.protocol.decode(message.data)
            elif message.type is WSMsgType.TEXT:  # upstream reads text messages as their bytes
                decoded = self.protocol.decode(message.data.encode())
            else:
                continue
            if decoded is None:
                continue
            try:
                if decoded.channel == ch.STDIN and self.options.stdin:
                    if decoded.closed:
                        stream.socket.shutdown(socket.SHUT_WR)
                    elif decoded.data:
                        await loop.sock_sendall(stream.socket, decoded.data)
                elif decoded.channel == ch.RESIZE and self.options.tty and not decoded.closed:
                    size = ch.parse_resize(decoded.data)
                    if size is not None:
                        await asyncio.to_thread(stream.resize, *size)
            except (OSError, RuntimeFailure) as exc:  # the process is gone or closed its stdin
                log.debug("container stream input: %s", exc)


def _release(starting: asyncio.Future[ContainerStream]) -> None:
    if not starting.cancelled() and starting.exception() is None:
        starting.result().close()
